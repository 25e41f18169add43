"""Input features (KataGo inputs version 7) against KataGo's own training rows, ladders, symmetries."""

import re

import numpy as np
import pytest

from common.encoding.features import (
    NN_AREA,
    Encoder,
    inverse_symmetry,
    new_batch,
    symmetry_map,
    unapply_symmetry,
)
from common.go import board as bk
from common.go.game import Game
from common.go.geometry import BLACK, PASS, WHITE, loc_of, xy_of
from common.go.rules import Rules
from common.go.sgf import read_sgf
from tests.common.go.helpers import play_all, v


def encode(game: Game, symmetry: int = 0):
    spatial, glob, legal = new_batch(1)
    Encoder().encode([game], spatial, glob, legal, symmetries=[symmetry])
    return spatial[0], glob[0], legal[0]


def plane(spatial, p, game: Game) -> list[str]:
    grid = spatial[p].reshape(19, 19)[: game.y_size, : game.x_size]
    return ["".join("1" if c else "." for c in row) for row in grid]


def _rows_by_game(npz, sgf_lines):
    """KataGo's training rows of each game, found by the game hash they carry (channels 41-46)."""
    targets = npz["globalTargetsNC"]
    for line in sgf_lines:
        h = re.search(r"gameHash=([0-9A-F]{32})", line).group(1)
        hi, lo = int(h[:16], 16), int(h[16:], 16)
        chunks = [lo & 0x3FFFFF, (lo >> 22) & 0x3FFFFF, lo >> 44, hi & 0x3FFFFF, (hi >> 22) & 0x3FFFFF, hi >> 44]
        rows = np.where(np.all(targets[:, 41:47] == np.array(chunks, dtype=np.float32), axis=1))[0]
        yield line, rows


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # Area and territory games, territory ones through the encore, cleanup games included.
        ("katago_selfplay_9x9", {"area": 59, "territory": 190}),
        # Territory games only, 37 of their main-line rows in the encore.
        ("katago_territory_selfplay_sample", {"area": 0, "territory": 212}),
    ],
)
def test_features_match_katagos_training_rows(shared, name, expected):
    """KataGo's self-play npz holds its inputs for real positions of the games in the .sgfs: every
    plane and global value must be ours. Rows of side positions (channel 62 = 0) are not in the
    SGF main line. Cleanup games begin in an encore phase from a setup position.
    """
    npz = np.load(shared / "golden" / f"{name}.npz")
    bits = np.unpackbits(npz["binaryInputNCHWPacked"], axis=2)[:, :, :NN_AREA].astype(np.float32)
    glob_in = npz["globalInputNC"]
    targets = npz["globalTargetsNC"]
    lines = [x for x in (shared / "golden" / f"{name}.sgfs").read_text().splitlines() if x.strip()]
    enc = Encoder()
    spatial, glob, legal = new_batch(1)
    compared = {"area": 0, "territory": 0}
    phases = {0: 0, 1: 0, 2: 0}
    for line, rows in _rows_by_game(npz, lines):
        rec = read_sgf(line)
        area = rec.rules.scoring == "AREA"
        for r in rows:
            turn = int(targets[r, 51])
            if targets[r, 62] != 1:
                continue
            game = rec.to_game(upto=turn)
            enc.encode([game], spatial, glob, legal)
            where = (rec.rules.to_compact(), turn, game.encore_phase)
            for p in range(22):
                assert np.array_equal(spatial[0, p], bits[r, p]), (*where, p)
            globals_ = list(range(19))
            if rec.komi == int(rec.komi):
                # Self-play draws a random draw value for integer komi, which shifts the komi input.
                globals_ = [i for i in globals_ if i not in (5, 18)]
            for i in globals_:
                assert glob[0, i] == pytest.approx(glob_in[r, i], abs=1e-6), (*where, i)
            compared["area" if area else "territory"] += 1
            phases[game.encore_phase] += 1
    assert compared == expected
    assert name != "katago_territory_selfplay_sample" or phases == {0: 175, 1: 8, 2: 29}


