"""Search trees as flat arrays, one tree per game, and the numba kernels that work on one tree.

Nodes live in ``[G, C]`` arrays (G games, C nodes per game); node 0 is the root. A node's children
are a contiguous range of edges in ``[G, E]`` arrays holding the move, the network's prior and the
child node (-1 until the edge is first chosen). Edges are kept so that the ones already chosen
("touched") come first and the next one is the untouched edge of highest prior: an untouched child's
PUCT value only depends on its prior, so selection looks at the touched children and that one edge,
not at every legal move.

Statistics are sums over the visits that went through a node, from white's point of view: win minus
loss, score mean, score mean square, lead, utility and utility square. A node counts its own evaluation as one
visit (a finished game's node counts every visit), so after every backup a non-terminal node has
``N = 1 + sum of its children's N``. Each node also keeps its own evaluation (``own``) so that
utilities can be recomputed when the score utility is re-centred on a reused tree.

Uncertainty-weighted playouts (methods page): each visit weighs its leaf's ``weight``, 1 unless the
search weighs evaluations by the network's short-term error predictions (:func:`evaluation_weight`;
a finished game's visits weigh 1). The sums above are weighted, ``w_sum`` and ``w_sq_sum`` add up the
weights and their squares, and means divide by ``w_sum``: ``W = weight + sum of its children's W``.
With every weight 1, ``w_sum`` equals ``N`` exactly and the weighted search is the unweighted one.

Virtual loss: a leaf waiting for the network counts, on every node of its path, as an in-flight visit
with utility -virtual_loss for the player choosing it, which steers the other leaves of the same
game elsewhere.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from client.search.cache import V_SCORE, V_SCORE_ERROR, V_WL_ERROR
from client.search.gumbel import gumbel_draw
from client.search.noise import add_noise, apply_temperature
from client.search.selection import gumbel_edge, gumbel_root_choice, puct_edge
from client.search.utility import expected_score_value
from client.search.valuebias import bucket_bias, clear_buckets, keep_buckets, observe, table_size
from common.encoding.features import NN_AREA, NN_LEN
from common.go.geometry import PASS, STRIDE, WHITE
from common.settings import SearchSettings
from common.settings.framework import hints, kernel_fields

# Node states.
PENDING = 0  # allocated; its evaluation is in flight
EXPANDED = 1
TERMINAL = 2  # a finished game: its value is exact

# Own evaluation of a node (white's point of view).
OWN_WL = 0
OWN_SCORE = 1
OWN_SD = 2
OWN_LEAD = 3
OWN_LEN = 4

# A search's parameters, one record per game (Trees.params), set when the search starts: what the
# search of one position needs beyond the settings, then every search setting the kernel reads, each
# under its name in SearchSettings (and in the run's JSON).
SEARCH_POSITION_FIELDS = [
    ("target", np.int64),  # root visits the search stops at
    ("board_len", np.float64),  # B, the board length
    ("root_temperature", np.float64),  # the root's policy temperature at this turn
    ("draw_wl", np.float64),  # white's win-loss value of a draw: 2 * draw-equivalent wins - 1
    ("pda_black", np.float64),  # black's playout doubling advantage, a network input (0: none)
]
_KERNEL_TYPES = {bool: np.bool_, int: np.int64, float: np.float64}


def search_params_dtype(settings_class: type = SearchSettings) -> np.dtype:
    """The record of a search's parameters: the position's fields and the kernel's settings of
    ``settings_class``."""
    types = hints(settings_class)
    kernel = [(f.name, _KERNEL_TYPES[types[f.name]]) for f in kernel_fields(settings_class)]
    return np.dtype(SEARCH_POSITION_FIELDS + kernel, align=True)


SEARCH_PARAMS = search_params_dtype()

# Where each game's tree and search stand, one record per game (Trees.status).
SEARCH_STATUS = np.dtype(
    [
        ("nodes", np.int64),  # nodes in use
        ("edges", np.int64),  # edges in use
        ("leaves", np.int64),  # leaves waiting for the network this step
        ("x0", np.float64),  # the score utility's centre (white's score)
        ("ready", np.bool_),  # the root's priors and score centre are set for this search
        ("active", np.bool_),  # searching
        ("full", np.bool_),  # the tree ran out of room (the search stops early)
        ("nn_evals", np.int64),  # statistics of the current search:
        ("cache_hits", np.int64),
        ("terminal_visits", np.int64),
        ("collisions", np.int64),
        ("buckets", np.int64),  # subtree value bias buckets in the table
    ],
    align=True,
)


class Trees(NamedTuple):
    n_visits: np.ndarray  # int32[G, C]
    n_inflight: np.ndarray  # int32[G, C]
    weight: np.ndarray  # float64[G, C]: the weight of the node's own evaluation
    w_sum: np.ndarray  # float64[G, C]: of the visits' weights
    w_sq_sum: np.ndarray  # float64[G, C]: of their squares
    util_sum: np.ndarray  # float64[G, C]
    util_sq_sum: np.ndarray  # float64[G, C]: of the visits' squared utilities
    wl_sum: np.ndarray  # float64[G, C]
    score_sum: np.ndarray  # float64[G, C]
    sq_sum: np.ndarray  # float64[G, C]
    lead_sum: np.ndarray  # float64[G, C]
    own: np.ndarray  # float32[G, C, OWN_LEN]
    state: np.ndarray  # int8[G, C]
    pla: np.ndarray  # int8[G, C]: the player to move at the node
    parent: np.ndarray  # int32[G, C]
    edge_start: np.ndarray  # int32[G, C]
    edge_count: np.ndarray  # int32[G, C]
    n_touched: np.ndarray  # int32[G, C]
    ladder: np.ndarray  # uint8[G, C, 361]: the node's ladder plane (its children's history plane)
    e_move: np.ndarray  # int16[G, E]: board location or PASS
    e_prior: np.ndarray  # float32[G, E]
    e_child: np.ndarray  # int32[G, E]
    root_prior: np.ndarray  # float32[G, 362]: the root's edges' priors after temperature and noise (Gumbel: neither)
    root_gumbel: np.ndarray  # float64[G, 362]: the root's edges' Gumbel draws (Gumbel search; 0 without noise)
    params: np.ndarray  # SEARCH_PARAMS[G]
    status: np.ndarray  # SEARCH_STATUS[G]
    rng: np.ndarray  # uint64[G, 1]: per game generator (noise, symmetries)
    # float64[G, 4, 362]: the root's priors and noise while they are derived; then the Gumbel root
    # rule's completed visits, mean utilities, visits with those in flight, and sigma
    scratch: np.ndarray
    score_table: np.ndarray  # float64[M, S]: see client.search.utility
    # Subtree value bias correction (client.search.valuebias): per node, the correction its own
    # utility carries, its bucket's slot (-1: none) and its contribution to the bucket; per game, the
    # buckets' hash table of K slots.
    bias: np.ndarray  # float64[G, C]
    bias_slot: np.ndarray  # int32[G, C]
    bias_delta: np.ndarray  # float64[G, C]
    bias_weight: np.ndarray  # float64[G, C]
    bucket_key: np.ndarray  # int64[G, K]: 0 for a free slot
    bucket_delta: np.ndarray  # float64[G, K]
    bucket_weight: np.ndarray  # float64[G, K]


def new_trees(games: int, nodes: int, edges: int, score_table: np.ndarray) -> Trees:
    g = games
    return Trees(
        n_visits=np.zeros((g, nodes), np.int32),
        n_inflight=np.zeros((g, nodes), np.int32),
        weight=np.ones((g, nodes), np.float64),
        w_sum=np.zeros((g, nodes), np.float64),
        w_sq_sum=np.zeros((g, nodes), np.float64),
        util_sum=np.zeros((g, nodes), np.float64),
        util_sq_sum=np.zeros((g, nodes), np.float64),
        wl_sum=np.zeros((g, nodes), np.float64),
        score_sum=np.zeros((g, nodes), np.float64),
        sq_sum=np.zeros((g, nodes), np.float64),
        lead_sum=np.zeros((g, nodes), np.float64),
        own=np.zeros((g, nodes, OWN_LEN), np.float32),
        state=np.zeros((g, nodes), np.int8),
        pla=np.zeros((g, nodes), np.int8),
        parent=np.full((g, nodes), -1, np.int32),
        edge_start=np.zeros((g, nodes), np.int32),
        edge_count=np.zeros((g, nodes), np.int32),
        n_touched=np.zeros((g, nodes), np.int32),
        ladder=np.zeros((g, nodes, NN_AREA), np.uint8),
        e_move=np.zeros((g, edges), np.int16),
        e_prior=np.zeros((g, edges), np.float32),
        e_child=np.full((g, edges), -1, np.int32),
        root_prior=np.zeros((g, NN_AREA + 1), np.float32),
        root_gumbel=np.zeros((g, NN_AREA + 1), np.float64),
        params=np.zeros(g, SEARCH_PARAMS),
        status=np.zeros(g, SEARCH_STATUS),
        rng=np.ones((g, 1), np.uint64),
        scratch=np.zeros((g, 4, NN_AREA + 1), np.float64),
        score_table=score_table,
        bias=np.zeros((g, nodes), np.float64),
        bias_slot=np.full((g, nodes), -1, np.int32),
        bias_delta=np.zeros((g, nodes), np.float64),
        bias_weight=np.zeros((g, nodes), np.float64),
        bucket_key=np.zeros((g, table_size(nodes)), np.int64),
        bucket_delta=np.zeros((g, table_size(nodes)), np.float64),
        bucket_weight=np.zeros((g, table_size(nodes)), np.float64),
    )


# --- values ------------------------------------------------------------------------------------------
@njit(cache=True, inline="always", _nrt=False)
def utility(t, i, wl, score, sd):
    """White's utility of a position: win-loss plus the expected score utility."""
    c = t.params[i].score_utility_factor
    if c == 0.0:
        return wl
    return wl + c * expected_score_value(t.score_table, score, sd, t.status[i].x0, t.params[i].board_len)


