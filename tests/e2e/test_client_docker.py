"""The volunteer's client in Docker (deploy/Dockerfile's ``client`` target): the image keeps the
settings and the data in its volume, numba's kernels compiled in its installed package, and holds the
client package alone; where a
Docker daemon runs, the image (its CPU build) is built and contributes a game to the real server."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import uuid

import pytest

from tests.e2e.contributor import PASSWORD, until, upload_network
from tests.server import helpers
from tests.server.live import ROOT
from tests.venvs import PACKAGE_SOURCES

DOCKERFILE = ROOT / "deploy" / "Dockerfile"


def client_stage() -> list[str]:
    """The client stage's instructions, continuation lines joined, comments left out."""
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    start = next(i for i, line in enumerate(lines) if re.fullmatch(r"FROM \S+ AS client", line))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("FROM ")), len(lines))
    return lines[start:end]


def test_the_image_keeps_settings_and_data_in_its_volume_kernels_compiled_and_the_client_alone():
    stage = client_stage()
    env = dict(w.split("=", 1) for line in stage if line.startswith("ENV ") for w in shlex.split(line[4:]))
    (volume,) = [line.split()[1] for line in stage if line.startswith("VOLUME ")]
    # numba's cache beside the installed modules, the wheel's, and writable by the client's user (numba
    # loads only from a folder it may write)
    assert "NUMBA_CACHE_DIR" not in env
    install = next(line for line in stage if line.startswith("RUN ") and "pip install ." in line)
    assert re.search(r'chown -R sente:sente "\$site/client" "\$site/common"', install), install
    # where the client puts its settings and data with the image's environment (platformdirs)
    code = "from client.contribute import config; print(config.default_config_path()); print(config.default_data_dir())"
    child_env = {**os.environ, "XDG_CONFIG_HOME": env["XDG_CONFIG_HOME"], "XDG_DATA_HOME": env["XDG_DATA_HOME"]}
    paths = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=child_env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert all(p.startswith(volume + "/") for p in paths), paths
    copied = sorted(source for line in stage if line.startswith("COPY ") for source in line.split()[1:-1])
    assert copied == sorted(PACKAGE_SOURCES), "the package's sources alone"
    assert 'ENTRYPOINT ["sente"]' in stage and next(line for line in stage if line.startswith("USER ")) == "USER sente"


@pytest.fixture
def docker() -> str:
    """The docker command, when a daemon answers and can pull the client stage's base image; else the
    test is skipped, in CI too (a CI machine may have no Docker daemon, and .ci/run starts none)."""
    docker = shutil.which("docker")
    if docker is None or subprocess.run([docker, "info"], capture_output=True).returncode != 0:
        pytest.skip("no Docker daemon answers here (docker info): the image is not built")
    base = client_stage()[0].split()[1]
    pulled = subprocess.run([docker, "pull", "--quiet", base], capture_output=True, text=True, timeout=600)
    if pulled.returncode != 0:
        pytest.skip(f"the base image {base} cannot be pulled here: {pulled.stderr.strip()[-300:]}")
    return docker


@pytest.mark.slow
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_image_contributes_a_game(docker, server, volunteer, tmp_path):
    from server.games.models import TrainingGame

    tag = f"sente-client-test:{uuid.uuid4().hex[:8]}"
    build = [docker, "build", "-f", str(DOCKERFILE), "--target", "client", "-t", tag]
    build += ["--build-arg", "TORCH_INDEX=https://download.pytorch.org/whl/cpu", str(ROOT)]
    done = subprocess.run(build, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-4000:]
    volume, name = f"sente-test-{uuid.uuid4().hex[:8]}", f"sente-test-{uuid.uuid4().hex[:8]}"
    try:
        assert subprocess.run(
            [docker, "run", "--rm", tag, "--version"], capture_output=True, text=True
        ).stdout.startswith("Sente client ")
        upload_network(server.url, tmp_path, "test-net1", helpers.RANDOM_NET)
        run = [docker, "run", "--name", name, "-i", "--network", "host", "-v", f"{volume}:/sente", tag]
        run += ["contribute", "--server", server.url, "--username", "alice", "--password-stdin", "--device", "cpu"]
        run += ["--parallel", "4"]
        process = subprocess.Popen(run, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        process.stdin.write((PASSWORD + "\n").encode())
        process.stdin.flush()
        until(lambda: TrainingGame.objects.count() >= 1 or process.poll() is not None, 900, "a game from the image")
        assert TrainingGame.objects.count() >= 1, process.stdout.read().decode()[-4000:]
        subprocess.run([docker, "kill", "--signal", "INT", name], capture_output=True)
        assert process.wait(timeout=300) == 0
        # the token stayed in the volume: a new container starts without the password
        settings = subprocess.run(
            [
                docker,
                "run",
                "--rm",
                "-v",
                f"{volume}:/sente",
                "--entrypoint",
                "cat",
                tag,
                "/sente/config/sente/client.json",
            ],
            capture_output=True,
            text=True,
        ).stdout
        assert json.loads(settings)["token"]
    finally:
        subprocess.run([docker, "rm", "-f", name], capture_output=True)
        subprocess.run([docker, "volume", "rm", "-f", volume], capture_output=True)
        subprocess.run([docker, "rmi", "-f", tag], capture_output=True)
