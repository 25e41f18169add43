"""The lock-step pass over many games: select leaves and encode them into one batch; after the
network has run, expand and back them up.

``select_leaves`` runs in parallel over games. For each game it descends its tree by PUCT up to
``leaves`` times, each time replaying the path's moves on a copy of the game's root position (the
root's superko table gets the path's positions and is put back afterwards). A leaf that ends the
game is scored exactly and backed up at once; a leaf whose position is in the cache is expanded from
it and backed up at once; any other leaf is encoded straight into its batch slot, in the batch's
crop of the 19x19 grid and under a random symmetry, and the path takes a virtual loss. The history
ladder planes come from the ancestors' stored ladder planes, so only the leaf's own position is
read for ladders.

``apply_results`` post-processes each leaf's network output (KataGo's conventions, as
``common.nn.interpret``), expands the leaf and backs it up; ``store_results`` then writes the new
evaluations into the cache in one thread.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from client.search.cache import V_LEN, cache_find, cache_put, copy_into
from client.search.tree import (
    DESCEND_COLLISION,
    DESCEND_FULL,
    DESCEND_TERMINAL,
    EXPANDED,
    GF_DRAW_WL,
    GF_X0,
    GI_ACTIVE,
    GI_CACHE_HITS,
    GI_COLLISIONS,
    GI_FULL,
    GI_LEAVES,
    GI_NN_EVALS,
    GI_READY,
    GI_TARGET,
    GI_TERMINAL_VISITS,
    OWN_LEN,
    backup,
    descend,
    expand,
    prepare_root,
    set_terminal,
)
from common.go import gamestate as gs
from common.go.board import BOARD_LEN, M_XSIZE, M_YSIZE
from common.go.geometry import WHITE
from common.go.playout import rand_below
from common.nn.features import (
    NN_AREA,
    NUM_GLOBAL,
    NUM_SPATIAL,
    EncodeScratch,
    fill_row_at,
    new_scratch,
    position_key,
    symmetry_index,
)
from common.nn.interpret import (
    R_LEAD,
    R_LEN,
    R_LOSS,
    R_SCORE_MEAN,
    R_SCORE_MEAN_SQ,
    R_WIN,
    interpret_values,
    policy_softmax,
)


class Roots(NamedTuple):
    """The games' current positions, stacked (each game's arrays are a row)."""

    boards: np.ndarray  # int32[G, BOARD_LEN]
    states: np.ndarray  # int64[G, G_LEN]
    hists: np.ndarray  # int64[G, H + 1]
    moves: np.ndarray  # int32[G, H, 2]
    tables: np.ndarray  # int64[G, T]
    prev_ladder: np.ndarray  # uint8[G, 2, 361]: ladder planes one and two turns before the root


class Work(NamedTuple):
    """Scratch of the pass, per game."""

    boards: np.ndarray  # int32[G, BOARD_LEN]
    states: np.ndarray  # int64[G, G_LEN]
    ladder_buf: np.ndarray  # int64[G, BUF_LEN]: EncodeScratch of each game, stacked
    ladder_work: np.ndarray  # int64[G, 4]
    area_ws: np.ndarray  # int32[G, WS_LEN]
    owner: np.ndarray  # int8[G, ARR]
    planes: np.ndarray  # float32[G, 18, 361]
    path: np.ndarray  # int32[G, L, D]: node indices from the root
    path_move: np.ndarray  # int16[G, L, D]: the move into each node
    path_len: np.ndarray  # int32[G, L]
    sym_map: np.ndarray  # int64[G, 361]
    vals: np.ndarray  # float64[G, R_LEN]: a leaf's network values, interpreted
    own: np.ndarray  # float32[G, OWN_LEN]: the same as the leaf's own evaluation


class Batch(NamedTuple):
    """The network's inputs and the leaves' bookkeeping; slot i * L + j is game i's j-th leaf."""

    spatial: np.ndarray  # float32[G * L * 22 * 361], viewed as [G * L, 22, W * W] for a crop of W
    glob: np.ndarray  # float32[G * L, 19]
    legal: np.ndarray  # uint8[G * L, 362], board layout (y * 19 + x, pass last)
    index: np.ndarray  # int32[G * L, 362]: board position -> network output index (crop, symmetry)
    keys: np.ndarray  # int64[G * L]
    probs: np.ndarray  # float32[G * L, 362]: the leaves' priors once evaluated
    values: np.ndarray  # float32[G * L, V_LEN]
    rows: np.ndarray  # int64[G * L]: the slot's row in the network's output


