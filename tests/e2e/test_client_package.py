"""The client as a volunteer installs it: a wheel built from this checkout, installed into a fresh
virtual environment, brings only the client's dependencies and the ``sente`` command, and ``sente
contribute`` plays and uploads a game to the real server under gunicorn."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from client.build import BUILD
from tests.e2e.contributor import Contributor, until, upload_network
from tests.server import helpers
from tests.venvs import copy_package_sources, install_client

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
    """The wheel of this checkout's client, built from a copy (the build writes beside its sources)
    that holds the checkout's compiled kernels: the build's compile of them then loads them rather
    than compiling for minutes (numba's cache names no path, only each source's content)."""
    source = copy_package_sources(out / "source", "*.pyc")
    # This environment's setuptools and numba build it (a volunteer's pip installs them for the build
    # alone: tests/client/test_kernels.py checks what the build asks for, and the first-move benchmark
    # builds it so), which saves the test installing them again.
    _run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "--quiet",
        "--wheel-dir",
        out / "dist",
        source,
    )
    (wheel,) = (out / "dist").glob("sente-*.whl")
    return wheel


def compiled_kernels(venv: Path) -> dict[str, int]:
    """numba's cache files of the installed client and common packages, with their times."""
    (site,) = venv.glob("lib/python*/site-packages")
    return {
        str(f.relative_to(site)): f.stat().st_mtime_ns
        for package in ("client", "common")
        for f in (site / package).rglob("__pycache__/*.nb[ic]")
    }


def test_the_wheel_installs_the_client_alone_and_contributes(server, volunteer, tmp_path):
    from server.distribution.models import Task
    from server.games.models import TrainingGame

    wheel = build_wheel(tmp_path / "build")
    names = {n.split("/")[0] for n in _run(sys.executable, "-m", "zipfile", "-l", wheel).split()}
    assert {"client", "common"} <= names and not names & {"server", "tests", "migrations"}

    install_client(wheel, tmp_path / "venv")
    sente = tmp_path / "venv" / "bin" / "sente"
    listed = json.loads(_run(sente.parent / "pip", "list", "--format", "json", "--disable-pip-version-check"))
    installed = {p["name"].lower() for p in listed}
    assert installed >= CLIENT_NEEDS
    assert not installed & SERVER_ONLY, f"server packages came with the client: {installed & SERVER_ONLY}"
    assert _run(sente, "--version").startswith("Sente client ")
    assert "usage: sente contribute" in _run(sente, "contribute", "--help")

    # The kernels came compiled with the wheel, for this processor too (numba's generic one), and the
    # first start compiles none of them: no cache file is added or written again.
    shipped = compiled_kernels(sente.parents[1])
    modules = {Path(name).parent.parent.as_posix() for name in shipped}
    assert {"client/search", "common/go", "common/encoding"} <= modules, sorted(modules)
    upload_network(server.url, tmp_path, "test-net1", helpers.RANDOM_NET)
    client = Contributor(tmp_path / "alice", server.url, True, program=sente)
    try:
        until(lambda: TrainingGame.objects.count() >= 1, 600, "a game from the installed client", client)
        assert client.stop() == 0, client.output()
    finally:
        client.kill()
    assert compiled_kernels(sente.parents[1]) == shipped, "the installed client compiled kernels at its first start"
    # The installed code is the checkout's: the same build, which a run that allows one allows both.
    assert set(Task.objects.filter(user__username="alice").values_list("client_build", flat=True)) == {BUILD}
