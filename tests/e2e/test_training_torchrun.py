"""The trainer as it runs for real: `manage.py train` under torchrun with two CPU processes (gloo)
against the test database and storage, exporting candidates; stopped with SIGTERM mid-chunk and
started again, it continues from its checkpoint."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from django.conf import settings as django_settings
from django.db import connection

from common.settings import TrainingSettings
from server.platform.processes import database_url
from tests.server import helpers

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

ROOT = Path(__file__).resolve().parents[2]


def _trainer(checkpoints: Path, *extra: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SENTE_")}
    env.update(
        DATABASE_URL=database_url(connection.settings_dict),
        SENTE_DATA_DIR=str(django_settings.DATA_DIR),
        DJANGO_SETTINGS_MODULE="server.settings",
        OMP_NUM_THREADS="1",
        PYTHONPATH=str(ROOT),
    )
    torchrun = Path(sys.executable).parent / "torchrun"
    command = [
        str(torchrun),
        "--standalone",
        "--nproc_per_node",
        "2",
        "--",
        "manage.py",
        "train",
        "--run",
        helpers.RUN,
        "--device",
        "cpu",
        "--checkpoints",
        str(checkpoints),
        "--poll-seconds",
        "1",
        *extra,
    ]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_two_processes_train_export_stop_and_resume(tmp_path):
    from server.networks.models import Network
    from server.runs.models import create_run
    from server.training.models import TrainingLine

    run = create_run(helpers.RUN, helpers.SETTINGS.to_dict())
    document = helpers.SETTINGS.to_dict()
    document["training"] = TrainingSettings(
        architecture="tiny",
        window_c=300,
        samples_per_row=3.0,
        batch_size=16,
        learning_rate=1e-3,
        snapshot_every=64,
        export_every=256,
        holdout_one_in=5,
        shuffle_rows=400,
    ).to_dict()
    run.set_settings(document)
    gen1 = Network.objects.create(name="test-gen1", run=run, state=Network.State.ACCEPTED)
    from server.accounts.models import User

    alice = User.objects.create_user("alice", "alice@example.org", "a long enough password")
    games = helpers.selfplay_games(tmp_path / "games", helpers.RANDOM_NET, count=12, seed=21)
    helpers.store_training_games(run, alice, games, network=gen1, minutes_apart=0)  # one moment: one UTC day
    # The older eight games packed into a shard, the newer four not yet: the trainer reads both.
    from server.games.shards import Caps, pack

    shard = pack(run, Caps(rows=sum(g.metadata["rows"] for g in games[:8]), bytes=1 << 30, seconds=3600), force=True)
    assert shard is not None and shard.games == 8
    checkpoints = tmp_path / "checkpoints"

    # Started, it trains; stopped with SIGTERM while training, it writes its checkpoint and ends (torchrun
    # itself reports the signal with a non-zero status).
    process = _trainer(checkpoints)
    deadline = time.monotonic() + 120
    while not TrainingLine.objects.filter(samples__gt=0).exists():
        assert process.poll() is None, process.stdout.read()
        assert time.monotonic() < deadline, "the trainer did not start training"
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)  # torchrun passes it on to both processes
    output = process.communicate(timeout=120)[0]
    state = torch.load(checkpoints / helpers.RUN / "tiny.ckpt", weights_only=True)
    stopped_at = state["samples"]
    assert stopped_at > 0 and stopped_at % 32 == 0  # whole steps of both processes' batches (2 x 16)
    assert TrainingLine.objects.get().status == "stopped"

    # Started again with --once, it goes on from there to what the data allows.
    process = _trainer(checkpoints, "--once")
    output = process.communicate(timeout=300)[0]
    assert process.returncode == 0, output
    assert "resumed from its checkpoint at" in output
    # Each process read its own share of the window: the two together no more than it holds.
    read = {rank: [int(b) for b in re.findall(rf"process {rank} of 2 read (\d+) bytes", output)] for rank in (0, 1)}
    assert read[0] and read[1] and len(read[0]) == len(read[1])
    window = shard.size_bytes + sum(len(g.npz) for g in games[8:])
    assert all(0 < a + b <= window for a, b in zip(read[0], read[1], strict=True)), (read, window)
    line = TrainingLine.objects.get()
    budget = int(3.0 * line.rows_total)
    assert budget - 10 * 32 <= line.samples < budget + 32 and line.samples > stopped_at
    candidates = list(run.networks.filter(name__contains="-tiny-").order_by("train_step"))
    assert len(candidates) == line.exports == line.samples // 256
    assert [c.parent for c in candidates] == [gen1, *candidates[:-1]]
    assert line.last_export == candidates[-1]