@njit(cache=True, inline="always", _nrt=False)
def evaluation_weight(t, i, score, wl_error, score_error):
    """The weight of an evaluation whose short-term errors the network predicts (KataGo's
    computeWeightFromNNOutput): coeff / (u^exponent + coeff / max_weight), u the utility's
    uncertainty, the win-loss error plus the score error times the score utility's slope at the
    evaluation's score. 1 when the search does not weigh playouts or the network has no such heads
    (errors -1)."""
    p = t.params[i]
    if not p.uncertainty_weighted or wl_error < 0.0 or score_error < 0.0:
        return 1.0
    coeff = p.uncertainty_coeff
    u = wl_error
    c = p.score_utility_factor
    if c != 0.0:
        b = p.board_len
        m = (score - t.status[i].x0) / b
        u += c * (2.0 / math.pi) / (b * (1.0 + m * m)) * score_error
    powered = u if p.uncertainty_exponent == 1.0 else u**p.uncertainty_exponent
    return coeff / (powered + coeff / p.uncertainty_max_weight)


@njit(cache=True, inline="always", _nrt=False)
def node_own_utility(t, i, node):
    return utility(t, i, t.own[i, node, OWN_WL], t.own[i, node, OWN_SCORE], t.own[i, node, OWN_SD])


@njit(cache=True, _nrt=False)
def own_utility(t, i, node):
    """White's utility of the node's own evaluation, as the search has it now (called from Python)."""
    return node_own_utility(t, i, node)