LADDER = """
    .........
    .........
    .........
    .........
    .........
    ..XX.....
    .XO......
    ..X......
    .........
"""


def test_a_working_ladder_is_marked_for_both_sides():
    for to_move in (BLACK, WHITE):
        game = Game.from_diagram(LADDER, to_move=to_move)
        spatial, _, _ = encode(game)
        assert plane(spatial, 14, game)[6] == "..1......"  # the white stone in atari
        assert spatial[14].sum() == 1


def test_a_ladder_breaker_saves_the_stone():
    # The ladder runs down and to the right; a white stone on its path breaks it.
    broken = LADDER.strip().splitlines()
    broken[7] = "..X.O...."  # E2, on the ladder's path
    game = Game.from_diagram("\n".join(broken), to_move=BLACK)
    spatial, _, _ = encode(game)
    assert spatial[14].sum() == 0


def test_working_first_moves_against_a_two_liberty_chain():
    two_libs = """
        .........
        .........
        .........
        .........
        .........
        ..XX.....
        .XO......
        .........
        .........
        """
    # White C3 has two liberties, D3 and C2. Black C2 starts the ladder above; black D3 lets
    # white escape to three liberties.
    game = Game.from_diagram(two_libs, to_move=BLACK)
    spatial, _, _ = encode(game)
    assert plane(spatial, 17, game) == ["........."] * 7 + ["..1......", "........."]
    assert plane(spatial, 14, game)[6] == "..1......"
    # With white to move the chain is white's own: still ladder-capturable, no working moves.
    game = Game.from_diagram(two_libs, to_move=WHITE)
    spatial, _, _ = encode(game)
    assert spatial[17].sum() == 0
    assert plane(spatial, 14, game)[6] == "..1......"


def test_history_after_the_end_of_the_game():
    game = Game(9)
    play_all(game, "B E5", "W C3", "B pass", "W pass")
    assert game.is_over
    spatial, glob, _ = encode(game)  # over: only the move that ended the game
    assert glob[0] == 1 and glob[1:5].sum() == 0 and spatial[9:14].sum() == 0
    assert glob[14] == 1
    game.undo()
    spatial, glob, _ = encode(game)
    assert glob[0] == 1 and glob[14] == 1  # black passed; white's pass would end the game
    assert spatial[10].reshape(19, 19)[6, 2] == 1  # W C3, two turns ago
    game.play(PASS)
    play_all(game, "B D4")  # play goes on: the end and what follows count, not what came before
    spatial, glob, _ = encode(game)
    assert spatial[9].reshape(19, 19)[5, 3] == 1 and glob[1] == 1
    assert glob[2] == 0 and spatial[12].sum() == 0 and glob[14] == 0


def test_history_stops_where_moves_do_not_alternate():
    game = Game(9)
    play_all(game, "B E5", "B C3", "W D4")
    spatial, _, _ = encode(game)  # black to move
    assert spatial[9].sum() == 1 and spatial[10].sum() == 1 and spatial[11].sum() == 0


def test_superko_banned_points_and_rule_globals():
    from tests.common.go.test_game import three_kos

    game = three_kos("POSITIONAL")
    play_all(game, "B C8", "W G2", "B pass", "W B8")
    spatial, glob, legal = encode(game)
    h2 = loc_of(7, 7)
    x, y = xy_of(h2)
    assert spatial[6, y * 19 + x] == 1 and legal[y * 19 + x] == 0
    assert tuple(glob[6:9]) == (1.0, 0.5, 0.0)
    sit = three_kos("SITUATIONAL")
    play_all(sit, "B C8", "W G2", "B pass", "W B8")
    spatial, glob, legal = encode(sit)
    assert spatial[6, y * 19 + x] == 0 and legal[y * 19 + x] == 1
    assert tuple(glob[6:8]) == (1.0, -0.5)


