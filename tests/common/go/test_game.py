"""Ko rules, passes, the button, handicap bonus, the end of the game; agreement with KataGo."""

import json

import pytest

from common.go import board as bk
from common.go import gamestate as gs
from common.go.game import Game, IllegalMoveError
from common.go.geometry import BLACK, EMPTY, PASS, WHITE, gtp_vertex, parse_color, parse_gtp_vertex
from common.go.rules import Rules, UnsupportedRulesError
from tests.common.go.helpers import play_all, v

# Three independent kos on 9x9. A (top left) and C (top right): black can capture a white stone by
# playing C8 / G8, and white retakes at B8 / H8. B (bottom right): white captures at G2, black
# retakes at H2.
THREE_KOS = """
    .XO...OX.
    XO.O.O.OX
    .XO...OX.
    .........
    .........
    .........
    ......XO.
    .....X.XO
    ......XO.
"""


def three_kos(ko: str, suicide: bool = False) -> Game:
    return Game.from_diagram(THREE_KOS, rules=Rules(ko=ko, suicide=suicide))


def test_golden_legal_moves_agree_with_katago_on_every_turn(shared):
    turns = superko_bans = 0
    for line in (shared / "golden" / "katago_rules_sample.jsonl").read_text().splitlines():
        d = json.loads(line)
        r = d["rules"]
        rules, _ = Rules.parse(json.dumps(r))
        size = d["size"]
        game = Game(size, rules=rules)
        simple = Game(size, rules=Rules(ko="SIMPLE", suicide=rules.suicide))
        for i, (c, vertex) in enumerate(d["moves"]):
            color = parse_color(c)
            expected = set(d["legal_before_each_move"][i])
            got = {gtp_vertex(loc, size, size) for loc in game.legal_moves(color)}
            assert got == expected, f"size {size} {r} turn {i}: extra {got - expected} missing {expected - got}"
            superko_bans += len({gtp_vertex(loc, size, size) for loc in simple.legal_moves(color)} - expected)
            loc = parse_gtp_vertex(vertex, size, size)
            game.play(loc, color)
            simple.play(loc, color)
            turns += 1
        # KataGo's final board: a cell every two characters after the row number; a digit
        # after a stone marks a recent move.
        rows = [row for row in d["katago_showboard"].splitlines() if row[:2].strip().isdigit()]
        assert len(rows) == size
        for y, row in enumerate(rows):
            for x in range(size):
                expected_color = {"X": BLACK, "O": WHITE, ".": EMPTY}[row[3 + 2 * x]]
                assert game.colors()[y, x] == expected_color, (size, r, x, y)
    assert turns == 2056
    assert superko_bans == 6  # points only superko bans: the sample exercises it


def test_double_ko_recreating_a_board_with_the_other_side_to_move():
    # C8 takes ko A, G2 takes ko B, pass, B8 retakes A, H2 retakes B: the starting board again,
    # but with white to move instead of black.
    sequence = ["B C8", "W G2", "B pass", "W B8"]
    legal = {}
    for ko in ("SIMPLE", "POSITIONAL", "SITUATIONAL"):
        g = three_kos(ko)
        play_all(g, *sequence)
        legal[ko] = g.is_legal(v(g, "H2"), BLACK)
        if ko == "POSITIONAL":
            assert "superko" in g.illegal_reason(v(g, "H2"), BLACK)
    assert legal == {"SIMPLE": True, "POSITIONAL": False, "SITUATIONAL": True}


def test_double_ko_recreating_a_situation():
    # The starting board with black to move comes back: banned by both superko rules.
    sequence = ["B pass", "W G2", "B C8", "W pass", "B H2"]
    legal = {}
    for ko in ("SIMPLE", "POSITIONAL", "SITUATIONAL"):
        g = three_kos(ko)
        play_all(g, *sequence)
        legal[ko] = g.is_legal(v(g, "B8"), WHITE)
    assert legal == {"SIMPLE": True, "POSITIONAL": False, "SITUATIONAL": False}


TRIPLE_KO_CYCLE = ["B C8", "W G2", "B G8", "W B8", "B H2", "W H8"]


def test_triple_ko_cycle_is_banned_by_superko():
    for ko in ("POSITIONAL", "SITUATIONAL"):
        g = three_kos(ko)
        play_all(g, *TRIPLE_KO_CYCLE[:5])
        assert not g.is_legal(v(g, "H8"), WHITE)


