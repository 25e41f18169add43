"""The row writer: a hand-built game through writer -> validator -> the training loss's targets, with
every filled channel checked against values worked out here; the score distribution, policy targets,
bad games and atomic files."""

from __future__ import annotations

import math
import os
import re
import zipfile

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from common.data.records import GameRecord, GameResult, NetValues, SearchValues, TurnRecord
from common.data.rows import (
    game_to_rows,
    policy_surprise_and_entropy,
    policy_target_to_int16,
    save_rows,
    score_distribution,
    write_game_rows,
)
from common.data.schema import ARRAY_NAMES, GAME_MODE_FORK, SENTE_ROWS_VERSION
from common.data.validate import load_rows, validate_rows
from common.go.geometry import BLACK, EMPTY, WHITE
from common.go.rules import Rules
from tests.common.data.helpers import (
    AREA,
    ENTROPY,
    FINAL_STONES,
    GAME_HASH,
    KOMI,
    MOVES,
    OWNERSHIP,
    RAW,
    SEARCH,
    START_TURN,
    STORED_TARGETS,
    SURPRISE,
    TARGETS,
    X,
    Y,
    boards_before_each_turn,
    global_for,
    make_game,
    pos,
    spatial_for,
    target,
)


def rows_of(game: GameRecord, **kw) -> dict[str, np.ndarray]:
    kw.setdefault("policy_surprise_weight", 0.0)
    kw.setdefault("value_surprise_weight", 0.0)
    kw.setdefault("history_keep_prob", 1.0)
    return game_to_rows(game, rng=kw.pop("rng", 7), **kw)


# --- Hand-computed targets (KataGo's formulas written out the long way) --------------------------------
def white_values() -> list[tuple[float, float, float, float]]:
    out = []
    for (player, _), s in zip(MOVES, SEARCH, strict=True):
        if player == WHITE:
            out.append((s.win, s.loss, s.no_result, s.score))
        else:
            out.append((s.loss, s.win, s.no_result, -s.score))
    out.append((1.0, 0.0, 0.0, 2.5))  # white won by 2.5; komi 1.5 is not an integer: no draw adjustment
    return out


def td_by_hand(idx: int, now_factor: float) -> np.ndarray:
    """trainingwrite.cpp fillValueTDTargets, as a forward loop carrying the weight left."""
    values = white_values()
    acc = np.zeros(4)
    left = 1.0
    for i in range(idx, len(values)):
        if i == len(values) - 1:
            now, left = left, 0.0
        else:
            now, left = left * now_factor, left * (1 - now_factor)
        acc += now * np.array(values[i])
    return acc


def side(player: int, white_wlns: np.ndarray) -> np.ndarray:
    win, loss, no_result, score = white_wlns
    if player == WHITE:
        return np.array([win, loss, no_result, score])
    return np.array([loss, win, no_result, -score])


def variance_time_by_hand(idx: int) -> float:
    wl = [v[0] - v[1] for v in white_values()]
    return sum((i - idx) * (wl[i] - wl[i - 1]) ** 2 for i in range(idx + 1, len(wl)))


def entropy(t: np.ndarray) -> float:
    p = t[t > 0] / t.sum()
    return float(-(p * np.log(p)).sum())


def grid(board_map: np.ndarray) -> np.ndarray:
    g = np.zeros((19, 19))
    g[:Y, :X] = board_map
    return g