@njit(cache=True, _nrt=False)
def recompute_utilities(t, i):
    """Recompute every node's utility sums with the current score centre (children have higher
    indices than their parents, so one backward sweep adds subtrees up)."""
    n = t.status[i].nodes
    biased = t.params[i].subtree_value_bias_factor != 0.0
    for k in range(n):
        st = t.state[i, k]
        u = node_own_utility(t, i, k)
        if st == EXPANDED:
            if biased:
                u += t.bias[i, k]
            w = t.weight[i, k]
            t.util_sum[i, k] = w * u
            t.util_sq_sum[i, k] = w * u * u
        elif st == TERMINAL:
            t.util_sum[i, k] = u * t.w_sum[i, k]
            t.util_sq_sum[i, k] = u * u * t.w_sum[i, k]
        else:
            t.util_sum[i, k] = 0.0
            t.util_sq_sum[i, k] = 0.0
    for k in range(n - 1, 0, -1):
        t.util_sum[i, t.parent[i, k]] += t.util_sum[i, k]
        t.util_sq_sum[i, t.parent[i, k]] += t.util_sq_sum[i, k]


@njit(cache=True, inline="always", _nrt=False)
def _leaf_values(t, i, leaf):
    """What a backup adds of the leaf's own evaluation: white's win-loss, score, score square (mean
    square plus variance), lead and utility."""
    wl = t.own[i, leaf, OWN_WL]
    score = t.own[i, leaf, OWN_SCORE]
    sd = t.own[i, leaf, OWN_SD]
    return wl, score, score * score + sd * sd, t.own[i, leaf, OWN_LEAD], utility(t, i, wl, score, sd)


