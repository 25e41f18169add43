"""The selection rule (PUCT with first-play urgency and forced playouts) on hand-made nodes, and the
search parameters a search starts with."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from client.search import tree as tr
from client.search.engine import search_params
from client.search.selection import cpuct_stdev_factor, explore_scale, puct_edge
from common.go.game import Game
from common.go.geometry import BLACK, WHITE
from common.settings import SearchSettings, SettingsError
from common.settings.framework import kernel_fields, setting

pytestmark = pytest.mark.kernels  # plays with the search: after the tests that need no kernel


def rows(players, visits, utils, touched, priors, root_priors=None, util_sqs=None, weights=None) -> tr.GameRows:
    """Node 0 (the root) and node 1, each with the edges 0..2 (root) and 3..5 (node 1), children
    2.. in edge order where touched; squared utility sums as if every visit had the mean's utility
    unless given; visits given as weight sums (floats) when weights (the nodes' own evaluations'
    weights) are given, else every weight 1."""
    nodes = len(visits)
    e_child = np.full(6, -1, np.int32)
    child = 2
    for node, n in ((0, touched[0]), (1, touched[1])):
        for k in range(n):
            e_child[3 * node + k] = child
            child += 1
    return tr.GameRows(
        state=np.full(nodes, tr.EXPANDED, np.int8),
        weights=np.ones(nodes) if weights is None else np.array(weights, np.float64),
        w_sums=np.array(visits, np.float64),
        inflights=np.zeros(nodes, np.int32),
        utils=np.array(utils, np.float64),
        util_sqs=(
            np.array(utils, np.float64) ** 2 / np.maximum(np.array(visits), 1)
            if util_sqs is None
            else np.array(util_sqs, np.float64)
        ),
        players=np.array(players, np.int8),
        edge_start=np.array([0, 3] + [0] * (nodes - 2), np.int32),
        edge_count=np.array([3, 3] + [0] * (nodes - 2), np.int32),
        n_touched=np.array(list(touched) + [0] * (nodes - 2), np.int32),
        e_child=e_child,
        e_move=np.arange(6, dtype=np.int16),
        e_prior=np.array(priors, np.float32),
        root_prior=np.array(priors[:3] if root_priors is None else root_priors, np.float32),
    )


def params(**fields) -> np.void:
    p = np.zeros((), tr.SEARCH_PARAMS)
    p["cpuct"] = 1.0
    p["puct_exponent"] = 0.5
    for name, value in fields.items():
        p[name] = value
    return p[()]


def test_an_untouched_node_takes_its_edge_of_highest_prior():
    r = rows([BLACK, WHITE], [1, 1], [0.0, 0.0], (0, 0), [0.5, 0.3, 0.2, 0.6, 0.3, 0.1])
    assert puct_edge(r, params(fpu_reduction=0.2), 1) == 3
    assert puct_edge(r, params(), 0) == 0


def test_a_child_wins_by_utility_or_by_prior_as_puct_says():
    # Node 1 (white to move, 3 visits) has two touched children of 1 visit each; white's utilities.
    def choice(u2, u3, fpu=0.2):
        r = rows([BLACK, WHITE, BLACK, BLACK], [1, 3, 1, 1], [0.0, 0.0, u2, u3], (0, 2), [0.4, 0.3, 0.3, 0.4, 0.3, 0.3])
        return puct_edge(r, params(fpu_reduction=fpu), 1)

    assert choice(0.9, -0.9) == 3
    assert choice(-0.9, 0.9) == 4
    # Both children bad for white: the untouched edge's first-play value (the node's 0 less the
    # reduction) is higher, unless the reduction is large.
    assert choice(-0.9, -0.9) == 5
    assert choice(-0.9, -0.9, fpu=2.0) == 3


def test_the_puct_value_is_the_papers():
    # Node 1 (white to move, 3 visits) with one touched child of 1 visit and the untouched edge
    # of the same prior: the child's utility at which the two values meet, and a hair either side.
    sqrt_total = math.sqrt(2 + 0.01)
    untouched = 0.0 / 3 - 0.2 * math.sqrt(0.5) + 1.0 * 0.5 * sqrt_total
    tie = untouched - 1.0 * 0.5 * sqrt_total / (1 + 1)
    for delta, expected in ((1e-6, 3), (-1e-6, 4)):
        r = rows([BLACK, WHITE, BLACK], [1, 3, 1], [0.0, 0.0, tie + delta], (0, 1), [0.4, 0.3, 0.3, 0.5, 0.5, 0.0])
        assert puct_edge(r, params(fpu_reduction=0.2), 1) == expected


def test_forced_playouts_go_to_a_root_child_below_its_share():
    # Root (black to move) with two touched children; child 3 has a large share of the prior and
    # one visit: with forced playouts it is chosen although child 2 is far better for black.
    r = rows([BLACK, WHITE, WHITE, WHITE], [11, 1, 9, 1], [0.0, 0.0, -8.0, 1.0], (2, 0), [0.1, 0.8, 0.1, 0, 0, 0])
    assert puct_edge(r, params(forced_playouts=True, forced_playout_coeff=2.0), 0) == 1
    assert puct_edge(r, params(forced_playouts=False, forced_playout_coeff=2.0), 0) == 0


def test_weighted_visits_count_by_their_weights():
    # Node 1 (white to move) with two touched children of equal utility and prior: the one whose
    # visits weigh less is explored first, as if it had fewer visits; the PUCT value is the
    # paper's with the weights in place of the visit counts (parent: 2.5 of children's weight).
    def choice(w2, w3):
        r = rows(
            [BLACK, WHITE, BLACK, BLACK],
            [1, 1.0 + w2 + w3, w2, w3],
            [0.0, 0.0, 0.1 * w2, 0.1 * w3],
            (0, 2),
            [0.4, 0.3, 0.3, 0.45, 0.45, 0.1],
            weights=[1.0, 1.0, w2, w3],
        )
        return puct_edge(r, params(fpu_reduction=2.0), 1)

    assert choice(0.5, 2.0) == 3
    assert choice(2.0, 0.5) == 4
    # One child of weight 3 against one of weight 1 and a better utility: the value's terms.
    r = rows([BLACK, WHITE, BLACK, BLACK], [1, 5.0, 3.0, 1.0], [0.0, 0.0, 0.6, 0.3], (0, 2), [0] * 3 + [0.5, 0.4, 0.1])
    explore = math.sqrt(4.0 + 0.01)
    v3 = 0.6 / 3.0 + 1.1 * 0.5 * explore / 4.0
    v4 = 0.3 / 1.0 + 1.1 * 0.4 * explore / 2.0
    assert v4 > v3 > v4 - 0.3
    assert puct_edge(r, params(fpu_reduction=2.0, cpuct=1.1), 1) == 4
    # The same with the weights' roles swapped on the utilities: the heavier child's mean wins.
    r = rows([BLACK, WHITE, BLACK, BLACK], [1, 5.0, 3.0, 1.0], [0.0, 0.0, 3.0, -0.5], (0, 2), [0] * 3 + [0.5, 0.4, 0.1])
    assert 3.0 / 3.0 + 1.1 * 0.5 * explore / 4.0 > -0.5 + 1.1 * 0.4 * explore / 2.0
    assert puct_edge(r, params(fpu_reduction=2.0, cpuct=1.1), 1) == 3


def test_uncertainty_weighted_playouts_are_off_unless_asked():
    p = search_params(SearchSettings(), Game(9), 10, 0.5)
    assert not p["uncertainty_weighted"] and p["policy_optimism"] == 0.0 and p["root_policy_optimism"] == 0.0
    on = SearchSettings(uncertainty_weighted=True, policy_optimism=1.0, root_policy_optimism=0.2)
    p = search_params(on, Game(9), 10, 0.5)
    assert (
        p["uncertainty_weighted"]
        and p["uncertainty_coeff"] == 0.25
        and p["uncertainty_exponent"] == 1.0
        and p["uncertainty_max_weight"] == 8.0
    )
    assert p["policy_optimism"] == 1.0 and p["root_policy_optimism"] == 0.2


def test_search_params_follow_the_settings():
    settings = SearchSettings(cpuct=1.3, fpu_reduction=0.3, root_noise=False, virtual_loss=2.0)
    p = search_params(settings, Game(9), 123, 0.75)
    assert p["target"] == 123
    assert not p["root_noise"] and p["forced_playouts"] and p["noise_shaped"]
    assert p["board_len"] == 9.0
    assert p["cpuct"] == 1.3 and p["fpu_reduction"] == 0.3 and p["virtual_loss"] == 2.0
    assert p["root_fpu_reduction"] == settings.root_fpu_reduction
    assert p["score_utility_factor"] == settings.score_utility_factor
    assert p["root_temperature"] == settings.root_policy_temperature_at(0, 9.0)
    assert p["noise_weight"] == settings.noise_weight
    assert p["noise_total_concentration"] == settings.noise_total_concentration
    assert p["forced_playout_coeff"] == settings.forced_playout_coeff
    assert p["draw_wl"] == 0.5
    assert p["cpuct_utility_stdev_scale"] == 0.0  # a constant cPUCT unless asked
    assert p["puct_exponent"] == 0.5  # PUCT unless asked
    dynamic = SearchSettings(cpuct_utility_stdev_scale=0.85)
    p = search_params(dynamic, Game(9), 123, 0.5)
    assert p["cpuct_utility_stdev_scale"] == 0.85
    assert p["cpuct_utility_stdev_prior"] == dynamic.cpuct_utility_stdev_prior
    assert p["cpuct_utility_stdev_prior_weight"] == dynamic.cpuct_utility_stdev_prior_weight


def katago_stdev_factor(visits, mean, sq_mean, prior, prior_weight, scale):
    """KataGo's getFpuValueForChildrenAssumeVisited for unit weights, step by step."""
    if visits <= 1:
        stdev = prior
    else:
        sq_mean = max(sq_mean, mean * mean)
        stdev = math.sqrt(
            max(
                0.0,
                ((mean * mean + prior * prior) * prior_weight + sq_mean * visits) / (prior_weight + visits - 1.0)
                - mean * mean,
            )
        )
    return 1.0 + scale * (stdev / prior - 1.0)


