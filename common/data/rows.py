"""The writer that turns a self-play game (:mod:`common.data.records`) into training rows and stores
them.

The rows are in KataGo's npz layout; the arrays and what each channel holds are in
:mod:`common.data.schema`, and how often each turn becomes a row in :mod:`common.data.weights`. The
writer, :func:`game_to_rows`, fills every row from its turn, the turns after it and the result, following
KataGo's trainingwrite.cpp (``TrainingWriteBuffers::addRow``, ``fillValueTDTargets``) and
cpp/program/play.cpp (the final value targets); :func:`save_rows` and :func:`write_game_rows` store
rows as one compressed npz per game, atomically.
"""

from __future__ import annotations

import io
import logging
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from common.data.records import GameRecord, SideTurn, TurnRecord, white_value
from common.data.schema import (
    ARRAY_NAMES,
    DATA_LEN,
    FUTURE_BOARD_TURNS,
    GT_AREA_SCORING,
    GT_BONUS_POINTS,
    GT_EARLIER_NET,
    GT_EXTRA_BLACK,
    GT_FINAL_SCORE,
    GT_FIRST_TRAINING_TURN,
    GT_FORMAT_VERSION,
    GT_FUTURE_BOARD_WEIGHT,
    GT_GAME_FINISHED,
    GT_GAME_HASH,
    GT_GAME_MODE,
    GT_HISTORY_MASK_FIRST,
    GT_HIT_TURN_LIMIT,
    GT_INITIAL_TURN,
    GT_LEAD,
    GT_LEAD_WEIGHT,
    GT_NETS_BEHIND,
    GT_NEXT_POLICY_WEIGHT,
    GT_ONE_MINUS_TD_WEIGHT,
    GT_ONE_MINUS_VALUE_WEIGHT,
    GT_OWNERSHIP_WEIGHT,
    GT_POLICY_ENTROPY,
    GT_POLICY_SURPRISE,
    GT_POLICY_WEIGHT,
    GT_RAW_POLICY_ENTROPY,
    GT_RAW_SCORE,
    GT_RAW_WIN_LOSS,
    GT_ROW_WEIGHT,
    GT_SCORING_WEIGHT,
    GT_SEARCH_ENTROPY,
    GT_SELF_KOMI,
    GT_SENTE_VERSION,
    GT_SIDE_POSITION,
    GT_TURN_INDEX,
    GT_UNREDUCED_VISITS,
    GT_VARIANCE_TIME,
    KATAGO_FORMAT_VERSION,
    MAX_ROWS_PER_FILE,
    NUM_GLOBAL_TARGETS,
    NUM_QVALUE,
    NUM_VALUE_SPATIAL,
    POLICY_LEN,
    POLICY_TARGET_MAX,
    POLICY_TARGET_MIN_MAX,
    QVALUE_MAX,
    QVALUE_SCORE_SCALE,
    QVALUE_WINLOSS_SCALE,
    REQUIRED_ARRAYS,
    SCHEMA_BY_NAME,
    SCORE_DISTR_LEN,
    SCORE_DISTR_MID,
    SCORE_TARGET_CAP,
    SCORING_SCALE,
    SENTE_ROWS_VERSION,
    VT_FUTURE_8,
    VT_FUTURE_32,
    VT_OWNERSHIP,
    VT_SCORING,
    VT_SEKI,
    RowArrays,
    empty_rows,
    pack_spatial,
)
from common.data.weights import (
    POLICY_SURPRISE_DATA_WEIGHT,
    VALUE_SURPRISE_DATA_WEIGHT,
    frequency_weights,
    stochastic_round,
    stochastic_row_counts,
)
from common.files import atomic_write
from common.go.geometry import BLACK, WHITE

log = logging.getLogger(__name__)

HISTORY_KEEP_PROB = 0.98  # KataGo's selfplay1.cfg default

# TD-like value targets: nowFactor = 1 / (1 + area * c) for the long, medium and short horizons.
TD_AREA_COEFFICIENTS = (0.176, 0.056, 0.016)