def test_triple_ko_cycle_ends_without_result_under_simple_ko():
    g = three_kos("SIMPLE")
    play_all(g, *TRIPLE_KO_CYCLE)  # back to the start: second occurrence
    assert not g.is_over
    play_all(g, *TRIPLE_KO_CYCLE[:5])
    assert not g.is_over
    play_all(g, TRIPLE_KO_CYCLE[5])  # third occurrence of the starting situation
    assert g.is_over and g.result.no_result
    assert g.result.sgf() == "Void"
    g.undo()
    assert not g.is_over


def test_passes_clear_the_cycle_count_under_simple_ko():
    g = three_kos("SIMPLE")
    play_all(g, *TRIPLE_KO_CYCLE, *TRIPLE_KO_CYCLE[:5])  # one move short of the third return
    play_all(g, "W pass")  # instead of returning: the history restarts after the pass
    assert not g.is_over
    assert g.g[gs.G_HSTART] == g.num_moves
    assert g.is_legal(v(g, "C8"), BLACK) and g.is_legal(v(g, "H8"), BLACK)


def test_repeated_pass_in_the_same_situation_ends_the_game_under_simple_ko():
    g = three_kos("SIMPLE")
    # Black passes with the starting board; the kos are then taken and retaken until the
    # starting board returns with black to move, and black passes again: the game ends.
    play_all(g, "B pass", "W G2", "B C8", "W pass", "B H2", "W B8")
    assert not g.is_over
    play_all(g, "B pass")
    assert g.is_over and not g.result.no_result
    assert g.result.reason == "a pass in a situation where that player had passed"
    # Under superko the same sequence is just play: two passes are needed.
    h = three_kos("SITUATIONAL")
    play_all(h, "B pass", "W G2", "B C8", "W pass", "B H2")
    assert not h.is_legal(v(h, "B8"))  # (and superko forbids the return itself)


def test_two_consecutive_passes_end_and_score():
    g = Game(5, rules=Rules(ko="POSITIONAL"), komi=0.5)
    play_all(g, "B C3", "W pass")
    assert not g.is_over
    play_all(g, "B pass")
    assert g.is_over
    assert g.result.winner == BLACK and g.result.score == -24.5
    assert g.result.sgf() == "B+24.5"
    # Moves after the end are allowed (GTP controllers may continue) and reopen the game.
    play_all(g, "W B2")
    assert not g.is_over


def test_button_goes_to_the_first_passer_and_needs_a_third_pass():
    g = Game(5, rules=Rules(has_button=True), komi=7.0)
    play_all(g, "B C3", "W pass")  # white takes the button: +0.5 for white
    assert not g.button_available
    assert g.consecutive_passes == 0
    play_all(g, "B pass")
    assert not g.is_over
    play_all(g, "W pass")
    assert g.is_over
    assert g.result.score == -25 + 7.0 + 0.5


def test_button_unclaimed_at_the_end_goes_to_the_player_to_move():
    g = Game.from_diagram(
        """
        .X.X.
        XXXXX
        OOOOO
        .O.O.
        """,
        rules=Rules(has_button=True),
        komi=0,
    )
    assert g.end_if_all_pass_alive()
    assert g.result.score == -0.5  # black to move gets the button


def test_taking_the_button_clears_superko_history():
    g = three_kos("POSITIONAL")
    g.set_rules(Rules(ko="POSITIONAL", has_button=True))
    play_all(g, "B C8", "W G2", "B pass", "W B8")  # black's pass takes the button
    assert g.is_legal(v(g, "H2"), BLACK)  # the start position was before the button


@pytest.mark.parametrize("rule,bonus", [("0", 0), ("N", 4), ("N-1", 3)])
def test_white_handicap_bonus(rule, bonus):
    g = Game(9, rules=Rules(white_handicap_bonus=rule), komi=0.5)
    g.place_fixed_handicap(4)
    assert g.handicap == 4 and g.to_move == WHITE
    play_all(g, "W pass", "B pass")
    assert g.result.score == -81 + 0.5 + bonus


def test_free_handicap_and_setup_stones_are_not_handicap_when_white_has_stones():
    g = Game(9)
    g.place_free_handicap([v(g, "C3"), v(g, "G7"), v(g, "E5")])
    assert g.handicap == 3
    h = Game(9)
    h.setup(black=[v(h, "C3"), v(h, "G7")], white=[v(h, "E5")])
    assert h.handicap == 0
    with pytest.raises(ValueError, match="empty board"):
        g.place_fixed_handicap(2)


