"""Gumbel search's formulas (``client.search.gumbel``) against the paper's definitions on small cases:
the sequential halving schedule, Gumbel draws, the mixed value and completed Q, the improved policy,
and the two selection rules, played out as a search would play them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from client.search.gumbel import (
    considered_visit,
    gumbel_draw,
    improved_policy,
    interior_choice,
    mixed_value,
    root_choice,
    transformed_q,
)
from common.go.playout import new_rng


def halving_schedule(m: int, simulations: int) -> list[int]:
    """Sequential halving as the paper states it, played out on m moves: in each phase every move
    still considered gets max(1, floor(n / (ceil(log2 m) * considered))) visits, one round at a time,
    then half of them stay (at least two); each entry is the visit count of the move the simulation
    goes to."""
    if m <= 1:
        return list(range(simulations))
    phases = math.ceil(math.log2(m))
    visits = [0] * m
    considered = m
    out: list[int] = []
    while len(out) < simulations:
        for _ in range(max(1, simulations // (phases * considered))):
            for a in range(considered):
                out.append(visits[a])
                visits[a] += 1
        considered = max(2, considered // 2)
    return out[:simulations]


@pytest.mark.parametrize("m", [1, 2, 3, 4, 5, 8, 13, 16, 32])
@pytest.mark.parametrize("simulations", [1, 2, 7, 16, 50, 64, 200, 801])
def test_the_visit_count_of_each_simulation_follows_sequential_halving(m, simulations):
    expected = halving_schedule(m, simulations)
    assert [considered_visit(m, simulations, k) for k in range(simulations)] == expected


def test_sixteen_moves_share_two_hundred_simulations_in_four_phases():
    # Phase by phase: 16 moves x 3 visits, 8 x 6, 4 x 12, then 2 x 25, and the last 6 go to the final two.
    counts = [considered_visit(16, 200, k) for k in range(200)]
    assert counts[:16] == [0] * 16 and counts[16:32] == [1] * 16 and counts[47] == 2
    assert counts[48:56] == [3] * 8 and counts[95] == 8
    assert counts[96:100] == [9] * 4 and counts[143] == 20
    assert counts[144:146] == [21, 21] and counts[193] == 45 and counts[194:] == [46, 46, 47, 47, 48, 48]


def test_gumbel_draws_have_the_distributions_mean_and_variance():
    rng = new_rng(7)
    draws = np.array([gumbel_draw(rng) for _ in range(200_000)])
    assert draws.mean() == pytest.approx(0.5772, abs=0.01)  # the Euler-Mascheroni constant
    assert draws.var() == pytest.approx(math.pi**2 / 6, rel=0.02)
    assert np.isfinite(draws).all()


def test_the_mixed_value_weighs_the_visited_moves_q_by_their_priors():
    q = np.array([0.5, -0.2, 99.0, 0.1])  # the third is unvisited: its q is not read
    visits = np.array([3.0, 1.0, 0.0, 2.0])
    prior = np.array([0.4, 0.1, 0.3, 0.2])
    mean = (0.4 * 0.5 + 0.1 * -0.2 + 0.2 * 0.1) / 0.7
    assert mixed_value(0.3, q, visits, prior, 4) == pytest.approx((0.3 + 6 * mean) / 7)
    assert mixed_value(0.3, q, np.zeros(4), prior, 4) == 0.3  # nothing visited: the network's value


def test_completed_q_is_rescaled_and_scaled_by_the_most_visits():
    q = np.array([1.0, 0.0, 7.0, -1.0])
    visits = np.array([4.0, 2.0, 0.0, 1.0])
    prior = np.array([0.5, 0.25, 0.25, 0.0])  # the last has prior 0 but was visited: it counts
    out = np.empty(4)
    transformed_q(0.0, q, visits, prior, 4, 50.0, 0.1, out)
    fill = (0.0 + 7 * (0.5 * 1.0 + 0.25 * 0.0 + 0.0 * -1.0) / 0.75) / 8
    completed = np.array([1.0, 0.0, fill, -1.0])
    expected = (completed + 1.0) / 2.0 * (50.0 + 4.0) * 0.1
    np.testing.assert_allclose(out, expected)
    # All alike: nothing to prefer, every move gets 0.
    transformed_q(0.2, np.full(4, 0.2), np.ones(4), prior, 4, 50.0, 0.1, out)
    np.testing.assert_allclose(out, 0.0)


def test_the_improved_policy_is_the_prior_tilted_by_sigma():
    prior = np.array([0.5, 0.3, 0.2, 0.0])
    out = np.empty(4)
    improved_policy(prior, np.zeros(4), 4, out)
    np.testing.assert_allclose(out, prior)  # no value information: the prior itself
    sigma = np.array([0.0, 2.0, 1.0, 5.0])
    improved_policy(prior, sigma, 4, out)
    expected = prior * np.exp(sigma)
    np.testing.assert_allclose(out, expected / expected.sum())
    assert out[3] == 0.0 and out.sum() == pytest.approx(1.0)


def test_interior_visits_follow_the_improved_policy():
    """Section 5: taking argmax pi'(a) - N(a) / (1 + N) visit after visit keeps every move's share of
    the visits within 1/(N+1)-ish of pi'(a)."""
    policy = np.array([0.45, 0.3, 0.15, 0.07, 0.03, 0.0])
    visits = np.zeros(6)
    for step in range(1, 1001):
        a = interior_choice(policy, visits, 6)
        visits[a] += 1
        if step in (10, 100, 1000):
            assert np.abs(visits / step - policy).max() <= 1.0 / step + 1e-12, (step, visits)
    assert visits[5] == 0 and interior_choice(np.zeros(3), np.zeros(3), 3) == -1
    # By hand, for (0.5, 0.3, 0.2): 0.5 > 0.3 > 0.2; then 0.5 - 1/2 < 0.3; then 0.2 > 0.5 - 1/3; then
    # 0.5 - 1/4 beats 0.3 - 1/4.
    policy, visits, chosen = np.array([0.5, 0.3, 0.2]), np.zeros(3), []
    for _ in range(4):
        chosen.append(interior_choice(policy, visits, 3))
        visits[chosen[-1]] += 1
    assert chosen == [0, 1, 2, 0]