# --- Small helpers --------------------------------------------------------------------------------------
def _round_half_away(x: float) -> int:
    """C's round(): halves away from zero."""
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def policy_target_to_int16(counts: np.ndarray) -> np.ndarray:
    """A policy target as KataGo stores it: scaled so the largest entry is at least 10 (keeps the
    resolution of pruned fractional counts) and at most 30000, rounded (halves up)."""
    c = np.asarray(counts, dtype=np.float64)
    if c.shape != (POLICY_LEN,):
        raise ValueError(f"policy target has shape {c.shape}; expected ({POLICY_LEN},)")
    if not np.all(np.isfinite(c)) or np.any(c < 0):
        raise ValueError("policy target has negative or non-finite entries")
    top = float(c.max())
    if top <= 0:
        raise ValueError("policy target is all zero")
    scale = 1.0
    if top < POLICY_TARGET_MIN_MAX:
        scale = POLICY_TARGET_MIN_MAX / top
    elif top > POLICY_TARGET_MAX:
        scale = POLICY_TARGET_MAX / top
    return np.minimum(np.floor(c * scale + 0.5), POLICY_TARGET_MAX).astype(np.int16)


def policy_surprise_and_entropy(target: np.ndarray, prior: np.ndarray) -> tuple[float, float, float]:
    """(KL(target || prior), entropy of the target, entropy of the prior), natural logs, as KataGo's
    Search::getPolicySurpriseAndEntropy: ``target`` is normalised; terms with target or prior below
    1e-100 are skipped; results are clamped at 0. A target entry on a move the prior gives zero makes
    the surprise infinite, so such a prior is floored at 1e-30."""
    t = np.asarray(target, dtype=np.float64)
    p = np.asarray(prior, dtype=np.float64)
    if t.shape != p.shape:
        raise ValueError(f"target shape {t.shape} differs from prior shape {p.shape}")
    total = t.sum()
    if not total > 0:
        raise ValueError("policy target sums to zero")
    t = t / total
    used = t > 1e-100
    log_t = np.log(t[used])
    surprise = float(np.sum(t[used] * (log_t - np.log(np.maximum(p[used], 1e-30)))))
    search_entropy = float(-np.sum(t[used] * log_t))
    pp = p[p > 1e-100]
    prior_entropy = float(-np.sum(pp * np.log(pp)))
    return max(surprise, 0.0), max(search_entropy, 0.0), max(prior_entropy, 0.0)


def _entropy(weights: np.ndarray) -> float:
    """Entropy (natural log) of non-negative weights, normalised."""
    total = float(weights.sum())
    if not total > 0:
        return 0.0
    p = weights[weights > 0] / total
    return max(float(-np.sum(p * np.log(p))), 0.0)


def score_distribution(score: float) -> np.ndarray:
    """scoreDistrN for a final score from the side to move: 100 split over the buckets of
    ``round(score) -/+ 0.5`` so that their mean is ``score`` (the upper share rounded to a percent);
    beyond the ends all 100 go to the end bucket. trainingwrite.cpp addRow."""
    distr = np.zeros(SCORE_DISTR_LEN, dtype=np.int8)
    center = _round_half_away(score)
    lower = center + SCORE_DISTR_MID - 1
    upper = center + SCORE_DISTR_MID
    if upper <= 0:
        distr[0] = 100
    elif lower >= SCORE_DISTR_LEN - 1:
        distr[SCORE_DISTR_LEN - 1] = 100  # KataGo indexes one past the end here; the last bucket is meant
    else:
        upper_share = _round_half_away((score - (center - 0.5)) * 100.0)
        distr[lower] = 100 - upper_share
        distr[upper] = upper_share
    return distr


def dummy_score_distribution() -> np.ndarray:
    """KataGo's filler when there is no score target: 50/50 around 0, so it still sums to 100."""
    distr = np.zeros(SCORE_DISTR_LEN, dtype=np.int8)
    distr[SCORE_DISTR_MID - 1] = 50
    distr[SCORE_DISTR_MID] = 50
    return distr


def game_hash_chunks(hash128: int) -> list[int]:
    """The 128-bit game hash as globalTargetsNC channels 41-46 hold it: each 64-bit half (low first)
    in chunks of 22, 22 and 20 bits (trainingwrite.cpp)."""
    chunks = []
    for h in (hash128 & ((1 << 64) - 1), hash128 >> 64):
        chunks += [h & 0x3FFFFF, (h >> 22) & 0x3FFFFF, (h >> 44) & 0xFFFFF]
    return chunks


def area_scoring_flag(scoring: str, encore_phase: int) -> float:
    """globalTargetsNC GT_AREA_SCORING: 1 under area scoring and in the second encore phase, where
    territory scoring counts the stones standing since its start like area scoring (trainingwrite.cpp)."""
    return 1.0 if scoring == "AREA" or encore_phase == 2 else 0.0


