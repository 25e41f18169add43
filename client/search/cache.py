"""The search's position cache: network evaluations by position key, shared by all games.

A direct-mapped table (one entry per slot, the newer evaluation wins) of what a node needs when it
is expanded: the move probabilities over the 19x19 grid plus pass, the values from white's side and
the position's ladder plane (the children's history planes). Self-play builds a fresh tree for every
full search, so most of the previous search's subtree is found here instead of being evaluated
again; transpositions inside one tree are found the same way.

Keys are :func:`common.encoding.features.position_key` of everything the network's inputs depend on, so
a hit gives exactly what the network would be asked. Lookups run in parallel across games; stores
run after them (``client.search.batch``), so no entry is read while it is written.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from common.encoding.features import NN_AREA, NN_LEN

# Values stored per entry (white's point of view).
V_WL = 0  # win minus loss
V_SCORE = 1  # score mean
V_SD = 2  # score standard deviation
V_LEAD = 3
V_WL_ERROR = 4  # the short-term errors' predicted standard deviations (-1: the network has no such heads)
V_SCORE_ERROR = 5
V_LEN = 6


class EvalCache(NamedTuple):
    keys: np.ndarray  # int64[S], 0 = empty
    policy: np.ndarray  # float32[S, 362]
    values: np.ndarray  # float32[S, V_LEN]
    ladder: np.ndarray  # uint8[S, 361]


def new_cache(entries: int) -> EvalCache:
    """A cache of at least one entry, rounded up to a power of two (0 entries: a one-slot cache
    that is never used)."""
    size = 1
    while size < entries:
        size *= 2
    return EvalCache(
        keys=np.zeros(size, dtype=np.int64),
        policy=np.zeros((size, NN_AREA + 1), dtype=np.float32),
        values=np.zeros((size, V_LEN), dtype=np.float32),
        ladder=np.zeros((size, NN_AREA), dtype=np.uint8),
    )


@njit(cache=True, inline="always", _nrt=False)
def stored_key(key):
    """The key as stored: 0 marks an empty slot, so a position whose key is 0 is stored as 1."""
    return key if key != 0 else np.int64(1)


@njit(cache=True, inline="always", _nrt=False)
def cache_slot(cache, key):
    return (key ^ (key >> 31)) & (cache.keys.shape[0] - 1)


@njit(cache=True, inline="always", _nrt=False)
def copy_into(dst, src):
    """dst[:] = src, written out: slice assignment between arrays needs numba's runtime, which the
    search kernels are compiled without."""
    for k in range(src.shape[0]):
        dst[k] = src[k]


@njit(cache=True, inline="always", _nrt=False)
def cache_find(cache, key):
    """The slot holding key, or -1."""
    k = stored_key(key)
    s = cache_slot(cache, k)
    return s if cache.keys[s] == k else -1


@njit(cache=True, inline="always", _nrt=False)
def copy_board_points(dst, src, x_size, y_size):
    """dst[p] = src[p] for the points p = y * 19 + x of an x_size by y_size board (and what lies
    between its rows)."""
    for k in range((y_size - 1) * NN_LEN + x_size):
        dst[k] = src[k]


@njit(cache=True, _nrt=False)
def cache_put(cache, key, policy, values, ladder, x_size, y_size):
    """Store an evaluation of a position on an x_size by y_size board (only its points are kept)."""
    k = stored_key(key)
    s = cache_slot(cache, k)
    cache.keys[s] = k
    copy_board_points(cache.policy[s], policy, x_size, y_size)
    cache.policy[s, NN_AREA] = policy[NN_AREA]
    copy_into(cache.values[s], values)
    copy_board_points(cache.ladder[s], ladder, x_size, y_size)