def new_roots(games: int, history: int, table_size: int) -> Roots:
    return Roots(
        boards=np.zeros((games, BOARD_LEN), np.int32),
        states=np.zeros((games, gs.G_LEN), np.int64),
        hists=np.zeros((games, history + 1), np.int64),
        moves=np.zeros((games, history, 2), np.int32),
        tables=np.zeros((games, table_size), np.int64),
        prev_ladder=np.zeros((games, 2, NN_AREA), np.uint8),
    )


def new_work(games: int, leaves: int, depth: int) -> Work:
    scratch = [new_scratch() for _ in range(games)]
    return Work(
        boards=np.zeros((games, BOARD_LEN), np.int32),
        states=np.zeros((games, gs.G_LEN), np.int64),
        ladder_buf=np.stack([s.ladder_buf for s in scratch]),
        ladder_work=np.stack([s.ladder_work for s in scratch]),
        area_ws=np.stack([s.area_ws for s in scratch]),
        owner=np.stack([s.owner for s in scratch]),
        planes=np.stack([s.planes for s in scratch]),
        path=np.zeros((games, leaves, depth), np.int32),
        path_move=np.zeros((games, leaves, depth), np.int16),
        path_len=np.zeros((games, leaves), np.int32),
        sym_map=np.zeros((games, NN_AREA), np.int64),
        vals=np.zeros((games, R_LEN), np.float64),
        own=np.zeros((games, OWN_LEN), np.float32),
    )


def new_batch(games: int, leaves: int) -> Batch:
    n = games * leaves
    return Batch(
        spatial=np.zeros(n * NUM_SPATIAL * NN_AREA, np.float32),
        glob=np.zeros((n, NUM_GLOBAL), np.float32),
        legal=np.zeros((n, NN_AREA + 1), np.uint8),
        index=np.zeros((n, NN_AREA + 1), np.int32),
        keys=np.zeros(n, np.int64),
        probs=np.zeros((n, NN_AREA + 1), np.float32),
        values=np.zeros((n, V_LEN), np.float32),
        rows=np.zeros(n, np.int64),
    )


def spatial_view(batch: Batch, width: int) -> np.ndarray:
    """The batch's spatial inputs as [slots, 22, width * width]."""
    n = batch.glob.shape[0]
    return batch.spatial[: n * NUM_SPATIAL * width * width].reshape(n, NUM_SPATIAL, width * width)


@njit(cache=True, inline="always", _nrt=False)
def game_scratch(w, i):
    return EncodeScratch(w.ladder_buf[i], w.ladder_work[i], w.area_ws[i], w.owner[i], w.planes[i])


# --- selection ---------------------------------------------------------------------------------------
@njit(cache=True, inline="always", _nrt=False)
def _exact_values(g, draw_wl):
    """White's (win-loss, score) of a finished game."""
    if g[gs.G_NO_RESULT] != 0:
        return 0.0, 0.0
    score = 0.5 * g[gs.G_SCORE2]
    if g[gs.G_WINNER] == WHITE:
        return 1.0, score
    if g[gs.G_WINNER] == 0:
        return draw_wl, score
    return -1.0, score


@njit(cache=True, inline="always", _nrt=False)
def _ancestor_ladder(t, r, i, path, plen, back):
    """The ladder plane of the position `back` turns before the leaf path[plen - 1]."""
    d = plen - 1 - back
    if d >= 0:
        return t.ladder[i, path[d]]
    return r.prev_ladder[i, -d - 1]


