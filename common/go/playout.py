"""The random player's policy and whole random games, as numba kernels.

The policy picks uniformly among the legal moves that do not fill one of the player's own
one-point eyes and passes when none is left, so random games end. It draws candidates from the
board's empty-point list, swapping rejected ones out of the way; the list's order changes, the
position does not.

Random numbers come from a xorshift64* generator whose state (a uint64[1] array from ``new_rng``)
the caller owns, so every player is reproducible on its own and draws cost a few nanoseconds.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from common.go.board import COLOR, ELIST, EPOS, M_NEMPTY
from common.go.gamestate import (
    END_MOVE_LIMIT,
    G_NMOVES,
    G_OVER,
    G_TO_MOVE,
    end_without_result,
    game_finish,
    game_play,
    is_legal,
)
from common.go.geometry import ADJ, DIAG, PASS, WALL

_MULT = np.uint64(2685821657736338717)


def new_rng(seed: int) -> np.ndarray:
    """State of a generator for the kernels below, from any integer seed."""
    x = (int(seed) * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) % 2**64
    return np.array([x or 1], dtype=np.uint64)


@njit(cache=True, inline="always")
def rand_below(rng, n):
    """Uniform integer in [0, n) for 0 < n < 2**32 (xorshift64*, Lemire's reduction)."""
    x = rng[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    rng[0] = x
    r = (x * _MULT) >> np.uint64(32)
    return np.int64((r * np.uint64(n)) >> np.uint64(32))


@njit(cache=True, inline="always")
def rand_unit(rng):
    """Uniform float in [0, 1) with 53 random bits."""
    x = rng[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    rng[0] = x
    return np.float64((x * _MULT) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True, inline="always")
def is_own_eye(b, loc, pla):
    """A one-point eye of pla: every neighbour is pla's stone or the edge, and the diagonals hold
    at most one opponent stone in the centre, none on the edge."""
    for d in range(4):
        c = b[COLOR + loc + ADJ[d]]
        if c != pla and c != WALL:
            return False
    opp = 3 - pla
    bad = 0
    edge = False
    for d in range(4):
        c = b[COLOR + loc + DIAG[d]]
        if c == opp:
            bad += 1
        elif c == WALL:
            edge = True
    if edge:
        bad += 1
    return bad < 2


@njit(cache=True, inline="always")
def random_move(g, b, table, pla, rng):
    """A uniformly random legal move for pla that fills none of its own eyes, or PASS."""
    m = b[M_NEMPTY]
    while m > 0:
        i = rand_below(rng, m)
        loc = b[ELIST + i]
        if not is_own_eye(b, loc, pla) and is_legal(g, b, table, loc, pla):
            return loc
        m -= 1
        last = b[ELIST + m]
        b[ELIST + i] = last
        b[EPOS + last] = i
        b[ELIST + m] = loc
        b[EPOS + loc] = m
    return PASS


@njit(cache=True)
def play_random_game(g, b, hist, moves, table, max_moves, rng):
    """Play random moves until the game ends; past max_moves it ends without result.

    Returns the number of turns played. The game stops at the arrays' capacity too.
    """
    max_moves = min(max_moves, moves.shape[0], hist.shape[0] - 1)
    while g[G_OVER] == 0:
        if g[G_NMOVES] >= max_moves:
            end_without_result(g, END_MOVE_LIMIT)
            break
        pla = g[G_TO_MOVE]
        loc = random_move(g, b, table, pla, rng)
        game_play(g, b, hist, moves, table, loc, pla)
    game_finish(g, b)
    return g[G_NMOVES]
