"""Elo on the logistic curve: the expected score, its inverse and a match's 95% interval."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from common.elo import ELO_PER_NAT, Z95, elo_of_score, expected_score, score_elo


def test_the_expected_score_on_known_points():
    assert expected_score(0.0) == 0.5
    assert expected_score(400.0) == pytest.approx(10 / 11)
    assert expected_score(-400.0) == pytest.approx(1 / 11)
    assert expected_score(np.array([0.0, 400.0])) == pytest.approx([0.5, 10 / 11])


@given(st.floats(min_value=-1500, max_value=1500))
def test_elo_of_score_inverts_the_expected_score(elo):
    assert elo_of_score(expected_score(elo)) == pytest.approx(elo, abs=1e-6)


def test_a_clean_sweep_is_infinitely_far():
    assert elo_of_score(1.0) == math.inf and elo_of_score(0.0) == -math.inf
    assert score_elo(1.0, 10) == (math.inf, math.inf)
    assert score_elo(0.0, 10) == (-math.inf, math.inf)
    assert score_elo(0.5, 0) == (0.0, math.inf)


def test_a_match_interval_is_the_score_interval_through_the_slope():
    """15 wins in 20: the score's standard error sqrt(p(1-p)/n), times 1.96, carried to Elo by the
    curve's slope at p; it narrows as the square root of the games."""
    elo, half = score_elo(0.75, 20)
    assert elo == pytest.approx(400 * math.log10(3))
    slope = ELO_PER_NAT / (0.75 * 0.25)
    assert half == pytest.approx(Z95 * math.sqrt(0.75 * 0.25 / 20) * slope)
    assert score_elo(0.75, 80)[1] == pytest.approx(half / 2)
    # the interval brackets the scores 1.96 standard errors away, to first order
    low = elo_of_score(0.75 - Z95 * math.sqrt(0.75 * 0.25 / 2000))
    assert score_elo(0.75, 2000)[1] == pytest.approx(elo - low, rel=0.05)
