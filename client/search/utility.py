"""The search's utility: win-loss plus the score utility of the paper's section 5.4.

    u_score(x) = c_score * (2/pi) * atan((x - x0) / B)

with x white's final score, x0 the score the search re-centres on (the root's predicted score at the
start of each search) and B the board length (sqrt of the area for a rectangle). The network gives a
mean and a standard deviation for x; the search uses the expectation of u_score under N(mean, sd^2),
which :func:`score_table` holds for standardized arguments, read by bilinear interpolation. Positions
whose score is known exactly (finished games) use sd = 0.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import njit

# Table of E[(2/pi) atan(m + s Z)], Z ~ N(0, 1), for m = (mean - x0) / B and s = sd / B.
TABLE_M_MAX = 40.0
TABLE_S_MAX = 10.0
TABLE_STEP = 0.05
_SMALL_S = 2.0  # below: Gauss-Hermite quadrature; above: a convolution on a fine grid
_FAR_POINTS = 2048  # quadrature points outside the table (rare)


@functools.cache
def score_table() -> np.ndarray:
    """The table (built on first use, about half a second)."""
    return _build_table()


def _build_table() -> np.ndarray:
    m = np.arange(-TABLE_M_MAX, TABLE_M_MAX + TABLE_STEP / 2, TABLE_STEP)
    s = np.arange(0.0, TABLE_S_MAX + TABLE_STEP / 2, TABLE_STEP)
    table = np.empty((m.size, s.size))
    small = s <= _SMALL_S
    # Narrow spreads: the integrand is smooth in z over the Gaussian's width.
    nodes, weights = np.polynomial.hermite_e.hermegauss(96)
    weights = weights / weights.sum()
    samples = m[:, None, None] + s[None, small, None] * nodes[None, None, :]
    table[:, small] = (np.arctan(samples) * weights).sum(axis=2)
    # Wide spreads: convolve atan with each Gaussian on the m grid (the kernel spans >= 80 steps).
    reach = TABLE_M_MAX + 8.0 * TABLE_S_MAX
    n_half = round(reach / TABLE_STEP)
    x = np.arange(-n_half, n_half + 1) * TABLE_STEP
    f = np.arctan(x)
    size = 1 << int(np.ceil(np.log2(2 * x.size)))
    f_hat = np.fft.rfft(f, size)
    for j in np.nonzero(~small)[0]:
        kernel = np.exp(-0.5 * (x / s[j]) ** 2)
        kernel /= kernel.sum()
        conv = np.fft.irfft(f_hat * np.fft.rfft(kernel, size), size)
        # conv[k] = sum_i f[i] kernel[k - i] with both centred at index n_half: m = x[k - n_half].
        centre = 2 * n_half
        offset = round(TABLE_M_MAX / TABLE_STEP)
        table[:, j] = conv[centre - offset : centre + offset + 1]
    return (2.0 / math.pi) * table


@njit(cache=True)
def expected_score_value(table, mean, sd, center, board_length):
    """E[(2/pi) atan((x - center) / board_length)] for x ~ N(mean, sd^2), in (-1, 1); table is
    :func:`score_table` (passed in, so that compiled code does not embed it)."""
    m = (mean - center) / board_length
    s = sd / board_length
    if s <= 0.0:
        return (2.0 / math.pi) * math.atan(m)
    if s > TABLE_S_MAX or m > TABLE_M_MAX or m < -TABLE_M_MAX:
        # Outside the table (rare): the midpoint rule over z in [-8, 8].
        h = 16.0 / _FAR_POINTS
        total = 0.0
        norm = 0.0
        for k in range(_FAR_POINTS):
            z = -8.0 + (k + 0.5) * h
            w = math.exp(-0.5 * z * z)
            total += w * math.atan(m + s * z)
            norm += w
        return (2.0 / math.pi) * total / norm
    fm = (m + TABLE_M_MAX) / TABLE_STEP
    fs = s / TABLE_STEP
    i = min(int(fm), table.shape[0] - 2)
    j = min(int(fs), table.shape[1] - 2)
    a = fm - i
    c = fs - j
    t = table
    return (1.0 - a) * ((1.0 - c) * t[i, j] + c * t[i, j + 1]) + a * ((1.0 - c) * t[i + 1, j] + c * t[i + 1, j + 1])
