"""The search behind GTP: genmove, tree reuse, KataGo's analysis commands; and match play."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import threading

import numpy as np
import pytest

from client.gtp.engine import GtpEngine
from client.gtp.search_player import SearchPlayer, analysis_line
from client.match.run import run_match
from client.search.engine import NullEvaluator
from common.go.game import Game
from common.go.geometry import parse_gtp_vertex
from common.go.sgf import read_sgf
from common.settings import MatchSettings

pytestmark = pytest.mark.kernels  # plays with the search: after the tests that need no kernel

KEYS = [
    "move",
    "visits",
    "edgeVisits",
    "utility",
    "winrate",
    "scoreMean",
    "scoreStdev",
    "scoreLead",
    "scoreSelfplay",
    "prior",
    "lcb",
    "utilityLcb",
    "weight",
    "order",
    "pv",
]


def parse_info(line: str) -> list[dict]:
    """The entries of a kata-analyze line; asserts KataGo's key order."""
    line = line.split(" ownership ")[0]
    assert line.startswith("info ")
    entries = []
    for chunk in line[len("info ") :].split(" info "):
        tokens = chunk.split()
        entry: dict = {}
        k = 0
        for key in KEYS[:-1]:
            assert tokens[k] == key, (tokens[k], key)
            entry[key] = tokens[k + 1] if key == "move" else float(tokens[k + 1])
            k += 2
        assert tokens[k] == "pv"
        entry["pv"] = tokens[k + 1 :]
        assert entry["scoreMean"] == entry["scoreLead"]  # KataGo's: the lead, under its older name
        entries.append(entry)
    return entries


def test_genmove_searches_and_keeps_its_tree():
    player = SearchPlayer(NullEvaluator(), 60, seed=1)
    engine = GtpEngine(player)
    assert engine.handle("boardsize 9") == "= \n\n".replace(" \n", "\n")
    move = engine.handle("genmove b").strip("= \n")
    game = engine.game
    assert game.num_moves == 1 and game.move_list[0][1] == parse_gtp_vertex(move, 9, 9)
    first = player.search.result(0)
    assert first.root_visits == 60
    reply = engine.handle("genmove w")
    assert reply.startswith("= ")
    # The second search started from the subtree the first one had grown under black's move.
    assert player.search.result(0).root_visits == 60
    engine.handle("clear_board")
    engine.handle("genmove b")
    assert player.search.result(0).root_visits == 60


def test_clear_cache_forgets_the_evaluations_and_the_tree():
    player = SearchPlayer(NullEvaluator(), 40, seed=1)
    engine = GtpEngine(player)
    engine.handle("boardsize 9")
    engine.handle("genmove b")
    assert player.search.cache.keys.any() and player.search.trees.status[0]["nodes"] > 1
    assert engine.handle("clear_cache") == "=\n\n"
    assert not player.search.cache.keys.any() and player.search.trees.status[0]["nodes"] == 1
    assert engine.handle("known_command clear_cache") == "= true\n\n"
    engine.handle("genmove w")
    assert player.search.result(0).root_visits == 40


def test_genmove_for_the_side_not_to_move_and_after_the_end():
    engine = GtpEngine(SearchPlayer(NullEvaluator(), 20, seed=1))
    engine.handle("boardsize 5")
    reply = engine.handle("genmove w")  # black has not moved: black passes first
    assert reply.startswith("= ")
    engine.handle("clear_board")
    engine.handle("play b pass")
    engine.handle("play w pass")
    assert engine.handle("genmove b") == "= pass\n\n"


def test_genmove_with_katagos_network_plays_japanese_rules_through_the_encore(shared):
    from client.evaluator import Evaluator
    from tests.client.test_evaluator import G170

    g170 = Evaluator.from_file(shared / G170, device="cpu")
    engine = GtpEngine(SearchPlayer(g170, 16, seed=1), evaluator=g170)
    for line in ("boardsize 5", "kata-set-rules japanese", "komi 0.5"):
        assert engine.handle(line) == "=\n\n"
    phases = []
    while not engine.game.is_over and len(phases) < 100:
        phases.append(engine.game.encore_phase)
        assert engine.handle(f"genmove {'b' if len(phases) % 2 else 'w'}").startswith("= ")
    # Two passes end each phase; the game ends in the second encore, counted by territory.
    assert engine.game.is_over and set(phases) == {0, 1, 2} and phases[-2:] == [2, 2]
    assert engine.game.move_list[-1][1] == engine.game.move_list[-2][1] == 0  # two passes
    result = engine.game.result
    assert engine.handle("final_score") == f"= {result.sgf()}\n\n"
    assert engine.handle("showboard").rstrip().endswith("encore phase 2")