@njit(cache=True, inline="always", _nrt=False)
def backup(t, i, path, plen, inflight):
    """Add the evaluation of the path's last node to every node of the path (removing the virtual
    loss when the visit was in flight)."""
    if t.params[i].subtree_value_bias_factor != 0.0:
        _backup_biased(t, i, path, plen, inflight)
        return
    leaf = path[plen - 1]
    wl, score, sq, lead, util = _leaf_values(t, i, leaf)
    w = t.weight[i, leaf]
    if w != 1.0:
        wl *= w
        score *= w
        sq *= w
        lead *= w
    visits = t.n_visits[i]
    inflights = t.n_inflight[i]
    w_sum = t.w_sum[i]
    w_sq_sum = t.w_sq_sum[i]
    w_sq = w * w
    wl_sum = t.wl_sum[i]
    score_sum = t.score_sum[i]
    sq_sum = t.sq_sum[i]
    lead_sum = t.lead_sum[i]
    util_sum = t.util_sum[i]
    util_sq_sum = t.util_sq_sum[i]
    util_sq = w * util * util
    util = w * util
    for d in range(plen):
        node = path[d]
        visits[node] += 1
        if inflight:
            inflights[node] -= 1
        w_sum[node] += w
        w_sq_sum[node] += w_sq
        wl_sum[node] += wl
        score_sum[node] += score
        sq_sum[node] += sq
        lead_sum[node] += lead
        util_sum[node] += util
        util_sq_sum[node] += util_sq


@njit(cache=True, _nrt=False)
def _backup_biased(t, i, path, plen, inflight):
    """backup with subtree value bias correction (:mod:`client.search.valuebias`): a new leaf takes
    its bucket's correction; then, from the leaf up, each node with a bucket and children
    contributes its subtree's error to the bucket and takes the bucket's correction again, and the
    change of its own (weighted) utility goes into its sums and those of every node above it."""
    params = t.params[i]
    factor = params.subtree_value_bias_factor
    leaf = path[plen - 1]
    wl, score, sq, lead, util = _leaf_values(t, i, leaf)
    if t.state[i, leaf] == EXPANDED:
        if t.n_visits[i, leaf] == 0 and t.bias_slot[i, leaf] >= 0:
            t.bias[i, leaf] = bucket_bias(t, i, t.bias_slot[i, leaf], factor)
        util += t.bias[i, leaf]
    w = t.weight[i, leaf]
    wl *= w
    score *= w
    sq *= w
    lead *= w
    util_sq = w * util * util
    util = w * util
    carried = 0.0  # the change of the own utilities below, on the path
    carried_sq = 0.0
    for d in range(plen - 1, -1, -1):
        node = path[d]
        t.n_visits[i, node] += 1
        if inflight:
            t.n_inflight[i, node] -= 1
        t.w_sum[i, node] += w
        t.w_sq_sum[i, node] += w * w
        t.wl_sum[i, node] += wl
        t.score_sum[i, node] += score
        t.sq_sum[i, node] += sq
        t.lead_sum[i, node] += lead
        t.util_sum[i, node] += util + carried
        t.util_sq_sum[i, node] += util_sq + carried_sq
        if d == plen - 1 or t.bias_slot[i, node] < 0:
            continue
        nn = node_own_utility(t, i, node)
        old = nn + t.bias[i, node]
        own_w = t.weight[i, node]
        child_w = t.w_sum[i, node] - own_w
        observe(
            t, i, node, nn, (t.util_sum[i, node] - own_w * old) / child_w, child_w, params.subtree_value_bias_exponent
        )
        t.bias[i, node] = bucket_bias(t, i, t.bias_slot[i, node], factor)
        new = nn + t.bias[i, node]
        change = own_w * (new - old)
        change_sq = own_w * (new * new - old * old)
        t.util_sum[i, node] += change
        t.util_sq_sum[i, node] += change_sq
        carried += change
        carried_sq += change_sq