def test_fixed_handicap_positions_follow_gtp():
    g = Game(19)
    locs = g.place_fixed_handicap(9)
    assert [g.vertex(loc) for loc in locs] == ["D4", "Q16", "D16", "Q4", "D10", "Q10", "K4", "K16", "K10"]
    g = Game(9)
    assert [g.vertex(loc) for loc in g.place_fixed_handicap(2)] == ["C3", "G7"]
    for size, count in ((9, 10), (8, 5), (6, 2), (7, 5)):
        with pytest.raises(ValueError):
            Game(size).place_fixed_handicap(count)


def test_undo_of_passes_button_and_game_end():
    g = Game(5, rules=Rules(has_button=True))
    play_all(g, "B C3", "W pass", "B pass", "W pass")
    assert g.is_over
    g.undo()
    assert not g.is_over and g.consecutive_passes == 1
    g.undo()
    g.undo()
    assert g.button_available
    g.undo()
    assert g.num_moves == 0 and not g.can_undo
    with pytest.raises(IndexError):
        g.undo()


def test_illegal_move_leaves_the_game_untouched():
    g = three_kos("POSITIONAL")
    play_all(g, "B C8", "W G2", "B pass", "W B8")
    before = (g.hash, g.num_moves, g.to_move, g.g.tobytes())
    with pytest.raises(IllegalMoveError, match="positional superko"):
        g.play(v(g, "H2"), BLACK)
    with pytest.raises(IllegalMoveError, match="occupied"):
        g.play(v(g, "B9"), BLACK)
    assert (g.hash, g.num_moves, g.to_move, g.g.tobytes()) == before


def test_set_rules_replays_and_refuses_what_becomes_illegal():
    g = three_kos("SITUATIONAL")
    play_all(g, "B C8", "W G2", "B pass", "W B8", "B H2")
    with pytest.raises(IllegalMoveError, match="move 5"):
        g.set_rules(Rules(ko="POSITIONAL"))
    assert g.rules.ko == "SITUATIONAL" and g.num_moves == 5
    g.set_rules(Rules(ko="SIMPLE", suicide=False))
    assert g.rules.ko == "SIMPLE" and g.num_moves == 5
    assert g.color_at(v(g, "H2")) == BLACK


def test_spight_ko_is_refused_everywhere_in_the_engine():
    rules = Rules(ko="SPIGHT")
    with pytest.raises(UnsupportedRulesError, match="SPIGHT"):
        Game(9, rules=rules)
    with pytest.raises(UnsupportedRulesError):
        Game(9).set_rules(rules)


def test_komi_change_rescores_a_finished_game():
    g = Game(5, komi=0)
    play_all(g, "B C3", "W pass", "B pass")
    assert g.result.score == -25
    g.komi = 30
    assert g.result.score == 5 and g.result.winner == WHITE
    with pytest.raises(ValueError, match=r"multiple of 0\.5"):
        g.komi = 6.3


def test_komi_is_a_setting_that_undo_keeps():
    g = Game(5, komi=7.5)
    play_all(g, "B C3")
    g.komi = 0.5
    g.undo()
    assert g.komi == 0.5


def test_set_rules_keeps_the_handicap():
    g = Game(9, rules=Rules(white_handicap_bonus="N"), komi=0.5)
    g.place_fixed_handicap(2)
    play_all(g, "W E5")
    g.set_rules(Rules(ko="SITUATIONAL", white_handicap_bonus="N-1"))
    assert g.handicap == 2 and g.move_list == [(WHITE, v(g, "E5"))]
    play_all(g, "B pass", "W pass")
    assert g.result.score == (1 - 2) + 0.5 + 1  # one white, two black stones, all else neutral; N-1 = 1


def test_resignation():
    g = Game(9)
    play_all(g, "B E5")
    g.resign(WHITE)
    assert g.is_over and g.result.sgf() == "B+R"
    g.undo()
    assert not g.is_over


def test_situation_hash_depends_on_side_to_move_only():
    g = Game(9)
    h0, s0 = g.hash, g.situation_hash
    g.play(PASS)
    assert g.hash == h0 and g.situation_hash != s0
    assert g.situation_hash ^ g.hash == int(bk.ZOBRIST_TO_MOVE[WHITE])
