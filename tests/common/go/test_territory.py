"""Territory scoring through KataGo's encore: real KataGo games replayed turn by turn, and the
encore's ko rules, phases and counting on small positions."""

import json

import pytest

from common.go import gamestate as gs
from common.go.game import Game
from common.go.geometry import BLACK, PASS, WHITE, parse_color
from common.go.rules import Rules
from tests.common.go.helpers import ENCORE_KO, SPLIT_BOARD, play_all, v


def _golden_games(shared):
    path = shared / "golden" / "katago_territory_games_sample.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def start_golden(r) -> Game:
    """A game set up as KataGo's self-play starts it (handicap stones, then Black to move)."""
    game = Game(r["size"], rules=Rules.from_text(json.dumps(r["rules"])), komi=r["komi"], capacity=512)
    if r["setup_black"]:
        game.setup(black=[v(game, x) for x in r["setup_black"]], to_move=BLACK)
    return game


def test_katagos_territory_games_replay_with_its_legal_moves_phases_and_results(shared):
    games = _golden_games(shared)
    turns = passes_for_ko = 0
    for r in games:
        game = start_golden(r)
        for i, (color, vertex) in enumerate(r["moves"]):
            c = parse_color(color)
            where = (r["sgf_rules"], i, color, vertex)
            assert game.encore_phase == r["encore_phase_before_each_move"][i], where
            assert sorted(game.vertex(x) for x in game.legal_moves(c)) == sorted(r["legal_before_each_move"][i]), where
            loc = PASS if vertex == "pass" else v(game, vertex)
            passes_for_ko += game.is_pass_for_ko(loc, c)
            assert game.is_pass_for_ko(loc, c) == (i in r.get("pass_for_ko_turns", [])), where
            game.play(loc, c)
            turns += 1
        for color, _ in r["score_extra_passes"]:
            game.play(PASS, parse_color(color))
        assert game.is_over and game.result.sgf() == r["result"], r["sgf_rules"]
        assert game.result.score == r["white_minus_black"]
    assert (len(games), turns, passes_for_ko) == (19, 1338, 1)


def test_passes_lead_through_both_encore_phases_to_the_end():
    game = Game(5, rules=Rules.from_text("japanese"), komi=0.5)
    play_all(game, "B C3", "W pass", "B pass")
    assert (game.encore_phase, game.is_over, game.num_moves) == (1, False, 3)
    play_all(game, "W pass", "B pass")
    assert game.encore_phase == 2 and not game.is_over
    play_all(game, "W pass")
    assert not game.is_over
    play_all(game, "B pass")
    # Black's lone stone owns the board: 24 points of territory, minus komi.
    assert game.is_over and game.result.score == -23.5 and game.result.sgf() == "B+23.5"


def test_a_ko_captured_in_the_encore_is_blocked_until_the_other_side_passes_for_it():
    game = Game.from_diagram(ENCORE_KO, rules=Rules.from_text("japanese"), komi=0.5, to_move=BLACK)
    play_all(game, "B pass", "W pass")
    assert game.encore_phase == 1
    play_all(game, "B C4")  # captures the ko stone at B4
    assert game.color_at(v(game, "B4")) == 0
    # White may not retake: B4 is a pass for ko, and so is a move on the blocked stone C4.
    assert game.is_pass_for_ko(v(game, "B4"), WHITE) and game.is_pass_for_ko(v(game, "C4"), WHITE)
    assert v(game, "C4") in game.legal_moves(WHITE)
    before = game.colors().copy()
    play_all(game, "W B4")
    assert (game.colors() == before).all() and game.num_moves == 4
    assert not game.is_pass_for_ko(v(game, "B4"), WHITE)
    # Black fills elsewhere; now White may retake, and that capture is blocked in turn.
    play_all(game, "B E1", "W B4")
    assert game.color_at(v(game, "C4")) == 0 and game.is_pass_for_ko(v(game, "C4"), BLACK)


def test_a_ko_capture_from_the_same_position_is_allowed_once_per_phase():
    game = Game.from_diagram(ENCORE_KO, rules=Rules.from_text("japanese"), komi=0.5, to_move=BLACK)
    play_all(game, "B pass", "W pass", "B C4", "W B4", "B pass", "W B4", "B C4", "W pass")
    assert game.pass_for_ko_turns() == [3, 6]
    # The board is as before Black's capture, Black to move, no block: the capture is banned.
    assert game.color_at(v(game, "B4")) == WHITE and game.to_move == BLACK
    assert not game.is_legal(v(game, "C4")) and v(game, "C4") not in game.legal_moves()
    assert "captured from this position before" in game.illegal_reason(v(game, "C4"), BLACK)


def test_stones_played_in_the_second_encore_count_nothing():
    game = Game(5, rules=Rules.from_text("japanese"), komi=0.5)
    play_all(game, "B C3", "W pass", "B pass", "W pass", "B pass")
    assert game.encore_phase == 2
    play_all(game, "W A1", "B pass", "W pass")
    # Black's territory is gone (the region touches a white stone), C3 counts for Black, A1
    # nothing: -1, +1 for the stone Black played in the main phase, komi 0.5.
    assert game.is_over and game.result.score == 0.5


def test_territory_counts_territory_captures_and_komi():
    game = Game(5, rules=Rules.from_text("japanese"), komi=6.5)
    play_all(game, "B C3", "W C2")
    assert game.g[gs.G_WBONUS2] == 0  # one stone each: the points cancel
    play_all(game, "B B2", "W pass", "B D2", "W pass", "B C1")  # captures C2
    assert game.captures(BLACK) == 1
    play_all(game, "W pass", "B pass", "W pass", "B pass", "W pass", "B pass")
    # 21 points of territory and one prisoner for Black, 6.5 komi for White: as counted, 25 points
    # of area (the whole board) less the 3 stones Black played more than White.
    assert game.is_over and game.result.sgf() == "B+15.5"
    assert (game.ownership("scoring") == BLACK).sum() == 25 and game.score() == -15.5


def test_a_game_begins_in_an_encore_phase_as_katagos_cleanup_training_does():
    scores = []
    for phase in (1, 2):
        game = Game.from_diagram(SPLIT_BOARD, rules=Rules.from_text("japanese"), komi=0.5, to_move=WHITE)
        game.begin_in_encore(phase)
        assert (game.encore_phase, game.start_to_move, game.button_available) == (phase, WHITE, False)
        play_all(game, "W pass", "B A3", "W pass", "B pass")
        assert game.is_over == (phase == 2)
        play_all(game, *(("W pass", "B pass") if phase == 1 else ()))
        scores.append(game.result.score)
    # The stone Black played costs a point in the first encore phase, not in the second; the stones
    # on the board when the second began count.
    assert scores == [6.5, 5.5]


def test_only_a_territory_game_begins_in_an_encore_phase_and_only_before_its_first_move():
    with pytest.raises(ValueError, match="area scoring has no encore phase 1"):
        Game(5, rules=Rules.from_text("chinese")).begin_in_encore(1)
    game = Game(5, rules=Rules.from_text("japanese"))
    with pytest.raises(ValueError, match="phase 3 does not exist"):
        game.begin_in_encore(3)
    game.play(v(game, "C3"))
    with pytest.raises(ValueError, match="before the first move"):
        game.begin_in_encore(1)
