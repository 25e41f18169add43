"""KataGo's analysis engine protocol (``python -m client analysis``, ``sente-katago``): queries in,
one JSON answer per analyzed turn out, errors and warnings naming the query's field, the actions,
and KaTrain's way of starting KataGo."""

from __future__ import annotations

import io
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from client.analysis import AnalysisConfig, AnalysisEngine
from client.analysis.engine import position_hashes
from client.analysis.katago import KataGoCommandError, parse_katago_command
from client.search.engine import NullEvaluator
from common.go.game import Game
from common.go.geometry import BLACK, WHITE, parse_gtp_vertex

pytestmark = pytest.mark.kernels  # plays with the search: after the tests that need no kernel

ROOT = Path(__file__).resolve().parents[2]
VERTEX = re.compile(r"^(pass|[A-HJ-T](1[0-9]|[1-9]))$")
MOVE_KEYS = {
    "move",
    "visits",
    "winrate",
    "scoreMean",
    "scoreStdev",
    "scoreLead",
    "scoreSelfplay",
    "prior",
    "utility",
    "lcb",
    "utilityLcb",
    "order",
    "pv",
    "edgeVisits",
}
ROOT_KEYS = {"winrate", "scoreLead", "scoreSelfplay", "utility", "visits", "currentPlayer", "thisHash", "symHash"}


def query(qid: str = "q", moves=(), size=(9, 9), **fields) -> dict:
    return {
        "id": qid,
        "moves": [list(m) for m in moves],
        "rules": "chinese",
        "komi": 7.5,
        "boardXSize": size[0],
        "boardYSize": size[1],
        **fields,
    }


def ask(engine: AnalysisEngine, *lines) -> list[dict]:
    """Feed the lines (queries as dicts, or raw text), analyze what they queued, return the answers."""
    start = engine.out.tell()
    for line in lines:
        engine.handle_line(line if isinstance(line, str) else json.dumps(line))
    engine.process_pending()
    engine.out.seek(start)
    answers = [json.loads(text) for text in engine.out.read().splitlines()]
    engine.out.seek(0, io.SEEK_END)
    return answers


def make_engine(evaluator=None, **config) -> AnalysisEngine:
    max_visits = config.pop("cap", 2000)
    return AnalysisEngine(
        evaluator or NullEvaluator(), AnalysisConfig(**config), seed=1, max_visits=max_visits, out=io.StringIO()
    )


def test_a_query_is_answered_with_katago_fields():
    moves = [("B", "E5"), ("W", "C3")]
    (answer,) = ask(make_engine(), query("first", moves, maxVisits=40))
    assert answer["id"] == "first" and answer["turnNumber"] == 2 and answer["isDuringSearch"] is False
    infos = answer["moveInfos"]
    assert infos and all(set(m) >= MOVE_KEYS for m in infos)
    assert set(answer["rootInfo"]) >= ROOT_KEYS
    root = answer["rootInfo"]
    assert root["visits"] == 40 and root["currentPlayer"] == "B"
    # The root counts its own evaluation as a visit: its children have the rest.
    assert 38 <= sum(m["visits"] for m in infos) <= 40
    assert [m["order"] for m in infos] == list(range(len(infos)))
    assert [m["visits"] for m in infos] == sorted((m["visits"] for m in infos), reverse=True)
    for m in infos:
        assert VERTEX.match(m["move"]) and m["move"] not in ("E5", "C3")
        assert m["pv"][0] == m["move"] and all(VERTEX.match(v) for v in m["pv"])
        assert 0.0 <= m["winrate"] <= 1.0 and 0.0 <= m["prior"] <= 1.0
        assert m["scoreMean"] == m["scoreLead"]  # KataGo reports the lead as scoreMean too
    assert 0.0 <= root["winrate"] <= 1.0
    assert re.fullmatch(r"[0-9A-F]{32}", root["thisHash"]) and re.fullmatch(r"[0-9A-F]{32}", root["symHash"])
    assert "ownership" not in answer and "policy" not in answer