@njit(cache=True, _nrt=False)
def _select_game(t, r, w, b, spatial, cache, i, leaves, width, use_cache, random_sym):
    count = 0
    gi = t.gi
    if gi[i, GI_ACTIVE] == 0:
        gi[i, GI_LEAVES] = 0
        return
    hist = r.hists[i]
    moves = r.moves[i]
    table = r.tables[i]
    root_g = r.states[i]
    wg = w.states[i]
    wb = w.boards[i]
    draw_wl = t.gf[i, GF_DRAW_WL]
    draw_equiv = 0.5 * (draw_wl + 1.0)
    while count < leaves and gi[i, GI_FULL] == 0:
        if t.n_visits[i, 0] + t.n_inflight[i, 0] >= gi[i, GI_TARGET]:
            break
        if t.state[i, 0] == EXPANDED and gi[i, GI_READY] == 0:
            prepare_root(t, i)
        plen, kind = descend(t, i, w.path[i, count], w.path_move[i, count])
        if kind == DESCEND_TERMINAL:
            gi[i, GI_TERMINAL_VISITS] += 1
            continue
        if kind == DESCEND_COLLISION:
            gi[i, GI_COLLISIONS] += 1
            break
        if kind == DESCEND_FULL:
            break
        path = w.path[i, count]
        leaf = path[plen - 1]
        # Replay the path on a copy of the root position.
        copy_into(wb, r.boards[i])
        copy_into(wg, root_g)
        pmove = w.path_move[i, count]
        for d in range(1, plen):
            gs.game_play(wg, wb, hist, moves, table, pmove[d], wg[gs.G_TO_MOVE])
        if wg[gs.G_OVER] != 0:
            gs.game_finish_ws(wg, wb, w.owner[i], w.area_ws[i])
            wl, score = _exact_values(wg, draw_wl)
            set_terminal(t, i, leaf, wl, score)
            backup(t, i, path, plen, False)
            gi[i, GI_TERMINAL_VISITS] += 1
            gs.table_restore(root_g, hist, table, wg[gs.G_NMOVES], wg[gs.G_HSTART])
            continue
        pla = wg[gs.G_TO_MOVE]
        key = position_key(wg, wb, hist, moves, pla, 0, 0)
        hit = cache_find(cache, key) if use_cache else -1
        if hit >= 0:
            copy_into(t.ladder[i, leaf], cache.ladder[hit])
            if expand(t, i, leaf, cache.policy[hit], wb[M_XSIZE], wb[M_YSIZE], cache.values[hit]):
                if leaf == 0 and gi[i, GI_READY] == 0:
                    t.gf[i, GF_X0] = cache.values[hit, 1]
                backup(t, i, path, plen, False)
                gi[i, GI_CACHE_HITS] += 1
            gs.table_restore(root_g, hist, table, wg[gs.G_NMOVES], wg[gs.G_HSTART])
            continue
        slot = i * leaves + count
        x_size = wb[M_XSIZE]
        y_size = wb[M_YSIZE]
        sym = rand_below(t.rng[i], 8) if random_sym else 0
        index = b.index[slot]
        symmetry_index(x_size, y_size, sym, width, w.sym_map[i], index)
        lad1 = _ancestor_ladder(t, r, i, path, plen, 1)
        lad2 = _ancestor_ladder(t, r, i, path, plen, 2)
        fill_row_at(wg, wb, hist, moves, table, pla, draw_equiv, 0.0, lad1, lad2, index, spatial[slot],
                    b.glob[slot], b.legal[slot], t.ladder[i, leaf], game_scratch(w, i))
        gs.table_restore(root_g, hist, table, wg[gs.G_NMOVES], wg[gs.G_HSTART])
        b.keys[slot] = key
        for d in range(plen):
            t.n_inflight[i, path[d]] += 1
        w.path_len[i, count] = plen
        count += 1
    gi[i, GI_LEAVES] = count


