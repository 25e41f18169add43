"""Ctrl-C in ``selfplay`` and ``match``: the summary of what was done, the finished games' files,
no traceback."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.kernels  # plays with the search: after the tests that need no kernel

ROOT = Path(__file__).resolve().parents[2]
COMMON = ["--games", "1000", "--parallel", "4", "--size", "7", "--seed", "3", "--device", "cpu", "--no-compile"]


def interrupted(args: list[str], out: Path, signals: int = 1) -> subprocess.CompletedProcess:
    """Run the client, send SIGINT once its first game's SGF is written, and wait for it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "client", *args, "--out", str(out), *COMMON],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 240
    while not list(out.glob("*.sgf")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()
    for _ in range(signals):
        proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=240)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


@pytest.mark.parametrize(
    "command",
    [
        ["selfplay", "--model", "random", "--visits", "8,2", "--quiet"],
        ["match", "random", "random", "--visits", "4"],
    ],
)
def test_ctrl_c_prints_the_summary_and_keeps_the_finished_games(command, tmp_path):
    done = interrupted(command, tmp_path)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr
    assert "stopping: the games in play are dropped (Ctrl-C again to stop at once)" in done.stderr
    finished = len(list(tmp_path.glob("*.sgf")))
    assert finished >= 1
    assert f"stopped early: {finished} of 1000 games finished" in done.stdout
    summary = done.stdout.splitlines()[0]
    assert (f"games {finished}" in summary) if command[0] == "selfplay" else (f"in {finished} games" in summary)


def test_a_second_ctrl_c_stops_at_once_without_a_traceback(tmp_path):
    done = interrupted(["selfplay", "--model", "random", "--visits", "8,2", "--quiet"], tmp_path, signals=2)
    assert done.returncode == 130 and "Traceback" not in done.stderr
