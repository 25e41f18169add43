"""The run command's game: two random GTP engines in child processes, refereed, printed as SGF."""

import json
import shlex
import subprocess
import sys

import pytest

from client.gtp.twogtp import GtpProcess, GtpProcessError, play_match, random_opening
from common.go.game import Game
from common.go.geometry import BLACK, WHITE
from common.go.rules import Rules
from common.go.sgf import parse_collection, read_sgf, record_from_tree
from server.ratings.matches import gnugo_path
from tests.e2e.needs import missing

pytestmark = pytest.mark.slow


def _twogtp(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m client twogtp`` with ``args``, its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "client", "twogtp", *args], capture_output=True, text=True, timeout=timeout
    )


def test_twogtp_plays_a_whole_9x9_game_and_prints_sgf():
    proc = _twogtp("--size", "9", "--seed", "5")
    assert proc.returncode == 0, proc.stderr
    rec = read_sgf(proc.stdout)
    assert rec.x_size == 9 and rec.rules == Rules.from_text("chinese") and rec.komi == 7
    game = rec.to_game()
    assert game.is_over and game.result.sgf() == rec.result
    assert f"{rec.result} after {game.num_moves} moves" in proc.stderr


def test_a_game_under_japanese_rules_ends_after_the_encore():
    proc = _twogtp("--size", "7", "--seed", "3", "--rules", "japanese", "--komi", "6")
    assert proc.returncode == 0, proc.stderr
    rec = read_sgf(proc.stdout)
    assert rec.rules == Rules.from_text("japanese")
    game = rec.to_game()
    # Both engines and the referee went through both encore phases: the game ended in the second,
    # counted by territory.
    assert game.is_over and game.encore_phase == 2 and game.result.sgf() == rec.result
    assert rec.result.startswith(("B+", "W+")) and not rec.result.endswith("R")


def test_an_engine_that_breaks_the_rules_loses():
    cheat = _engine("'A1' if cmd[0] == 'genmove' else ('false' if cmd[0] == 'known_command' else '')")
    honest = [sys.executable, "-m", "client", "gtp", "--seed", "1"]
    with GtpProcess(honest, "honest") as black, GtpProcess(cheat, "cheat") as white:
        match = play_match(black, white, (5, 5), Rules(), 0.5)
    # The cheat plays A1 every time: legal once at most, then occupied (or suicide).
    assert match.game.result.sgf() == "B+R"
    assert "illegal move" in match.reason


def test_a_missing_engine_is_reported():
    with pytest.raises(GtpProcessError, match="cannot start engine"):
        GtpProcess(["/nonexistent/engine"])


def test_several_games_alternate_colours_and_are_summed_up(tmp_path):
    summary = tmp_path / "summary.json"
    proc = _twogtp(
        *("--size", "5", "--komi", "0.5", "--games", "3", "--black-name", "one", "--white-name", "two"),
        *("--summary", str(summary)),
    )
    assert proc.returncode == 0, proc.stderr
    records = [record_from_tree(tree) for tree in parse_collection(proc.stdout)]
    assert [(r.black_player, r.white_player) for r in records] == [("one", "two"), ("two", "one"), ("one", "two")]
    body = json.loads(summary.read_text())
    assert body["engines"] == ["one", "two"] and body["games"] == 3
    wins = [0, 0]
    for r in records:
        winner = r.black_player if r.result.startswith("B+") else r.white_player
        wins[["one", "two"].index(winner)] += 1
    assert body["wins"] == wins and body["draws"] == body["no_result"] == 0  # komi 0.5: no draws
    assert f"one {wins[0]}, two {wins[1]}, drawn 0, no result 0 of 3 games" in proc.stderr


def test_pairs_of_games_start_from_their_own_random_opening(tmp_path):
    summary = tmp_path / "summary.json"
    proc = _twogtp("--size", "7", "--games", "4", "--openings", "3", "--seed", "4", "--summary", str(summary))
    assert proc.returncode == 0, proc.stderr
    openings = [tuple(record_from_tree(tree).moves[:3]) for tree in parse_collection(proc.stdout)]
    assert len(set(openings[0])) == 3 and [c for c, _ in openings[0]] == [BLACK, WHITE, BLACK]
    assert openings[0] == openings[1] and openings[2] == openings[3] and openings[0] != openings[2]
    body = json.loads(summary.read_text())
    assert body["openings"] == 3 and body["distinct_games"] == 4