def test_analyze_turns_gives_one_answer_per_turn():
    answers = ask(
        make_engine(), query("g", [("B", "E5"), ("W", "C3"), ("B", "G7")], analyzeTurns=[3, 0, 1], maxVisits=10)
    )
    assert [a["turnNumber"] for a in answers] == [0, 1, 3]
    assert [a["rootInfo"]["currentPlayer"] for a in answers] == ["B", "W", "W"]
    assert len({a["rootInfo"]["thisHash"] for a in answers}) == 3
    assert all(a["rootInfo"]["visits"] == 10 for a in answers)
    # Without analyzeTurns only the last turn; the config's maxVisits without one in the query.
    (last,) = ask(make_engine(max_visits=12), query("h", [("B", "E5"), ("W", "C3")]))
    assert last["turnNumber"] == 2 and last["rootInfo"]["visits"] == 12


def test_ownership_and_policy_have_a_value_per_point_row_by_row_from_the_top_left():
    # 9 columns, 7 rows: A7 is the top-left point (index 0), B7 its right neighbour (1), A6 the point
    # below it (9).
    q = query(
        "own",
        [("B", "B7"), ("W", "A6")],
        size=(9, 7),
        maxVisits=30,
        includeOwnership=True,
        includePolicy=True,
        includeMovesOwnership=True,
    )
    (answer,) = ask(make_engine(), q)
    assert len(answer["ownership"]) == 63
    policy = answer["policy"]
    assert len(policy) == 64
    assert policy[1] == -1 and policy[9] == -1  # occupied: illegal
    assert policy.count(-1) == 2 and policy[63] >= 0  # pass is legal
    assert sum(p for p in policy if p >= 0) == pytest.approx(1.0, abs=1e-4)
    assert all(len(m["ownership"]) == 63 for m in answer["moveInfos"])


class WhiteWins:
    """A network that sees white winning every position by 5 points and owning every point by half
    (its values, as a network's, from the side to move)."""

    def forward_raw(self, spatial, glob, width):
        n = spatial.shape[0]
        white = glob[:, 5] > 0  # komi from the side to move: positive for white
        value = np.zeros((n, 3), np.float32)
        value[:, 0] = np.where(white, 6.0, -6.0)
        value[:, 1] = -value[:, 0]
        misc = np.zeros((n, 4), np.float32)
        misc[:, 0] = misc[:, 2] = np.where(white, 0.25, -0.25)  # score mean and lead, in 20 points
        return np.zeros((n, width * width + 1), np.float32), value, misc

    def evaluate(self, games, perspective="side"):
        assert perspective == "white"
        return [type("Eval", (), {"ownership": np.full((g.y_size, g.x_size), 0.5)})() for g in games]


def test_values_and_ownership_from_the_side_to_move_unless_reported_for_a_colour():
    black_to_move = query("b", [], maxVisits=20, includeOwnership=True)
    white_to_move = query("w", [("B", "E5")], maxVisits=20, includeOwnership=True)

    def views(engine, **fields):
        answers = ask(engine, dict(black_to_move, **fields), dict(white_to_move, **fields))
        return {a["id"]: a for a in answers}

    def winning(a: dict, ahead: bool) -> bool:
        """Do all the answer's values say the side they are reported for wins by 5 (ahead) or loses by 5?"""
        entries = [a["rootInfo"], *a["moveInfos"]]
        good = all((e["winrate"] > 0.9) == ahead and (e["winrate"] < 0.1) != ahead for e in entries)
        good &= all(e["scoreLead"] == pytest.approx(5.0 if ahead else -5.0, abs=0.1) for e in entries)
        good &= all(e["scoreSelfplay"] == pytest.approx(5.0 if ahead else -5.0, abs=0.1) for e in entries)
        return good and set(a["ownership"]) == {0.5 if ahead else -0.5}

    side = views(make_engine(WhiteWins()))  # KataGo's analysis engine's default: the side to move
    assert winning(side["b"], False) and winning(side["w"], True)
    black = views(make_engine(WhiteWins()), overrideSettings={"reportAnalysisWinratesAs": "BLACK"})  # KaTrain's
    assert winning(black["b"], False) and winning(black["w"], False)
    white = views(make_engine(WhiteWins(), report_as=WHITE))
    assert winning(white["b"], True) and winning(white["w"], True)


