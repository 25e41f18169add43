"""The run command's game: two random GTP engines in child processes, refereed, printed as SGF."""

import subprocess
import sys

import pytest

from client.gtp.twogtp import GtpProcess, GtpProcessError, play_match
from common.go.rules import Rules
from common.go.sgf import read_sgf

pytestmark = pytest.mark.slow


def test_twogtp_plays_a_whole_9x9_game_and_prints_sgf():
    proc = subprocess.run([sys.executable, "-m", "client", "twogtp", "--size", "9", "--seed", "5"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rec = read_sgf(proc.stdout)
    assert rec.x_size == 9 and rec.rules == Rules.from_text("chinese") and rec.komi == 7
    game = rec.to_game()
    assert game.is_over and game.result.sgf() == rec.result
    assert f"{rec.result} after {game.num_moves} moves" in proc.stderr


def test_an_engine_that_breaks_the_rules_loses():
    cheat = [sys.executable, "-c", (
        "import sys\n"
        "for line in sys.stdin:\n"
        "    cmd = line.split()\n"
        "    if not cmd: continue\n"
        "    out = 'A1' if cmd[0] == 'genmove' else ('false' if cmd[0] == 'known_command' else '')\n"
        "    sys.stdout.write('= ' + out + '\\n\\n'); sys.stdout.flush()\n"
        "    if cmd[0] == 'quit': break\n"
    )]
    honest = [sys.executable, "-m", "client", "gtp", "--seed", "1"]
    with GtpProcess(honest, "honest") as black, GtpProcess(cheat, "cheat") as white:
        match = play_match(black, white, (5, 5), Rules(), 0.5)
    # The cheat plays A1 every time: legal once at most, then occupied (or suicide).
    assert match.game.result.sgf() == "B+R"
    assert "illegal move" in match.reason


def test_a_missing_engine_is_reported():
    with pytest.raises(GtpProcessError, match="cannot start engine"):
        GtpProcess(["/nonexistent/engine"])