# --- trees -------------------------------------------------------------------------------------------
@njit(cache=True, _nrt=False)
def reset_tree(t, i, pla):
    """An empty tree: only the root, waiting for its evaluation."""
    t.status[i].nodes = 1
    t.status[i].edges = 0
    t.status[i].ready = False
    t.status[i].full = False
    _clear_node(t, i, 0, -1, pla)
    clear_buckets(t, i)


@njit(cache=True, inline="always", _nrt=False)
def _clear_node(t, i, node, parent, pla):
    t.n_visits[i, node] = 0
    t.n_inflight[i, node] = 0
    t.weight[i, node] = 1.0
    t.w_sum[i, node] = 0.0
    t.w_sq_sum[i, node] = 0.0
    t.util_sum[i, node] = 0.0
    t.util_sq_sum[i, node] = 0.0
    t.wl_sum[i, node] = 0.0
    t.score_sum[i, node] = 0.0
    t.sq_sum[i, node] = 0.0
    t.lead_sum[i, node] = 0.0
    t.state[i, node] = PENDING
    t.pla[i, node] = pla
    t.parent[i, node] = parent
    t.edge_start[i, node] = 0
    t.edge_count[i, node] = 0
    t.n_touched[i, node] = 0
    t.bias[i, node] = 0.0
    t.bias_slot[i, node] = -1
    t.bias_delta[i, node] = 0.0
    t.bias_weight[i, node] = 0.0


@njit(cache=True, inline="always", _nrt=False)
def new_child(t, i, node, e):
    """Allocate the child of edge e of node (the next untouched edge); -1 when the tree is full."""
    k = t.status[i].nodes
    if k >= t.n_visits.shape[1]:
        t.status[i].full = True
        return -1
    t.status[i].nodes = k + 1
    _clear_node(t, i, k, node, 3 - t.pla[i, node])
    t.e_child[i, e] = k
    t.n_touched[i, node] += 1
    _promote_best(t, i, node, node == 0 and t.status[i].ready)
    return k


@njit(cache=True, inline="always", _nrt=False)
def _swap_edges(t, i, a, b, root_start):
    if a == b:
        return
    t.e_move[i, a], t.e_move[i, b] = t.e_move[i, b], t.e_move[i, a]
    t.e_prior[i, a], t.e_prior[i, b] = t.e_prior[i, b], t.e_prior[i, a]
    t.e_child[i, a], t.e_child[i, b] = t.e_child[i, b], t.e_child[i, a]
    if root_start >= 0:
        ra = a - root_start
        rb = b - root_start
        t.root_prior[i, ra], t.root_prior[i, rb] = t.root_prior[i, rb], t.root_prior[i, ra]
        t.root_gumbel[i, ra], t.root_gumbel[i, rb] = t.root_gumbel[i, rb], t.root_gumbel[i, ra]


@njit(cache=True, inline="always", _nrt=False)
def _promote_best(t, i, node, use_root_prior):
    """Move the untouched edge of highest prior to the front of the untouched ones."""
    start = t.edge_start[i, node]
    first = start + t.n_touched[i, node]
    end = start + t.edge_count[i, node]
    if first >= end:
        return
    best = first
    priors = t.root_prior[i] if use_root_prior else t.e_prior[i]
    offset = start if use_root_prior else 0
    bp = priors[first - offset]
    for e in range(first + 1, end):
        if priors[e - offset] > bp:
            bp = priors[e - offset]
            best = e
    _swap_edges(t, i, first, best, start if use_root_prior else -1)


@njit(cache=True, inline="always", _nrt=False)
def expand(t, i, node, probs, x_size, y_size, values):
    """Give an evaluated node its edges (the moves with a positive prior, and pass), its own
    evaluation and that evaluation's weight; values = (white wl, white score, score sd, white lead,
    short-term win-loss error, short-term score error), as the cache keeps them (V_*). False when
    the edge pool is full (the node then stays a leaf: the search stops early)."""
    start = t.status[i].edges
    cap = t.e_move.shape[1]
    count = 0
    e_move = t.e_move[i]
    e_prior = t.e_prior[i]
    e_child = t.e_child[i]
    for y in range(y_size):
        for x in range(x_size):
            p = probs[y * NN_LEN + x]
            if p > 0.0:
                if start + count >= cap:
                    t.status[i].full = True
                    return False
                e = start + count
                e_move[e] = (y + 1) * STRIDE + x + 1
                e_prior[e] = p
                e_child[e] = -1
                count += 1
    if start + count >= cap:
        t.status[i].full = True
        return False
    e = start + count
    t.e_move[i, e] = PASS
    t.e_prior[i, e] = probs[NN_AREA]
    t.e_child[i, e] = -1
    count += 1
    t.status[i].edges = start + count
    t.edge_start[i, node] = start
    t.edge_count[i, node] = count
    t.n_touched[i, node] = 0
    for k in range(OWN_LEN):
        t.own[i, node, k] = values[k]
    t.weight[i, node] = evaluation_weight(t, i, values[V_SCORE], values[V_WL_ERROR], values[V_SCORE_ERROR])
    t.state[i, node] = EXPANDED
    _promote_best(t, i, node, False)
    return True