def bonus_points_target(player: int, final_white_bonus: float, white_bonus: float) -> float:
    """globalTargetsNC GT_BONUS_POINTS: the bonus points still to come from the side to move's view
    (the button, and under territory scoring the points the stones played from here on give)."""
    to_come = white_value(player, final_white_bonus - white_bonus)
    return to_come if to_come != 0 else 0.0  # never a negative zero, as KataGo


# --- Value targets in white's view --------------------------------------------------------------------
def _td_targets(white_targets: np.ndarray, now_factor: float) -> np.ndarray:
    """fillValueTDTargets for every turn at once, white's view: T[n] = v[n], T[i] = f v[i] + (1-f) T[i+1]."""
    n = white_targets.shape[0] - 1
    out = np.empty_like(white_targets)
    out[n] = white_targets[n]
    for i in range(n - 1, -1, -1):
        out[i] = now_factor * white_targets[i] + (1.0 - now_factor) * out[i + 1]
    return out


def _variance_times(white_targets: np.ndarray) -> np.ndarray:
    """[n] sum over j > i of (j - i) (WL_j - WL_{j-1})², WL = win - loss (trainingwrite.cpp)."""
    wl = white_targets[:, 0] - white_targets[:, 1]
    n = wl.shape[0] - 1
    jumps = np.zeros(n + 1)
    jumps[1:] = np.diff(wl) ** 2
    idx = np.arange(n + 1, dtype=np.float64)
    s0 = np.cumsum(jumps[::-1])[::-1]  # sum_{j >= i} jumps[j]
    s1 = np.cumsum((idx * jumps)[::-1])[::-1]
    i = np.arange(n)
    return (s1[i + 1] - i * s0[i + 1]) if n > 0 else np.zeros(0)


# --- Rows -----------------------------------------------------------------------------------------------
def _board_map(name: str, values: np.ndarray | None, game: GameRecord, *, ternary: bool) -> np.ndarray | None:
    """A [y_size, x_size] map embedded in the top-left of the 19x19 grid (float64)."""
    if values is None:
        return None
    a = np.asarray(values, dtype=np.float64)
    if a.shape != (game.y_size, game.x_size):
        raise ValueError(f"{name} has shape {a.shape}; expected ({game.y_size}, {game.x_size}) (y, x)")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} has non-finite values")
    if ternary and not np.all((a == -1) | (a == 0) | (a == 1)):
        raise ValueError(f"{name} holds values other than -1, 0, 1")
    if not ternary and np.any(np.abs(a) > 1):
        raise ValueError(f"{name} has values outside [-1, 1]")
    grid = np.zeros((DATA_LEN, DATA_LEN))
    grid[: game.y_size, : game.x_size] = a
    return grid


def _policy_plane(target: np.ndarray | None) -> tuple[np.ndarray, float]:
    if target is None:
        return np.ones(POLICY_LEN, dtype=np.int16), 0.0  # KataGo's uniformPolicyTarget, weight 0
    return policy_target_to_int16(target), 1.0


def _side_view(grid: np.ndarray, player: int) -> np.ndarray:
    return grid if player == WHITE else -grid


def _board_from_inputs(turn: TurnRecord) -> np.ndarray:
    """The stones of a turn's position from white's view (+1 white, -1 black) on the 19x19 grid."""
    spatial = np.asarray(turn.spatial)
    own = spatial[1].astype(np.float64)
    opp = spatial[2].astype(np.float64)
    side = own - opp
    return (side if turn.player == WHITE else -side).reshape(DATA_LEN, DATA_LEN)