def test_the_root_rule_plays_out_gumbel_top_k_and_sequential_halving():
    """A search of 64 simulations over 10 legal moves considering 8: the root rule, asked with the
    schedule's visit count at each simulation, visits the 8 moves of highest g + logit first, halves
    them by g + logit + sigma(q) (here q is each move's fixed true value), and the move played (the
    best of the most visited) is the survivor of highest g + logit + sigma(q)."""
    rng = np.random.default_rng(3)
    n, m, simulations = 10, 8, 64
    prior = rng.dirichlet(np.ones(n))
    gumbel = rng.gumbel(size=n)
    true_q = rng.uniform(-1, 1, size=n)
    visits = np.zeros(n)
    total_q = np.zeros(n)
    sigma = np.empty(n)
    order = []
    for k in range(simulations):
        q = np.divide(total_q, visits, out=np.zeros(n), where=visits > 0)
        transformed_q(0.0, q, visits, prior, n, 50.0, 0.1, sigma)
        a = root_choice(gumbel, prior, sigma, visits, n, considered_visit(m, simulations, k))
        assert a >= 0
        order.append(a)
        visits[a] += 1
        total_q[a] += true_q[a]
    top = set(np.argsort(-(gumbel + np.log(prior)))[:m])
    assert set(order[:m]) == top and set(order) == top  # the other two moves are never visited
    # 8 moves x 2 visits, 4 x 5 more, then the final two 10 and the last 8 simulations between them.
    assert sorted(visits[visits > 0], reverse=True) == [21, 21, 7, 7, 2, 2, 2, 2]
    q = np.divide(total_q, visits, out=np.zeros(n), where=visits > 0)
    transformed_q(0.0, q, visits, prior, n, 50.0, 0.1, sigma)
    played = root_choice(gumbel, prior, sigma, visits, n, visits.max())
    finalists = np.flatnonzero(visits == visits.max())
    assert played == finalists[np.argmax((gumbel + np.log(prior) + sigma)[finalists])]
    assert root_choice(gumbel, prior, sigma, visits, n, 1000) == -1