@njit(cache=True, inline="always", _nrt=False)
def set_terminal(t, i, node, wl, score):
    t.own[i, node, OWN_WL] = wl
    t.own[i, node, OWN_SCORE] = score
    t.own[i, node, OWN_SD] = 0.0
    t.own[i, node, OWN_LEAD] = score
    t.weight[i, node] = 1.0
    t.state[i, node] = TERMINAL


@njit(cache=True, inline="always", _nrt=False)
def search_done(root_visits, root_inflight, target, full):
    """Is a search done: its root has the target visits, or the tree ran out of room, and no leaf
    is in flight?"""
    return root_inflight == 0 and (root_visits >= target or full)


# --- selection ---------------------------------------------------------------------------------------
DESCEND_LEAF = 0  # a new or unevaluated node to evaluate
DESCEND_TERMINAL = 1  # a finished game, backed up already
DESCEND_COLLISION = 2  # a node whose evaluation is in flight
DESCEND_FULL = 3  # no room for another node (or the path)


class GameRows(NamedTuple):
    """One game's rows of the tree's arrays, taken once for a descent: in compiled code each read of
    an array attribute, and each array passed to a function, costs atomic reference count updates,
    which would cost more than the selection itself."""

    state: np.ndarray
    weights: np.ndarray
    w_sums: np.ndarray
    inflights: np.ndarray
    utils: np.ndarray
    util_sqs: np.ndarray
    players: np.ndarray
    edge_start: np.ndarray
    edge_count: np.ndarray
    n_touched: np.ndarray
    e_child: np.ndarray
    e_move: np.ndarray
    e_prior: np.ndarray
    root_prior: np.ndarray


@njit(cache=True, inline="always", _nrt=False)
def game_rows(t, i):
    return GameRows(
        t.state[i],
        t.weight[i],
        t.w_sum[i],
        t.n_inflight[i],
        t.util_sum[i],
        t.util_sq_sum[i],
        t.pla[i],
        t.edge_start[i],
        t.edge_count[i],
        t.n_touched[i],
        t.e_child[i],
        t.e_move[i],
        t.e_prior[i],
        t.root_prior[i],
    )


@njit(cache=True, _nrt=False)
def descend(t, i, path, pmove):
    """Walk from the root to a node to evaluate, taking at each node the edge the selection rule
    (:mod:`client.search.selection`) picks, and allocating the node when the walk leaves the tree.
    path gets the nodes, pmove the move into each. Returns (path length, DESCEND_*)."""
    rows = game_rows(t, i)
    params = t.params[i]
    depth_cap = path.shape[0]
    node = 0
    path[0] = 0
    plen = 1
    while True:
        st = rows.state[node]
        if st == TERMINAL:
            backup(t, i, path, plen, False)
            return plen, DESCEND_TERMINAL
        if st == PENDING:
            return plen, DESCEND_COLLISION if rows.inflights[node] > 0 else DESCEND_LEAF
        if rows.edge_count[node] == 0 or plen >= depth_cap:
            t.status[i].full = True
            return plen, DESCEND_FULL
        if not params.gumbel:
            best = puct_edge(rows, params, node)
        elif node == 0:
            best = _gumbel_root(t, i, rows, params)
        else:
            best = gumbel_edge(rows, params, node, node_own_utility(t, i, node))
        c = rows.e_child[best]
        pmove[plen] = rows.e_move[best]
        if c < 0:
            c = new_child(t, i, node, best)
            if c < 0:
                return plen, DESCEND_FULL
            path[plen] = c
            return plen + 1, DESCEND_LEAF
        path[plen] = c
        plen += 1
        node = c