def game_to_rows(
    game: GameRecord,
    rng: np.random.Generator | int | None = None,
    policy_surprise_weight: float = POLICY_SURPRISE_DATA_WEIGHT,
    value_surprise_weight: float = VALUE_SURPRISE_DATA_WEIGHT,
    history_keep_prob: float = HISTORY_KEEP_PROB,
) -> RowArrays:
    """The game's training rows in KataGo's layout (possibly zero rows).

    ``rng`` (a Generator or a seed) drives the row counts, the history masks and the stochastic
    rounding of scoring and q-values; the same seed gives the same rows. ``history_keep_prob`` 1.0
    keeps history on every row.
    """
    game.check()
    gen = np.random.default_rng(rng)
    n = game.num_turns
    if n == 0:
        return empty_rows(0)
    counts = stochastic_row_counts(frequency_weights(game, policy_surprise_weight, value_surprise_weight), gen)
    total = int(counts.sum()) + len(game.side_turns)
    rows = empty_rows(total)
    if total == 0:
        return rows

    area = game.board_area
    white_targets = game.white_value_targets()
    td = [_td_targets(white_targets, 0.0)]
    td += [_td_targets(white_targets, 1.0 / (1.0 + area * c)) for c in TD_AREA_COEFFICIENTS]
    td.append(_td_targets(white_targets, 1.0))
    variance_times = _variance_times(white_targets)

    no_result = game.result.no_result
    ownership = _board_map("final_ownership", game.final_ownership, game, ternary=True)
    full_area = _board_map("final_full_area", game.final_full_area, game, ternary=True)
    scoring = _board_map("final_scoring", game.final_scoring, game, ternary=False)
    final_stones = _board_map("final_stones", game.final_stones, game, ternary=True)
    boards: list[np.ndarray | None] = [_board_from_inputs(t) for t in game.turns]
    boards.append(final_stones)
    final_white_score = white_targets[n, 3]

    hash_chunks = game_hash_chunks(game.hash128())
    switches = sorted(int(t) for t in game.net_switch_turns)
    policy_planes = [_policy_plane(t.policy_target) for t in game.turns]

    r = 0
    for i, turn in enumerate(game.turns):
        if counts[i] == 0:
            continue
        player = turn.player
        turn_index = game.start_turn + i

        base = _turn_targets(game, turn, turn_index, hash_chunks, switches)
        for k, group in enumerate(td):
            win, loss, nores, score = group[i]
            if player == BLACK:
                win, loss, score = loss, win, -score
            base[4 * k : 4 * k + 4] = (win, loss, nores, np.clip(score, -SCORE_TARGET_CAP, SCORE_TARGET_CAP))
        base[GT_VARIANCE_TIME] = variance_times[i]
        plane0, w0 = policy_planes[i]
        plane1, w1 = policy_planes[i + 1] if i + 1 < n else _policy_plane(None)
        base[GT_POLICY_WEIGHT] = w0
        base[GT_NEXT_POLICY_WEIGHT] = w1
        base[GT_BONUS_POINTS] = bonus_points_target(player, game.final_white_bonus, turn.white_bonus)
        base[GT_GAME_FINISHED] = 0.0 if game.hit_turn_limit else 1.0

        value_spatial = np.zeros((NUM_VALUE_SPATIAL, DATA_LEN, DATA_LEN), dtype=np.int8)
        if ownership is None or no_result:
            distr = dummy_score_distribution()
        else:
            base[GT_OWNERSHIP_WEIGHT] = 1.0
            own = _side_view(ownership, player)
            value_spatial[VT_OWNERSHIP] = own
            if full_area is not None:
                value_spatial[VT_SEKI] = np.where((full_area != 0) & (ownership == 0), _side_view(full_area, player), 0)
            score = white_value(player, final_white_score)
            base[GT_FINAL_SCORE] = np.clip(score, -SCORE_TARGET_CAP, SCORE_TARGET_CAP)  # KataGo leaves it uncapped
            distr = score_distribution(score)
        future_8, future_32 = (boards[min(i + k, n)] for k in FUTURE_BOARD_TURNS)
        if future_8 is not None and future_32 is not None:
            base[GT_FUTURE_BOARD_WEIGHT] = 1.0
            value_spatial[VT_FUTURE_8] = _side_view(future_8, player)
            value_spatial[VT_FUTURE_32] = _side_view(future_32, player)
        side_scoring = None
        if scoring is not None and not no_result:
            base[GT_SCORING_WEIGHT] = 1.0
            side_scoring = _side_view(scoring, player) * SCORING_SCALE
        packed = pack_spatial(np.asarray(turn.spatial))
        for _ in range(int(counts[i])):
            _put_row(rows, r, turn, packed, base, (plane0, plane1), distr, value_spatial, gen, history_keep_prob)
            if side_scoring is not None:
                rows["valueTargetsNCHW"][r, VT_SCORING] = stochastic_round(
                    side_scoring, gen, -SCORING_SCALE, SCORING_SCALE
                )
            r += 1
    for side in game.side_turns:
        _side_row(rows, r, game, side, hash_chunks, switches, gen, history_keep_prob)
        r += 1
    assert r == total
    log.debug("game %s: %d turns, %d side positions -> %d rows", game.game_id or "?", n, len(game.side_turns), total)
    return rows