@pytest.mark.parametrize(
    "bad, field",
    [
        (query(rules="no-such-rules"), "rules"),
        (query(rules=["chinese"]), "rules"),
        (query(moves=[["B", "E5"], ["W", "E5"]]), "moves"),  # occupied
        (query(moves=[["B", "Z9"]]), "moves"),
        (query(moves=[["X", "E5"]]), "moves"),
        (dict(query(), moves="E5"), "moves"),
        ({k: v for k, v in query().items() if k != "moves"}, "moves"),
        ({k: v for k, v in query().items() if k != "boardXSize"}, "boardXSize"),
        (query(size=(9, 25)), "boardYSize"),
        (query(analyzeTurns=[1]), "analyzeTurns"),
        (query(komi=7.3), "komi"),
        (query(komi=1e308), "komi"),
        (query(rules={"ko": "SIMPLE", "komi": 1e308}), "rules"),
        (query(maxVisits=0), "maxVisits"),
        (query(includeOwnership="yes"), "includeOwnership"),
        (query(initialPlayer="X"), "initialPlayer"),
        (query(initialStones=[["B", "pass"]]), "initialStones"),
        (query(overrideSettings={"maxVisits": "many"}), "overrideSettings"),
        (query(reportDuringSearchEvery=-1), "reportDuringSearchEvery"),
    ],
)
def test_a_bad_query_is_an_error_naming_its_field_and_the_next_query_is_answered(bad, field):
    engine = make_engine()
    first, second = ask(engine, bad, query("next", maxVisits=5))
    assert first["id"] == "q" and first["field"] == field and first["error"]
    assert "turnNumber" not in first
    assert second["id"] == "next" and second["rootInfo"]["visits"] == 5


def test_an_illegal_move_is_named_as_katago_names_it():
    (error,) = ask(make_engine(), query(moves=[["B", "E5"], ["W", "D4"], ["B", "E5"]]))
    assert error["field"] == "moves" and error["error"].startswith("Illegal move 2: B E5")


def test_lines_that_are_no_query():
    answers = ask(make_engine(), "not json", "[1, 2]", json.dumps({"moves": []}), json.dumps({"id": 7}), "   ")
    assert len(answers) == 4 and all("error" in a for a in answers)
    assert all("id" not in a for a in answers)
    assert answers[2]["field"] == "id" and answers[3]["field"] == "id"


def test_warnings_name_the_field_and_the_query_is_still_answered():
    engine = make_engine(cap=30)
    answers = ask(
        engine,
        query(
            "jp",
            rules="japanese",
            komi=6.5,
            maxVisits=100,
            overrideSettings={"maxTime": 8, "wideRootNoise": 0.02},
            avoidMoves=[{"player": "B", "moves": ["A1"], "untilDepth": 1}],
        ),
    )
    warnings = {a["field"]: a["warning"] for a in answers if "warning" in a}
    assert set(warnings) == {"overrideSettings", "maxVisits", "avoidMoves"}  # Japanese rules are played
    assert "wideRootNoise" in warnings["overrideSettings"] and "maxTime" not in warnings["overrideSettings"]
    (answer,) = [a for a in answers if "moveInfos" in a]
    assert answer["id"] == "jp" and answer["rootInfo"]["visits"] == 30  # the engine's most
    assert all(a["id"] == "jp" for a in answers)