@pytest.mark.parametrize("ko", ["POSITIONAL", "SITUATIONAL", "SIMPLE"])
def test_legal_moves_and_bans_agree_with_the_rules_engine(ko):
    """The encoder's legal moves and its ko/superko plane are the rules engine's, point by point,
    through long random games on tiny boards, where captures, kos and repeated positions (some
    reached again by a move that captures nothing) are common."""
    rng = np.random.default_rng(7)
    checked = banned_seen = 0
    for size in (2, 3, 3, 4, 4, 5):
        game = Game(size, rules=Rules(ko=ko, suicide=bool(rng.integers(2))))
        for _ in range(150):
            if game.is_over:
                break
            spatial, _, legal = encode(game)
            for y in range(size):
                for x in range(size):
                    loc = loc_of(x, y)
                    is_legal = game.is_legal(loc)
                    assert bool(legal[y * 19 + x]) == is_legal, (ko, x, y)
                    empty = game.b[bk.COLOR + loc] == 0
                    banned = empty and (
                        loc == game.b[bk.M_KO]
                        or (not is_legal and "superko" in (game.illegal_reason(loc, game.to_move) or ""))
                    )
                    assert bool(spatial[6, y * 19 + x]) == banned, (ko, x, y)
                    banned_seen += banned
                    checked += 1
            moves = game.legal_moves()
            game.play(int(moves[rng.integers(len(moves))]) if moves and rng.random() > 0.05 else PASS)
    assert checked > 1000 and banned_seen > 0


def test_komi_inputs_and_button():
    game = Game(9, rules=Rules(has_button=True), komi=7.0)
    _, glob, _ = encode(game)
    assert glob[5] == pytest.approx(-7.0 / 20) and glob[17] == 1
    game.play(PASS)  # black takes the button: +0.5 for black, white to move
    _, glob, _ = encode(game)
    assert glob[5] == pytest.approx((7.0 - 0.5) / 20) and glob[17] == 0


@pytest.mark.parametrize("size", [(9, 9), (7, 11)])
def test_symmetries_act_like_rotating_the_game(size):
    x_size, y_size = size
    moves = [(2, 3), (4, 4), (3, 3), (1, 1), (5, 6), (2, 2), (3, 2)]
    for s in range(8):
        game = Game(x_size, y_size)
        transposed = bool(s & 4)
        rotated = Game(y_size, x_size) if transposed else Game(x_size, y_size)
        perm = np.empty(NN_AREA, dtype=np.int64)
        symmetry_map(x_size, y_size, s, perm)
        for x, y in moves:
            game.play(loc_of(x, y))
            p = perm[y * 19 + x]
            rotated.play(loc_of(p % 19, p // 19))
        spatial, glob, legal = encode(game, symmetry=s)
        expected_spatial, expected_glob, expected_legal = encode(rotated)
        np.testing.assert_array_equal(spatial, expected_spatial)
        np.testing.assert_array_equal(glob, expected_glob)
        np.testing.assert_array_equal(legal, expected_legal)
        # Outputs computed on the rotated position map back to the original points.
        plain, _, _ = encode(game)
        back = unapply_symmetry(spatial, x_size, y_size, s)
        np.testing.assert_array_equal(back, plain)
        assert inverse_symmetry(inverse_symmetry(s)) == s


def test_encoding_leaves_the_game_untouched():
    game = Game.from_diagram(LADDER, to_move=WHITE)
    before = game.b.copy()
    colors = game.colors()
    encode(game)  # ladder reading plays moves on the game's own board and takes them back
    assert bk.check_consistency(game.b) == 0
    assert np.array_equal(game.colors(), colors)
    for field in (bk.M_KO, bk.M_HASH_LO, bk.M_HASH_HI, bk.M_CAPS_BLACK, bk.M_CAPS_WHITE, bk.M_NEMPTY):
        assert game.b[field] == before[field]
    assert v(game, "D3") in game.legal_moves(WHITE)
