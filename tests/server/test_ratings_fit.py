"""The Bradley-Terry fit: it recovers known ratings within its error bars, equals choix's maximum
likelihood on prior-free data, ties networks to their parents by the prior, and says what it cannot
rate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from common.elo import ELO_PER_NAT
from server.ratings.fit import FitError, fit_ratings


def _games(true_elo: np.ndarray, pairs: list[tuple[int, int]], per_pair: int, rng, draws: float = 0.0):
    first, second, score = [], [], []
    for a, b in pairs:
        p = 1.0 / (1.0 + math.exp((true_elo[b] - true_elo[a]) / ELO_PER_NAT))
        u = rng.random(per_pair)
        # A draw takes its share from both sides; the expected score stays p.
        s = np.where(u < p - draws / 2, 1.0, np.where(u < p + draws / 2, 0.5, 0.0))
        first += [a] * per_pair
        second += [b] * per_pair
        score += s.tolist()
    return np.array(first), np.array(second), np.array(score)


def _lineage(n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """A run: each network a little stronger than its parent (mostly the one before it)."""
    parents = np.array([-1] + [max(0, i - 1 - int(rng.integers(0, 2))) for i in range(1, n)])
    elo = np.zeros(n)
    for i in range(1, n):
        elo[i] = elo[parents[i]] + rng.normal(40.0, 30.0)
    return parents, elo


def test_known_ratings_are_recovered_within_their_error_bars():
    rng = np.random.default_rng(7)
    n = 60
    parents, true = _lineage(n, rng)
    # Each network against its parent and a few others near it; colours and order do not matter.
    pairs = [(i, int(parents[i])) for i in range(1, n)]
    pairs += [(i, j) for i in range(n) for j in range(i + 1, min(n, i + 4)) if (i, j) not in pairs]
    first, second, score = _games(true, pairs, 40, rng, draws=0.02)
    assert first.size > 5000
    fit = fit_ratings(n, first, second, score, parents=parents, virtual_draws=2.0)
    inside = np.abs(fit.elo - (true - true[0])) <= 1.96 * np.maximum(fit.se, 1e-9)
    assert fit.elo[0] == 0.0 and fit.se[0] == 0.0
    assert inside.mean() >= 0.9, (inside.mean(), np.c_[true - true[0], fit.elo, fit.se][~inside])
    assert (fit.games == np.bincount(first, minlength=n) + np.bincount(second, minlength=n)).all()
    # The covariances matter: a neighbour pair's difference is known better than either rating.
    _, diff_se = fit.difference(n - 1, n - 2)
    assert diff_se < min(fit.se[n - 1], fit.se[n - 2])


def test_without_a_prior_the_fit_is_choix_maximum_likelihood():
    choix = pytest.importorskip("choix")
    rng = np.random.default_rng(3)
    n = 12
    true = rng.normal(0.0, 150.0, n)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.6 or j == i + 1]
    first, second, score = _games(true, pairs, 30, rng)
    fit = fit_ratings(n, first, second, score, anchor=0)
    data = [(int(a), int(b)) if s == 1.0 else (int(b), int(a)) for a, b, s in zip(first, second, score, strict=True)]
    params = choix.ilsr_pairwise(n, data, alpha=0.0, max_iter=10_000, tol=1e-14)
    theirs = (params - params[0]) * ELO_PER_NAT
    assert np.abs(fit.elo - theirs).max() < 1e-6 * ELO_PER_NAT
    assert fit.iterations < 30


def test_the_prior_holds_a_network_near_its_parent_until_games_say_otherwise():
    # Network 2 (child of 1) has won its only two games against 0: alone, it would be rated infinite.
    first = np.array([1] * 20 + [2, 2])
    second = np.array([0] * 20 + [0, 0])
    score = np.array([1.0, 0.0] * 10 + [1.0, 1.0])
    parents = np.array([-1, 0, 1])
    fit = fit_ratings(3, first, second, score, parents=parents, virtual_draws=4.0)
    assert abs(fit.elo[1]) < 50 and 0 < fit.elo[2] < 200 and np.isfinite(fit.se).all()
    with pytest.raises(FitError, match="did not converge"):
        fit_ratings(3, first, second, score)
    stronger = fit_ratings(3, first, second, score, parents=parents, virtual_draws=1.0)
    assert stronger.elo[2] > fit.elo[2]  # a weaker prior lets the games pull further


def test_networks_the_games_do_not_reach_are_not_rated():
    fit = fit_ratings(
        4, np.array([0, 1]), np.array([1, 0]), np.array([1.0, 1.0]), parents=np.array([-1, 0, -1, 2]), virtual_draws=2.0
    )
    assert np.isfinite(fit.elo[:2]).all() and np.isnan(fit.elo[2:]).all() and np.isinf(fit.se[2:]).all()
    assert fit.games.tolist() == [2, 2, 0, 0]


@pytest.mark.parametrize(
    "args, words",
    [
        ((2, [0], [2], [1.0]), "outside 0..1"),
        ((2, [0], [0], [1.0]), "against itself"),
        ((2, [0], [1], [1.5]), "between 0 and 1"),
        ((2, [0, 1], [1], [1.0]), "one length"),
    ],
)
def test_bad_games_are_named(args, words):
    count, first, second, score = args
    with pytest.raises(FitError, match=words):
        fit_ratings(count, np.array(first), np.array(second), np.array(score))


def test_games_summed_per_pair_give_the_same_fit():
    rng = np.random.default_rng(4)
    first = rng.integers(0, 5, 400)
    second = (first + 1 + rng.integers(0, 4, 400)) % 5
    score = rng.choice([0.0, 0.5, 1.0], 400, p=[0.4, 0.1, 0.5])
    parents = np.array([-1, 0, 1, 2, 3])
    one = fit_ratings(5, first, second, score, parents=parents, virtual_draws=3.0)
    keys, inverse = np.unique(first * 5 + second, return_inverse=True)
    counts = np.bincount(inverse)
    summed = fit_ratings(
        5,
        keys // 5,
        keys % 5,
        np.bincount(inverse, weights=score) / counts,
        parents=parents,
        virtual_draws=3.0,
        counts=counts,
    )
    assert np.allclose(one.elo, summed.elo, atol=1e-9) and np.allclose(one.cov, summed.cov, atol=1e-9)
    assert (one.games == summed.games).all()
