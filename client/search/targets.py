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
    if v.size == 0 or v.sum() <= 0:
        return v
    total = float(v.sum())
    best = result.best_index()
    sqrt_total = math.sqrt(total + 0.01)
    prior = result.priors.astype(np.float64)
    util = result.utility
    best_value = util[best] + cpuct * prior[best] * sqrt_total / (1.0 + v[best])
    out = v.copy()
    for c in np.flatnonzero(v > 0):
        if c == best:
            continue
        n_forced = math.sqrt(forced_coeff * prior[c] * total)
        gap = best_value - util[c]
        if gap <= 0:
            continue  # c is at least as urgent as c* even with every playout it got
        # PUCT(c) with n playouts stays below PUCT(c*) while n > cpuct P sqrt_total / gap - 1.
        n_min = cpuct * prior[c] * sqrt_total / gap - 1.0
        reduced = max(v[c] - n_forced, n_min)
        out[c] = min(v[c], reduced)
        if out[c] <= 1.0:
            out[c] = 0.0
    return out


def choose_move(visits: np.ndarray, temperature: float, rng: np.random.Generator) -> int:
    """The index of the edge to play: proportional to visits^(1/temperature), or the most visited
    for temperature 0 (first index among equals)."""
    v = np.asarray(visits, dtype=np.float64)
    if v.size == 0:
        raise ValueError("no move to choose from: the search has no visited child")
    if temperature <= 0 or v.max() <= 0:
        return int(np.argmax(v))
    positive = v > 0
    logw = np.full(v.shape, -np.inf)
    logw[positive] = np.log(v[positive]) / temperature
    logw -= logw.max()
    w = np.exp(logw)
    w /= w.sum()
    return int(rng.choice(v.size, p=w))
