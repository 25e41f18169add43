"""The GTP engine in process: every command, GNU Go's and KataGo's formats, errors, fuzzing."""

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from client.gtp.engine import GtpEngine
from client.gtp.players import RandomPlayer
from common.go import board as bk
from common.go.playout import is_own_eye
from common.go.sgf import read_sgf


def new_engine(seed: int = 7) -> GtpEngine:
    return GtpEngine(RandomPlayer(seed))


def ok(engine: GtpEngine, line: str) -> str:
    response = engine.handle(line)
    assert response is not None and response.startswith("=") and response.endswith("\n\n"), (line, response)
    return response[1:].strip()


def err(engine: GtpEngine, line: str) -> str:
    response = engine.handle(line)
    assert response is not None and response.startswith("?") and response.endswith("\n\n"), (line, response)
    return response[1:].strip()


def test_protocol_basics():
    e = new_engine()
    assert e.handle("protocol_version") == "= 2\n\n"
    assert e.handle("12 name") == "=12 Sente\n\n"
    assert e.handle("   # only a comment") is None
    assert e.handle("") is None
    assert e.handle("7 frobnicate") == "?7 unknown command\n\n"
    assert ok(e, "version") == "0.1.0"
    assert ok(e, "known_command kata-set-rules") == "true"
    assert ok(e, "known_command frobnicate") == "false"
    commands = ok(e, "list_commands").splitlines()
    for name in (
        "protocol_version",
        "name",
        "version",
        "known_command",
        "list_commands",
        "quit",
        "boardsize",
        "rectangular_boardsize",
        "clear_board",
        "komi",
        "play",
        "genmove",
        "undo",
        "showboard",
        "final_score",
        "final_status_list",
        "set_free_handicap",
        "place_free_handicap",
        "fixed_handicap",
        "loadsgf",
        "printsgf",
        "is_legal",
        "all_legal",
        "list_stones",
        "captures",
        "kata-get-rules",
        "kata-set-rules",
        "kata-set-rule",
    ):
        assert name in commands
    assert e.handle("play\tb\td4 # tabs and a comment") == "=\n\n"
    assert e.handle("3 quit") == "=3\n\n" and e.quit


def test_board_and_moves():
    e = new_engine()
    ok(e, "boardsize 5")
    assert err(e, "boardsize 25").startswith("unacceptable size")
    assert err(e, "boardsize x") == "board size 'x' is not an integer"
    ok(e, "play b C3")
    assert err(e, "play w C3") == "illegal move: point is occupied"
    assert err(e, "play w Z9").startswith("invalid vertex") or "outside" in err(e, "play w Z9")
    assert err(e, "play purple C2").startswith("invalid color")
    assert err(e, "play b") == "expected a colour and a vertex"
    assert ok(e, "list_stones black") == "C3"
    assert ok(e, "list_stones white") == ""
    assert ok(e, "is_legal w C3") == "0"
    assert ok(e, "is_legal w c2") == "1"
    assert len(ok(e, "all_legal white").split()) == 24
    ok(e, "undo")
    assert ok(e, "list_stones black") == ""
    assert err(e, "undo") == "cannot undo"
    ok(e, "rectangular_boardsize 7 3")
    assert len(ok(e, "all_legal b").split()) == 21
    ok(e, "play b G3")
    assert err(e, "play b H1").startswith("vertex")


def test_captures_and_showboard_in_gnu_go_format():
    e = new_engine()
    ok(e, "boardsize 5")
    for move in ("b B3", "w C3", "b D3", "w pass", "b C4", "w pass", "b C2"):
        ok(e, f"play {move}")
    assert ok(e, "captures black") == "1"
    assert ok(e, "captures white") == "0"
    board = ok(e, "showboard")
    lines = board.splitlines()
    assert lines[0].split() == ["A", "B", "C", "D", "E"]
    assert re.fullmatch(r" 4 \. \. X \. \. 4", lines[2].rstrip())
    assert "BLACK (X) has captured 1 stones" in board
    assert "WHITE (O) has captured 0 stones" in board