def _turn_targets(
    game: GameRecord, turn: TurnRecord, turn_index: int, hash_chunks: list[int], switches: list[int]
) -> np.ndarray:
    """globalTargetsNC of a turn's row as far as the turn and the game give them, not the value,
    policy weights or outcome channels."""
    base = np.zeros(NUM_GLOBAL_TARGETS, dtype=np.float64)
    base[GT_ONE_MINUS_TD_WEIGHT] = 0.0
    base[GT_ROW_WEIGHT] = game.training_weight
    if turn.search.lead is not None and not game.result.no_result:
        base[GT_LEAD] = np.clip(turn.search.lead, -SCORE_TARGET_CAP, SCORE_TARGET_CAP)
        base[GT_LEAD_WEIGHT] = 1.0
    base[GT_POLICY_SURPRISE] = turn.policy_surprise
    base[GT_POLICY_ENTROPY] = turn.policy_entropy
    if turn.search_entropy is not None:
        base[GT_SEARCH_ENTROPY] = turn.search_entropy
    elif turn.policy_target is not None:
        base[GT_SEARCH_ENTROPY] = _entropy(np.asarray(turn.policy_target, dtype=np.float64))
    base[GT_ONE_MINUS_VALUE_WEIGHT] = 0.0
    base[GT_GAME_HASH] = hash_chunks
    base[GT_SELF_KOMI] = float(turn.global_inputs[5]) * 20.0  # fillRowV7 writes selfKomi / 20 there
    base[GT_AREA_SCORING] = area_scoring_flag(game.rules.scoring, turn.encore_phase)
    base[GT_EARLIER_NET] = 1.0 if switches else 0.0
    base[GT_NETS_BEHIND] = sum(1 for s in switches if s > turn_index)
    base[GT_TURN_INDEX] = turn_index
    base[GT_HIT_TURN_LIMIT] = 1.0 if game.hit_turn_limit else 0.0
    base[GT_FIRST_TRAINING_TURN] = game.start_turn
    base[GT_EXTRA_BLACK] = game.extra_black
    base[GT_GAME_MODE] = game.mode
    base[GT_INITIAL_TURN] = game.initial_turn_number
    base[GT_RAW_WIN_LOSS] = turn.raw.win - turn.raw.loss
    base[GT_RAW_SCORE] = turn.raw.score
    base[GT_RAW_POLICY_ENTROPY] = (
        turn.raw_policy_entropy if turn.raw_policy_entropy is not None else turn.policy_entropy
    )
    base[GT_UNREDUCED_VISITS] = turn.visits
    base[GT_FORMAT_VERSION] = KATAGO_FORMAT_VERSION
    base[GT_SENTE_VERSION] = SENTE_ROWS_VERSION
    return base


def _put_row(
    rows: RowArrays,
    r: int,
    turn: TurnRecord,
    packed: np.ndarray,
    targets: np.ndarray,
    planes: tuple[np.ndarray, np.ndarray],
    distr: np.ndarray,
    value_spatial: np.ndarray,
    gen: np.random.Generator,
    history_keep_prob: float,
) -> None:
    """Write row r: the turn's inputs (its planes packed once for all its rows) and q-values, these
    targets with fresh history masks."""
    row_targets = targets.copy()
    keep = True
    for h in range(5):
        keep = keep and bool(gen.random() < history_keep_prob)
        row_targets[GT_HISTORY_MASK_FIRST + h] = 1.0 if keep else 0.0
    rows["binaryInputNCHWPacked"][r] = packed
    rows["globalInputNC"][r] = np.asarray(turn.global_inputs, dtype=np.float32)
    rows["policyTargetsNCMove"][r, 0] = planes[0]
    rows["policyTargetsNCMove"][r, 1] = planes[1]
    rows["globalTargetsNC"][r] = row_targets
    rows["scoreDistrN"][r] = distr
    rows["valueTargetsNCHW"][r] = value_spatial
    if turn.q_targets is not None:
        rows["qValueTargetsNCMove"][r] = _q_plane(np.asarray(turn.q_targets, dtype=np.float64), gen)