def test_analysis_line_format():
    player = SearchPlayer(NullEvaluator(), 200, seed=3)
    game = Game(9)
    result = player.run_search(game, 200)
    line = analysis_line(
        result, game, player.principal_variation, player.settings, max_moves=5, ownership=np.zeros((9, 9))
    )
    entries = parse_info(line)
    assert len(entries) == 5
    assert [e["order"] for e in entries] == list(range(5))
    visits = [e["visits"] for e in entries]
    assert visits == sorted(visits, reverse=True)
    assert all(e["pv"][0] == e["move"] for e in entries)
    assert all(0.0 <= e["winrate"] <= 1.0 for e in entries)
    own = line.split(" ownership ")[1].split()
    assert len(own) == 81


def gtp_process(*extra: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "client", "gtp", "--model", "random", "--visits", "40", *extra]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)


def read_until_blank(proc) -> list[str]:
    lines = []
    while True:
        line = proc.stdout.readline()
        assert line != "", "the engine closed its output"
        if line == "\n":
            return lines
        lines.append(line.rstrip("\n"))


def test_kata_analyze_streams_until_the_next_command():
    proc = gtp_process("--max-analysis-visits", "100000")
    try:
        proc.stdin.write("boardsize 9\n")
        assert read_until_blank(proc) == ["="]
        proc.stdin.write("7 kata-analyze b 5 maxmoves 4\n")
        assert proc.stdout.readline() == "=7\n"
        infos = [proc.stdout.readline() for _ in range(3)]
        for line in infos:
            entries = parse_info(line.strip())
            assert 1 <= len(entries) <= 4
        proc.stdin.write("8 name\n")
        rest = read_until_blank(proc)  # the analysis response ends with a blank line
        assert all(line.startswith("info ") for line in rest)
        assert read_until_blank(proc) == ["=8 Sente"]
        proc.stdin.write("kata-genmove_analyze b 5\n")
        lines = read_until_blank(proc)
        assert lines[0] == "="
        assert lines[-1].startswith("play ")
        assert all(line.startswith("info ") for line in lines[1:-1])
        proc.stdin.write("list_stones black\n")
        assert read_until_blank(proc) == ["= " + lines[-1].split()[1]]
        proc.stdin.write("kata-analyze b 5 frobnicate 1\n")
        assert "unknown analysis key" in read_until_blank(proc)[0]
    finally:
        proc.stdin.write("quit\n")
        proc.stdin.flush()
        proc.wait(timeout=60)


def test_kata_analyze_answers_in_process_without_a_stream():
    engine = GtpEngine(SearchPlayer(NullEvaluator(), 20, seed=1))
    engine.handle("boardsize 7")
    assert engine.handle("kata-genmove_analyze b").startswith("= play ")
    assert engine.game.num_moves == 1


class SideValueEvaluator:
    """White always expects to win: value logits by the side to move (global input 5, komi from
    the side to move, is positive for white)."""

    def forward_raw(self, spatial, glob, width):
        n = spatial.shape[0]
        white = glob[:, 5] > 0
        value = np.zeros((n, 3), np.float32)
        value[:, 0] = np.where(white, 6.0, -6.0)
        value[:, 1] = -value[:, 0]
        return np.zeros((n, width * width + 1), np.float32), value, np.zeros((n, 4), np.float32)


def test_match_alternates_colours_writes_games_and_resigns(tmp_path):
    settings = MatchSettings(visits=16, board_sizes=(7,), board_size_weights=(1.0,), max_moves=60)
    summary = run_match(
        [SideValueEvaluator(), SideValueEvaluator()],
        ("a", "b"),
        settings,
        games=4,
        parallel=2,
        out_dir=tmp_path,
        seed=2,
    )
    assert summary.games == 4
    sgfs = sorted(tmp_path.glob("*.sgf"))
    assert len(sgfs) == 4
    records = [read_sgf(p.read_text()) for p in sgfs]
    assert [r.black_player for r in records] == ["a", "b", "a", "b"]
    for r in records:
        assert r.komi == 7.5 and not r.setup
        assert json.loads(r.comment)["settings"] == settings.to_dict()
        r.to_game()
    # Both players see white winning, so black resigns once 5 turns agree.
    assert summary.resignations == 4
    assert all(r.result == "W+R" for r in records)
    assert all(len(r.moves) == 5 for r in records)
    assert summary.wins == [2, 2] and summary.wins_as_black == [0, 0]
    data = json.loads((tmp_path / "match-2-summary.json").read_text())
    assert data["games"] == 4 and data["score"] == pytest.approx(0.5)


def test_match_resigns_only_when_both_sides_agree(tmp_path):
    settings = MatchSettings(visits=16, board_sizes=(7,), board_size_weights=(1.0,), max_moves=40)
    summary = run_match(
        [NullEvaluator(), SideValueEvaluator()],
        ("null", "white-wins"),
        settings,
        games=2,
        parallel=2,
        out_dir=tmp_path,
        seed=3,
    )
    assert summary.resignations == 0


