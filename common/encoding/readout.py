"""A row of the network's outputs read back for the search, in numba: the values from the side
evaluated for and the policy over the legal moves, as :func:`common.nn.interpret.interpret` reads
them for a network with default post-processing (model version 8). No torch here: the search reads
numpy arrays, whatever produced them."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from common.architecture import (
    LEAD_MULTIPLIER,
    MISC_LEAD,
    MISC_SCORE_MEAN,
    MISC_SCORE_STDEV,
    MISC_SHORTTERM_SCORE_ERROR,
    MISC_SHORTTERM_VALUE_ERROR,
    SCORE_MEAN_MULTIPLIER,
    SCORE_STDEV_MULTIPLIER,
    SHORTTERM_MISC_VALUES,
    SHORTTERM_SCORE_ERROR_MULTIPLIER,
    SHORTTERM_VALUE_ERROR_MULTIPLIER,
)
from common.encoding.features import NN_AREA, NN_LEN

# interpret_values: the values of one row, from the side evaluated for.
R_WIN = 0
R_LOSS = 1
R_NO_RESULT = 2
R_SCORE_MEAN = 3
R_SCORE_MEAN_SQ = 4
R_SCORE_STDEV = 5
R_LEAD = 6
R_SHORTTERM_WL_ERROR = 7  # the short-term errors' predicted standard deviations (-1: no such heads)
R_SHORTTERM_SCORE_ERROR = 8
R_LEN = 9


@njit(cache=True, _nrt=False)
def interpret_values(value_logits, misc, no_result_allowed, out):
    """The post-processing of :func:`common.nn.interpret.interpret` for one row's values, for a
    network with default post-processing parameters (model version 8): out[R_*] from the side
    evaluated for, and the short-term errors when the network has their heads (misc_values >= 14,
    version 10's decoding)."""
    a = np.float64(value_logits[0])
    b = np.float64(value_logits[1])
    m = max(a, b)
    if no_result_allowed:
        c = np.float64(value_logits[2])
        m = max(m, c)
        ec = math.exp(c - m)
    else:
        ec = 0.0
    ea = math.exp(a - m)
    eb = math.exp(b - m)
    total = ea + eb + ec
    win = ea / total
    loss = eb / total
    no_result = ec / total
    has_result = 1.0 - no_result
    mean = np.float64(misc[MISC_SCORE_MEAN]) * SCORE_MEAN_MULTIPLIER
    stdev = _softplus(np.float64(misc[MISC_SCORE_STDEV])) * SCORE_STDEV_MULTIPLIER
    out[R_WIN] = win
    out[R_LOSS] = loss
    out[R_NO_RESULT] = no_result
    out[R_SCORE_MEAN_SQ] = (mean * mean + stdev * stdev) * has_result
    out[R_SCORE_MEAN] = mean * has_result
    out[R_SCORE_STDEV] = stdev
    out[R_LEAD] = np.float64(misc[MISC_LEAD]) * LEAD_MULTIPLIER * has_result
    if misc.shape[0] >= SHORTTERM_MISC_VALUES:
        out[R_SHORTTERM_WL_ERROR] = math.sqrt(
            _softplus(np.float64(misc[MISC_SHORTTERM_VALUE_ERROR])) * SHORTTERM_VALUE_ERROR_MULTIPLIER
        )
        out[R_SHORTTERM_SCORE_ERROR] = math.sqrt(
            _softplus(np.float64(misc[MISC_SHORTTERM_SCORE_ERROR])) * SHORTTERM_SCORE_ERROR_MULTIPLIER
        )
    else:
        out[R_SHORTTERM_WL_ERROR] = -1.0
        out[R_SHORTTERM_SCORE_ERROR] = -1.0


@njit(cache=True, inline="always", _nrt=False)
def _softplus(x):
    return x + math.log1p(math.exp(-x)) if x > 0.0 else math.log1p(math.exp(x))


@njit(cache=True, _nrt=False)
def policy_softmax(logits, index, legal, x_size, y_size, out):
    """Over the board's points p = y * 19 + x and pass (p = 361): out[p] = softmax of logits[index[p]]
    where legal[p], else 0 (float32, as :func:`common.nn.interpret.interpret` with temperature 1).
    Entries of out off the board are left as they are. Returns the number of legal entries."""
    m = -np.inf
    count = 0
    for y in range(y_size + 1):
        last = y == y_size
        for x in range(1 if last else x_size):
            k = NN_AREA if last else y * NN_LEN + x
            if legal[k]:
                count += 1
                v = logits[index[k]]
                if v > m:
                    m = v
    total = np.float32(0.0)
    for y in range(y_size + 1):
        last = y == y_size
        for x in range(1 if last else x_size):
            k = NN_AREA if last else y * NN_LEN + x
            if legal[k]:
                e = np.float32(math.exp(logits[index[k]] - m))
                out[k] = e
                total += e
            else:
                out[k] = 0.0
    if total > 0:
        for y in range(y_size + 1):
            last = y == y_size
            for x in range(1 if last else x_size):
                k = NN_AREA if last else y * NN_LEN + x
                out[k] /= total
    return count
