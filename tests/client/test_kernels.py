"""The client's kernels come compiled in its wheel (client/kernels.py, buildtools/sente_wheel.py): a
cache filled in one folder is found in another, the build asks for what compiling imports, and that
needs no torch. (The whole path, a wheel built and installed and its first start compiling nothing,
is tests/e2e/test_client_package.py's; the time to the first move, tests/bench/bench_first_move.py's.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "buildtools"))

import sente_wheel  # noqa: E402

KERNEL = textwrap.dedent(
    """
    from numba import njit

    @njit(cache=True)
    def step(x):
        return x * 3 + 1
    """
)
# Run in a package's parent folder: common first, as the client's modules import it.
CALL = "import common, numba, shipped.kernel as k; print(numba.config.CPU_NAME, k.step(2))"


def _call(folder: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env.update(NUMBA_DEBUG_CACHE="1", PYTHONPATH=os.pathsep.join([str(folder), str(ROOT)]))
    done = subprocess.run([sys.executable, "-c", CALL], cwd=folder, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done


def test_a_kernel_compiled_in_one_folder_is_loaded_in_another_without_compiling(tmp_path):
    built = tmp_path / "build" / "shipped"
    built.mkdir(parents=True)
    (built / "__init__.py").write_text("")
    (built / "kernel.py").write_text(KERNEL)
    first = _call(built.parent)
    assert "[cache] data saved" in first.stdout and first.stdout.split()[-2:] == ["generic", "7"]
    assert sorted(p.suffix for p in (built / "__pycache__").glob("*.nb[ic]")) == [".nbc", ".nbi"]

    # Installed elsewhere, as a wheel unpacks it: another path, other file times, the same content.
    installed = tmp_path / "site-packages" / "shipped"
    shutil.copytree(built, installed, ignore=shutil.ignore_patterns("*.pyc"))
    os.utime(installed / "kernel.py", (1_000_000_000, 1_000_000_000))
    second = _call(installed.parent)
    assert "[cache] data loaded" in second.stdout and "[cache] data saved" not in second.stdout, second.stdout
    assert second.stdout.split()[-2:] == ["generic", "7"]

    # A changed source is compiled again, not run from the stale cache.
    (installed / "kernel.py").write_text(KERNEL.replace("x * 3 + 1", "x * 5 + 1"))
    third = _call(installed.parent)
    assert "[cache] data saved" in third.stdout and third.stdout.split()[-1] == "11"


def test_the_build_asks_for_what_compiling_the_kernels_imports(monkeypatch):
    monkeypatch.chdir(ROOT)  # the build runs in the source tree
    monkeypatch.delenv("SENTE_WHEEL_KERNELS", raising=False)
    asked = sente_wheel.get_requires_for_build_wheel()
    names = {r.split(">")[0].split("=")[0].split(";")[0].strip() for r in asked}
    assert set(sente_wheel.KERNEL_IMPORTS) <= names
    assert "torch" not in names
    assert "numba>=0.60" in asked  # as the wheel's own dependencies ask for it (pyproject.toml)
    monkeypatch.setenv("SENTE_WHEEL_KERNELS", "0")  # a wheel without them asks for setuptools' alone
    assert not any(r.startswith(sente_wheel.KERNEL_IMPORTS) for r in sente_wheel.get_requires_for_build_wheel())


def test_compiling_the_kernels_imports_nothing_the_build_does_not_ask_for():
    """The build's environment holds the standard library, setuptools and KERNEL_IMPORTS alone: the
    modules client.kernels imports must need nothing else (numba itself loads llvmlite, and scipy or
    yaml when they are there)."""
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import client.kernels\n"
        "tops = {m.split('.')[0] for m in sys.modules if not m.startswith('_')}\n"
        "print(' '.join(sorted(tops - set(sys.stdlib_module_names))))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    imported = set(done.stdout.split()) - {"client", "common", "torch"}
    numbas_own = {"llvmlite", "scipy", "yaml", "cython_runtime"}
    assert imported - numbas_own <= set(sente_wheel.KERNEL_IMPORTS), imported
