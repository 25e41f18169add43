"""The GTP engine with a network, as a GUI starts it: a child process speaking GTP."""

import html
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from client.gtp.twogtp import GtpProcess

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def test_policy_player_and_raw_outputs_over_gtp(shared):
    model = shared / "models" / "g170-b6c96-s175395328-d26788732.bin.gz"
    cmd = [sys.executable, "-m", "client", "gtp", "--player", "policy", "--model", str(model), "--device", "cpu"]
    with GtpProcess(cmd, "sente") as engine:
        engine.send("boardsize 9")
        engine.send("clear_board")
        engine.send("komi 7")
        move = engine.send("genmove b")
        assert move.upper() in {"E5", "D5", "E4", "F5", "E6", "C3", "G7", "C7", "G3", "D4", "F4", "D6", "F6"}
        raw = engine.send("kata-raw-nn 0").splitlines()
        assert raw[0] == "symmetry 0" and raw[1].startswith("whiteWin ")
        assert len(raw) == 10 + 1 + 9 + 1 + 1 + 9
        ok, text = engine.try_send("kata-raw-nn 9")
        assert not ok and "0..7" in text


def test_policy_player_needs_a_network():
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-m", "client", "gtp", "--player", "policy"],
        input="quit\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "needs a network" in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "client", "gtp", "--model", "/nonexistent.safetensors"],
        input="quit\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "nonexistent.safetensors" in proc.stderr


def test_search_player_and_analysis_over_gtp(shared):
    model = shared / "models" / "g170-b6c96-s175395328-d26788732.bin.gz"
    cmd = [sys.executable, "-m", "client", "gtp", "--model", str(model), "--visits", "64", "--device", "cpu"]
    with GtpProcess(cmd, "sente") as engine:
        engine.send("boardsize 9")
        engine.send("komi 7")
        engine.send("play b e5")
        # A real network answers a centre stone from the usual points, never with a pass.
        move = engine.send("genmove w")
        assert move.upper() not in ("PASS", "RESIGN")
        proc = engine.proc
        proc.stdin.write("kata-analyze b 10 maxmoves 3 ownership true\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "="
        line = proc.stdout.readline().strip()
        assert line.startswith("info move ") and " pv " in line and " ownership " in line
        assert len(line.split(" ownership ")[1].split()) == 81
        proc.stdin.write("name\n")  # the next command ends the analysis: its blank line, then the answer
        proc.stdin.flush()
        while line != "":
            line = proc.stdout.readline().strip()
            assert line == "" or line.startswith("info move ")
        assert proc.stdout.readline().strip() == "= Sente"
        assert proc.stdout.readline().strip() == ""
        assert engine.send("list_stones white")  # still answering normally


def _releases_page() -> str:
    from django.template.loader import render_to_string

    return render_to_string("dashboard/releases.html", {"page": None, "paginator": None})


def test_the_releases_page_command_plays_with_the_network(shared, tmp_path):
    """The command line the website's releases page gives Go players, run as given (the installed
    ``sente`` command, here the checkout's in .venv/bin, and the downloaded file in place of
    FILE.safetensors): an engine that answers and plays with the network's search
    (tests/client/test_gtp_cli.py checks its visits)."""
    from client.__main__ import GTP_VISITS

    page = _releases_page()
    command = html.unescape(re.search(r'<code id="gtp-command">([^<]+)</code>', page).group(1)).strip()
    arguments = html.unescape(re.search(r'<code id="gtp-arguments">([^<]+)</code>', page).group(1)).strip()
    argv = shlex.split(command)
    assert argv[0] == "sente" and argv[1:] == shlex.split(arguments)  # Sabaki's fields
    assert f"searches {GTP_VISITS} visits per move" in " ".join(page.split())
    assert "FILE.safetensors" in argv
    net = tmp_path / "net.safetensors"
    model = shared / "models" / "g170-b6c96-s175395328-d26788732.bin.gz"
    subprocess.run(
        [sys.executable, "-m", "client", "convert-katago", str(model), str(net)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    sente = Path(sys.executable).parent / "sente"
    cmd = [str(sente) if a == "sente" else str(net) if a == "FILE.safetensors" else a for a in argv]
    with GtpProcess(cmd, "sente") as engine:
        assert engine.send("name") == "Sente"
        assert engine.send("known_command kata-analyze") == "true"  # the search player, not the random one
        engine.send("boardsize 9")
        engine.send("komi 7")
        engine.send("play b e5")
        move = engine.send("genmove w")
        assert move.upper() not in ("PASS", "RESIGN")


def test_the_releases_page_says_which_guis_work():
    text = " ".join(re.sub(r"<[^>]+>", " ", _releases_page()).split())
    # KaTrain's KataGo executable (tests/client/test_analysis.py starts it as KaTrain does)
    assert "sente-katago (with its full path) as the KataGo executable path" in text
    assert os.access(Path(sys.executable).parent / "sente-katago", os.X_OK)
    assert "Sabaki" in text and "Lizzie's analysis uses the engine's kata-analyze" in text