def test_scoring_and_status():
    e = new_engine()
    ok(e, "boardsize 5")
    ok(e, "komi 0.5")
    for move in ("b B5", "b A4", "b B4", "b C4", "b D4", "b E4", "w D5"):
        ok(e, f"play {move}")
    # Black's wall has the eyes A5 and C5-E5; the white stone D5 is dead in that territory.
    assert ok(e, "final_score") == "B+24.5"
    assert ok(e, "final_status_list dead") == "D5"
    assert "D5" not in ok(e, "final_status_list alive").split()
    assert ok(e, "final_status_list seki") == ""
    assert set(ok(e, "final_status_list black_territory").split()) == {"A5", "C5", "D5", "E5"} | {
        f"{c}{r}" for c in "ABCDE" for r in (1, 2, 3)
    }
    assert ok(e, "final_status_list white_territory") == ""
    assert ok(e, "final_status_list dame") == ""
    assert err(e, "final_status_list sideways").startswith("invalid status")
    ok(e, "komi 30")
    assert ok(e, "final_score") == "W+5"
    assert err(e, "komi 6.3").startswith("invalid komi")
    assert err(e, "komi lots").startswith("invalid komi")
    assert ok(e, "get_komi") == "30"


def test_handicap_commands():
    e = new_engine()
    ok(e, "boardsize 19")
    assert ok(e, "fixed_handicap 9").split() == ["D4", "Q16", "D16", "Q4", "D10", "Q10", "K4", "K16", "K10"]
    assert err(e, "fixed_handicap 2") == "board not empty"
    ok(e, "clear_board")
    assert err(e, "fixed_handicap 10").startswith("invalid handicap")
    ok(e, "boardsize 9")
    stones = ok(e, "place_free_handicap 7").split()
    assert len(set(stones)) == 7 and {"C3", "G7", "C7", "G3"} <= set(stones)
    assert sorted(ok(e, "list_stones black").split()) == sorted(stones)
    ok(e, "clear_board")
    ok(e, "set_free_handicap C3 G7 E5")
    assert sorted(ok(e, "list_stones b").split()) == ["C3", "E5", "G7"]
    ok(e, "clear_board")
    assert err(e, "set_free_handicap C3 C3").startswith("bad vertex list")
    assert err(e, "set_free_handicap C3") == "expected at least 2 vertices"
    ok(e, "genmove w")  # white moves first after handicap: allowed and no crash


def test_rules_commands_in_katago_format():
    e = new_engine()
    rules = json.loads(ok(e, "kata-get-rules"))
    assert rules == {
        "friendlyPassOk": False,
        "hasButton": False,
        "ko": "POSITIONAL",
        "scoring": "AREA",
        "suicide": True,
        "tax": "NONE",
        "whiteHandicapBonus": "0",
    }
    ok(e, "kata-set-rules chinese")
    assert json.loads(ok(e, "kata-get-rules"))["ko"] == "SIMPLE"
    ok(e, 'kata-set-rules {"ko":"SITUATIONAL","scoring":"AREA","suicide":false}')
    assert json.loads(ok(e, "kata-get-rules"))["ko"] == "SITUATIONAL"
    ok(e, "kata-set-rule hasButton true")
    assert json.loads(ok(e, "kata-get-rules"))["hasButton"] is True
    ok(e, "kata-set-rules japanese")
    assert json.loads(ok(e, "kata-get-rules"))["scoring"] == "TERRITORY"
    ok(e, "kata-set-rule scoring AREA")
    assert json.loads(ok(e, "kata-get-rules"))["scoring"] == "AREA"
    assert "SPIGHT" in err(e, "kata-set-rule ko SPIGHT")
    assert err(e, "kata-set-rules fischer").startswith("Unknown rules 'fischer'")
    assert err(e, "kata-set-rule colour red").startswith("unknown rules option")