def test_a_position_in_the_encore_is_analyzed_by_territory_counting():
    # Black's lone stone, then passes: encore phase 2, where Black's pass ends the game with 24
    # points of territory against 0.5 komi; a stone played now would fill one of them.
    moves = [("B", "C3"), ("W", "pass"), ("B", "pass"), ("W", "pass"), ("B", "pass"), ("W", "pass")]
    (answer,) = ask(make_engine(), query("encore", moves, size=(5, 5), rules="japanese", komi=0.5, maxVisits=200))
    best = answer["moveInfos"][0]
    assert best["move"] == "pass" and best["winrate"] == 1.0 and best["scoreLead"] == 23.5
    # A ko captured in the encore: White's move at the recapture point is a pass for ko, which the
    # search may choose and the query may name.
    ko = [("B", "B5"), ("W", "C5"), ("B", "A4"), ("W", "B4"), ("B", "B3"), ("W", "D4"), ("B", "E1"), ("W", "C3")]
    ko += [("B", "pass"), ("W", "pass"), ("B", "C4")]
    answers = ask(make_engine(), query("ko", [*ko, ("W", "B4")], size=(5, 5), rules="japanese", analyzeTurns=[11, 12]))
    assert [a["turnNumber"] for a in answers] == [11, 12]
    assert "B4" in {m["move"] for m in answers[0]["moveInfos"]}
    assert answers[1]["rootInfo"]["currentPlayer"] == "B"
    # White retakes, Black recaptures, White passes: Black's capture at C4 from this same position
    # was made before in this phase, and the search leaves it out.
    again = [*ko, ("W", "B4"), ("B", "pass"), ("W", "B4"), ("B", "C4"), ("W", "pass")]
    (answer,) = ask(make_engine(), query("ban", again, size=(5, 5), rules="japanese", maxVisits=100))
    assert answer["rootInfo"]["currentPlayer"] == "B" and "C4" not in {m["move"] for m in answer["moveInfos"]}


def test_g170_analyzes_katagos_territory_game_in_the_encore_to_its_result(shared):
    """KataGo's 7x7 game under Japanese-style rules (W+2), analyzed with its own network at the start
    of each encore phase and before the pass that ends it: pass is best, and the lead is the result."""
    from client.evaluator import Evaluator
    from tests.client.test_evaluator import G170

    r = json.loads((shared / "golden" / "katago_territory_games_sample.jsonl").read_text().splitlines()[0])
    phases = r["encore_phase_before_each_move"]
    turns = [phases.index(1), phases.index(2), len(r["moves"]) - 1]
    engine = make_engine(Evaluator.from_file(shared / G170, device="cpu"), report_as=WHITE)
    q = {
        "id": "encore",
        "moves": r["moves"],
        "rules": r["rules"],
        "komi": r["komi"],
        "boardXSize": r["size"],
        "boardYSize": r["size"],
        "maxVisits": 100,
        "analyzeTurns": turns,
    }
    answers = ask(engine, q)
    assert [a["turnNumber"] for a in answers] == turns and r["white_minus_black"] == 2
    for a in answers:
        assert a["moveInfos"][0]["move"] == "pass", a["turnNumber"]
        assert abs(a["rootInfo"]["scoreLead"] - 2) < 0.5, a["turnNumber"]
    assert answers[-1]["moveInfos"][0]["scoreLead"] == 2.0  # White's pass ends the game: counted exactly


def test_initial_stones_and_player():
    q = query("setup", initialStones=[["B", "C3"], ["B", "G7"]], maxVisits=8)
    (answer,) = ask(make_engine(), q)  # black handicap stones: white moves first
    assert answer["rootInfo"]["currentPlayer"] == "W" and answer["turnNumber"] == 0
    assert all(m["move"] not in ("C3", "G7") for m in answer["moveInfos"])
    (answer,) = ask(make_engine(), dict(q, initialPlayer="B"))
    assert answer["rootInfo"]["currentPlayer"] == "B"
    (answer,) = ask(make_engine(), query("xy", [("B", "(0,0)")], maxVisits=8))  # KataGo's (x,y) form
    assert "A9" not in {m["move"] for m in answer["moveInfos"]}


def test_actions():
    engine = make_engine()
    (version,) = ask(engine, {"id": "v", "action": "query_version"})
    assert version["id"] == "v" and version["action"] == "query_version" and version["version"]
    (cleared,) = ask(engine, {"id": "c", "action": "clear_cache"})
    assert cleared == {"id": "c", "action": "clear_cache"}
    # A terminated query that waits is answered noResults at once; the others are analyzed.
    answers = ask(
        engine,
        query("one", maxVisits=5),
        query("two", maxVisits=5),
        query("three", maxVisits=5),
        {"id": "t", "action": "terminate", "terminateId": "one"},
        {"id": "t2", "action": "terminate_all", "turnNumbers": [3]},
    )
    assert answers[0] == {"id": "one", "isDuringSearch": False, "noResults": True, "turnNumber": 0}
    assert answers[1] == {"id": "t", "action": "terminate", "terminateId": "one"}
    assert answers[2]["id"] == "t2"
    assert [a["id"] for a in answers[3:]] == ["two", "three"]
    errors = ask(
        engine,
        {"id": "x", "action": "terminate"},
        {"id": "y", "action": "frobnicate"},
        {"id": "z", "action": "terminate_all", "turnNumbers": "all"},
    )
    assert [(e["id"], e["field"]) for e in errors] == [("x", "terminateId"), ("y", "action"), ("z", "turnNumbers")]


