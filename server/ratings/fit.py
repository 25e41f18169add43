"""Bradley-Terry ratings of a run's networks from its rating games, fitted to convergence.

The model: network i beats network j with probability ``1 / (1 + exp(r_j - r_i))``; a draw or a game
without result counts half a win to each side. The fit maximises the likelihood of all the games,
plus a prior that ties each network to its parent with ``virtual_draws`` drawn games (KataGo's
virtual draws: a new network is assumed as strong as its parent until its games say otherwise). One
network, the anchor (the run's first), is held at 0 Elo.

The log-likelihood is concave; Newton's method on the free ratings converges in a handful of steps
(each step halved until the likelihood rises). Its Hessian is minus a weighted graph Laplacian over the
pairs that met (or are tied by the prior), so the games are first summed per pair: a million games
cost one ``np.unique``, and each step one dense solve in the number of networks. The uncertainty is
the inverse of the full Hessian at the optimum (covariances included: what a comparison of two
networks needs), not its diagonal.

Networks with no games and no tie to the anchor's family cannot be rated: their Elo is NaN and their
error infinite.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from common.elo import ELO_PER_NAT


class FitError(ValueError):
    """Games or parents that do not describe the networks (an index out of range, a bad score)."""


@dataclass(frozen=True)
class Ratings:
    """Per network (by index): ``elo`` (the anchor 0), its standard error ``se``, and ``games`` (real
    games played); ``cov`` is the full covariance of the Elo ratings. ``iterations``: Newton steps."""

    elo: np.ndarray
    se: np.ndarray
    games: np.ndarray
    cov: np.ndarray
    iterations: int

    def difference(self, i: int, j: int) -> tuple[float, float]:
        """Elo of i minus Elo of j, and its standard error (their covariance included)."""
        var = self.cov[i, i] + self.cov[j, j] - 2.0 * self.cov[i, j]
        return float(self.elo[i] - self.elo[j]), math.sqrt(max(var, 0.0))


def fit_ratings(
    count: int,
    first: np.ndarray,
    second: np.ndarray,
    first_score: np.ndarray,
    parents: np.ndarray | None = None,
    virtual_draws: float = 0.0,
    anchor: int = 0,
    tolerance: float = 1e-10,
    max_iterations: int = 200,
    counts: np.ndarray | None = None,
    ties: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> Ratings:
    """Ratings of `count` networks from games between first[k] and second[k] (indices), where
    first_score[k] is 1 (first won), 0 (second won) or 0.5 (draw or no result); with `counts`, row k
    stands for counts[k] games whose mean score for first is first_score[k] (games already summed).
    parents[i] is network i's parent index, or -1 (none). ``ties`` (i, j, draws) adds more of the
    prior: draws[k] virtual draws between i[k] and j[k] (not counted as games played)."""
    first = np.asarray(first, dtype=np.int64)
    second = np.asarray(second, dtype=np.int64)
    score = np.asarray(first_score, dtype=np.float64)
    weight = np.ones_like(score) if counts is None else np.asarray(counts, dtype=np.float64)
    if not (first.shape == second.shape == score.shape == weight.shape) or first.ndim != 1:
        raise FitError("first, second, first_score (and counts) must be 1-D arrays of one length")
    if np.any(weight < 0) or not np.all(np.isfinite(weight)):
        raise FitError("counts must not be negative")
    if count < 1 or not 0 <= anchor < count:
        raise FitError(f"anchor {anchor} is not one of the {count} networks")
    if first.size and (min(first.min(), second.min()) < 0 or max(first.max(), second.max()) >= count):
        raise FitError(f"a game names a network outside 0..{count - 1}")
    if np.any(first == second):
        raise FitError("a game of a network against itself")
    if np.any((score < 0.0) | (score > 1.0)) or not np.all(np.isfinite(score)):
        raise FitError("scores must be between 0 and 1")

    games = np.rint(
        np.bincount(first, weights=weight, minlength=count) + np.bincount(second, weights=weight, minlength=count)
    ).astype(np.int64)
    # Per pair (lower index i, higher j): games played and points of i.
    low = np.minimum(first, second)
    high = np.maximum(first, second)
    points_low = np.where(first == low, score, 1.0 - score)
    pair_i, pair_j, pair_games, pair_points = _sum_pairs(count, low, high, weight, points_low * weight)
    if parents is not None and virtual_draws > 0.0:
        parents = np.asarray(parents, dtype=np.int64)
        if parents.shape != (count,) or np.any(parents >= count) or np.any(parents == np.arange(count)):
            raise FitError("parents must give, for every network, another network's index or -1")
        child = np.flatnonzero(parents >= 0)
        prior = np.full(child.size, float(virtual_draws))
        pair_i, pair_j, pair_games, pair_points = _with_draws(
            count, (pair_i, pair_j, pair_games, pair_points), child, parents[child], prior
        )

    if ties is not None:
        tie_i, tie_j, draws = (np.asarray(a) for a in ties)
        if not (tie_i.shape == tie_j.shape == draws.shape) or np.any(tie_i == tie_j) or np.any(draws < 0):
            raise FitError("ties must be three arrays of one length, each tie between two networks, draws >= 0")
        if tie_i.size and (min(tie_i.min(), tie_j.min()) < 0 or max(tie_i.max(), tie_j.max()) >= count):
            raise FitError(f"a tie names a network outside 0..{count - 1}")
        pair_i, pair_j, pair_games, pair_points = _with_draws(
            count, (pair_i, pair_j, pair_games, pair_points), tie_i, tie_j, draws.astype(np.float64)
        )

    rated = _connected_to(anchor, count, pair_i, pair_j)
    free = np.flatnonzero(rated & (np.arange(count) != anchor))
    position = np.full(count, -1, dtype=np.int64)
    position[free] = np.arange(free.size)
    keep = rated[pair_i]  # a pair's two networks are rated together or not at all
    pair_i, pair_j, pair_games, pair_points = pair_i[keep], pair_j[keep], pair_games[keep], pair_points[keep]

    r = np.zeros(count)
    iterations = 0
    value = _log_likelihood(r, pair_i, pair_j, pair_games, pair_points)
    diverged = FitError(
        f"the fit did not converge in {max_iterations} steps (a network that won or lost every "
        "game, with no prior to hold it?)"
    )
    for iterations in range(1, max_iterations + 1):  # noqa: B007 (the count is reported)
        gradient, laplacian = _derivatives(r, count, pair_i, pair_j, pair_games, pair_points, position, free.size)
        if free.size == 0:
            break
        try:
            step = np.linalg.solve(laplacian, gradient)
        except np.linalg.LinAlgError:  # the curvature vanished: a rating ran off to infinity
            raise diverged from None
        t = 1.0
        while True:
            trial = r.copy()
            trial[free] += t * step
            new_value = _log_likelihood(trial, pair_i, pair_j, pair_games, pair_points)
            if new_value >= value - 1e-12 * abs(value) or t < 1e-8:
                break
            t /= 2.0
        r, value = trial, new_value
        if np.max(np.abs(t * step)) < tolerance:
            break
    else:
        raise diverged
    _, laplacian = _derivatives(r, count, pair_i, pair_j, pair_games, pair_points, position, free.size)

    cov = np.zeros((count, count))
    if free.size:
        cov[np.ix_(free, free)] = np.linalg.inv(laplacian) * ELO_PER_NAT**2
    elo = r * ELO_PER_NAT
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    elo[~rated] = np.nan
    se[~rated] = np.inf
    return Ratings(elo=elo, se=se, games=games, cov=cov, iterations=iterations)


def _sum_pairs(count: int, low: np.ndarray, high: np.ndarray, games: np.ndarray, points: np.ndarray):
    key = low * count + high
    unique, inverse = np.unique(key, return_inverse=True)
    return (
        unique // count,
        unique % count,
        np.bincount(inverse, weights=games, minlength=unique.size),
        np.bincount(inverse, weights=points, minlength=unique.size),
    )


def _with_draws(count: int, pairs, a: np.ndarray, b: np.ndarray, draws: np.ndarray):
    """The pairs' sums with ``draws[k]`` virtual draws more between ``a[k]`` and ``b[k]`` (the prior)."""
    pair_i, pair_j, pair_games, pair_points = pairs
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    return _sum_pairs(
        count,
        np.concatenate([pair_i, np.minimum(a, b)]),
        np.concatenate([pair_j, np.maximum(a, b)]),
        np.concatenate([pair_games, draws]),
        np.concatenate([pair_points, draws / 2.0]),
    )


