"""The packer killed for real: `manage.py shard --all` against the test database and storage, sent
SIGKILL while it is closing shard after shard. Every game is then in a shard whose bytes hold it at
its place, or in none; the next packer packs the rest, and no game is lost or packed twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from server.files import read_file
from server.platform.processes import database_url
from tests.server import helpers
from tests.server.test_shards import fake_games

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

ROOT = Path(__file__).resolve().parents[2]


def _packer(storage: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SENTE_")}
    env.update(
        DATABASE_URL=database_url(connection.settings_dict),
        STORAGE_URL=storage.as_uri(),
        SENTE_SHARD_ROWS="10",  # a shard a game: hundreds of commits to be killed among
        DJANGO_SETTINGS_MODULE="server.settings",
        PYTHONPATH=str(ROOT),
    )
    command = [sys.executable, "manage.py", "shard", "--all"]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_a_packer_killed_mid_shard_loses_no_game(settings, tmp_path):
    from django.contrib.auth import get_user_model

    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "server.files.AtomicFileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "files")},
        },
    }

    from server.games.models import Shard, TrainingGame
    from server.runs.models import create_run

    run = create_run(helpers.RUN, helpers.SETTINGS.to_dict())
    alice = get_user_model().objects.create_user("alice", "alice@example.org", "a long enough password")
    games = helpers.store_training_games(run, alice, fake_games(120), minutes_apart=0)  # one moment: one UTC day
    files = {g.pk: read_file(g.npz.name) for g in games}

    process = _packer(tmp_path / "files")
    deadline = time.monotonic() + 120
    while Shard.objects.count() < 10:  # well under way
        assert process.poll() is None, process.stdout.read()
        assert time.monotonic() < deadline, "the packer closed no shards"
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    closed = Shard.objects.count()
    assert 10 <= closed < 120, "killed too late to be mid-way"

    def check() -> int:
        """Every game in at most one committed shard, at its place there; the packed ones counted."""
        packed = 0
        for game in TrainingGame.objects.select_related("shard"):
            if game.shard is None:
                assert game.shard_offset is None and game.shard_length is None
                continue
            with game.shard.file.open("rb") as f:
                data = f.read()
            assert data[game.shard_offset : game.shard_offset + game.shard_length] == files[game.pk]
            packed += 1
        assert packed == sum(Shard.objects.values_list("games", flat=True))
        return packed

    assert check() == closed  # a shard a game
    again = _packer(tmp_path / "files")
    output = again.communicate(timeout=120)[0]
    assert again.returncode == 0, output
    assert check() == 120 and Shard.objects.count() == 120
    assert not TrainingGame.objects.filter(shard__isnull=True).exists()
