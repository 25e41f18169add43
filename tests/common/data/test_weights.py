"""Row weighting: surprise weighting by hand and its preserved total, value surprise, the frequency
weights of a game, stochastic row counts and rounding, soft resignation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from common.data.weights import (
    frequency_weights,
    soft_resignation_weight,
    stochastic_round,
    stochastic_row_counts,
    surprise_weights,
    value_surprises,
)
from tests.common.data.helpers import AREA, WEIGHTS, make_game


def test_surprise_weighting_by_hand():
    # All full searches: half the weight uniform, half by surprise (mean 1 here).
    new = surprise_weights([1, 1, 1, 1], [0.0, 1.0, 0.0, 3.0], None, 0.5, 0.0)
    np.testing.assert_allclose(new, [0.5, 1.0, 0.5, 2.0])
    # A cheap search earns weight only by the surprise beyond 1.5 x the mean of the full ones.
    new = surprise_weights([1, 1, 0], [1.0, 1.0, 4.0], None, 0.5, 0.0)
    prop = np.array([1.0, 1.0, 4.0 - 1.5])
    np.testing.assert_allclose(new, 0.5 * np.array([1, 1, 0]) + 0.5 * prop * 2 / prop.sum())
    # Games with less than one full search keep their weights.
    np.testing.assert_allclose(surprise_weights([0.5, 0.0], [1.0, 9.0]), [0.5, 0.0])


@given(
    st.lists(
        st.tuples(
            st.sampled_from([0.0, 0.1, 0.37, 1.0]),
            st.floats(min_value=0.0, max_value=5.0, allow_nan=False),
            st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
        ),
        min_size=1,
        max_size=40,
    ),
    st.sampled_from([(0.5, 0.0), (0.5, 0.1), (0.0, 0.1), (0.9, 0.1)]),
)
def test_surprise_weighting_preserves_the_total(turns, data_weights):
    w, ps, vs = (np.array(c, dtype=np.float64) for c in zip(*turns, strict=True))
    new = surprise_weights(w, ps, vs, *data_weights)
    assert (new >= -1e-12).all()
    assert new.sum() == pytest.approx(w.sum(), rel=1e-9, abs=1e-9)


def test_value_surprise_of_a_one_turn_game():
    game = make_game()
    game.turns = game.turns[:1]  # black to move; white wins
    f = 1 / (1 + AREA * 0.016)
    # White's view: the result (1, 0, 0) moved by f toward the search (black 0.45/0.55 = white 0.55/0.45).
    blend = np.array([1.0, 0.0, 0.0]) + f * (np.array([0.55, 0.45, 0.0]) - np.array([1.0, 0.0, 0.0]))
    raw = np.array([0.5, 0.5, 0.0])
    expected = sum(b * math.log(b / r) for b, r in zip(blend, raw, strict=True) if b > 0)
    assert value_surprises(game)[0] == pytest.approx(min(expected, 1.0))


def test_frequency_weights_use_the_game():
    game = make_game()
    plain = frequency_weights(game, 0.0, 0.0)
    np.testing.assert_allclose(plain, WEIGHTS)
    weighted = frequency_weights(game, 0.5, 0.1)
    assert weighted.sum() == pytest.approx(sum(WEIGHTS))
    assert weighted[3] > 0  # the cheap search's surprise 2.0 is beyond 1.5 x the mean of the full ones


def test_stochastic_row_counts_reproducible_and_right_in_expectation():
    weights = np.array([0.0, 0.3, 1.0, 1.7, 2.5])
    a = stochastic_row_counts(weights, np.random.default_rng(5))
    b = stochastic_row_counts(weights, np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)
    rng = np.random.default_rng(1)
    draws = np.stack([stochastic_row_counts(weights, rng) for _ in range(20000)])
    assert (draws >= np.floor(weights)).all() and (draws <= np.ceil(weights)).all()
    np.testing.assert_allclose(draws.mean(axis=0), weights, atol=0.02)


def test_scoring_is_stochastically_rounded_in_expectation():
    rng = np.random.default_rng(0)
    x = np.full(20000, 0.3 * 120)
    rounded = stochastic_round(x, rng, -120, 120)
    assert set(np.unique(rounded)) == {36}
    x = np.full(20000, 0.301 * 120)
    rounded = stochastic_round(x, rng, -120, 120)
    assert set(np.unique(rounded)) <= {36, 37} and rounded.mean() == pytest.approx(36.12, abs=0.02)
    assert stochastic_round(np.array([500.0, -500.0]), rng, -120, 120).tolist() == [120, -120]


def test_soft_resignation_weight():
    assert soft_resignation_weight([0.95, 0.97]) == (0.0, 1.0)  # fewer than 3 turns
    p, w = soft_resignation_weight([0.2, 0.95, 0.97, 0.99])
    assert p == pytest.approx(0.25) and w == pytest.approx(1 + 0.25 * (0.1 - 1))
    p, w = soft_resignation_weight([-1.0, -1.0, -1.0])
    assert p == pytest.approx(1.0) and w == pytest.approx(0.1)
    assert soft_resignation_weight([0.95, -0.95, 0.95]) == (0.0, 1.0)
