"""Stones, chains, liberties, captures, suicide and simple ko; invariants under random play."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from common.go import board as bk
from common.go import gamestate as gs
from common.go import playout
from common.go.game import Game, IllegalMoveError
from common.go.geometry import BLACK, EMPTY, PASS, WHITE, loc_of
from common.go.rules import Rules
from tests.common.go.helpers import play_all, v

NO_SUICIDE = Rules(ko="SIMPLE", suicide=False)
SUICIDE = Rules(ko="SIMPLE", suicide=True)


def test_capture_single_stone_and_count():
    g = Game(5, rules=NO_SUICIDE)
    play_all(g, "B B3", "W C3", "B D3", "W pass", "B C4", "W pass", "B C2")
    assert g.color_at(v(g, "C3")) == EMPTY
    assert g.captures(BLACK) == 1 and g.captures(WHITE) == 0
    assert g.chain_liberties(v(g, "C2")) == 4  # B2 D2 C1 and the emptied C3
    assert bk.check_consistency(g.b) == 0


def test_liberties_are_shared_points_counted_once():
    g = Game.from_diagram(
        """
        .....
        .XX..
        .X...
        .....
        .....
        """,
        rules=NO_SUICIDE,
    )
    # Chain B4 C4 B3: liberties A4 B5 C5 D4 A3 C3 B2 = 7
    assert g.chain_liberties(v(g, "B4")) == 7
    g.play(v(g, "C3"), BLACK)  # fills a liberty, merges, adds D3 and C2
    assert g.chain_liberties(v(g, "B4")) == 8
    assert bk.check_consistency(g.b) == 0


def test_one_move_captures_three_chains_and_makes_no_ko():
    g = Game.from_diagram(
        """
        XO...
        .XO..
        XO...
        O....
        .....
        """,
        rules=NO_SUICIDE,
        to_move=WHITE,
    )
    g.play(v(g, "A4"), WHITE)
    for vertex in ("A5", "B4", "A3"):
        assert g.color_at(v(g, vertex)) == EMPTY
    assert g.captures(WHITE) == 3
    assert g.ko_loc is None
    assert g.chain_liberties(v(g, "A4")) == 3
    assert bk.check_consistency(g.b) == 0


def test_merge_of_three_chains_keeps_exact_liberties():
    g = Game.from_diagram(
        """
        .....
        .X.X.
        ..O..
        .X...
        .....
        """,
        rules=NO_SUICIDE,
    )
    g.play(v(g, "C4"), BLACK)
    assert g.chain_liberties(v(g, "B4")) == 7  # B5 C5 D5 A4 E4 B3 D3 (C3 is white)
    g.play(v(g, "B3"), BLACK)
    assert bk.check_consistency(g.b) == 0


def test_single_stone_suicide_is_illegal_even_when_suicide_is_allowed():
    for rules in (NO_SUICIDE, SUICIDE):
        g = Game.from_diagram(
            """
            .X...
            X....
            .....
            .....
            .....
            """,
            rules=rules,
            to_move=WHITE,
        )
        assert not g.is_legal(v(g, "A5"), WHITE)
        assert g.illegal_reason(v(g, "A5"), WHITE) == "suicide"
        with pytest.raises(IllegalMoveError, match="suicide"):
            g.play(v(g, "A5"), WHITE)


def test_multi_stone_suicide_depends_on_the_rule():
    diagram = """
        OX...
        .X...
        XX...
        .....
        .....
        """
    g = Game.from_diagram(diagram, rules=NO_SUICIDE, to_move=WHITE)
    assert not g.is_legal(v(g, "A4"), WHITE)
    g = Game.from_diagram(diagram, rules=SUICIDE, to_move=WHITE)
    assert g.is_legal(v(g, "A4"), WHITE)
    g.play(v(g, "A4"), WHITE)
    assert g.color_at(v(g, "A5")) == EMPTY and g.color_at(v(g, "A4")) == EMPTY
    assert g.captures(BLACK) == 2  # the two white stones count as captured by black
    assert bk.check_consistency(g.b) == 0


def test_capturing_move_is_not_suicide():
    g = Game.from_diagram(
        """
        .XO..
        XO...
        O....
        .....
        .....
        """,
        rules=NO_SUICIDE,
        to_move=WHITE,
    )
    # White A5 has no liberties of its own but captures the black stones B5 and A4.
    assert g.is_legal(v(g, "A5"), WHITE)
    g.play(v(g, "A5"), WHITE)
    assert g.color_at(v(g, "B5")) == EMPTY and g.color_at(v(g, "A4")) == EMPTY


def test_simple_ko_ban_and_its_lifting():
    g = Game.from_diagram(
        """
        .XO..
        X.XO.
        .XO..
        .....
        .....
        """,
        rules=NO_SUICIDE,
        to_move=WHITE,
    )
    # White captures the black stone C4 by playing B4.
    g.play(v(g, "B4"), WHITE)
    assert g.color_at(v(g, "C4")) == EMPTY
    assert g.ko_loc == v(g, "C4")
    assert not g.is_legal(v(g, "C4"), BLACK)
    assert "ko" in g.illegal_reason(v(g, "C4"), BLACK)
    g.play(PASS, BLACK)
    assert g.ko_loc is None
    # After a move elsewhere (here a pass), black may retake.
    assert g.is_legal(v(g, "C4"), BLACK)


def test_rebuild_refuses_setup_without_liberties():
    g = Game(5)
    with pytest.raises(ValueError, match="without liberties"):
        g.setup(black=[v(g, "A5")], white=[v(g, "B5"), v(g, "A4")])
    assert g.stones(BLACK) == [] and g.stones(WHITE) == []


def test_rectangular_boards_and_extremes():
    for x, y in ((2, 2), (19, 19), (19, 2), (3, 17)):
        g = Game(x, y, rules=NO_SUICIDE)
        assert len(g.legal_moves()) == x * y
        playout.play_random_game(g.g, g.b, g.hist, g.moves, g.table, g.cap - 1, playout.new_rng(x * 100 + y))
        assert g.is_over
        assert bk.check_consistency(g.b) == 0
    with pytest.raises(ValueError, match="outside the supported range"):
        Game(20)
    with pytest.raises(ValueError, match="outside the supported range"):
        Game(1, 5)


def test_off_board_locations_are_illegal():
    g = Game(9)
    assert not g.is_legal(loc_of(9, 0))
    assert not g.is_legal(loc_of(0, 9))
    assert not g.is_legal(-5)
    with pytest.raises(IllegalMoveError, match="off the board"):
        g.play(loc_of(12, 3))


# --- properties ----------------------------------------------------------------------------------
def _snapshot(g: Game):
    n = g.num_moves
    return (
        g.colors().tobytes(),
        g.hash,
        g.ko_loc,
        g.captures(BLACK),
        g.captures(WHITE),
        g.g.copy().tobytes(),
        g.hist[: n + 1].copy().tobytes(),
        g.legal_moves(BLACK),
        g.legal_moves(WHITE),
    )


rules_strategy = st.builds(
    Rules,
    ko=st.sampled_from(["SIMPLE", "POSITIONAL", "SITUATIONAL"]),
    suicide=st.booleans(),
    has_button=st.booleans(),
)


@given(
    size=st.integers(2, 7),
    rules=rules_strategy,
    choices=st.lists(st.integers(0, 10**6), min_size=1, max_size=120),
)
def test_undo_restores_exact_state_and_hash(size, rules, choices):
    g = Game(size, rules=rules)
    for c in choices:
        if g.is_over:
            break
        legal = [*g.legal_moves(), PASS]
        before = _snapshot(g)
        move = legal[c % len(legal)]
        g.play(move)
        assert bk.check_consistency(g.b) == 0
        g.undo()
        assert _snapshot(g) == before
        g.play(move)


@given(
    size=st.integers(2, 9),
    rules=rules_strategy,
    choices=st.lists(st.integers(0, 10**6), min_size=1, max_size=150),
)
def test_stones_are_conserved(size, rules, choices):
    g = Game(size, rules=rules)
    placed = {BLACK: 0, WHITE: 0}
    for c in choices:
        if g.is_over:
            break
        legal = [*g.legal_moves(), PASS]
        move = legal[c % len(legal)]
        color = g.to_move
        g.play(move)
        if move != PASS:
            placed[color] += 1
        nb, nw = len(g.stones(BLACK)), len(g.stones(WHITE))
        assert nb + nw + len([loc for loc in g.locs() if g.color_at(loc) == EMPTY]) == size * size
        assert nb == placed[BLACK] - g.captures(WHITE)
        assert nw == placed[WHITE] - g.captures(BLACK)


@given(
    size=st.integers(3, 7),
    suicide=st.booleans(),
    choices=st.lists(st.integers(0, 10**6), min_size=1, max_size=100),
)
def test_positional_and_situational_hashes_differ_exactly_by_side_to_move(size, suicide, choices):
    pos = Game(size, rules=Rules(ko="POSITIONAL", suicide=suicide))
    sit = Game(size, rules=Rules(ko="SITUATIONAL", suicide=suicide))
    for c in choices:
        if pos.is_over or sit.is_over:
            break
        legal = [*sorted(set(pos.legal_moves()) & set(sit.legal_moves())), PASS]
        move = legal[c % len(legal)]
        pos.play(move)
        sit.play(move)
        n = pos.num_moves
        to_move = pos.to_move
        assert pos.hash == sit.hash
        assert pos.hist[n] == pos.hash
        assert np.int64(sit.hist[n] ^ pos.hist[n]) == bk.ZOBRIST_TO_MOVE[to_move]
        assert sit.situation_hash ^ sit.hash == int(bk.ZOBRIST_TO_MOVE[to_move])
    # Every recorded turn, not just the last one.
    for i in range(pos.num_moves + 1):
        to_move = BLACK if i == 0 else 3 - int(pos.moves[i - 1, 1])
        assert np.int64(sit.hist[i] ^ pos.hist[i]) == bk.ZOBRIST_TO_MOVE[to_move]


def test_random_games_stay_consistent_and_end():
    for size, seed in ((9, 1), (13, 2), (19, 3)):
        for ko in ("SIMPLE", "POSITIONAL", "SITUATIONAL"):
            g = Game(size, rules=Rules(ko=ko, suicide=seed % 2 == 0), capacity=4096)
            n = playout.play_random_game(g.g, g.b, g.hist, g.moves, g.table, 4000, playout.new_rng(seed))
            assert g.is_over and 0 < n < 4000
            assert bk.check_consistency(g.b) == 0
            assert g.g[gs.G_END] in (gs.END_PASSES, gs.END_REPEATED_PASS, gs.END_CYCLE)


@given(
    size=st.integers(3, 9),
    choices=st.lists(st.integers(0, 10**6), min_size=1, max_size=150),
)
def test_play_recorded_and_undo_restore_the_position(size, choices):
    """The undo used by tactical reading restores stones, chains, liberties, hash, ko, captures."""
    g = Game(size, rules=NO_SUICIDE)
    rec = np.zeros(bk.REC_LEN, dtype=np.int64)
    for c in choices:
        if g.is_over:
            break
        legal = g.legal_moves()
        if not legal:
            break
        move = legal[c % len(legal)]
        before = g.b.copy()
        colors = g.colors()
        bk.play_recorded(g.b, move, g.to_move, rec)
        bk.undo_recorded(g.b, move, g.to_move, rec)
        assert bk.check_consistency(g.b) == 0
        assert np.array_equal(g.colors(), colors)
        for field in (bk.M_KO, bk.M_HASH_LO, bk.M_HASH_HI, bk.M_CAPS_BLACK, bk.M_CAPS_WHITE, bk.M_NEMPTY):
            assert g.b[field] == before[field]
        for loc in g.locs():
            if g.color_at(loc) != EMPTY:
                assert bk.chain_libs(g.b, loc) == bk.chain_libs(before, loc)
        g.play(move)


def test_copy_board_gives_an_exact_copy_across_board_sizes():
    """copy_board copies only what can differ when the target holds a board of the same size; a
    board of another size is copied whole. Either way the copy is the board and plays on like it."""
    rng = playout.new_rng(11)

    def same(a, b):
        n = int(b[bk.M_NEMPTY])
        np.testing.assert_array_equal(a[: bk.ELIST], b[: bk.ELIST])
        np.testing.assert_array_equal(a[bk.ELIST : bk.ELIST + n], b[bk.ELIST : bk.ELIST + n])
        np.testing.assert_array_equal(a[bk.META :], b[bk.META :])

    dst = np.zeros(bk.BOARD_LEN, np.int32)
    for x_size, y_size in [(9, 9), (9, 9), (19, 19), (9, 9), (7, 13), (13, 7), (13, 7), (2, 2), (19, 19)]:
        game = Game(x_size, y_size, Rules(ko="POSITIONAL", suicide=True))
        for _ in range(x_size * y_size // 2):
            game.play(int(playout.random_move(game.g, game.b, game.table, game.to_move, rng)))
        bk.copy_board(dst, game.b)
        same(dst, game.b)
        original = game.b.copy()
        for _ in range(10):
            move = int(playout.random_move(game.g, game.b, game.table, game.to_move, rng))
            bk.play(dst, move, game.to_move)
            bk.play(original, move, game.to_move)
            game.play(move)
            same(dst, original)
