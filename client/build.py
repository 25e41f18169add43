"""This client's build: a hash of the code that decides the data it sends.

A task gives a client a network and the run's settings; what the client makes of them (the games and
their training rows) is decided by the search, self-play and matches, the evaluator, the Go rules and
SGF, the network's features, model and file formats, the training rows (their weights, writer and
check) and the reading of the settings. ``BUILD`` hashes the source of those modules
(:data:`SOURCES`: whole folders, so that a module added to them is counted), so two clients with the
same build make the same data from the same task, and a change to any of them makes another build.
The rest (the contribute command's transport and display, the GTP and analysis engines, the
trainer's loss, loop and data loader) can change without changing a game, and is left out: a fix
there does not force a run to allow a new build.

The hash is the sha256 of every such file's path and text, in the order of their paths, each text
with its line endings made ``\\n``: the same on every machine, in a checkout that turned the line
endings into ``\\r\\n`` too. It is computed once, when this module is imported; its first 16 hex
digits are the build a client reports with its version.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from common.protocol import CLIENT_VERSION

ROOT = Path(__file__).resolve().parent.parent
# Every module under these folders, and these single modules (paths from the project's root).
SOURCES = (
    "client/search/",
    "client/selfplay/",
    "client/match/",
    "client/evaluator.py",
    "common/go/",
    "common/encoding/",
    "common/nn/",
    "common/data/",
    "common/settings/",
    "common/architecture.py",
)
# Within those folders: the trainer's own modules, which no client runs.
LEFT_OUT = ("common/nn/loss.py", "common/nn/training.py", "common/data/loader.py")
BUILD_DIGITS = 16


def source_files(root: Path = ROOT) -> list[Path]:
    """The files the build hashes, in the order of their paths."""
    files: set[Path] = set()
    for source in SOURCES:
        path = root / source
        if source.endswith("/"):
            files.update(p for p in path.rglob("*.py") if p.relative_to(root).as_posix() not in LEFT_OUT)
        else:
            files.add(path)
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def build_hash(root: Path = ROOT) -> str:
    """The build of the code under root (16 hex digits)."""
    digest = hashlib.sha256()
    for path in source_files(root):
        text = path.read_bytes().replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(len(text).to_bytes(8, "big") + text)
    return digest.hexdigest()[:BUILD_DIGITS]


BUILD = build_hash()


def describe() -> str:
    """'0.1.0 (build 0123456789abcdef)'."""
    return f"{CLIENT_VERSION} (build {BUILD})"
