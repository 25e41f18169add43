"""Fresh virtual environments for the tests and benchmarks that install the client as a volunteer
does, with this environment's torch lent to them."""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# What the client's package is built from (pyproject.toml; deploy/Dockerfile's client stage copies the same).
PACKAGE_SOURCES = ("client", "common", "buildtools", "pyproject.toml", "README.md")


def copy_package_sources(source: Path, *ignored: str) -> Path:
    """This checkout's client package sources copied into ``source`` (files matching ``ignored``
    left out), for a build that writes beside them."""
    for name in PACKAGE_SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns(*ignored))
        else:
            source.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / name, source / name)
    return source


def install_client(package: Path, venv: Path) -> float:
    """A new virtual environment at ``venv``, this environment's torch lent to it, and ``package`` (a
    wheel, or a source folder that pip builds as it does for a volunteer) installed with pip; the
    seconds pip took."""
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    lend_torch(venv)
    started = time.monotonic()
    pip = [venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check", package]
    subprocess.run(pip, check=True)
    return time.monotonic() - started


def lend_torch(venv: Path) -> None:
    """This environment's torch (and what torch itself needs) in the new one, as links named by a
    .pth file, so that pip finds it there and keeps it: installing the same 800 MB again took half
    the test, and pip would otherwise fetch the newest build (CUDA's, gigabytes). What the client
    needs beyond torch, pip installs."""
    folder = venv / "lent"
    folder.mkdir()
    for dist in _requirements("torch", {}).values():
        if dist.metadata["Name"].lower() == "setuptools":  # the new environment has its own
            continue
        for top in {f.parts[0] for f in dist.files or []} - {"..", "__pycache__"}:
            source = Path(dist.locate_file(top))
            if source.exists() and not top.endswith(".pth") and not (folder / top).exists():
                (folder / top).symlink_to(source)
    (site,) = venv.glob("lib/python*/site-packages")
    (site / "lent-torch.pth").write_text(f"{folder}\n")


def _requirements(name: str, seen: dict) -> dict:
    """The distribution ``name`` and those it requires, transitively (extras left out)."""
    key = name.lower().replace("_", "-")
    if key in seen:
        return seen
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return seen
    seen[key] = dist
    for requirement in dist.requires or []:
        if "extra ==" not in requirement:
            _requirements(re.match(r"[A-Za-z0-9._-]+", requirement).group(0), seen)
    return seen