@njit(cache=True, _nrt=False)
def _gumbel_root(t, i, rows, params):
    """The edge the Gumbel root rule picks (:func:`client.search.selection.gumbel_root_choice`),
    moved to the front of the untouched edges when it is untouched, where :func:`new_child` takes
    it."""
    start = rows.edge_start[0]
    k = gumbel_root_choice(rows, params, t.n_visits[i], node_own_utility(t, i, 0), t.root_gumbel[i], t.scratch[i])
    e = start + k
    first = start + rows.n_touched[0]
    if rows.e_child[e] < 0 and e != first:
        _swap_edges(t, i, first, e, start)
        e = first
    return e


# --- the root ----------------------------------------------------------------------------------------
@njit(cache=True)
def prepare_root(t, i):
    """Start a search on an evaluated root: centre the score utility on the root's predicted score,
    recompute a reused tree's utilities, and derive the root's priors (temperature, then noise)."""
    t.status[i].x0 = t.own[i, 0, OWN_SCORE]
    if t.n_visits[i, 0] > 1:
        recompute_utilities(t, i)
    start = t.edge_start[i, 0]
    n = t.edge_count[i, 0]
    probs = t.scratch[i, 0]
    for k in range(n):
        probs[k] = t.e_prior[i, start + k]
    if t.params[i].gumbel:  # it explores by its draws, in place of temperature and noise
        for k in range(n):
            t.root_gumbel[i, k] = gumbel_draw(t.rng[i]) if t.params[i].root_noise else 0.0
    else:
        apply_temperature(probs, n, t.params[i].root_temperature)
        if t.params[i].root_noise and n > 0:
            add_noise(
                probs,
                n,
                t.params[i].noise_weight,
                t.params[i].noise_total_concentration,
                t.params[i].noise_shaped,
                t.rng[i],
                t.scratch[i, 1],
            )
    for k in range(n):
        t.root_prior[i, k] = probs[k]
    t.status[i].ready = True
    _promote_best(t, i, 0, True)


@njit(cache=True)
def advance_root(t, i, move, keep):
    """Make the child reached by move the new root, keeping its subtree when keep is set and the
    child was evaluated; otherwise start an empty tree. Returns True if a subtree was kept."""
    child = -1
    if t.state[i, 0] == EXPANDED:
        start = t.edge_start[i, 0]
        for e in range(start, start + t.edge_count[i, 0]):
            if t.e_move[i, e] == move:
                child = t.e_child[i, e]
                break
    pla = 3 - t.pla[i, 0]
    if not keep or child < 0 or t.state[i, child] != EXPANDED or t.n_inflight[i, 0] != 0:
        reset_tree(t, i, pla)
        return False
    _compact(t, i, child)
    t.status[i].ready = False
    return True


