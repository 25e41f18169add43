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

from client.search.gumbel import considered_visit, improved_policy, interior_choice, root_choice, transformed_q
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


@njit(cache=True, inline="always", _nrt=False)
def gumbel_edge(rows, params, node, value):
    """Gumbel search below the root (:mod:`client.search.gumbel`): the edge of largest
    pi'(a) - N(a) / (1 + N), pi' = softmax(logit + sigma(completed Q)), with ``value`` the node's own
    evaluation (white's utility) completing the Q of the moves without a finished visit. Visits count
    by their weights, an in-flight one as 1; an untouched child's pi' grows with its prior alone, so
    that the touched children and the next untouched edge are all it looks at."""
    start = rows.edge_start[node]
    count = rows.edge_count[node]
    touched = rows.n_touched[node]
    sign = 1.0 if rows.players[node] == WHITE else -1.0
    # The mixed value of the moves without a finished visit: the value and the visited moves' Q by prior.
    done = 0.0
    prior_sum = 0.0
    weighted = 0.0
    most = 0.0
    for e in range(start, start + touched):
        c = rows.e_child[e]
        w = rows.w_sums[c]
        if w > 0.0:
            done += w
            prior_sum += rows.e_prior[e]
            weighted += rows.e_prior[e] * sign * rows.utils[c] / w
            most = max(most, w)
    fill = sign * value
    if done > 0.0 and prior_sum > 0.0:
        fill = (fill + weighted / prior_sum * done) / (1.0 + done)
    low = math.inf
    high = -math.inf
    unfinished = touched < count
    for e in range(start, start + touched):
        c = rows.e_child[e]
        w = rows.w_sums[c]
        if w > 0.0:
            q = sign * rows.utils[c] / w
            low = min(low, q)
            high = max(high, q)
        else:
            unfinished = True
    if unfinished:
        low = min(low, fill)
        high = max(high, fill)
    scale = (params.gumbel_c_visit + most) * params.gumbel_c_scale / max(high - low, 1e-8)
    top = (high - low) * scale  # the largest sigma: exponents are taken below it
    # The mixed value's term, for the moves without a finished visit. When every move has one, the
    # mixed value is outside [low, high] and its exponent could overflow: it is not used then.
    fill_term = math.exp((fill - low) * scale - top) if unfinished else 0.0
    # softmax's denominator: the touched moves one by one, the others at the mixed value together.
    total = 0.0
    rest = 0.0
    for e in range(start, start + count):
        if e < start + touched:
            c = rows.e_child[e]
            w = rows.w_sums[c]
            term = math.exp((sign * rows.utils[c] / w - low) * scale - top) if w > 0.0 else fill_term
            total += rows.e_prior[e] * term
        else:
            rest += rows.e_prior[e]
    total += rest * fill_term
    if total <= 0.0:
        return start + touched if touched < count else start
    children_n = rows.w_sums[node] - rows.weights[node] + rows.inflights[node]
    best = -1
    best_value = -np.inf
    for e in range(start, start + touched):
        c = rows.e_child[e]
        w = rows.w_sums[c]
        term = math.exp((sign * rows.utils[c] / w - low) * scale - top) if w > 0.0 else fill_term
        value_e = rows.e_prior[e] * term / total - (w + rows.inflights[c]) / (1.0 + children_n)
        if value_e > best_value:
            best_value = value_e
            best = e
    if touched < count:
        e = start + touched
        if rows.e_prior[e] * fill_term / total > best_value:
            best = e
    return best if best >= 0 else start  # no value compared (not a number): never an index before the edges


@njit(cache=True, _nrt=False)
def gumbel_root_choice(rows, params, n_visits, value, gumbel, work):
    """Gumbel search at the root (:mod:`client.search.gumbel`): the index, among the root's edges,
    of the move sequential halving visits next: among the moves with the visit count the schedule
    gives this simulation (``n_visits``, the nodes' visit counts, with those in flight), the one of
    largest g + logit + sigma(completed Q). ``value``: the root's own evaluation (white's utility);
    ``gumbel``: the root's draws; ``work``: float64[4, 362] to compute in. Should no move have that
    count (the tree ran out of room), the improved policy's deterministic choice."""
    start = rows.edge_start[0]
    n = rows.edge_count[0]
    sign = 1.0 if rows.players[0] == WHITE else -1.0
    finished, q, visits, sigma = work[0], work[1], work[2], work[3]
    legal = 0
    simulation = 0
    for k in range(n):
        c = rows.e_child[start + k]
        finished[k] = n_visits[c] if c >= 0 and rows.w_sums[c] > 0.0 else 0.0
        q[k] = sign * rows.utils[c] / rows.w_sums[c] if finished[k] > 0.0 else 0.0
        visits[k] = n_visits[c] + rows.inflights[c] if c >= 0 else 0.0
        simulation += int(visits[k])
        if rows.root_prior[k] > 0.0:
            legal += 1
    transformed_q(sign * value, q, finished, rows.root_prior, n, params.gumbel_c_visit, params.gumbel_c_scale, sigma)
    m = min(params.gumbel_considered, legal)
    wanted = considered_visit(m, max(1, params.target - 1), simulation)
    k = root_choice(gumbel, rows.root_prior, sigma, visits, n, float(wanted))
    if k < 0:
        improved_policy(rows.root_prior, sigma, n, q)
        k = interior_choice(q, visits, n)
    return max(k, 0)
