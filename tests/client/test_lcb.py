"""The move to play by lower confidence bound (KataGo's useLcbForSelection): the bound of each root
child, and the play values that pick the best bound among well-visited moves."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client.gtp.search_player import best_move
from client.search.targets import play_values, utility_lcb
from common.settings import SearchSettings
from tests.client.results import root_result

pytestmark = pytest.mark.kernels  # plays with the search: after the tests that need no kernel

LCB = SearchSettings(lcb_for_selection=True)


def result(visits, utility, spread=0.1, priors=None):
    """Root children with these visits and mean utilities, each visit's utility spread around its
    mean by the given standard deviation."""
    u = np.array(utility, np.float64)
    return root_result(visits, u, priors=priors, utility_sq=np.where(np.array(visits) > 0, u**2 + spread**2, 0.0))


def katago_lcb(visits: int, mean: float, sq_mean: float, range_radius: float, stdevs: float) -> float:
    """KataGo's getSelfUtilityLCBAndRadius for unit weights, step by step."""
    weight_sum = float(visits)
    weight_sq_sum = float(visits)
    ess = weight_sum * weight_sum / weight_sq_sum
    prior_weight = weight_sum / (ess * ess * ess)
    sq_mean = max(sq_mean, mean * mean + 1e-8)
    sq_mean = (sq_mean * weight_sum + (sq_mean + range_radius * range_radius) * prior_weight) / (
        weight_sum + prior_weight
    )
    weight_sum += prior_weight
    weight_sq_sum += prior_weight * prior_weight
    ess = weight_sum * weight_sum / weight_sq_sum
    return mean - math.sqrt((sq_mean - mean * mean) / ess) * stdevs


def test_the_bound_is_katagos():
    r = result([10, 3, 1, 0], [0.3, -0.2, 0.9, 0.0], spread=0.25)
    lcb, radius = utility_lcb(r, score_factor=0.5, stdevs=5.0)
    for k in range(3):
        expected = katago_lcb(int(r.visits[k]), r.utility[k], r.utility_sq[k], 1.5, 5.0)
        assert lcb[k] == pytest.approx(expected, rel=1e-12)
        assert radius[k] == pytest.approx(r.utility[k] - expected, rel=1e-12)
    # An unvisited move's bound is the bottom of the utility's range, widened by the deviations.
    assert lcb[3] == -radius[3] == pytest.approx(-2 * 1.5 * 5.0)


def test_without_the_setting_the_values_are_the_visits():
    r = result([40, 100, 7], [0.5, 0.1, 0.9], spread=0.01)
    assert np.array_equal(play_values(r, SearchSettings()), r.visits.astype(np.float64))
    assert best_move(r, SearchSettings()) == 2  # the most visited (moves are 1, 2, 3)


def test_a_clearly_better_move_with_enough_visits_is_played():
    r = result([100, 40], [0.1, 0.5], spread=0.05)
    values = play_values(r, LCB)
    assert values[1] > values[0] == 100
    assert best_move(r, LCB) == 2


def test_a_move_below_the_visit_share_is_never_played_for_its_bound():
    r = result([100, 14], [0.1, 0.9], spread=0.01)  # 14 < 0.15 * 100
    assert np.array_equal(play_values(r, LCB), [100.0, 14.0])
    assert best_move(r, LCB) == 1
    assert best_move(r, LCB.replace(lcb_min_visit_prop=0.1)) == 2


def test_a_noisy_better_mean_does_not_beat_a_sure_one():
    # Move 2's mean is higher, but its visits disagree so much that its bound lies below move 1's.
    r = result([100, 30], [0.2, 0.25], spread=0.02)
    r.utility_sq[1] = 0.25**2 + 0.8**2
    assert best_move(r, LCB) == 1


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 500), st.floats(-1.0, 1.0), st.floats(0.0, 1.0)),
        min_size=1,
        max_size=8,
    )
)
def test_play_values_only_ever_raise_the_best_bound(children):
    visits = [v for v, _, _ in children]
    r = result(visits, [u for _, u, _ in children])
    r.utility_sq[:] = np.where(r.visits > 0, r.utility**2 + np.array([s for _, _, s in children]) ** 2, 0.0)
    values = play_values(r, LCB)
    raw = r.visits.astype(np.float64)
    changed = np.nonzero(values != raw)[0]
    assert len(changed) <= 1
    if len(changed):
        k = int(changed[0])
        assert values[k] > raw[k] >= LCB.lcb_min_visit_prop * raw.max()
        lcb, _ = utility_lcb(r, LCB.score_utility_factor, LCB.lcb_stdevs)
        eligible = (raw > 0) & (raw >= LCB.lcb_min_visit_prop * raw.max())
        assert lcb[k] == lcb[eligible].max()
    assert best_move(r, LCB) in r.moves


def test_bad_lcb_settings_are_refused_with_their_names():
    with pytest.raises(ValueError, match="lcb_stdevs"):
        SearchSettings(lcb_stdevs=0.0).validate()
    with pytest.raises(ValueError, match="lcb_min_visit_prop"):
        SearchSettings(lcb_min_visit_prop=1.5).validate()