# --- The round trip ------------------------------------------------------------------------------------
def test_round_trip_every_filled_channel(tmp_path):
    game = make_game()
    path = write_game_rows(game, tmp_path, rng=3, policy_surprise_weight=0.0, value_surprise_weight=0.0)
    assert path == tmp_path / "hand-made-game.npz"
    report = validate_rows(path)
    assert report.ok, report.errors
    assert report.num_rows == 3 and report.sente_version == SENTE_ROWS_VERSION
    rows = load_rows(path)
    with np.load(path) as npz:  # plain numpy reads it, with exactly the schema's names
        assert sorted(npz.files) == sorted(ARRAY_NAMES)
    gt = rows["globalTargetsNC"].astype(np.float64)
    assert gt.shape == (3, 80)

    chunks = []
    for half in (GAME_HASH & (2**64 - 1), GAME_HASH >> 64):
        chunks += [half & 0x3FFFFF, (half >> 22) & 0x3FFFFF, half >> 44]
    boards = boards_before_each_turn()
    for r in range(3):  # turns 0, 1, 2 once each; turn 3 (cheap) never
        i = r
        player, _ = MOVES[i]
        t = gt[r]
        np.testing.assert_allclose(t[0:4], side(player, td_by_hand(i, 0.0)), atol=1e-6)
        for k, c in enumerate((0.176, 0.056, 0.016)):
            np.testing.assert_allclose(
                t[4 + 4 * k : 8 + 4 * k], side(player, td_by_hand(i, 1 / (1 + AREA * c))), atol=1e-5
            )
        s = SEARCH[i]
        np.testing.assert_allclose(t[16:20], [s.win, s.loss, s.no_result, s.score], atol=1e-6)
        assert t[20] == pytest.approx(2.5 if player == WHITE else -2.5)
        assert t[21] == pytest.approx(s.lead if s.lead is not None else 0.0)
        assert t[29] == (1.0 if s.lead is not None else 0.0)
        assert t[22] == pytest.approx(variance_time_by_hand(i), rel=1e-5)
        assert t[23] == 0 and t[24] == 0 and t[35] == 0
        assert t[25] == 1 and t[26] == 1 and t[27] == 1 and t[28] == 1 and t[33] == 1 and t[34] == 1
        assert t[30] == pytest.approx(SURPRISE[i])
        assert t[31] == pytest.approx(ENTROPY[i])
        assert t[32] == pytest.approx(entropy(TARGETS[1]) if i == 1 else 0.1 * (i + 1), rel=1e-6)
        assert list(t[36:41]) == [1.0] * 5
        assert list(t[41:47]) == chunks
        assert t[47] == pytest.approx(KOMI if player == WHITE else -KOMI)
        assert t[48] == 1  # area scoring
        assert t[49] == 1 and t[50] == (1 if START_TURN + i < START_TURN + 2 else 0)
        assert t[51] == START_TURN + i and t[52] == 0 and t[53] == START_TURN
        assert t[54] == 1 and t[55] == GAME_MODE_FORK and t[56] == 2
        assert t[57] == pytest.approx(RAW[i].win - RAW[i].loss)
        assert t[58] == pytest.approx(RAW[i].score)
        assert t[59] == pytest.approx(ENTROPY[i] - 0.25)
        assert t[60] == 100 + i and t[61] == 0 and t[62] == 1 and t[63] == 3
        assert not t[64:79].any() and t[79] == SENTE_ROWS_VERSION

        # Inputs: bit-packed planes and the global inputs, unchanged.
        planes = np.unpackbits(rows["binaryInputNCHWPacked"][r], axis=1)[:, :361]
        np.testing.assert_array_equal(planes, spatial_for(boards[i], player))
        np.testing.assert_array_equal(rows["globalInputNC"][r], global_for(player))
        # Policy: this turn's target and the next turn's, scaled as KataGo stores them.
        np.testing.assert_array_equal(rows["policyTargetsNCMove"][r, 0], STORED_TARGETS[i])
        np.testing.assert_array_equal(rows["policyTargetsNCMove"][r, 1], STORED_TARGETS[i + 1])
        # Spatial value targets, from the side to move.
        sign = 1 if player == WHITE else -1
        v = rows["valueTargetsNCHW"][r].astype(np.float64)
        np.testing.assert_array_equal(v[0], sign * grid(OWNERSHIP))
        seki = np.zeros((19, 19))
        seki[1, 1] = sign * 1
        np.testing.assert_array_equal(v[1], seki)
        np.testing.assert_array_equal(v[2], sign * grid(FINAL_STONES))  # 8 turns on is past the end
        np.testing.assert_array_equal(v[3], sign * grid(FINAL_STONES))
        np.testing.assert_array_equal(v[4], sign * grid(OWNERSHIP) * 60)
        # Score distribution: +-2.5 sits wholly in the bucket of +-2.5.
        distr = rows["scoreDistrN"][r]
        bucket = round((2.5 if player == WHITE else -2.5) + 421 - 0.5)
        assert distr[bucket] == 100 and distr.sum() == 100
        assert not rows["qValueTargetsNCMove"][r].any()


