"""The selection rule (PUCT with first-play urgency and forced playouts) on hand-made nodes, and the
search parameters a search starts with."""

from __future__ import annotations

import math

import numpy as np

from client.search import tree as tr
from client.search.engine import search_params
from client.search.selection import puct_edge
from common.go.game import Game
from common.go.geometry import BLACK, WHITE
from common.settings import SearchSettings


def rows(players, visits, utils, touched, priors, root_priors=None) -> tr.GameRows:
    """Node 0 (the root) and node 1, each with the edges 0..2 (root) and 3..5 (node 1), children
    2.. in edge order where touched."""
    nodes = len(visits)
    e_child = np.full(6, -1, np.int32)
    child = 2
    for node, n in ((0, touched[0]), (1, touched[1])):
        for k in range(n):
            e_child[3 * node + k] = child
            child += 1
    return tr.GameRows(
        state=np.full(nodes, tr.EXPANDED, np.int8),
        visits=np.array(visits, np.int32),
        inflights=np.zeros(nodes, np.int32),
        utils=np.array(utils, np.float64),
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
    for name, value in fields.items():
        p[name] = value
    return p[()]


def test_an_untouched_node_takes_its_edge_of_highest_prior():
    r = rows([BLACK, WHITE], [1, 1], [0.0, 0.0], (0, 0), [0.5, 0.3, 0.2, 0.6, 0.3, 0.1])
    assert puct_edge(r, params(fpu=0.2), 1) == 3
    assert puct_edge(r, params(), 0) == 0


def test_a_child_wins_by_utility_or_by_prior_as_puct_says():
    # Node 1 (white to move, 3 visits) has two touched children of 1 visit each; white's utilities.
    def choice(u2, u3, fpu=0.2):
        r = rows([BLACK, WHITE, BLACK, BLACK], [1, 3, 1, 1], [0.0, 0.0, u2, u3], (0, 2), [0.4, 0.3, 0.3, 0.4, 0.3, 0.3])
        return puct_edge(r, params(fpu=fpu), 1)

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
        assert puct_edge(r, params(fpu=0.2), 1) == expected


def test_forced_playouts_go_to_a_root_child_below_its_share():
    # Root (black to move) with two touched children; child 3 has a large share of the prior and
    # one visit: with forced playouts it is chosen although child 2 is far better for black.
    r = rows([BLACK, WHITE, WHITE, WHITE], [11, 1, 9, 1], [0.0, 0.0, -8.0, 1.0], (2, 0), [0.1, 0.8, 0.1, 0, 0, 0])
    assert puct_edge(r, params(forced=True, forced_coeff=2.0), 0) == 1
    assert puct_edge(r, params(forced=False, forced_coeff=2.0), 0) == 0


def test_search_params_follow_the_settings():
    settings = SearchSettings(cpuct=1.3, fpu_reduction=0.3, root_noise=False, virtual_loss=2.0)
    p = search_params(settings, Game(9), 123, 0.75)
    assert p["target"] == 123
    assert not p["noise"] and p["forced"] and p["noise_shaped"]
    assert p["board_len"] == 9.0
    assert p["cpuct"] == 1.3 and p["fpu"] == 0.3 and p["virtual_loss"] == 2.0
    assert p["root_fpu"] == settings.root_fpu_reduction
    assert p["score_factor"] == settings.score_utility_factor
    assert p["root_temperature"] == settings.root_policy_temperature_at(0, 9.0)
    assert p["noise_weight"] == settings.noise_weight
    assert p["noise_total"] == settings.noise_total_concentration
    assert p["forced_coeff"] == settings.forced_playout_coeff
    assert p["draw_wl"] == 0.5