def test_random_player_never_fills_its_own_eyes_and_games_end():
    e = new_engine(seed=3)
    ok(e, "boardsize 9")
    passes = 0
    for turn in range(2000):
        color = "b" if turn % 2 == 0 else "w"
        before = e.game.copy()
        vertex = ok(e, f"genmove {color}")
        if vertex == "pass":
            passes += 1
            # No legal non-eye move was left.
            pla = before.to_move
            assert all(is_own_eye(before.b, loc, pla) for loc in before.legal_moves(pla))
            if e.game.is_over:
                break
        else:
            loc = e._parse_vertex(vertex)
            assert not is_own_eye(before.b, loc, before.to_move)
    assert e.game.is_over
    assert re.fullmatch(r"[BW]\+\d+(\.5)?|0", ok(e, "final_score"))
    assert bk.check_consistency(e.game.b) == 0


def test_printsgf_and_loadsgf(tmp_path):
    e = new_engine()
    ok(e, "boardsize 9")
    ok(e, "komi 6.5")
    for move in ("b E5", "w C3", "b G7", "w pass"):
        ok(e, f"play {move}")
    text = ok(e, "printsgf")
    rec = read_sgf(text)
    assert rec.x_size == 9 and rec.komi == 6.5 and len(rec.moves) == 4
    path = tmp_path / "game.sgf"
    ok(e, f"printsgf {path}")
    e2 = new_engine()
    ok(e2, f"loadsgf {path}")
    assert ok(e2, "list_stones black") == ok(e, "list_stones black")
    ok(e2, f"loadsgf {path} 2")
    assert ok(e2, "list_stones black") == "E5" and ok(e2, "list_stones white") == ""
    assert err(e2, f"loadsgf {tmp_path / 'missing.sgf'}").startswith("cannot read")
    broken = tmp_path / "broken.sgf"
    broken.write_text("(;SZ[9];B[ee]")
    assert "line 1" in err(e2, f"loadsgf {broken}")
    assert ok(e2, "list_stones black") == "E5"  # a failed load leaves the game as it was
    japanese = tmp_path / "japanese.sgf"
    japanese.write_text("(;SZ[9]RU[Japanese]KM[6.5];B[ee];W[cc])")
    ok(e2, f"loadsgf {japanese}")
    assert json.loads(ok(e2, "kata-get-rules"))["scoring"] == "TERRITORY"
    assert ok(e2, "list_stones white") == "C7"


@given(
    st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "play",
                    "genmove",
                    "undo",
                    "boardsize",
                    "komi",
                    "is_legal",
                    "all_legal",
                    "fixed_handicap",
                    "place_free_handicap",
                    "set_free_handicap",
                    "final_score",
                    "final_status_list",
                    "kata-set-rule",
                    "kata-set-rules",
                    "captures",
                    "showboard",
                    "clear_board",
                    "rectangular_boardsize",
                    "list_stones",
                    "printsgf",
                    "known_command",
                ]
            ),
            st.lists(
                st.one_of(
                    st.sampled_from(
                        [
                            "b",
                            "w",
                            "black",
                            "pass",
                            "A1",
                            "C3",
                            "T19",
                            "J9",
                            "I5",
                            "3",
                            "9",
                            "-1",
                            "0",
                            "1e9",
                            "dead",
                            "ko",
                            "SIMPLE",
                            "suicide",
                            "true",
                            "{",
                            "chinese",
                            "7.5",
                            "D4",
                        ]
                    ),
                    st.text(max_size=6),
                ),
                max_size=3,
            ),
        ),
        max_size=40,
    )
)
def test_no_input_crashes_the_engine(commands):
    e = new_engine()
    ok(e, "boardsize 5")
    for name, args in commands:
        line = " ".join([name, *args])
        if name == "printsgf" and args:
            continue  # would write files
        response = e.handle(line)
        if response is None:
            continue
        assert response[0] in "=?" and response.endswith("\n\n")
        assert "internal error" not in response, line
    assert bk.check_consistency(e.game.b) == 0


@pytest.mark.parametrize("garbage", ["\x00\x01play b A1", "play b A1\r", "\x7f", "9999999999999999999 name"])
def test_control_characters_and_odd_ids(garbage):
    e = new_engine()
    response = e.handle(garbage)
    assert response is None or response[0] in "=?"