def test_round_trip_into_the_training_targets():
    """targets_from_rows (the trainer's reader) accepts the rows and reads back the same targets."""
    torch = pytest.importorskip("torch")
    from common.nn.loss import targets_from_rows

    rows = rows_of(make_game())
    t = targets_from_rows(rows)
    assert t.num_rows == 3
    mask = np.zeros((19, 19), dtype=np.float32)
    mask[:Y, :X] = 1
    for r in range(3):
        player, _ = MOVES[r]
        sign = 1 if player == WHITE else -1
        assert torch.equal(t.mask[r], torch.from_numpy(mask))
        expected = STORED_TARGETS[r] / STORED_TARGETS[r].sum()
        np.testing.assert_allclose(t.policy[r].numpy(), expected, atol=1e-6)
        nxt = STORED_TARGETS[r + 1] / STORED_TARGETS[r + 1].sum()
        np.testing.assert_allclose(t.opponent_policy[r].numpy(), nxt, atol=1e-6)
        final = side(player, np.array(white_values()[-1]))
        np.testing.assert_allclose(t.value[r].numpy(), final[:3], atol=1e-6)
        assert t.value_weight[r] == 1 and t.policy_weight[r] == 1 and t.opponent_policy_weight[r] == 1
        assert t.final_score[r] == pytest.approx(sign * 2.5)
        np.testing.assert_array_equal(t.ownership[r].numpy(), sign * grid(OWNERSHIP))
        assert t.ownership_weight[r] == 1 and t.row_weight[r] == 1
        lead = SEARCH[r].lead
        assert t.lead[r] == pytest.approx(lead if lead is not None else 0.0)
        assert t.lead_weight[r] == (1 if lead is not None else 0)
        assert t.variance_time[r] == pytest.approx(variance_time_by_hand(r), rel=1e-5)
        belief = np.arange(842) - 421 + 0.5
        assert float((t.score_distribution[r].numpy() * belief).sum()) == pytest.approx(sign * 2.5)


def test_last_turn_has_no_next_target_and_missing_targets_are_ones():
    game = make_game()
    game.turns[3].weight = 1.0  # now the last turn is written too
    game.turns[1].policy_target = None
    rows = rows_of(game)
    gt, policy = rows["globalTargetsNC"], rows["policyTargetsNCMove"]
    assert gt.shape[0] == 4
    assert gt[3, 28] == 0 and (policy[3, 1] == 1).all()  # no turn after the last
    assert gt[1, 26] == 0 and (policy[1, 0] == 1).all()  # turn 1 kept no target
    assert gt[0, 28] == 0 and (policy[0, 1] == 1).all()  # ... so turn 0 has no next-turn target
    assert gt[1, 32] == 0  # no target, no search entropy
    assert validate_rows(rows).ok


def test_no_result_games_have_no_score_or_ownership_targets():
    rows = rows_of(make_game(result=GameResult.without_result()))
    gt = rows["globalTargetsNC"]
    np.testing.assert_allclose(gt[:, 0:3], [[0, 0, 1]] * 3)
    assert (gt[:, [3, 20, 21, 27, 29, 34]] == 0).all()
    assert (rows["scoreDistrN"][:, 420] == 50).all() and (rows["scoreDistrN"][:, 421] == 50).all()
    assert not rows["valueTargetsNCHW"][:, [0, 1, 4]].any()
    assert (gt[:, 33] == 1).all()  # the future boards are still known
    assert validate_rows(rows).ok


def test_draws_under_integer_komi_use_the_draw_equivalent():
    game = make_game(komi=2.0, result=GameResult.from_score(0.0), draw_equivalent_wins_for_white=0.75)
    rows = rows_of(game)
    white_row = rows["globalTargetsNC"][1]  # turn 1: white to move
    np.testing.assert_allclose(white_row[0:4], [0.75, 0.25, 0.0, 0.25], atol=1e-6)
    game = make_game(komi=2.0, rules=Rules(has_button=True), result=GameResult.from_score(0.0))
    white_row = rows_of(game)["globalTargetsNC"][1]
    np.testing.assert_allclose(white_row[0:4], [0.5, 0.5, 0.0, 0.0], atol=1e-6)  # button: no adjustment


def test_optional_maps_left_out_give_zero_with_zero_weight():
    game = make_game(final_full_area=None, final_scoring=None, final_stones=None)
    rows = rows_of(game)
    gt = rows["globalTargetsNC"]
    assert (gt[:, 34] == 0).all() and not rows["valueTargetsNCHW"][:, 4].any()
    assert not rows["valueTargetsNCHW"][:, 1].any()
    # Without the final board, the boards 8 and 32 turns on are unknown for every turn of this short game.
    assert (gt[:, 33] == 0).all() and not rows["valueTargetsNCHW"][:, 2:4].any()
    game = make_game(final_ownership=None)
    gt = rows_of(game)["globalTargetsNC"]
    assert (gt[:, 27] == 0).all() and (gt[:, 20] == 0).all()