def test_priority_orders_the_queue():
    answers = ask(
        make_engine(),
        query("low", maxVisits=3),
        query("high", maxVisits=3, priority=5),
        query("many", [("B", "E5")], analyzeTurns=[0, 1], priorities=[1, 9], maxVisits=3),
    )
    assert [(a["id"], a["turnNumber"]) for a in answers] == [("many", 1), ("high", 0), ("many", 0), ("low", 0)]


def test_a_finished_game_is_answered_with_its_result():
    (answer,) = ask(
        make_engine(), query("end", [("B", "pass"), ("W", "pass")], komi=7, includeOwnership=True, includePolicy=True)
    )
    assert answer["moveInfos"] == [] and answer["rootInfo"]["currentPlayer"] == "B"
    assert answer["rootInfo"]["winrate"] == 0.0 and answer["rootInfo"]["scoreLead"] == -7.0  # white by komi
    assert len(answer["ownership"]) == 81 and len(answer["policy"]) == 82


def test_symmetric_positions_share_their_sym_hash():
    def game(vertex):
        g = Game(9)
        g.play(parse_gtp_vertex(vertex, 9, 9), BLACK)
        return g

    a, b, c = position_hashes(game("D4")), position_hashes(game("F6")), position_hashes(game("D5"))
    assert a[0] != b[0] and a[1] == b[1]
    assert c[1] != a[1]


class SlowNull(NullEvaluator):
    """The null network, slowly: a search of thousands of visits takes seconds."""

    def forward_raw(self, spatial, glob, width):
        time.sleep(0.003)
        return super().forward_raw(spatial, glob, width)


class Lines:
    """An output stream whose lines can be awaited."""

    def __init__(self) -> None:
        self.lines: queue.Queue[dict] = queue.Queue()
        self._partial = ""

    def write(self, text: str) -> None:
        self._partial += text
        while "\n" in self._partial:
            line, self._partial = self._partial.split("\n", 1)
            self.lines.put(json.loads(line))

    def flush(self) -> None:
        pass

    def get(self) -> dict:
        return self.lines.get(timeout=30)


def test_reports_during_the_search_and_terminate_stops_it():
    out = Lines()
    engine = AnalysisEngine(SlowNull(), AnalysisConfig(), seed=1, max_visits=20000, out=out)
    read_fd, write_fd = os.pipe()
    stdin, feed = os.fdopen(read_fd, "r"), os.fdopen(write_fd, "w")
    runner = threading.Thread(target=engine.run, args=(stdin,), daemon=True)
    runner.start()
    try:
        feed.write(json.dumps(query("long", size=(19, 19), maxVisits=20000, reportDuringSearchEvery=0.1)) + "\n")
        feed.write(json.dumps(query("next", maxVisits=5)) + "\n")
        feed.flush()
        during = out.get()
        assert during["id"] == "long" and during["isDuringSearch"] is True
        assert 0 < during["rootInfo"]["visits"] < 20000
        feed.write(json.dumps({"id": "stop", "action": "terminate", "terminateId": "long"}) + "\n")
        feed.flush()
        answers = [out.get()]
        while answers[-1].get("id") != "next":
            answers.append(out.get())
        by_id = {a["id"]: a for a in answers if not a.get("isDuringSearch")}
        assert by_id["stop"]["action"] == "terminate"
        final = by_id["long"]  # what the search had when it stopped
        assert final["isDuringSearch"] is False and final["rootInfo"]["visits"] < 20000
        assert by_id["next"]["rootInfo"]["visits"] == 5
    finally:
        feed.close()  # end of input: the engine finishes and returns
        runner.join(timeout=30)
    assert not runner.is_alive()


