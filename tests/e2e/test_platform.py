"""The one command: `manage.py platform` (what `make run` starts) on the embedded default (SQLite and
local files in a fresh data folder) with a 5x5 board and the tiny network, until the trainer's first
candidate has been gated; Ctrl-C stops it cleanly and a second start continues the same run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from common.settings import GatingSettings, MatchSettings, RunSettings, SelfPlaySettings, TrainingSettings
from tests.server.live import free_port, read_sqlite

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

SETTINGS = RunSettings(
    selfplay=SelfPlaySettings(
        board_sizes=(5,), board_size_weights=(1.0,), visits=8, cheap_visits=2, komi_mean=24.0, max_moves=50
    ),
    rating=MatchSettings(board_sizes=(5,), board_size_weights=(1.0,), visits=8, komi=24.0, max_moves=50),
    gating=GatingSettings(rating_game_prob=0.5, fixed_games=2, fixed_wins=1, account_share=1.0),
    training=TrainingSettings(
        architecture="tiny",
        window_c=300,
        samples_per_row=4.0,
        batch_size=64,
        learning_rate=3e-4,
        snapshot_every=300,
        export_every=1200,
        validation_rows=100,
        shuffle_rows=1000,
    ),
)
# The trainer starts once the run has a window of rows and exports its first candidate after these samples.
WINDOW, EXPORT = SETTINGS.training.window_c, SETTINGS.training.export_every


def _start(data: Path, port: int, settings_file: Path) -> tuple[subprocess.Popen, list[str]]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SENTE_", "DJANGO_")) and k not in ("DATABASE_URL", "STORAGE_URL", "CACHE_URL")
    }
    # Small shards, closed within seconds, so that the trainer reads packed games as it does at scale.
    env.update(SENTE_DATA_DIR=str(data), PYTHONUNBUFFERED="1", SENTE_SHARD_ROWS="100", SENTE_SHARD_SECONDS="5")
    process = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "platform",
            "--port",
            str(port),
            "--parallel",
            "8",
            "--status-seconds",
            "5",
            "--settings-file",
            str(settings_file),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith("Sente is running"):
            return process, lines
    process.kill()
    raise AssertionError("the platform did not start:\n" + "".join(lines))


def _stop(process: subprocess.Popen, lines: list[str]) -> str:
    process.send_signal(signal.SIGINT)
    rest, _ = process.communicate(timeout=240)
    output = "".join(lines) + rest
    assert process.returncode == 0, output
    assert "stopped; self-play" in output
    return output


def _children(data: Path) -> list[int]:
    """The processes started for the platform on ``data`` (their environment names it)."""
    mark = f"SENTE_DATA_DIR={data}".encode()
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                if mark in (proc / "environ").read_bytes().split(b"\0"):
                    pids.append(int(proc.name))
            except OSError:
                pass
    return pids


def _niceness(pid: int) -> int:
    """A process's nice value (field 19 of /proc/PID/stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rpartition(")")[2].split()[16])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_the_platform_learns_gates_stops_and_continues(tmp_path):
    data = tmp_path / "data"
    settings_file = tmp_path / "settings.json"
    settings_file.write_text(json.dumps(SETTINGS.to_dict()))
    port = free_port()
    process, lines = _start(data, port, settings_file)
    try:
        banner = lines[-1]
        password = re.search(r"password (\S+);", banner).group(1)
        assert f"http://127.0.0.1:{port}/" in banner
        db = data / "sente.sqlite3"
        deadline = time.monotonic() + 420
        decided = []
        while not decided and time.monotonic() < deadline:
            assert process.poll() is None, "".join(lines) + process.stdout.read()
            time.sleep(3)
            decided = read_sqlite(db, "SELECT candidate_id, decision FROM ratings_gating WHERE decision != 'continue'")
        assert decided, "no candidate was gated in time:\n" + "\n".join(
            str(r) for r in read_sqlite(db, "SELECT name, state FROM networks_network")
        )
        page = requests.get(f"http://127.0.0.1:{port}/", timeout=30)
        assert page.status_code == 200
        login = requests.Session()
        form = login.get(f"http://127.0.0.1:{port}/accounts/login/", timeout=30)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
        signed_in = login.post(
            f"http://127.0.0.1:{port}/accounts/login/",
            timeout=30,
            data={"username": "admin", "password": password, "csrfmiddlewaretoken": token},
            headers={"Referer": f"http://127.0.0.1:{port}/accounts/login/"},
        )
        assert signed_in.status_code == 200 and "log out" in signed_in.text
        # Self-play runs one worker per core on a machine without a GPU, below the others' priority.
        client_log = (data / "client" / "contribute.log").read_text()
        for worker in range(os.cpu_count() or 1):
            assert f"worker {worker} started on cpu" in client_log, client_log[-3000:]
        niceness = {_cmdline(pid): _niceness(pid) for pid in _children(data)}
        assert any("client contribute" in cmd and nice >= 10 for cmd, nice in niceness.items()), niceness
        assert all(nice < 10 for cmd, nice in niceness.items() if "manage.py train" in cmd), niceness
    finally:
        alive = process.poll() is None
        output = _stop(process, lines) if alive else "".join(lines) + process.stdout.read()
    assert alive, "the platform ended by itself:\n" + output
    assert "the client finishes its games" in output

    candidate, decision = decided[0]
    network = read_sqlite(
        db,
        f"SELECT n.name, p.name, n.train_step, n.rows_seen, n.file, n.state FROM networks_network n "
        f"JOIN networks_network p ON n.parent_id = p.id WHERE n.id = {candidate}",
    )[0]
    name, parent, train_step, rows_seen, file, state = network
    assert name.startswith("demo-tiny-s") and parent == "demo-random"
    assert train_step >= EXPORT and rows_seen >= WINDOW
    assert (data / "files" / file).is_file()
    assert state == {"accept": "accepted", "reject": "rejected"}[decision]
    games, rows = read_sqlite(db, "SELECT COUNT(*), SUM(rows) FROM games_traininggame")[0]
    assert games > 0 and rows >= WINDOW
    assert read_sqlite(db, "SELECT COUNT(*) FROM games_ratinggame")[0][0] >= 2
    line = read_sqlite(db, "SELECT samples, status FROM training_trainingline WHERE architecture = 'tiny'")[0]
    assert line == (line[0], "stopped") and line[0] >= EXPORT
    # The uploads had the games packed into shards, and the trainer read packed games from them.
    assert read_sqlite(db, "SELECT COUNT(*) FROM games_shard")[0][0] > 0
    packed = re.findall(r"files, (\d+) of them from shards\)", (data / "logs" / "trainer.log").read_text())
    assert packed and max(int(n) for n in packed) > 0, packed
    assert (data / "training" / "demo" / "tiny.ckpt").is_file()
    assert not list((data / "client" / "outbox" / "pending").iterdir())  # every finished game delivered

    assert not _children(data), "processes left running after the stop"

    # Started again, it continues the same run (and the trainer its checkpoint, whether or not new
    # data lets it train before the stop). Killed outright this time, it leaves no process behind.
    process, lines = _start(data, port, settings_file)
    assert "log in as admin with the password" in lines[-1]
    log = data / "logs" / "trainer.log"
    found = f"tiny: found its checkpoint at {line[0]} samples"
    deadline = time.monotonic() + 120
    while found not in log.read_text() and time.monotonic() < deadline:
        time.sleep(1)
    assert found in log.read_text()
    assert _children(data)
    process.kill()
    process.communicate(timeout=30)
    deadline = time.monotonic() + 180
    while _children(data) and time.monotonic() < deadline:
        time.sleep(1)
    assert not _children(data), "the platform's processes outlived it"
    assert read_sqlite(db, "SELECT samples FROM training_trainingline WHERE architecture = 'tiny'")[0][0] >= line[0]
    assert read_sqlite(db, "SELECT name FROM runs_run") == [("demo",)]
    assert read_sqlite(db, "SELECT COUNT(*) FROM games_traininggame")[0][0] >= games
