"""The client's build: a hash of its search and data code, the same on every machine and for any line
endings, changed by a change to that code only."""

from __future__ import annotations

import shutil
import subprocess
import sys

from client.build import BUILD, ROOT, build_hash, source_files


def _copy(tmp_path):
    for path in [*source_files(), ROOT / "client/contribute/app.py"]:
        target = tmp_path / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return tmp_path


def test_the_build_covers_the_code_that_makes_the_data(tmp_path):
    names = {p.relative_to(ROOT).as_posix() for p in source_files()}
    for needed in (
        "client/search/tree.py",
        "client/selfplay/run.py",
        "client/match/run.py",
        "client/evaluator.py",
        "common/go/rules.py",
        "common/go/sgf.py",
        "common/encoding/features.py",
        "common/nn/model.py",
        "common/data/rows.py",
        "common/data/weights.py",
        "common/settings/search.py",
        "common/settings/framework.py",
    ):
        assert needed in names
    assert not any(n.startswith(("client/contribute/", "client/gtp/", "server/")) for n in names)
    assert not {"common/nn/training.py", "common/data/loader.py"} & names
    root = _copy(tmp_path)
    assert build_hash(root) == BUILD and len(BUILD) == 16
    # Line endings turned into CRLF (a checkout on Windows): the same build.
    for path in source_files(root):
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    assert build_hash(root) == BUILD
    # The contribute command's code is not part of it; the search's is.
    (root / "client/contribute/app.py").write_text("# another transport\n")
    assert build_hash(root) == BUILD
    tree = root / "client/search/tree.py"
    tree.write_bytes(tree.read_bytes() + b"\n# a change\n")
    assert build_hash(root) != BUILD


def test_another_process_computes_the_same_build():
    out = subprocess.run(
        [sys.executable, "-m", "client", "--version"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip().endswith(f"(build {BUILD})")