def test_territory_rows_carry_the_encore_phase_and_the_bonus_points_to_come():
    game = make_game(rules=Rules(scoring="TERRITORY"), final_white_bonus=3.0)
    # Turns 0-2 (the rows): the main phase, then the two encore phases; white's bonus points so far.
    for turn, phase, bonus in zip(game.turns, (0, 1, 2, 2), (-1.0, 0.0, 2.0, 3.0)):
        turn.encore_phase, turn.white_bonus = phase, bonus
    gt = rows_of(game)["globalTargetsNC"]
    assert gt.shape[0] == 3
    players = [player for player, _ in MOVES[:3]]
    assert list(gt[:, 48]) == [0.0, 0.0, 1.0]  # area-like only in the second encore phase
    assert list(gt[:, 61]) == [(4.0 if p == WHITE else -4.0) * f for p, f in zip(players, (1.0, 0.75, 0.25))]
    # The writer refuses an encore under area scoring.
    area = make_game()
    area.turns[1].encore_phase = 1
    with pytest.raises(ValueError, match="encore phase 1 under AREA"):
        rows_of(area)


def test_future_boards_come_from_the_later_turns_inputs():
    """With 40 turns, the board 8 turns on is read from turn i+8's input planes."""
    turns = []
    stones: dict[int, int] = {}
    order = [pos(x, y) for y in range(Y) for x in range(X)]
    for i in range(40):
        player = BLACK if i % 2 == 0 else WHITE
        move = order[i] if i < len(order) else 361
        turns.append(
            TurnRecord(
                spatial=spatial_for(stones, player),
                global_inputs=global_for(player),
                player=player,
                move=move,
                policy_target=target({move: 1}),
                search=SearchValues(win=0.5, loss=0.5),
                raw=NetValues(win=0.5, loss=0.5),
                weight=1.0 if i in (0, 3) else 0.0,
            )
        )
        if move != 361:
            stones = {**stones, move: player}
    game = make_game(turns=turns, final_stones=None)
    rows = rows_of(game)
    assert rows["globalTargetsNC"].shape[0] == 2
    for r, i in enumerate((0, 3)):
        sign = 1 if turns[i].player == WHITE else -1
        for channel, ahead in ((2, 8), (3, 32)):
            later = turns[i + ahead]
            own, opp = later.spatial[1], later.spatial[2]
            white = (own - opp) if later.player == WHITE else (opp - own)
            np.testing.assert_array_equal(rows["valueTargetsNCHW"][r, channel].reshape(-1), sign * white)
        assert rows["globalTargetsNC"][r, 33] == 1


def test_history_masks_are_chained():
    game = make_game()
    for turn in game.turns:
        turn.weight = 1.0
    masks = np.concatenate(
        [rows_of(game, rng=s, history_keep_prob=0.5)["globalTargetsNC"][:, 36:41] for s in range(50)]
    )
    assert set(np.unique(masks)) <= {0.0, 1.0}
    assert (np.diff(masks, axis=1) <= 0).all()  # once history is dropped, older history is too
    assert 0.35 < masks[:, 0].mean() < 0.65 and masks[:, 4].mean() < 0.15


def test_same_seed_same_rows():
    game = make_game()
    a = game_to_rows(game, rng=11)
    b = game_to_rows(game, rng=11)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])


def test_the_written_hash_matches_katagos_rows_of_that_game(shared):
    """KataGo's rows of the golden game with this hash carry the same six chunks ours do."""
    with np.load(shared / "golden" / "katago_selfplay_9x9.npz") as npz:
        katago_chunks = npz["globalTargetsNC"][:, 41:47]
    ours = rows_of(make_game())["globalTargetsNC"][0, 41:47]
    assert (katago_chunks == ours).all(axis=1).sum() > 0


# --- Pieces --------------------------------------------------------------------------------------------
def bucket_value(i: int) -> float:
    return i - 421 + 0.5


@pytest.mark.parametrize(
    ("score", "expected"),
    [
        (2.5, {2.5: 100}),
        (-2.5, {-2.5: 100}),
        (0.5, {0.5: 100}),
        (-0.5, {-0.5: 100}),
        (0.0, {-0.5: 50, 0.5: 50}),
        (2.25, {1.5: 25, 2.5: 75}),
        (0.3, {-0.5: 20, 0.5: 80}),
        (-7.75, {-8.5: 25, -7.5: 75}),
        (2.125, {1.5: 37, 2.5: 63}),  # the upper share 62.5 rounds half away from zero
        (1000.0, {420.5: 100}),
        (-1000.0, {-420.5: 100}),
    ],
)
def test_score_distribution_split_buckets(score, expected):
    distr = score_distribution(score)
    assert distr.dtype == np.int8 and distr.shape == (842,)
    got = {bucket_value(i): int(v) for i, v in enumerate(distr) if v}
    assert got == expected