def test_an_opening_is_legal_and_stops_when_a_side_must_pass():
    opening = random_opening((5, 5), Rules(), 0.5, 8, seed=1)
    game = Game(5, 5, Rules(), 0.5)
    for loc in opening:
        game.play(loc, game.to_move)
    assert len(opening) == 8 and len(set(opening)) == 8
    assert len(random_opening((2, 2), Rules(), 0.5, 10, seed=1)) < 10  # a 2x2 board fills up
    assert random_opening((7, 7), Rules(), 0.5, 4, seed=3) == random_opening((7, 7), Rules(), 0.5, 4, seed=3)


def _engine(answer: str, setup: str = "") -> list[str]:
    """A GTP engine in a few lines of Python: ``answer`` is the expression of its answer to the
    command ``cmd`` (its words), after ``setup``."""
    return [
        sys.executable,
        "-c",
        (
            f"import sys\n{setup}"
            "for line in sys.stdin:\n"
            "    cmd = line.split()\n"
            "    if not cmd: continue\n"
            f"    out = {answer}\n"
            "    sys.stdout.write('= ' + out + '\\n\\n'); sys.stdout.flush()\n"
            "    if cmd[0] == 'quit': break\n"
        ),
    ]


def _scripted(moves: list[str]) -> list[str]:
    """An engine that plays ``moves`` in turn, then passes."""
    return _engine(
        "(moves.pop(0) if moves else 'pass') if cmd[0] == 'genmove' else "
        "('false' if cmd[0] == 'known_command' else '')",
        setup=f"moves = {moves!r}\n",
    )


def test_a_referee_takes_off_the_stones_it_judges_dead(tmp_path):
    # White plays one stone and passes, black four and passes (a game GNU Go level 1 played as
    # black). Counted as they stand, the lone white stone makes every empty point neutral: white
    # wins by komi. GNU Go as referee judges it dead: black owns the board.
    gnugo = gnugo_path()
    if gnugo is None:
        missing("GNU Go", "apt-get install gnugo (.ci/run installs it)")
    black = shlex.join(_scripted(["B6", "E5", "G6", "F3"]))
    white = shlex.join(_scripted(["J3"]))
    results = {}
    for referee in ([], ["--referee", f"{gnugo} --mode gtp --chinese-rules"]):
        summary = tmp_path / f"summary{len(referee)}.json"
        engines = ["--black", black, "--white", white]
        proc = _twogtp("--komi", "7.5", *engines, "--summary", str(summary), *referee, timeout=120)
        assert proc.returncode == 0, proc.stderr
        results[bool(referee)] = (read_sgf(proc.stdout).result, proc.stderr, json.loads(summary.read_text()))
    assert results[False][0] == "W+4.5" and results[False][2]["referee"] is None
    assert results[True][0] == "B+73.5" and results[True][2]["wins"] == [1, 0]
    assert "two passes; 1 dead stone taken off by the referee)" in results[True][1]
    assert results[True][2]["referee"].endswith("--chinese-rules")


def test_a_referee_that_answers_nonsense_is_reported(tmp_path):
    nonsense = _engine("'true' if cmd[0] == 'known_command' else ('Z99' if cmd[0] == 'final_status_list' else '')")
    two_passes = ["--black", shlex.join(_scripted([])), "--white", shlex.join(_scripted([]))]
    proc = _twogtp(*two_passes, "--referee", shlex.join(nonsense), timeout=60)
    assert proc.returncode == 1 and "referee answered final_status_list dead with 'Z99'" in proc.stderr


def test_a_referee_judges_area_scoring_only():
    proc = _twogtp("--rules", "japanese", "--referee", "gnugo --mode gtp", timeout=60)
    assert proc.returncode == 1 and "--referee judges games under area scoring, not under 'japanese'" in proc.stderr
