"""What a finished search yields: the pruned policy target (paper section 5.3) and the move to play.

Policy target pruning: let c* be the most visited child. From every other child c, subtract up to
n_forced(c) = sqrt(k P(c) sum N) playouts as long as that does not make PUCT(c) >= PUCT(c*), with both
children's utilities held at their final values; children left with one playout or less are pruned
to zero. What remains is the playouts PUCT would have given c on its own, without the forced ones.

Move choice (Appendix C): proportional to the visit distribution (pruned for full searches) raised
to 1/T; T = 0 plays the most visited move.
"""

from __future__ import annotations

import math

import numpy as np

from client.search.engine import SearchResult


def pruned_visits(result: SearchResult, cpuct: float, forced_coeff: float) -> np.ndarray:
    """The root's visits with forced playouts taken out (float64, one per root edge)."""
    v = result.visits.astype(np.float64)
    total = float(v.sum()) if v.size else 0.0
    if total <= 0:
        return v
    best = result.best_index()
    sqrt_total = math.sqrt(total + 0.01)
    prior = result.priors.astype(np.float64)
    util = result.utility
    best_value = util[best] + cpuct * prior[best] * sqrt_total / (1.0 + v[best])
    n_forced = np.sqrt(forced_coeff * prior * total)
    gap = best_value - util
    # PUCT(c) with n playouts stays below PUCT(c*) while n > cpuct P sqrt_total / gap - 1; a child
    # with gap <= 0 is at least as urgent as c* even with every playout it got, and keeps them all.
    with np.errstate(divide="ignore", invalid="ignore"):
        n_min = np.where(gap > 0, cpuct * prior * sqrt_total / gap - 1.0, np.inf)
    out = np.minimum(v, np.maximum(v - n_forced, n_min))
    out[out <= 1.0] = 0.0
    keep = (v <= 0) | (gap <= 0)
    out[keep] = v[keep]
    out[best] = v[best]
    return out


def choose_move(visits: np.ndarray, temperature: float, rng: np.random.Generator) -> int:
    """The index of the edge to play: proportional to visits^(1/temperature), or the most visited
    for temperature 0 (first index among equals)."""
    v = np.asarray(visits, dtype=np.float64)
    if v.size == 0:
        raise ValueError("no move to choose from: the search has no visited child")
    top = int(np.argmax(v))
    if temperature <= 0 or v[top] <= 0:
        return top
    # Weights (v / v_max)^(1/T) (zero where unvisited), drawn from by inverting their running sum.
    w = np.power(v / v[top], 1.0 / temperature)
    cdf = np.cumsum(w)
    k = min(int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right")), v.size - 1)
    return k if w[k] > 0 else top  # the clamp can only land on an unvisited edge by rounding