def test_each_side_of_a_match_may_search_its_own_way(tmp_path):
    settings = MatchSettings(visits=12, board_sizes=(5,), board_size_weights=(1.0,), max_moves=30)

    def moves(searches=None) -> list:
        out = tmp_path / str(len(list(tmp_path.iterdir())))
        run_match([NullEvaluator(), NullEvaluator()], ("a", "b"), settings, 2, 2, out, seed=5, searches=searches)
        return [read_sgf(p.read_text()).moves for p in sorted(out.glob("*.sgf"))]

    same = moves()
    assert moves((settings.search, settings.search)) == same
    greedy = settings.search.replace(cpuct=0.001)  # nearly no exploration for network a
    assert moves((greedy, settings.search)) != same
    with pytest.raises(ValueError, match=r"searches\[1\]\.cpuct"):
        moves((settings.search, dataclasses.replace(settings.search, cpuct=-1.0)))


def test_match_summary_elo():
    from client.match.run import MatchSummary

    s = MatchSummary(names=("a", "b"), games=20, wins=[15, 5])
    elo, half = s.elo()
    assert elo == pytest.approx(-400 * np.log10(1 / 0.75 - 1))
    assert 100 < half < 400
    assert any("15-5" in line for line in s.lines())


def test_a_stopped_match_continues_with_the_games_it_had_not_finished(tmp_path):
    """A match stopped after some games (here at its third finished game, with others under way) and
    continued from the summary ``on_game`` last saw plays exactly the missing games, each once, and
    ends with the counts of the whole match."""
    from client.match.run import MatchSummary

    settings = MatchSettings(visits=8, board_sizes=(5,), board_size_weights=(1.0,), max_moves=40, komi=0.5)
    players = [NullEvaluator(), NullEvaluator()]
    whole = run_match(players, ("a", "b"), settings, games=8, parallel=4, out_dir=tmp_path / "whole", seed=6)
    assert sorted(whole.indices) == list(range(8))

    stop, kept = threading.Event(), []
    played = MatchSummary(names=("a", "b"))

    def on_game(name, sgf):
        kept.append(MatchSummary.from_dict(json.loads(json.dumps(played.to_dict()))))
        if len(kept) == 3:
            stop.set()

    run_match(
        players, ("a", "b"), settings, 8, 4, tmp_path / "first", seed=6, on_game=on_game, stop=stop, played=played
    )
    first = kept[-1]  # games of the step that finished the third may have finished with it
    assert 3 <= first.games < 8 and len(list((tmp_path / "first").glob("*.sgf"))) == first.games
    rest = run_match(players, ("a", "b"), settings, 8, 4, tmp_path / "rest", seed=6, played=first)
    assert sorted(rest.indices) == list(range(8)) and rest.games == 8
    done_first = {p.name for p in (tmp_path / "first").glob("*.sgf")}
    done_rest = {p.name for p in (tmp_path / "rest").glob("*.sgf")}
    assert not done_first & done_rest and len(done_first | done_rest) == 8
    assert rest.wins[0] + rest.wins[1] + rest.draws == 8 and rest.seconds >= first.seconds
    assert run_match(players, ("a", "b"), settings, 8, 4, None, seed=6, played=rest) is rest  # nothing left
    with pytest.raises(ValueError, match="cannot continue this match"):
        run_match(players, ("x", "b"), settings, 8, 4, None, seed=6, played=MatchSummary.from_dict(first.to_dict()))
    with pytest.raises(ValueError, match="cannot continue this match"):
        run_match(players, ("a", "b"), settings, 2, 4, None, seed=6, played=MatchSummary.from_dict(first.to_dict()))


def test_a_match_ends_once_every_point_is_pass_alive(tmp_path):
    """With end_when_all_pass_alive (the default) a game whose result can no longer change ends there,
    with the area count's result; without it, such games go on to two passes or the move limit."""
    from common.go.geometry import PASS

    def games(end: bool) -> list:
        out = tmp_path / str(end)
        settings = MatchSettings(
            visits=8, board_sizes=(5,), board_size_weights=(1.0,), max_moves=120, komi=0.5, end_when_all_pass_alive=end
        )
        run_match([NullEvaluator(), NullEvaluator()], ("a", "b"), settings, games=6, parallel=6, out_dir=out, seed=4)
        return [read_sgf(p.read_text()) for p in sorted(out.glob("*.sgf"))]

    early = 0
    for record in games(True):
        passes = [m for _, m in record.moves[-2:]].count(PASS) == 2
        game = record.to_game()
        if not passes and record.result != "Void":
            early += 1
            assert game.end_if_all_pass_alive() and game.result.sgf() == record.result
    assert early > 0
    for record in games(False):
        passes = [m for _, m in record.moves[-2:]].count(PASS) == 2
        assert passes or record.result == "Void" or record.result.endswith("+R")