def _log_likelihood(r, i, j, games, points) -> float:
    d = r[i] - r[j]
    # log sigmoid(d) = -logaddexp(0, -d): no overflow for large differences.
    return float(np.sum(-points * np.logaddexp(0.0, -d) - (games - points) * np.logaddexp(0.0, d)))


def _derivatives(r, count, i, j, games, points, position, free_count):
    """The gradient on the free ratings, and minus the Hessian (a weighted Laplacian) on them."""
    d = r[i] - r[j]
    p = 0.5 * (1.0 + np.tanh(0.5 * d))  # sigmoid(d), stable
    g = points - games * p  # d logL / d r_i for each pair (and minus it for r_j)
    c = games * p * (1.0 - p)  # the pair's curvature
    grad_all = np.bincount(i, weights=g, minlength=count) - np.bincount(j, weights=g, minlength=count)
    diag_all = np.bincount(i, weights=c, minlength=count) + np.bincount(j, weights=c, minlength=count)
    free = position >= 0
    gradient = grad_all[free]
    laplacian = np.zeros((free_count, free_count))
    laplacian[np.diag_indices(free_count)] = diag_all[free]
    both = free[i] & free[j]
    pi, pj, pc = position[i[both]], position[j[both]], c[both]
    np.add.at(laplacian, (pi, pj), -pc)
    np.add.at(laplacian, (pj, pi), -pc)
    return gradient, laplacian


def _connected_to(anchor: int, count: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Which networks the pairs connect to the anchor."""
    neighbours: list[list[int]] = [[] for _ in range(count)]
    for a, b in zip(i.tolist(), j.tolist(), strict=True):
        neighbours[a].append(b)
        neighbours[b].append(a)
    seen = np.zeros(count, dtype=bool)
    seen[anchor] = True
    stack = [anchor]
    while stack:
        for b in neighbours[stack.pop()]:
            if not seen[b]:
                seen[b] = True
                stack.append(b)
    return seen
