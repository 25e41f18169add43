"""How often each turn of a self-play game becomes a training row.

Row frequency (KataGo cpp/program/play.cpp, ``TrainingDataWriter::writeGame``): each turn has a weight
(1 for a full search, 0 for a cheap one, lowered by soft resignation, :func:`soft_resignation_weight`).
Surprise weighting (methods page, "Policy Surprise Weighting", :func:`surprise_weights`) redistributes
half of the game's total weight in proportion to each turn's policy surprise, and 0.1 of it by value
surprise (:func:`value_surprises`); then a turn is written ``floor(w)`` times plus once more with
probability ``w - floor(w)`` (:func:`stochastic_row_counts`). Every row's own weight (globalTargetsNC
channel 25) is the game's training weight, 1: frequency, not loss scaling, carries the surprise
weighting.

:func:`stochastic_round` is the same unbiased rounding, which the writer (:mod:`common.data.rows`) also
uses for the scoring and q-value targets.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from common.data.records import GameRecord
from common.go.geometry import WHITE

# Defaults of KataGo's self-play configs (cpp/configs/training/selfplay1.cfg).
POLICY_SURPRISE_DATA_WEIGHT = 0.5
VALUE_SURPRISE_DATA_WEIGHT = 0.1
REDUCE_VISITS_THRESHOLD = 0.9
REDUCE_VISITS_LOOKBACK = 3
REDUCED_VISITS_WEIGHT = 0.1

VALUE_SURPRISE_AREA_COEFFICIENT = 0.016  # play.cpp: the TD blend value surprise compares against


def stochastic_round(x: np.ndarray, rng: np.random.Generator, low: int, high: int) -> np.ndarray:
    """Round each entry down or up at random with the expectation equal to the entry, clamped to
    [low, high] (trainingwrite.cpp clampToRadius120 / clampToRadius32000)."""
    v = np.asarray(x, dtype=np.float64)
    floor = np.floor(v)
    up = rng.random(v.shape) < (v - floor)
    return np.clip(floor + up, low, high).astype(np.int64)


def stochastic_row_counts(weights: Sequence[float] | np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """How many times each turn is written: ``floor(w)`` plus one with probability ``w - floor(w)``
    (TrainingDataWriter::writeGame). Negative weights write nothing."""
    w = np.maximum(np.asarray(weights, dtype=np.float64), 0.0)
    whole = np.floor(w)
    return (whole + (rng.random(w.shape) < (w - whole))).astype(np.int64)


def soft_resignation_weight(
    recent_win_loss: Sequence[float],
    base_weight: float = 1.0,
    threshold: float = REDUCE_VISITS_THRESHOLD,
    lookback: int = REDUCE_VISITS_LOOKBACK,
    reduced_weight: float = REDUCED_VISITS_WEIGHT,
) -> tuple[float, float]:
    """KataGo's soft resignation (play.cpp getSearchLimitsThisMove, paper §6.2.1): when the last
    ``lookback`` root win-loss values (all from one fixed player's view, in [-1, 1]) were all beyond
    ``threshold`` for the same side, the search is reduced by ``p = ((x - threshold)/(1 - threshold))²``
    with x the least extreme of them. Returns ``(p, weight)``, the weight moved from ``base_weight``
    toward ``reduced_weight`` by p; ``(0, base_weight)`` when nothing is reduced."""
    if lookback <= 0 or len(recent_win_loss) < lookback:
        return 0.0, base_weight
    last = [float(v) for v in recent_win_loss[-lookback:]]
    extreme = min(max(min(last), -max(last)), 1.0)
    through = extreme - threshold
    if through <= 0:
        return 0.0, base_weight
    proportion = (through / (1.0 - threshold)) ** 2
    return proportion, base_weight + proportion * (reduced_weight - base_weight)


def value_surprises(game: GameRecord) -> np.ndarray:
    """[n] KL from each turn's raw network value to a TD blend of the later search values and the
    result (nowFactor 1/(1+area*0.016)), capped at 1 (play.cpp, valueSurpriseByTurn)."""
    targets = game.white_value_targets()
    n = game.num_turns
    f = 1.0 / (1.0 + game.board_area * VALUE_SURPRISE_AREA_COEFFICIENT)
    blend = targets[n, :3].copy()
    out = np.zeros(n)
    for i in range(n - 1, -1, -1):
        blend = blend + f * (targets[i, :3] - blend)
        turn = game.turns[i]
        raw_win, raw_loss = (turn.raw.win, turn.raw.loss) if turn.player == WHITE else (turn.raw.loss, turn.raw.win)
        raw = (raw_win, raw_loss, turn.raw.no_result)
        kl = 0.0
        for t, r in zip(blend, raw, strict=True):
            if t > 1e-100:
                kl += t * (math.log(t) - math.log(max(r, 1e-100)))
        out[i] = min(max(kl, 0.0), 1.0)
    return out


def surprise_weights(
    weights: Sequence[float] | np.ndarray,
    policy_surprise: Sequence[float] | np.ndarray,
    value_surprise: Sequence[float] | np.ndarray | None = None,
    policy_weight: float = POLICY_SURPRISE_DATA_WEIGHT,
    value_weight: float = VALUE_SURPRISE_DATA_WEIGHT,
) -> np.ndarray:
    """Surprise-weighted frequency weights (play.cpp; methods page "Policy Surprise Weighting").

    With W the sum of the turn weights w_i (each in [0, 1]), a the w-weighted mean policy surprise:
    ``new_i = (1 - pw - vw) w_i + pw W ps'_i / Σps' + vw W vs'_i / Σvs'`` where
    ``ps'_i = w_i ps_i + (1 - w_i) max(0, ps_i - 1.5 a)`` (a very surprising cheap search still earns
    weight) and ``vs'_i = w_i vs_i``; vw shrinks in proportion when the w-weighted mean value surprise
    is below 0.01. The total W is preserved. Games with W < 1 keep their weights. When no turn has
    any policy (or value) surprise, that share is spread like the weights instead of being dropped
    (KataGo would lose it).
    """
    w = np.asarray(weights, dtype=np.float64)
    ps = np.asarray(policy_surprise, dtype=np.float64)
    vs = np.zeros_like(w) if value_surprise is None else np.asarray(value_surprise, dtype=np.float64)
    if not (w.shape == ps.shape == vs.shape) or w.ndim != 1:
        raise ValueError(f"weights {w.shape}, policy surprise {ps.shape}, value surprise {vs.shape} differ")
    if np.any(~np.isfinite(w)) or np.any(w < 0) or np.any(w > 1):
        raise ValueError("turn weights must be within [0, 1]")
    if np.any(~np.isfinite(ps)) or np.any(ps < 0) or np.any(~np.isfinite(vs)) or np.any(vs < 0):
        raise ValueError("surprises must be finite and >= 0")
    if policy_weight < 0 or value_weight < 0 or policy_weight + value_weight > 1:
        raise ValueError(f"surprise data weights {policy_weight}, {value_weight} must be >= 0 and sum to <= 1")
    total = float(w.sum())
    if (policy_weight <= 0 and value_weight <= 0) or total < 1.0:
        return w.copy()
    mean_ps = float((ps * w).sum()) / total
    mean_vs = float((vs * w).sum()) / total
    vw = value_weight * (mean_vs / 0.010) if mean_vs < 0.010 else value_weight
    ps_prop = w * ps + (1.0 - w) * np.maximum(0.0, ps - 1.5 * mean_ps)
    vs_prop = w * vs
    new = (1.0 - policy_weight - vw) * w
    sum_ps = float(ps_prop.sum())
    new += policy_weight * (ps_prop * total / sum_ps if sum_ps > 1e-10 else w)
    sum_vs = float(vs_prop.sum())
    if vw > 0:
        new += vw * (vs_prop * total / sum_vs if sum_vs > 1e-10 else w)
    return new


def frequency_weights(
    game: GameRecord,
    policy_surprise_weight: float = POLICY_SURPRISE_DATA_WEIGHT,
    value_surprise_weight: float = VALUE_SURPRISE_DATA_WEIGHT,
) -> np.ndarray:
    """[n] how many rows each turn should yield in expectation (the turn weights after surprise weighting)."""
    game.check()
    if game.num_turns == 0:
        return np.zeros(0)
    weights = np.array([t.weight for t in game.turns], dtype=np.float64)
    ps = np.array([t.policy_surprise for t in game.turns], dtype=np.float64)
    vs = value_surprises(game) if value_surprise_weight > 0 else None
    return surprise_weights(weights, ps, vs, policy_surprise_weight, value_surprise_weight)
