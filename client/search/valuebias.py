"""Subtree value bias correction (KataGo's methods page, "Subtree Value Bias Correction").

Every node whose move is not a pass and follows another move belongs to a bucket, keyed by the
player who moved, where they moved, the move before it, the 5x5 pattern around the move on the
board it was played on (black, white, empty, off the board; which stones there were in atari) and
the ko ban that board had. A bucket keeps the weighted average, over its nodes with children, of how
far the network's utility of the node lies from the average utility of its subtree:

    ObsBias(B) = sum_n (ChildrenUtility(n) - NNUtility(n)) * ChildVisits(n)^alpha / sum_n ChildVisits(n)^alpha

and a node's own utility, the term it adds to its averages, is the network's corrected by its
bucket: NodeUtility(n) = NNUtility(n) + lambda * ObsBias(B). (The page writes the error with the
other sign, ObsError = NN - children, and subtracts it; this is the same.) Each backup updates its
path's nodes' contributions to their buckets and retrieves their buckets' bias again, and the
change in a node's utility is added to the sums of it and every node above it (its sums include its
own utility once), so the tree's sums stay exact averages of the current node utilities of the path.

The buckets of a game are one open-addressing hash table in the tree's arrays (:class:`Trees
<client.search.tree.Trees>`: ``bucket_key`` 0 for a free slot, ``bucket_delta`` and
``bucket_weight`` the two sums); a node keeps its slot and its last contribution. When a move
discards part of the tree, its nodes take back all but 1 - free_prop of their contributions (KataGo
keeps the rest as a prior for the next search), and buckets no kept node refers to are dropped.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from common.go.board import COLOR, M_KO, M_XSIZE, M_YSIZE, chain_libs
from common.go.geometry import ARR, BLACK, NO_LOC, STRIDE, WHITE

# Fixed seed: the keys are the same in every process.
_rng = np.random.Generator(np.random.PCG64(0x5B1A5))
Z_CELL = _rng.integers(-(2**63), 2**63 - 1, size=(3, 25), dtype=np.int64)  # colour x cell of the 5x5
Z_ATARI = _rng.integers(-(2**63), 2**63 - 1, size=25, dtype=np.int64)
Z_PLAYER = _rng.integers(-(2**63), 2**63 - 1, size=3, dtype=np.int64)
Z_LAST = _rng.integers(-(2**63), 2**63 - 1, size=ARR, dtype=np.int64)
Z_PREV = _rng.integers(-(2**63), 2**63 - 1, size=ARR, dtype=np.int64)
Z_KO = _rng.integers(-(2**63), 2**63 - 1, size=ARR, dtype=np.int64)
del _rng

MIN_WEIGHT = 0.001  # a bucket lighter than this gives no correction


def table_size(nodes: int) -> int:
    """Slots of a game's bucket table for trees of this many nodes: a power of two at least twice
    the nodes (each node adds one bucket at most), so probes stay short."""
    size = 1
    while size < 2 * nodes:
        size *= 2
    return size


@njit(cache=True, _nrt=False)
def bucket_key(b, loc, prev, pla):
    """The bucket of a move of pla at loc (not a pass) on board b, the move before it at prev (a
    location or PASS): never 0."""
    h = Z_PLAYER[pla] ^ Z_LAST[loc] ^ Z_PREV[prev]
    x = loc % STRIDE - 1
    y = loc // STRIDE - 1
    x_size = b[M_XSIZE]
    y_size = b[M_YSIZE]
    for dy in range(-2, 3):
        if y + dy < 0 or y + dy >= y_size:
            continue
        for dx in range(-2, 3):
            if x + dx < 0 or x + dx >= x_size:
                continue
            at = loc + dy * STRIDE + dx
            cell = (dy + 2) * 5 + dx + 2
            c = b[COLOR + at]
            h ^= Z_CELL[c, cell]
            if (c == BLACK or c == WHITE) and chain_libs(b, at) == 1:
                h ^= Z_ATARI[cell]
    if b[M_KO] != NO_LOC:
        h ^= Z_KO[b[M_KO]]
    return h | 1


@njit(cache=True, inline="always", _nrt=False)
def _home(key, mask):
    return (key ^ (key >> 31)) & mask


@njit(cache=True, _nrt=False)
def bucket_slot(t, i, key):
    """The slot of game i's bucket `key`, added (empty) if new; -1 if the table is full."""
    keys = t.bucket_key[i]
    mask = keys.shape[0] - 1
    s = _home(key, mask)
    for _ in range(keys.shape[0]):
        k = keys[s]
        if k == key:
            return s
        if k == 0:
            keys[s] = key
            t.bucket_delta[i, s] = 0.0
            t.bucket_weight[i, s] = 0.0
            t.status[i].buckets += 1
            return s
        s = (s + 1) & mask
    return -1


@njit(cache=True, inline="always", _nrt=False)
def bucket_bias(t, i, slot, factor):
    """lambda * ObsBias of game i's bucket in slot (0 while the bucket is too light)."""
    w = t.bucket_weight[i, slot]
    if w > MIN_WEIGHT:
        return factor * t.bucket_delta[i, slot] / w
    return 0.0


@njit(cache=True, inline="always", _nrt=False)
def observe(t, i, node, nn_utility, children_utility, child_visits, exponent):
    """Replace node's contribution to its bucket by the one of its subtree as it stands."""
    slot = t.bias_slot[i, node]
    w = child_visits**exponent
    delta = (children_utility - nn_utility) * w
    t.bucket_delta[i, slot] += delta - t.bias_delta[i, node]
    t.bucket_weight[i, slot] += w - t.bias_weight[i, node]
    t.bias_delta[i, node] = delta
    t.bias_weight[i, node] = w


@njit(cache=True, _nrt=False)
def clear_buckets(t, i):
    if t.status[i].buckets > 0:
        t.bucket_key[i, :] = 0
        t.status[i].buckets = 0


@njit(cache=True)
def keep_buckets(t, i, kept, free_prop):
    """After a move kept the nodes with kept[node] set (old numbering, before the kept nodes
    move): the others take back free_prop of their contributions, and the table is rebuilt with
    only the buckets of kept nodes, whose slots are renumbered."""
    n = kept.shape[0]
    if t.status[i].buckets == 0:
        return
    for k in range(n):
        s = t.bias_slot[i, k]
        if s >= 0 and not kept[k]:
            t.bucket_delta[i, s] -= free_prop * t.bias_delta[i, k]
            t.bucket_weight[i, s] -= free_prop * t.bias_weight[i, k]
    old_key = t.bucket_key[i].copy()
    old_delta = t.bucket_delta[i].copy()
    old_weight = t.bucket_weight[i].copy()
    moved = np.full(old_key.shape[0], -1, np.int64)
    t.bucket_key[i, :] = 0
    t.status[i].buckets = 0
    for k in range(n):
        s = t.bias_slot[i, k]
        if s < 0 or not kept[k]:
            continue
        if moved[s] < 0:
            d = bucket_slot(t, i, old_key[s])
            t.bucket_delta[i, d] = old_delta[s]
            t.bucket_weight[i, d] = old_weight[s]
            moved[s] = d
        t.bias_slot[i, k] = moved[s]