def test_the_cpuct_factor_is_katagos():
    for visits, mean, spread in ((1, 0.3, 0.0), (2, -0.1, 0.5), (40, 0.2, 0.05), (400, -0.7, 0.9), (10, 0.0, 0.0)):
        sq_mean = mean * mean + spread * spread
        got = cpuct_stdev_factor(visits, mean * visits, sq_mean * visits, 0.4, 2.0, 0.85)
        assert got == pytest.approx(katago_stdev_factor(visits, mean, sq_mean, 0.4, 2.0, 0.85), rel=1e-12)
    # Scale 0 is a constant cPUCT; a deviation equal to the prior leaves cPUCT as it is.
    assert cpuct_stdev_factor(40, 8.0, 9.0, 0.4, 2.0, 0.0) == 1.0
    assert cpuct_stdev_factor(1, 0.3, 0.09, 0.4, 2.0, 0.85) == 1.0


def test_volatile_nodes_explore_and_stable_ones_exploit():
    # Node 1 (white to move, 21 visits): child 2 has 19 visits at utility 0.1 and prior 0.6, child 3
    # one visit at -0.05 and prior 0.1. A constant cPUCT of 1 revisits child 2; scaled by the
    # deviation of the node's visits, widely varying ones explore child 3, steady ones stay on 2.
    def choice(spread, scale):
        utils = [0.0, 0.1 * 19 - 0.05, 0.1 * 19, -0.05]
        mean = utils[1] / 21
        sq = [0.0, (mean**2 + spread**2) * 21, (0.01 + spread**2) * 19, 0.0025]
        r = rows(
            [BLACK, WHITE, BLACK, BLACK], [1, 21, 19, 1], utils, (0, 2), [0.4, 0.3, 0.3, 0.6, 0.1, 0.01], util_sqs=sq
        )
        p = params(
            fpu_reduction=0.2,
            cpuct_utility_stdev_scale=scale,
            cpuct_utility_stdev_prior=0.4,
            cpuct_utility_stdev_prior_weight=2.0,
        )
        return puct_edge(r, p, 1)

    assert choice(0.0, 0.0) == choice(1.0, 0.0) == 3
    assert choice(1.0, 0.85) == 4
    assert choice(0.0, 0.85) == 3


