"""The selection rule: which edge a descent takes at an expanded node.

A descent (:func:`client.search.tree.descend`) asks its rule at every node it passes, as mctx's
``simulate`` asks its action selection function. A rule is a function of one form,
``rule(rows, params, node) -> edge``, with rows the game's :class:`client.search.tree.GameRows`,
params its ``SEARCH_PARAMS`` record and node an expanded node with at least one edge; the descent
names its rule in one call, so another rule of the same form takes its place there. Rules are
inlined into the descent, so the choice costs no call. (The rule is not handed to the descent as an
argument: compiled code taking a function as a value holds the function's address, and numba then
no longer caches it.)

Edges are kept so that the touched ones come first and the next one is the untouched edge of
highest prior (see :mod:`client.search.tree`): a rule whose value of an untouched child only grows
with its prior looks at the touched children and that one edge.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from common.go.geometry import WHITE


@njit(cache=True, inline="always", _nrt=False)
def explore_scale(total, exponent):
    """The exploration term's power of the parent's visits to its children: PUCT's square root
    for exponent 0.5, Cazenave's Generalized PUCT (GPUCT) for others (0.01 keeps it above 0)."""
    if exponent == 0.5:
        return math.sqrt(total + 0.01)
    return math.exp(exponent * math.log(total + 0.01))


@njit(cache=True, inline="always", _nrt=False)
def cpuct_stdev_factor(weight, util_sum, util_sq_sum, prior, prior_weight, scale):
    """The factor of dynamic variance-scaled cPUCT (methods page) for a node whose visits weigh
    weight in all (their count, unless playouts are weighted) with these weighted sums of their
    utilities and squared utilities: 1 + scale * (stdev / prior - 1), the stdev mixing the visits'
    utility variance with prior^2 weighing prior_weight visits (as searchexplorehelpers.cpp in
    KataGo's repository does; a node of weight 1 or less: the prior)."""
    if scale == 0.0:
        return 1.0
    stdev = prior
    if weight > 1.0:
        mean = util_sum / weight
        mean_sq = mean * mean
        sq = max(util_sq_sum / weight, mean_sq)
        variance = ((mean_sq + prior * prior) * prior_weight + sq * weight) / (prior_weight + weight - 1.0) - mean_sq
        stdev = math.sqrt(max(0.0, variance))
    return 1.0 + scale * (stdev / prior - 1.0)


@njit(cache=True, inline="always", _nrt=False)
def puct_edge(rows, params, node):
    """PUCT (paper section 5.1), with forced playouts at the root when the search has them
    (section 5.3), first-play urgency for the untouched children, and when the search asks for
    them GPUCT's power of the visits and cPUCT scaled by the node's utility deviation; virtual loss
    counts each in-flight visit as a loss for the player choosing. Visits count by their weights
    (:mod:`client.search.tree`), an in-flight visit as 1, as KataGo's virtual losses."""
    root = node == 0
    start = rows.edge_start[node]
    count = rows.edge_count[node]
    priors = rows.root_prior if root else rows.e_prior
    offset = start if root else 0
    vloss = params.virtual_loss
    sign = 1.0 if rows.players[node] == WHITE else -1.0
    n_node = rows.w_sums[node]
    cpuct = params.cpuct * cpuct_stdev_factor(
        n_node,
        rows.utils[node],
        rows.util_sqs[node],
        params.cpuct_utility_stdev_prior,
        params.cpuct_utility_stdev_prior_weight,
        params.cpuct_utility_stdev_scale,
    )
    children_n = n_node - rows.weights[node] + rows.inflights[node]
    explore = explore_scale(children_n, params.puct_exponent)
    forced_k = params.forced_playout_coeff * children_n if root and params.forced_playouts else -1.0
    best = -1
    best_value = -np.inf
    visited_policy = 0.0
    touched = rows.n_touched[node]
    for e in range(start, start + touched):
        c = rows.e_child[e]
        prior = priors[e - offset]
        visited_policy += prior
        inflight = rows.inflights[c]
        n = rows.w_sums[c] + inflight
        if n * n < forced_k * prior:
            return e
        value = (sign * rows.utils[c] - vloss * inflight) / n + cpuct * prior * explore / (1.0 + n)
        if value > best_value:
            best_value = value
            best = e
    if touched < count:
        # The untouched edge of highest prior; the others have the same value and less prior.
        e = start + touched
        fpu = params.root_fpu_reduction if root else params.fpu_reduction
        value = sign * rows.utils[node] / n_node - fpu * math.sqrt(visited_policy)
        value += cpuct * priors[e - offset] * explore
        if value > best_value:
            best = e
    return best