@njit(cache=True, nogil=True, _nrt=False)
def select_leaves(t, r, w, b, spatial, cache, leaves, width, use_cache, random_sym, first, stop):
    """Select up to `leaves` leaves for each active game of first..stop-1 and encode them (spatial:
    [G * L, 22, W * W])."""
    for i in range(first, stop):
        _select_game(t, r, w, b, spatial, cache, i, leaves, width, use_cache, random_sym)


@njit(cache=True, parallel=True)
def select_leaves_ranges(t, r, w, b, spatial, cache, leaves, width, use_cache, random_sym, bounds):
    """select_leaves over the game ranges bounds[k]..bounds[k + 1], one per thread."""
    for k in prange(bounds.shape[0] - 1):
        select_leaves(t, r, w, b, spatial, cache, leaves, width, use_cache, random_sym, bounds[k], bounds[k + 1])


# --- results -----------------------------------------------------------------------------------------
@njit(cache=True, _nrt=False)
def _apply_game(t, r, w, b, policy, value, misc, i, leaves):
    vals = w.vals[i]
    own = w.own[i]
    no_result_allowed = r.states[i, gs.G_KO_RULE] == gs.KO_SIMPLE
    x_size = r.boards[i, M_XSIZE]
    y_size = r.boards[i, M_YSIZE]
    for j in range(t.gi[i, GI_LEAVES]):
        slot = i * leaves + j
        row = b.rows[slot]
        plen = w.path_len[i, j]
        path = w.path[i, j]
        leaf = path[plen - 1]
        probs = b.probs[slot]
        policy_softmax(policy[row], b.index[slot], b.legal[slot], NN_AREA + 1, probs)
        interpret_values(value[row], misc[row], no_result_allowed, vals)
        sign = 1.0 if t.pla[i, leaf] == WHITE else -1.0
        mean = vals[R_SCORE_MEAN]
        own[0] = sign * (vals[R_WIN] - vals[R_LOSS])
        own[1] = sign * mean
        own[2] = math.sqrt(max(0.0, vals[R_SCORE_MEAN_SQ] - mean * mean))
        own[3] = sign * vals[R_LEAD]
        for k in range(V_LEN):
            b.values[slot, k] = own[k]
        if leaf == 0 and t.gi[i, GI_READY] == 0:
            t.gf[i, GF_X0] = own[1]
        if expand(t, i, leaf, probs, x_size, y_size, own):
            backup(t, i, path, plen, True)
        else:
            for d in range(plen):
                t.n_inflight[i, path[d]] -= 1
        t.gi[i, GI_NN_EVALS] += 1


@njit(cache=True, nogil=True, _nrt=False)
def apply_results(t, r, w, b, policy, value, misc, leaves, first, stop):
    """Expand and back up the leaves of games first..stop-1 from the network's outputs (row
    b.rows[slot] of policy [n, W * W + 1] logits, value [n, 3] logits and misc [n, >= 3])."""
    for i in range(first, stop):
        _apply_game(t, r, w, b, policy, value, misc, i, leaves)


@njit(cache=True, _nrt=False)
def store_results(t, w, b, cache, leaves):
    """Write this step's evaluations into the cache (one thread: no entry is read meanwhile)."""
    for i in range(t.gi.shape[0]):
        for j in range(t.gi[i, GI_LEAVES]):
            slot = i * leaves + j
            leaf = w.path[i, j, w.path_len[i, j] - 1]
            cache_put(cache, b.keys[slot], b.probs[slot], b.values[slot], t.ladder[i, leaf])


@njit(cache=True, parallel=True)
def apply_results_ranges(t, r, w, b, policy, value, misc, leaves, bounds):
    """apply_results over the game ranges bounds[k]..bounds[k + 1], one per thread."""
    for k in prange(bounds.shape[0] - 1):
        apply_results(t, r, w, b, policy, value, misc, leaves, bounds[k], bounds[k + 1])
