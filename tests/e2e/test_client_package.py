"""The client as a volunteer installs it: a wheel built from this checkout, installed into a fresh
virtual environment, brings only the client's dependencies and the ``sente`` command, and ``sente
contribute`` plays and uploads a game to the real server under gunicorn."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from client.build import BUILD
from tests.e2e.contributor import Contributor, until, upload_network
from tests.server import helpers
from tests.server.live import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

# What only the server needs: none of it may come with the client.
SERVER_ONLY = {"django", "djangorestframework", "gunicorn", "boto3", "psycopg", "redis", "whitenoise", "django-tasks"}
CLIENT_NEEDS = {
    "torch",
    "numpy",
    "numba",
    "requests",
    "rich",
    "safetensors",
    "filelock",
    "platformdirs",
    "nvidia-ml-py",
}


def _run(*args: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{args}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def build_wheel(out: Path) -> Path:
    """The wheel of this checkout's client, built from a copy (the build writes beside its sources)."""
    source = out / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc")
    for package in ("client", "common"):
        shutil.copytree(ROOT / package, source / package, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", out / "dist", source)
    (wheel,) = (out / "dist").glob("sente-*.whl")
    return wheel


def install(wheel: Path, venv: Path) -> Path:
    """A fresh virtual environment with the wheel installed; its ``sente`` command."""
    _run(sys.executable, "-m", "venv", venv)
    lend_torch(venv)
    _run(venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check", wheel)
    return venv / "bin" / "sente"


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


def share_compiled_kernels(venv: Path) -> int:
    """Copy this checkout's compiled numba kernels into the installed packages, with the sources'
    times, so that the installed client loads them rather than compiling for minutes as on a
    volunteer's first start (numba's cache holds no path, only each source's time and size). Where
    the checkout's cache is empty the client compiles them itself. The number of files copied."""
    (site,) = venv.glob("lib/python*/site-packages")
    copied = 0
    for cache in [*(ROOT / "client").rglob("__pycache__"), *(ROOT / "common").rglob("__pycache__")]:
        package = cache.parent.relative_to(ROOT)
        for source in cache.parent.glob("*.py"):
            installed = site / package / source.name
            if installed.read_bytes() == source.read_bytes():
                stat = source.stat()
                os.utime(installed, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        for compiled in [*cache.glob("*.nbi"), *cache.glob("*.nbc")]:
            (site / package / "__pycache__").mkdir(exist_ok=True)
            shutil.copy2(compiled, site / package / "__pycache__" / compiled.name)
            copied += 1
    return copied


def test_the_wheel_installs_the_client_alone_and_contributes(server, volunteer, tmp_path):
    from server.distribution.models import Task
    from server.games.models import TrainingGame

    wheel = build_wheel(tmp_path / "build")
    names = {n.split("/")[0] for n in _run(sys.executable, "-m", "zipfile", "-l", wheel).split()}
    assert {"client", "common"} <= names and not names & {"server", "tests", "migrations"}

    sente = install(wheel, tmp_path / "venv")
    listed = json.loads(_run(sente.parent / "pip", "list", "--format", "json", "--disable-pip-version-check"))
    installed = {p["name"].lower() for p in listed}
    assert installed >= CLIENT_NEEDS
    assert not installed & SERVER_ONLY, f"server packages came with the client: {installed & SERVER_ONLY}"
    assert _run(sente, "--version").startswith("Sente client ")
    assert "usage: sente contribute" in _run(sente, "contribute", "--help")

    share_compiled_kernels(sente.parents[1])
    upload_network(server.url, tmp_path, "test-net1", helpers.RANDOM_NET)
    client = Contributor(tmp_path / "alice", server.url, True, program=sente)
    try:
        until(lambda: TrainingGame.objects.count() >= 1, 600, "a game from the installed client", client)
        assert client.stop() == 0, client.output()
    finally:
        client.kill()
    # The installed code is the checkout's: the same build, which a run that allows one allows both.
    assert set(Task.objects.filter(user__username="alice").values_list("client_build", flat=True)) == {BUILD}