@njit(cache=True)
def _compact(t, i, new_root):
    """Keep only new_root's subtree, renumbered from 0 in the old order (so parents still come
    before children), with its edges packed to the front of the pool."""
    n = t.status[i].nodes
    remap = np.full(n, -1, np.int32)
    remap[new_root] = 0
    kept = 1
    for k in range(new_root + 1, n):
        p = t.parent[i, k]
        if p >= 0 and remap[p] >= 0:
            remap[k] = kept
            kept += 1
    keep_buckets(t, i, remap >= 0, t.params[i].subtree_value_bias_free_prop)
    # Nodes move to lower or equal indices, in increasing order: nothing is overwritten unread.
    for k in range(new_root, n):
        d = remap[k]
        if d < 0:
            continue
        t.n_visits[i, d] = t.n_visits[i, k]
        t.n_inflight[i, d] = t.n_inflight[i, k]
        t.weight[i, d] = t.weight[i, k]
        t.w_sum[i, d] = t.w_sum[i, k]
        t.w_sq_sum[i, d] = t.w_sq_sum[i, k]
        t.util_sum[i, d] = t.util_sum[i, k]
        t.util_sq_sum[i, d] = t.util_sq_sum[i, k]
        t.wl_sum[i, d] = t.wl_sum[i, k]
        t.score_sum[i, d] = t.score_sum[i, k]
        t.sq_sum[i, d] = t.sq_sum[i, k]
        t.lead_sum[i, d] = t.lead_sum[i, k]
        t.own[i, d, :] = t.own[i, k, :]
        t.state[i, d] = t.state[i, k]
        t.pla[i, d] = t.pla[i, k]
        t.parent[i, d] = -1 if k == new_root else remap[t.parent[i, k]]
        t.edge_start[i, d] = t.edge_start[i, k]
        t.edge_count[i, d] = t.edge_count[i, k]
        t.n_touched[i, d] = t.n_touched[i, k]
        t.ladder[i, d, :] = t.ladder[i, k, :]
        t.bias[i, d] = t.bias[i, k]
        t.bias_slot[i, d] = t.bias_slot[i, k]
        t.bias_delta[i, d] = t.bias_delta[i, k]
        t.bias_weight[i, d] = t.bias_weight[i, k]
    t.status[i].nodes = kept
    # Edges: pack the kept nodes' ranges in order of their old start, so moves only go down.
    owners = np.empty(kept, np.int64)
    starts = np.empty(kept, np.int64)
    m = 0
    for d in range(kept):
        if t.state[i, d] == EXPANDED:
            owners[m] = d
            starts[m] = t.edge_start[i, d]
            m += 1
    order = np.argsort(starts[:m])
    cursor = 0
    for j in range(m):
        d = owners[order[j]]
        s = t.edge_start[i, d]
        c = t.edge_count[i, d]
        for k in range(c):
            t.e_move[i, cursor + k] = t.e_move[i, s + k]
            t.e_prior[i, cursor + k] = t.e_prior[i, s + k]
            ch = t.e_child[i, s + k]
            t.e_child[i, cursor + k] = -1 if ch < 0 else remap[ch]
        t.edge_start[i, d] = cursor
        cursor += c
    t.status[i].edges = cursor


@njit(cache=True, _nrt=False)
def root_children(
    t,
    i,
    out_move,
    out_visits,
    out_weight,
    out_weight_sq,
    out_prior,
    out_raw_prior,
    out_util,
    out_wl,
    out_score,
    out_lead,
    out_sq,
    out_util_sq,
):
    """The root's edges (root priors, and the raw network priors); children's visits, their weights'
    sums and statistics, weighted averages from the root player's point of view (score and lead
    stay white's). Returns the count."""
    start = t.edge_start[i, 0]
    n = t.edge_count[i, 0]
    sign = 1.0 if t.pla[i, 0] == WHITE else -1.0
    for k in range(n):
        e = start + k
        out_move[k] = t.e_move[i, e]
        out_prior[k] = t.root_prior[i, k] if t.status[i].ready else t.e_prior[i, e]
        out_raw_prior[k] = t.e_prior[i, e]
        c = t.e_child[i, e]
        v = 0 if c < 0 else t.n_visits[i, c]
        out_visits[k] = v
        if v > 0:
            w = t.w_sum[i, c]
            out_weight[k] = w
            out_weight_sq[k] = t.w_sq_sum[i, c]
            out_util[k] = sign * t.util_sum[i, c] / w
            out_wl[k] = sign * t.wl_sum[i, c] / w
            out_score[k] = t.score_sum[i, c] / w
            out_lead[k] = t.lead_sum[i, c] / w
            out_sq[k] = t.sq_sum[i, c] / w
            out_util_sq[k] = t.util_sq_sum[i, c] / w
        else:
            out_weight[k] = 0.0
            out_weight_sq[k] = 0.0
            out_util[k] = 0.0
            out_wl[k] = 0.0
            out_score[k] = 0.0
            out_lead[k] = 0.0
            out_sq[k] = 0.0
            out_util_sq[k] = 0.0
    return n


@njit(cache=True, _nrt=False)
def principal_variation(t, i, node, out):
    """The line of most weight from node (the most visited unless playouts are weighted): moves
    written to out, returns its length."""
    n = 0
    while n < out.shape[0] and t.state[i, node] == EXPANDED:
        start = t.edge_start[i, node]
        best = -1
        best_n = 0.0
        for e in range(start, start + t.n_touched[i, node]):
            c = t.e_child[i, e]
            if c >= 0 and t.w_sum[i, c] > best_n:
                best_n = t.w_sum[i, c]
                best = e
        if best < 0:
            break
        out[n] = t.e_move[i, best]
        n += 1
        node = t.e_child[i, best]
    return n
