"""Self-play from the command line with KataGo's g170 network: files, rows and the summary."""

import subprocess
import sys

import numpy as np
import pytest

from common.data.validate import validate_rows
from common.go.sgf import read_sgf

pytestmark = pytest.mark.slow


def test_selfplay_command_with_a_real_network(shared, tmp_path):
    model = shared / "models" / "g170-b6c96-s175395328-d26788732.bin.gz"
    cmd = [
        sys.executable,
        "-m",
        "client",
        "selfplay",
        "--model",
        str(model),
        "--games",
        "2",
        "--parallel",
        "2",
        "--visits",
        "24,6",
        "--size",
        "9",
        "--out",
        str(tmp_path),
        "--seed",
        "4",
        "--no-compile",
        "--quiet",
        "--device",
        "cpu",
        "--groups",
        "2",
    ]  # two threads sharing the network, as on a GPU
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert "games 2" in proc.stdout and "visits/s" in proc.stdout
    sgfs = sorted(tmp_path.glob("*.sgf"))
    assert len(sgfs) == 2
    for path in sgfs:
        game = read_sgf(path.read_text()).to_game()
        assert game.num_moves > 10
    for path in tmp_path.glob("*.npz"):
        report = validate_rows(path)
        assert report.ok, report.errors
        with np.load(path) as z:
            assert z["policyTargetsNCMove"].shape[0] == report.num_rows


def test_selfplay_command_refuses_bad_input(tmp_path):
    bad = tmp_path / "settings.json"
    bad.write_text('{"visits": 10, "cheap_visits": 20}')
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "client",
            "selfplay",
            "--model",
            "random",
            "--games",
            "1",
            "--out",
            str(tmp_path),
            "--settings",
            str(bad),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    assert "cheap_visits" in proc.stderr and "must not exceed visits" in proc.stderr
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "client",
            "selfplay",
            "--model",
            "random",
            "--games",
            "1",
            "--out",
            str(tmp_path),
            "--visits",
            "10,20",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2 and "cannot exceed" in proc.stderr
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "client",
            "selfplay",
            "--model",
            "random",
            "--games",
            "1",
            "--out",
            str(tmp_path),
            "--groups",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2 and "--groups" in proc.stderr