def test_gpucts_exploration_is_a_power_of_the_visits():
    # As test_the_puct_value_is_the_papers, with Cazenave's exponent 0.737 in place of the root.
    scale = math.exp(0.737 * math.log(2 + 0.01))
    untouched = 0.0 / 3 - 0.2 * math.sqrt(0.5) + 1.0 * 0.5 * scale
    tie = untouched - 1.0 * 0.5 * scale / (1 + 1)
    for delta, expected in ((1e-6, 3), (-1e-6, 4)):
        r = rows([BLACK, WHITE, BLACK], [1, 3, 1], [0.0, 0.0, tie + delta], (0, 1), [0.4, 0.3, 0.3, 0.5, 0.5, 0.0])
        assert puct_edge(r, params(fpu_reduction=0.2, puct_exponent=0.737), 1) == expected
    assert explore_scale(99.99, 0.5) == math.sqrt(100.0)
    assert explore_scale(99.99, 0.737) == pytest.approx(100.0**0.737)


def test_every_kernel_setting_reaches_the_record_under_its_own_name():
    changed = SearchSettings(
        **{f.name: _another(getattr(SearchSettings(), f.name)) for f in kernel_fields(SearchSettings)}
    )
    p = search_params(changed, Game(9), 10, 0.5)
    for f in kernel_fields(SearchSettings):
        assert p[f.name] == getattr(changed, f.name), f.name


def _another(value):
    """A valid value of a kernel setting other than ``value``."""
    if isinstance(value, bool):
        return not value
    return value * 0.5 if value else 0.125


@dataclasses.dataclass(frozen=True)
class _WithAKnob(SearchSettings):
    knob: float = setting(0.5, 0.0, 1.0, kernel=True)


def test_a_search_setting_declared_once_is_read_checked_and_reaches_the_kernel():
    """One field, its bounds and its kernel mark, and nothing else: the JSON reads it, validation
    holds it to its bounds, and the search's record carries it to the kernel under its name."""
    settings = _WithAKnob.from_dict({"knob": 0.25, "cpuct": 1.3})
    assert settings.knob == 0.25
    with pytest.raises(SettingsError, match=r"settings knob: must be at most 1\.0, got 2\.0"):
        _WithAKnob.from_dict({"knob": 2.0})
    p = search_params(settings, Game(9), 10, 0.5)
    assert p["knob"] == 0.25 and p["cpuct"] == 1.3 and p["target"] == 10
    assert "knob" not in tr.SEARCH_PARAMS.names  # the real record holds the real settings only