def test_max_time_ends_a_search():
    engine = make_engine(SlowNull(), cap=20000)
    start = time.monotonic()
    (answer,) = ask(engine, query("t", size=(19, 19), maxVisits=20000, overrideSettings={"maxTime": 0.3}))
    assert time.monotonic() - start < 10
    assert 0 < answer["rootInfo"]["visits"] < 20000


# --- the command line ------------------------------------------------------------------------------
def run_engine(cmd: list[str], lines: list[str], timeout: float = 120) -> tuple[list[dict], str]:
    proc = subprocess.run(
        cmd, input="".join(line + "\n" for line in lines), capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


def test_the_analysis_command(network):
    cmd = [sys.executable, "-m", "client", "analysis", "--model", str(network), "--device", "cpu", "--visits", "16"]
    lines = [
        json.dumps(query("a", [("B", "E5")], includeOwnership=True, includePolicy=True)),
        json.dumps(query("bad", rules="no-such-rules")),
        json.dumps({"id": "v", "action": "query_version"}),
        json.dumps({"id": "m", "action": "query_models"}),
        json.dumps(query("b", [("B", "E5"), ("W", "D4")], analyzeTurns=[1, 2], maxVisits=8)),
    ]
    answers, stderr = run_engine(cmd, lines)
    assert "ready to begin handling requests" in stderr
    by_id: dict[str, list[dict]] = {}
    for a in answers:
        by_id.setdefault(a["id"], []).append(a)
    (a,) = by_id["a"]
    assert a["rootInfo"]["visits"] == 16 and a["rootInfo"]["currentPlayer"] == "W"
    assert len(a["ownership"]) == 81 and len(a["policy"]) == 82
    assert all(-1.0 <= v <= 1.0 for v in a["ownership"]) and any(v != 0 for v in a["ownership"])
    assert by_id["bad"][0]["field"] == "rules"
    assert by_id["v"][0]["version"]
    (model,) = by_id["m"][0]["models"]
    assert model["name"] == "tiny.safetensors" and model["version"] == 8
    assert [b["turnNumber"] for b in by_id["b"]] == [1, 2]


def test_katrain_starts_bin_sente_katago_as_it_starts_katago(network, tmp_path):
    config = tmp_path / "analysis_config.cfg"
    config.write_text(
        '# KaTrain\'s analysis config, in part\nlogFile = "~/.katrain/katago_log.txt"\n'
        "reportAnalysisWinratesAs = BLACK\nmaxVisits = 7  # per query unless it says\n"
        "numSearchThreads = 6\nnnCacheSizePowerOfTwo = 19\n"
    )
    # katrain/core/engine.py: f'"{exe}" analysis -model "{model}" -config "{cfg}" -analysis-threads {threads}'
    cmd = [
        str(Path(sys.executable).parent / "sente-katago"),
        "analysis",
        "-model",
        str(network),
        "-config",
        str(config),
        "-analysis-threads",
        "12",
    ]
    # A query as KaTrain's request_analysis writes it, and its terminate action (which KaTrain sends
    # without an id of its own, then gives one).
    katrain = {
        "id": "QUERY:1",
        "rules": "japanese",
        "priority": 1,
        "analyzeTurns": [2],
        "maxVisits": 9,
        "komi": 6.5,
        "boardXSize": 9,
        "boardYSize": 9,
        "includeOwnership": True,
        "includeMovesOwnership": True,
        "includePolicy": True,
        "initialStones": [],
        "initialPlayer": "B",
        "moves": [["B", "E5"], ["W", "C3"]],
        "overrideSettings": {"reportAnalysisWinratesAs": "BLACK", "maxTime": 8.0},
    }
    plain = query("QUERY:2", [("B", "E5")])
    lines = [
        json.dumps(katrain),
        json.dumps(plain),
        json.dumps({"action": "terminate", "terminateId": "QUERY:9", "id": "QUERY:3"}),
    ]
    answers, stderr = run_engine(cmd, lines)
    assert "numSearchThreads" in stderr and "nnCacheSizePowerOfTwo" in stderr  # ignored, said so
    results = {a["id"]: a for a in answers if "moveInfos" in a}
    first = results["QUERY:1"]
    assert first["rootInfo"]["visits"] == 9 and len(first["policy"]) == 82
    assert all(len(m["ownership"]) == 81 for m in first["moveInfos"])
    assert results["QUERY:2"]["rootInfo"]["visits"] == 7  # the config file's maxVisits
    assert not any(a.get("field") == "rules" for a in answers)  # KaTrain's Japanese rules are played
    assert {"action": "terminate", "terminateId": "QUERY:9", "id": "QUERY:3"} in answers

    version = subprocess.run(
        [str(Path(sys.executable).parent / "sente-katago"), "version"], capture_output=True, text=True, timeout=120
    )
    assert version.returncode == 0 and "Sente" in version.stdout


def test_katago_command_lines():
    c = parse_katago_command(
        [
            "analysis",
            "-model",
            "net.bin.gz",
            "--override-config",
            "maxVisits=33,reportAnalysisWinratesAs=WHITE,foo=1",
            "-quit-without-waiting",
            "-analysis-threads=4",
            "-frobnicate",
            "x",
        ]
    )
    assert c.model == "net.bin.gz" and c.config.max_visits == 33 and c.config.report_as == WHITE
    assert c.quit_without_waiting and c.precision == "auto"
    assert parse_katago_command(["analysis", "-model", "m", "-precision=fp32"]).precision == "fp32"
    assert any("foo" in w for w in c.warnings) and any("-frobnicate x" in w for w in c.warnings)
    for argv, words in (
        (["gtp", "-model", "m"], "not supported"),
        (["analysis"], "-model"),
        (["analysis", "-model"], "needs a value"),
        (["analysis", "-model", "m", "-override-config", "maxVisits=lots"], "maxVisits"),
        (["analysis", "-model", "m", "-config", "/no/such.cfg"], "/no/such.cfg"),
        (["analysis", "-model", "m", "-precision", "fp64"], "-precision: expected one of auto, fp32, fp16, bf16"),
    ):
        with pytest.raises(KataGoCommandError, match=words):
            parse_katago_command(argv)


def test_katagos_search_method_keys_set_the_search(tmp_path):
    cfg = tmp_path / "analysis.cfg"
    cfg.write_text(
        "useLcbForSelection = true\nlcbStdevs = 4.0\ncpuctUtilityStdevScale = 0.85  # volatile: explore\n"
        "subtreeValueBiasFactor = 0.35\nsubtreeValueBiasWeightExponent = 0.8\n"
        "useUncertainty = true\nuncertaintyMaxWeight = 4.0\npolicyOptimism = 1.0\nrootPolicyOptimism = 0.2\n"
    )
    c = parse_katago_command(
        ["analysis", "-model", "m", "-config", str(cfg), "-override-config", "minVisitPropForLCB=0.2"]
    )
    search = c.config.search_settings()
    assert search.lcb_for_selection and search.lcb_stdevs == 4.0 and search.lcb_min_visit_prop == 0.2
    assert search.cpuct_utility_stdev_scale == 0.85
    assert search.subtree_value_bias_factor == 0.35 and search.subtree_value_bias_exponent == 0.8
    assert search.uncertainty_weighted and search.uncertainty_max_weight == 4.0 and search.uncertainty_coeff == 0.25
    assert search.policy_optimism == 1.0 and search.root_policy_optimism == 0.2
    assert not any("useLcbForSelection" in w or "lcbStdevs" in w for w in c.warnings)
    # As KataGo's, play takes the move by lower confidence bound unless told otherwise.
    assert parse_katago_command(["analysis", "-model", "m"]).config.search_settings().lcb_for_selection
    # A query's overrideSettings changes them for that query, and a bad value names its key.
    config, unused = c.config.with_settings({"useLcbForSelection": False, "cpuctUtilityStdevPrior": "0.3"})
    assert not unused and not config.search_settings().lcb_for_selection
    assert config.search_settings().cpuct_utility_stdev_prior == 0.3
    for key, value in (
        ("useLcbForSelection", "maybe"),
        ("lcbStdevs", "-1"),
        ("cpuctUtilityStdevScale", "2"),
        ("subtreeValueBiasFreeProp", "1.5"),
        ("uncertaintyMaxWeight", "0.5"),
        ("rootPolicyOptimism", "2"),
    ):
        with pytest.raises(ValueError, match=key):
            c.config.with_settings({key: value})
