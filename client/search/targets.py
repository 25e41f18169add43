"""What a finished search yields: the pruned policy target (paper section 5.3) and the move to play;
for a Gumbel search, the improved policy and the best of the most visited moves
(:mod:`client.search.gumbel`).

Visits below are the children's weights (:class:`client.search.engine.SearchResult`): their visit
counts, unless playouts are weighted by the network's uncertainty, where KataGo too chooses the move,
prunes the target and bounds the utility by the weights.

Policy target pruning: let c* be the most visited child. From every other child c, subtract up to
n_forced(c) = sqrt(k P(c) sum N) playouts as long as that does not make PUCT(c) >= PUCT(c*), with both
children's utilities held at their final values; children left with one playout or less are pruned
to zero. What remains is the playouts PUCT would have given c on its own, without the forced ones.

Move choice (Appendix C): proportional to the visit distribution (pruned for full searches) raised
to 1/T; T = 0 plays the most visited move.

Lower confidence bounds (KataGo's match and GTP play, not self-play targets): each child's utility
minus ``lcb_stdevs`` standard errors, the variance taken from its visits' utilities with a prior of
the largest variance the utility's range allows, weighted 1/N^2 so that it only matters for a few
visits. Among the children with at least ``lcb_min_visit_prop`` of the most visits, the one of best
bound has its play value raised until no child it beats on the bound outweighs it: a child c it
beats by a margin m, with bound radius r, is pretended to have ((r + m) / (r + m/5))^2 times its
visits, as many as would make its bound as wide as that margin (searchresults.cpp in KataGo's
repository does the same).
"""

from __future__ import annotations

import numpy as np

from client.search.engine import SearchResult
from client.search.gumbel import improved_policy, root_choice, transformed_q
from client.search.selection import cpuct_stdev_factor, explore_scale
from common.settings import SearchSettings


def pruned_visits(result: SearchResult, settings: SearchSettings) -> np.ndarray:
    """The root's visits (weights) with forced playouts taken out (float64, one per root edge), with
    the root's cPUCT as the search had it."""
    forced_coeff = settings.forced_playout_coeff
    cpuct = settings.cpuct * cpuct_stdev_factor(
        result.root_weight,
        result.root_utility * result.root_weight,
        result.root_utility_sq * result.root_weight,
        settings.cpuct_utility_stdev_prior,
        settings.cpuct_utility_stdev_prior_weight,
        settings.cpuct_utility_stdev_scale,
    )
    v = result.weights.copy()
    total = float(v.sum()) if v.size else 0.0
    if total <= 0:
        return v
    best = result.best_index()
    explore = explore_scale(total, settings.puct_exponent)
    prior = result.priors.astype(np.float64)
    util = result.utility
    best_value = util[best] + cpuct * prior[best] * explore / (1.0 + v[best])
    n_forced = np.sqrt(forced_coeff * prior * total)
    gap = best_value - util
    # PUCT(c) with n playouts stays below PUCT(c*) while n > cpuct P explore / gap - 1 (explore: the
    # power of the visits); a child with gap <= 0 is at least as urgent as c* even with every
    # playout it got, and keeps them all.
    with np.errstate(divide="ignore", invalid="ignore"):
        n_min = np.where(gap > 0, cpuct * prior * explore / gap - 1.0, np.inf)
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


def utility_lcb(result: SearchResult, score_factor: float, stdevs: float) -> tuple[np.ndarray, np.ndarray]:
    """Each root child's lower confidence bound on its utility (root player's view) and the bound's
    radius; an unvisited child's bound lies at the bottom of the utility's range."""
    span = 1.0 + score_factor  # the utility's largest magnitude: win-loss plus the score utility
    n = result.weights
    radius = np.full(n.size, 2.0 * span * stdevs)
    lcb = -radius.copy()
    seen = n > 0
    if seen.any():
        v = n[seen]
        v_sq = result.weights_sq[seen]
        mean = result.utility[seen]
        sq = np.maximum(result.utility_sq[seen], mean * mean + 1e-8)
        ess = v * v / v_sq  # the visits with unit weights
        prior = (v / ess) / (ess * ess)  # weight of the widest variance: sum / ess^3
        sq = (sq * v + (sq + span * span) * prior) / (v + prior)
        ess = (v + prior) ** 2 / (v_sq + prior * prior)
        radius[seen] = np.sqrt((sq - mean * mean) / ess) * stdevs
        lcb[seen] = mean - radius[seen]
    return lcb, radius


def play_values(result: SearchResult, settings: SearchSettings) -> np.ndarray:
    """What the move to play is chosen by (float64, one per root edge): the visits (weights), with
    the best lower confidence bound raised above them when ``settings.lcb_for_selection``; for a
    Gumbel search, with its move (:func:`gumbel_move`) raised above them instead."""
    values = result.weights.copy()
    if values.size == 0 or values.max() <= 0:
        return values
    if settings.gumbel and result.gumbel is not None:
        values[gumbel_move(result, settings)] = values.max() + 1.0
        return values
    if not settings.lcb_for_selection:
        return values
    lcb, radius = utility_lcb(result, settings.score_utility_factor, settings.lcb_stdevs)
    eligible = (values > 0) & (values >= settings.lcb_min_visit_prop * values.max())
    best = int(np.argmax(np.where(eligible, lcb, -np.inf)))
    margin = lcb[best] - lcb
    beaten = margin >= 0
    beaten[best] = False
    factor = (radius[beaten] + margin[beaten]) / (radius[beaten] + 0.2 * margin[beaten])
    values[best] = max(values[best], float((factor * factor * values[beaten]).max(initial=0.0)))
    return values


def _gumbel_sigma(result: SearchResult, settings: SearchSettings) -> np.ndarray:
    """sigma(completed Q) of the root's moves, as the search's root rule had it at its end."""
    n = result.visits.size
    finished = np.where(result.weights > 0, result.visits, 0).astype(np.float64)
    sigma = np.empty(n)
    transformed_q(
        result.raw_utility,
        result.utility,
        finished,
        result.priors.astype(np.float64),
        n,
        settings.gumbel_c_visit,
        settings.gumbel_c_scale,
        sigma,
    )
    return sigma


def gumbel_policy(result: SearchResult, settings: SearchSettings) -> np.ndarray:
    """A Gumbel search's policy target: the improved policy softmax(logit + sigma(completed Q)) over
    the root's edges (float64)."""
    out = np.empty(result.visits.size)
    improved_policy(result.priors.astype(np.float64), _gumbel_sigma(result, settings), result.visits.size, out)
    return out


def gumbel_move(result: SearchResult, settings: SearchSettings) -> int:
    """The index of the edge a Gumbel search plays: among the most visited, the largest
    g + logit + sigma(completed Q)."""
    if result.gumbel is None or result.visits.size == 0 or result.visits.max() <= 0:
        raise ValueError("no move to choose from: not a Gumbel search with a visited child")
    visits = result.visits.astype(np.float64)
    sigma = _gumbel_sigma(result, settings)
    return int(root_choice(result.gumbel, result.priors.astype(np.float64), sigma, visits, visits.size, visits.max()))