def _side_row(
    rows: RowArrays,
    r: int,
    game: GameRecord,
    side: SideTurn,
    hash_chunks: list[int],
    switches: list[int],
    gen: np.random.Generator,
    history_keep_prob: float,
) -> None:
    """A side position's row (trainingwrite.cpp's side rows): every value target is its search's, its
    policy target the search's; no next policy, outcome, ownership, later boards or bonus points."""
    turn = side.record
    base = _turn_targets(game, turn, side.turn, hash_chunks, switches)
    s = turn.search
    values = (s.win, s.loss, s.no_result, np.clip(s.score, -SCORE_TARGET_CAP, SCORE_TARGET_CAP))
    for k in range(5):
        base[4 * k : 4 * k + 4] = values
    base[GT_POLICY_WEIGHT] = 1.0
    base[GT_SIDE_POSITION] = 1.0
    planes = (_policy_plane(turn.policy_target)[0], _policy_plane(None)[0])
    value_spatial = np.zeros((NUM_VALUE_SPATIAL, DATA_LEN, DATA_LEN), dtype=np.int8)
    packed = pack_spatial(np.asarray(turn.spatial))
    _put_row(rows, r, turn, packed, base, planes, dummy_score_distribution(), value_spatial, gen, history_keep_prob)


def _q_plane(q: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    """fillQValueTarget: win-loss x 32000 and score (capped) x 60 stochastically rounded, visits clipped.
    The values are already from the side to move."""
    plane = np.zeros((NUM_QVALUE, POLICY_LEN), dtype=np.int16)
    if not np.all(np.isfinite(q)):
        raise ValueError("q_targets hold non-finite values")
    wl = np.clip(q[0], -1.0, 1.0) * QVALUE_WINLOSS_SCALE
    score = np.clip(q[1], -SCORE_TARGET_CAP, SCORE_TARGET_CAP) * QVALUE_SCORE_SCALE
    plane[0] = stochastic_round(wl, gen, -QVALUE_MAX, QVALUE_MAX)
    plane[1] = stochastic_round(score, gen, -QVALUE_MAX, QVALUE_MAX)
    plane[2] = np.clip(np.rint(q[2]), 0, QVALUE_MAX)
    return plane


# --- Files ----------------------------------------------------------------------------------------------
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def rows_npz(rows: Mapping[str, np.ndarray]) -> bytes:
    """Rows as the bytes of a compressed npz: arrays in schema order with their schema dtypes; names
    outside the schema are refused."""
    unknown = sorted(set(rows) - set(ARRAY_NAMES))
    if unknown:
        raise ValueError(f"not schema arrays: {', '.join(unknown)}")
    missing = [name for name in REQUIRED_ARRAYS if name not in rows]
    if missing:
        raise ValueError(f"rows lack required array(s): {', '.join(missing)}")
    arrays = {
        name: np.ascontiguousarray(rows[name], dtype=SCHEMA_BY_NAME[name].dtype) for name in ARRAY_NAMES if name in rows
    }
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)  # type: ignore[arg-type]  # the stubs take every keyword for allow_pickle
    return buffer.getvalue()


def save_rows(rows: Mapping[str, np.ndarray], path: str | os.PathLike[str]) -> Path:
    """Write rows to ``path`` as a compressed npz (:func:`rows_npz`), atomically: a temporary file in
    the same directory, flushed and fsynced, then renamed over ``path``. Nothing is left behind on
    failure."""
    return atomic_write(Path(path), rows_npz(rows))


def game_rows_npz(
    game: GameRecord, rng: np.random.Generator | int | None = None, **options: float
) -> tuple[bytes, int] | None:
    """One game's rows as npz bytes, with their number; None when the game yielded no rows (KataGo
    skips such games). ``options`` go to :func:`game_to_rows`."""
    rows = game_to_rows(game, rng=rng, **options)
    num_rows = rows["globalTargetsNC"].shape[0]
    if num_rows == 0:
        log.info("game %s yielded no training rows", game.game_id or "?")
        return None
    if num_rows > MAX_ROWS_PER_FILE:
        raise ValueError(f"game {game.game_id!r} yielded {num_rows} rows, above {MAX_ROWS_PER_FILE} per file")
    return rows_npz(rows), num_rows


def write_game_rows(
    game: GameRecord,
    directory: str | os.PathLike[str],
    rng: np.random.Generator | int | None = None,
    filename: str | None = None,
    **options: float,
) -> Path | None:
    """Turn one game into rows and store them as ``<directory>/<game_id>.npz`` (or ``filename``), one
    file per game, atomically. Returns the path, or None when the game yielded no rows (nothing is
    written). ``options`` go to :func:`game_to_rows`."""
    made = game_rows_npz(game, rng, **options)
    if made is None:
        return None
    name = filename or f"{game.game_id}.npz"
    if not name.endswith(".npz") or not _SAFE_NAME.match(name):
        name = f"{game.hash128():032x}.npz"
    return atomic_write(Path(directory) / name, made[0])