@given(st.floats(min_value=-419.0, max_value=419.0, allow_nan=False))
def test_score_distribution_mean_is_the_score(score):
    distr = score_distribution(score).astype(np.float64)
    nonzero = np.flatnonzero(distr)
    assert distr.sum() == 100 and len(nonzero) <= 2
    assert len(nonzero) < 2 or nonzero[1] == nonzero[0] + 1
    mean = float((distr * (np.arange(842) - 421 + 0.5)).sum()) / 100
    assert abs(mean - score) <= 0.005 + 1e-9


def test_policy_target_scaling():
    np.testing.assert_array_equal(policy_target_to_int16(target({0: 3, 1: 1.5})), target({0: 10, 1: 5}))
    scaled_down = policy_target_to_int16(target({0: 60000, 1: 1, 2: 0.9}))  # x 0.5: 0.5 rounds up, 0.45 down
    np.testing.assert_array_equal(scaled_down, target({0: 30000, 1: 1}))
    np.testing.assert_array_equal(policy_target_to_int16(target({0: 25, 1: 2.5})), target({0: 25, 1: 3}))
    for bad in (np.zeros(362), target({0: -1, 1: 5}), target({0: np.nan}), np.ones(361)):
        with pytest.raises(ValueError):
            policy_target_to_int16(bad)


def test_policy_surprise_and_entropy():
    prior = np.array([0.5, 0.25, 0.25, 0.0])
    surprise, search_entropy, prior_entropy = policy_surprise_and_entropy(np.array([2.0, 2.0, 0.0, 0.0]), prior)
    assert surprise == pytest.approx(0.5 * math.log(0.5 / 0.5) + 0.5 * math.log(0.5 / 0.25))
    assert search_entropy == pytest.approx(math.log(2))
    assert prior_entropy == pytest.approx(-(0.5 * math.log(0.5) + 2 * 0.25 * math.log(0.25)))
    assert policy_surprise_and_entropy(prior, prior)[0] == pytest.approx(0.0, abs=1e-12)


def test_game_rows_follow_the_frequency_weights():
    game = make_game()
    game.turns[0].weight = 0.5
    counts = np.zeros(4)
    for seed in range(400):
        turns = rows_of(game, rng=seed)["globalTargetsNC"][:, 51] - START_TURN
        counts += np.bincount(turns.astype(int), minlength=4)
    np.testing.assert_allclose(counts / 400, [0.5, 1, 1, 0], atol=0.08)


def test_bad_games_are_refused_with_a_reason():
    game = make_game()
    game.turns[2].policy_target = target({pos(5, 5): 3})  # off the 4x3 board
    with pytest.raises(ValueError, match="turn 2: policy target has mass off the board"):
        game_to_rows(game)
    with pytest.raises(ValueError, match="turn 0: input plane 0"):
        game_to_rows(make_game(x_size=5))
    with pytest.raises(ValueError, match="final_ownership has shape"):
        game_to_rows(make_game(final_ownership=OWNERSHIP.T))
    game = make_game()
    game.turns[1].search = SearchValues(win=0.7, loss=0.7)
    with pytest.raises(ValueError, match="turn 1: search win/loss/no-result"):
        game_to_rows(game)
    with pytest.raises(ValueError, match="winner"):
        GameResult(winner=BLACK, white_score=3.0)
    with pytest.raises(ValueError, match="winner"):
        GameResult(winner=EMPTY, white_score=-0.5)


# --- Files ---------------------------------------------------------------------------------------------
def test_files_are_written_atomically(tmp_path, monkeypatch):
    rows = rows_of(make_game())
    path = save_rows(rows, tmp_path / "game.npz")
    assert sorted(os.listdir(tmp_path)) == ["game.npz"]
    assert zipfile.is_zipfile(path)

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez_compressed", boom)
    with pytest.raises(OSError, match="disk full"):
        save_rows(rows, tmp_path / "other.npz")
    assert sorted(os.listdir(tmp_path)) == ["game.npz"]  # no temp file, no half file
    with pytest.raises(ValueError, match="not schema arrays: extra"):
        save_rows({**rows, "extra": np.zeros(3)}, tmp_path / "x.npz")


def test_games_without_rows_write_nothing(tmp_path):
    game = make_game()
    for turn in game.turns:
        turn.weight = 0.0
    assert write_game_rows(game, tmp_path) is None
    assert os.listdir(tmp_path) == []


def test_unsafe_game_ids_do_not_become_paths(tmp_path):
    path = write_game_rows(make_game(game_id="../../etc/passwd"), tmp_path, rng=1)
    assert path.parent == tmp_path and re.fullmatch(r"[0-9a-f]{32}\.npz", path.name)
