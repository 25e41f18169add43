"""The lock-step pass over many games: select leaves and encode them into one batch; after the
network has run, expand and back them up.

A step is two numba calls, each in one thread (``select_pass``, ``apply_pass``) or over ranges of
games in parallel (the ``*_ranges`` forms, one range per thread, each thread with its own lane of
scratch memory). Both take the engine's arrays as one :class:`StepState`, which numba unboxes as one
object, and release the GIL.

``select_leaves`` descends each game's tree by PUCT (``client.search.selection``) up to ``leaves``
times; each leaf then goes through small passes: the path's moves are replayed on a copy of the
game's root position (the root's superko table gets the path's positions and is put back
afterwards); a leaf that ends the game is scored exactly and backed up at once; a leaf whose
position is in the cache is expanded from it and backed up at once; any other leaf is encoded
straight into its batch slot, in the batch's crop of the 19x19 grid and under a random symmetry,
and the path takes a virtual loss. The history ladder planes come from the
ancestors' stored ladder planes, so only the leaf's own position is read for ladders. The leaves
are then numbered into the network's rows.

``apply_results`` post-processes each leaf's network output (KataGo's conventions, as
``common.nn.interpret``), expands the leaf and backs it up; the new evaluations are then written
into the cache, each thread taking the cache slots of one residue so that no two threads write one
entry and the cache ends the same whatever the number of threads; last, ``finish_step`` stops the
searches that are done.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange
from numba.core import types
from numba.experimental import structref

from client.search.cache import (
    V_LEN,
    V_SCORE,
    V_SCORE_ERROR,
    V_WL_ERROR,
    cache_find,
    cache_put,
    cache_slot,
    copy_board_points,
    copy_into,
    stored_key,
)
from client.search.tree import (
    DESCEND_COLLISION,
    DESCEND_FULL,
    DESCEND_TERMINAL,
    EXPANDED,
    backup,
    descend,
    expand,
    prepare_root,
    search_done,
    set_terminal,
)
from client.search.valuebias import bucket_key, bucket_slot
from common.encoding.features import (
    NN_AREA,
    NUM_GLOBAL,
    NUM_SPATIAL,
    PDA_STEPS,
    EncodeScratch,
    InputRow,
    fill_row_at,
    new_scratch,
    player_pda,
    position_key,
    symmetry_index,
)
from common.encoding.readout import (
    R_LEAD,
    R_LEN,
    R_LOSS,
    R_SCORE_MEAN,
    R_SCORE_MEAN_SQ,
    R_SHORTTERM_SCORE_ERROR,
    R_SHORTTERM_WL_ERROR,
    R_WIN,
    interpret_values,
    policy_softmax,
)
from common.go import gamestate as gs
from common.go.board import BOARD_LEN, M_XSIZE, M_YSIZE, copy_board
from common.go.geometry import NO_LOC, PASS, WHITE
from common.go.playout import rand_below

OPTIMISM_STEPS = 1 << 20  # the optimistic policy's share, as the position cache's key tells shares apart


class Roots(NamedTuple):
    """The games' current positions, stacked (each game's arrays are a row)."""

    boards: np.ndarray  # int32[G, BOARD_LEN]
    states: np.ndarray  # int64[G, G_LEN]
    hists: np.ndarray  # int64[G, H + 1]
    moves: np.ndarray  # int32[G, H, MOVE_COLS]
    tables: np.ndarray  # int64[G, T]
    prev_ladder: np.ndarray  # uint8[G, 2, 361]: ladder planes one and two turns before the root


class Work(NamedTuple):
    """Scratch of the pass: per lane (each thread works on its own; one lane in one thread) and
    per game."""

    boards: np.ndarray  # int32[T, BOARD_LEN]: the position a path leads to
    states: np.ndarray  # int64[T, >= G_LEN] (each row padded to whole cache lines: see new_work)
    ladder_buf: np.ndarray  # int64[T, BUF_LEN]: EncodeScratch of each lane, stacked
    ladder_work: np.ndarray  # int64[T, >= 4]
    area_ws: np.ndarray  # int32[T, WS_LEN]
    owner: np.ndarray  # int8[T, ARR]
    planes: np.ndarray  # float32[T, 18, 361]
    vals: np.ndarray  # float64[T, >= R_LEN]: a leaf's network values, interpreted
    own: np.ndarray  # float32[T, >= V_LEN]: the same as the leaf's own evaluation, as the cache keeps it
    path: np.ndarray  # int32[G, L, D]: node indices from the root
    path_move: np.ndarray  # int16[G, L, D]: the move into each node
    path_len: np.ndarray  # int32[G, L]
    root_before: np.ndarray  # int64[G]: the roots' visits when the step began
    finished: np.ndarray  # int64[G]: the games whose search the step finished


class Batch(NamedTuple):
    """The network's inputs and the leaves' bookkeeping; slot i * L + j is game i's j-th leaf."""

    spatial: np.ndarray  # float32[G * L * 22 * 361], viewed as [G * L, 22, W * W] for a crop of W
    glob: np.ndarray  # float32[G * L, 19]
    legal: np.ndarray  # uint8[G * L, 362], board layout (y * 19 + x, pass last)
    places: np.ndarray  # int32[G * L, 362]: board position -> network output index (crop, symmetry)
    keys: np.ndarray  # int64[G * L]
    probs: np.ndarray  # float32[G * L, 362]: the leaves' priors once evaluated
    values: np.ndarray  # float32[G * L, V_LEN]
    rows: np.ndarray  # int64[G * L]: the slot's row in the network's output
    order: np.ndarray  # int64[G * L]: the slot of each row (the first n rows of a step)


class Selection(NamedTuple):
    """What a step's selection half is asked for."""

    spatial: np.ndarray  # float32[G * L, 22, W * W]: the batch's spatial inputs for the crop (spatial_view)
    leaves: int  # leaves per game at most
    width: int  # W, the crop of the 19x19 grid: the largest board among the searching games
    use_cache: bool
    random_sym: bool  # a random symmetry for each leaf (else none)


@structref.register
class _StepStateType(types.StructRef):  # type: ignore[name-defined]  # numba's stubs leave it out
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)  # type: ignore[attr-defined]  # numba's stubs leave it out


class StepState(structref.StructRefProxy):
    """The arrays a step's kernels work on (trees, roots, work, batch and cache) as one object:
    a call then hands numba one object to unbox instead of some sixty arrays (a third of a call's
    cost, paid with the GIL held)."""


structref.define_proxy(StepState, _StepStateType, ["t", "r", "w", "b", "cache"])


@njit(cache=True)
def new_step_state(t, r, w, b, cache):
    """A StepState of these arrays, made in compiled code: ``StepState(...)`` called from Python
    compiles its constructor anew in every process (numba does not cache it), two seconds of each
    start of a GTP engine or a self-play worker; this one numba's cache keeps."""
    return StepState(t, r, w, b, cache)


def new_roots(games: int, history: int, table_size: int) -> Roots:
    return Roots(
        boards=np.zeros((games, BOARD_LEN), np.int32),
        states=np.zeros((games, gs.G_LEN), np.int64),
        hists=np.zeros((games, history + 1), np.int64),
        moves=np.zeros((games, history, gs.MOVE_COLS), np.int32),
        tables=np.zeros((games, table_size), np.int64),
        prev_ladder=np.zeros((games, 2, NN_AREA), np.uint8),
    )


def new_work(games: int, leaves: int, depth: int, lanes: int = 1) -> Work:
    scratch = [new_scratch() for _ in range(lanes)]

    def lane_rows(width: int, dtype) -> np.ndarray:
        # Each lane's row padded to whole cache lines: threads writing their own small rows must not
        # share a line (false sharing would cost more than the work). The rows are whole (the kernels
        # use only their first `width` entries), so a lane's row is contiguous like a root's and
        # like a single scratch's: a kernel called with both compiles once, not once per layout.
        itemsize = np.dtype(dtype).itemsize
        padded = -(-width * itemsize // 128) * 128 // itemsize
        return np.zeros((lanes, padded), dtype)

    ladder_work = lane_rows(scratch[0].ladder_work.shape[0], np.int64)
    return Work(
        boards=np.zeros((lanes, BOARD_LEN), np.int32),
        states=lane_rows(gs.G_LEN, np.int64),
        ladder_buf=np.stack([s.ladder_buf for s in scratch]),
        ladder_work=ladder_work,
        area_ws=np.stack([s.area_ws for s in scratch]),
        owner=np.stack([s.owner for s in scratch]),
        planes=np.stack([s.planes for s in scratch]),
        vals=lane_rows(R_LEN, np.float64),
        own=lane_rows(V_LEN, np.float32),
        path=np.zeros((games, leaves, depth), np.int32),
        path_move=np.zeros((games, leaves, depth), np.int16),
        path_len=np.zeros((games, leaves), np.int32),
        root_before=np.zeros(games, np.int64),
        finished=np.zeros(games, np.int64),
    )


def new_batch(games: int, leaves: int) -> Batch:
    n = games * leaves
    return Batch(
        spatial=np.zeros(n * NUM_SPATIAL * NN_AREA, np.float32),
        glob=np.zeros((n, NUM_GLOBAL), np.float32),
        legal=np.zeros((n, NN_AREA + 1), np.uint8),
        places=np.zeros((n, NN_AREA + 1), np.int32),
        keys=np.zeros(n, np.int64),
        probs=np.zeros((n, NN_AREA + 1), np.float32),
        values=np.zeros((n, V_LEN), np.float32),
        rows=np.zeros(n, np.int64),
        order=np.zeros(n, np.int64),
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


@njit(cache=True, inline="always", _nrt=False)
def _lane_position(r, w, i, lane):
    """The lane's working position for game i: its own game state and board, the root's history
    arrays (a replayed path adds to them; :func:`_restore_root` takes it out again)."""
    return gs.Position(w.states[lane], w.boards[lane], r.hists[i], r.moves[i], r.tables[i])


@njit(cache=True, inline="always", _nrt=False)
def _replay_path(r, i, pos, pmove, plen):
    """Make pos the position the path leads to: a copy of game i's root with the path's moves
    pmove[1:plen] played."""
    copy_board(pos.b, r.boards[i])
    copy_into(pos.g, r.states[i])
    for d in range(1, plen):
        gs.game_play(pos.g, pos.b, pos.hist, pos.moves, pos.table, pmove[d], pos.g[gs.G_TO_MOVE])


@njit(cache=True, inline="always", _nrt=False)
def _replay_path_bucketed(t, r, i, pos, path, pmove, plen):
    """_replay_path for a search with subtree value bias correction: the leaf's bucket is found on
    the board its move is played on (none for a pass, the root, or a first move)."""
    _replay_path(r, i, pos, pmove, plen - 1)
    last = pmove[plen - 1]
    if plen >= 3:
        prev = pmove[plen - 2]
    else:
        n = r.states[i, gs.G_NMOVES]
        prev = r.moves[i, n - 1, gs.MV_LOC] if n > 0 else NO_LOC
    pla = pos.g[gs.G_TO_MOVE]
    key = bucket_key(pos.b, last, prev, pla) if last != PASS and prev != NO_LOC else 0
    gs.game_play(pos.g, pos.b, pos.hist, pos.moves, pos.table, last, pla)
    if key != 0 and pos.g[gs.G_OVER] == 0:
        t.bias_slot[i, path[plen - 1]] = bucket_slot(t, i, key)


@njit(cache=True, inline="always", _nrt=False)
def _restore_root(r, i, pos):
    """Take the replayed path's positions out of the root's history arrays."""
    gs.table_restore(r.states[i], pos.hist, pos.table, pos.g[gs.G_NMOVES], pos.g[gs.G_HSTART])


@njit(cache=True, inline="always", _nrt=False)
def _finish_terminal(t, w, i, pos, path, plen, lane):
    """Score the finished game at the leaf exactly and back it up."""
    gs.game_finish_ws(pos.g, pos.b, w.owner[lane], w.area_ws[lane])
    wl, score = _exact_values(pos.g, t.params[i].draw_wl)
    set_terminal(t, i, path[plen - 1], wl, score)
    backup(t, i, path, plen, False)
    t.status[i].terminal_visits += 1


@njit(cache=True, inline="always", _nrt=False)
def _expand_cached(t, cache, hit, i, pos, path, plen):
    """Expand the leaf from cache entry hit and back it up (unless the edge pool is full)."""
    leaf = path[plen - 1]
    x_size = pos.b[M_XSIZE]
    y_size = pos.b[M_YSIZE]
    copy_board_points(t.ladder[i, leaf], cache.ladder[hit], x_size, y_size)
    status = t.status[i]
    if leaf == 0 and not status.ready:
        status.x0 = cache.values[hit, V_SCORE]
    if expand(t, i, leaf, cache.policy[hit], x_size, y_size, cache.values[hit]):
        backup(t, i, path, plen, False)
        status.cache_hits += 1


@njit(cache=True, inline="always", _nrt=False)
def _key_extra(t, i, pos, plen):
    """What a leaf's evaluation depends on besides its position, for the cache's key: the playout
    doubling advantage and the draws' value (inputs of the network; the value only when it is not
    the default even split, so that the keys of the usual games stay as they were), and the
    optimistic policy's share in the priors (the root's or the one below it), each whole number
    in its own bits."""
    params = t.params[i]
    extra = np.int64(round(player_pda(params.pda_black, pos.g[gs.G_TO_MOVE]) * PDA_STEPS))
    if params.draw_wl != 0.0:
        extra += np.int64(round(params.draw_wl * PDA_STEPS)) << 16
    optimism = params.root_policy_optimism if plen == 1 else params.policy_optimism
    if optimism != 0.0:
        extra += np.int64(round(optimism * OPTIMISM_STEPS)) << 32
    return extra


@njit(cache=True, inline="always", _nrt=False)
def _encode_leaf(t, r, b, sel, i, slot, pos, path, plen, scratch):
    """Encode the leaf's position into batch slot `slot`, in the batch's crop and under a symmetry
    (random when the step asks for it), its history ladder planes taken from its ancestors."""
    x_size = pos.b[M_XSIZE]
    y_size = pos.b[M_YSIZE]
    sym = rand_below(t.rng[i], 8) if sel.random_sym else 0
    index = b.places[slot]
    symmetry_index(x_size, y_size, sym, sel.width, index)
    draw_equiv = 0.5 * (t.params[i].draw_wl + 1.0)
    fill_row_at(
        pos,
        pos.g[gs.G_TO_MOVE],
        draw_equiv,
        player_pda(t.params[i].pda_black, pos.g[gs.G_TO_MOVE]),
        _ancestor_ladder(t, r, i, path, plen, 1),
        _ancestor_ladder(t, r, i, path, plen, 2),
        InputRow(index, sel.spatial[slot], b.glob[slot], b.legal[slot], t.ladder[i, path[plen - 1]]),
        scratch,
    )


@njit(cache=True, _nrt=False)
def _select_game(t, r, w, b, cache, sel, i, lane):
    """Select up to sel.leaves leaves of game i (:func:`select_leaves`)."""
    status = t.status[i]
    if not status.active:
        status.leaves = 0
        return
    pos = _lane_position(r, w, i, lane)
    target = t.params[i].target
    count = 0
    while count < sel.leaves and not status.full:
        if t.n_visits[i, 0] + t.n_inflight[i, 0] >= target:
            break
        if t.state[i, 0] == EXPANDED and not status.ready:
            prepare_root(t, i)
        path = w.path[i, count]
        pmove = w.path_move[i, count]
        plen, kind = descend(t, i, path, pmove)
        if kind == DESCEND_TERMINAL:
            status.terminal_visits += 1
            continue
        if kind == DESCEND_COLLISION:
            status.collisions += 1
            break
        if kind == DESCEND_FULL:
            break
        if t.params[i].subtree_value_bias_factor != 0.0 and plen >= 2:
            _replay_path_bucketed(t, r, i, pos, path, pmove, plen)
        else:
            _replay_path(r, i, pos, pmove, plen)
        if pos.g[gs.G_OVER] != 0:
            _finish_terminal(t, w, i, pos, path, plen, lane)
            _restore_root(r, i, pos)
            continue
        key = position_key(pos.g, pos.b, pos.hist, pos.moves, pos.g[gs.G_TO_MOVE], 0, _key_extra(t, i, pos, plen))
        hit = cache_find(cache, key) if sel.use_cache else -1
        if hit >= 0:
            _expand_cached(t, cache, hit, i, pos, path, plen)
            _restore_root(r, i, pos)
            continue
        slot = i * sel.leaves + count
        _encode_leaf(t, r, b, sel, i, slot, pos, path, plen, game_scratch(w, lane))
        _restore_root(r, i, pos)
        b.keys[slot] = key
        for d in range(plen):
            t.n_inflight[i, path[d]] += 1
        w.path_len[i, count] = plen
        count += 1
    status.leaves = count


@njit(cache=True, nogil=True, _nrt=False)
def select_leaves(t, r, w, b, cache, sel, first, stop, lane):
    """Select up to sel.leaves leaves for each active game of first..stop-1 and encode them, with the
    scratch of `lane`."""
    for i in range(first, stop):
        w.root_before[i] = t.n_visits[i, 0]
        _select_game(t, r, w, b, cache, sel, i, lane)


@njit(cache=True, inline="always", _nrt=False)
def _number_rows(t, b, leaves):
    """Give the step's leaves their rows in the network's batch, in slot order. Returns (leaves,
    searching games)."""
    n = 0
    active = 0
    for i in range(t.status.shape[0]):
        active += t.status[i].active
        for j in range(t.status[i].leaves):
            slot = i * leaves + j
            b.rows[slot] = n
            b.order[n] = slot
            n += 1
    return n, active


@njit(cache=True, nogil=True)
def select_pass(st, sel):
    """The selection half of a step in one thread, on the arrays of st (:class:`StepState`): select
    and encode every searching game's leaves as sel (:class:`Selection`) asks. Returns (leaves to
    evaluate, searching games)."""
    t, r, w, b, cache = st.t, st.r, st.w, st.b, st.cache
    select_leaves(t, r, w, b, cache, sel, np.int64(0), t.status.shape[0], np.int64(0))
    return _number_rows(t, b, sel.leaves)


@njit(cache=True, nogil=True)
def select_pass_ranges(st, sel, bounds):
    """select_pass with the game ranges bounds[k]..bounds[k + 1] in parallel, one per thread."""
    return _select_ranges(st.t, st.r, st.w, st.b, st.cache, sel, bounds)


@njit(cache=True, nogil=True, parallel=True)
def _select_ranges(t, r, w, b, cache, sel, bounds):
    for k in prange(bounds.shape[0] - 1):
        select_leaves(t, r, w, b, cache, sel, bounds[k], bounds[k + 1], np.int64(k))
    return _number_rows(t, b, sel.leaves)


# --- results -----------------------------------------------------------------------------------------
@njit(cache=True, _nrt=False)
def _apply_game(t, r, w, b, policy, value, misc, i, leaves, lane):
    vals = w.vals[lane]
    own = w.own[lane]
    # KataGo lets the network's no-result stand where long cycles can end a game without result.
    no_result_allowed = (r.states[i, gs.G_KO_RULE] == gs.KO_SIMPLE) | (
        r.states[i, gs.G_SCORING] == gs.SCORING_TERRITORY
    )
    x_size = r.boards[i, M_XSIZE]
    y_size = r.boards[i, M_YSIZE]
    status = t.status[i]
    for j in range(status.leaves):
        slot = i * leaves + j
        row = b.rows[slot]
        plen = w.path_len[i, j]
        path = w.path[i, j]
        leaf = path[plen - 1]
        probs = b.probs[slot]
        policy_softmax(policy[row], b.places[slot], b.legal[slot], x_size, y_size, probs)
        interpret_values(value[row], misc[row], no_result_allowed, vals)
        sign = 1.0 if t.pla[i, leaf] == WHITE else -1.0
        mean = vals[R_SCORE_MEAN]
        own[0] = sign * (vals[R_WIN] - vals[R_LOSS])
        own[1] = sign * mean
        own[2] = math.sqrt(max(0.0, vals[R_SCORE_MEAN_SQ] - mean * mean))
        own[3] = sign * vals[R_LEAD]
        own[V_WL_ERROR] = vals[R_SHORTTERM_WL_ERROR]
        own[V_SCORE_ERROR] = vals[R_SHORTTERM_SCORE_ERROR]
        for k in range(V_LEN):
            b.values[slot, k] = own[k]
        if leaf == 0 and not status.ready:
            status.x0 = own[1]
        if expand(t, i, leaf, probs, x_size, y_size, own):
            backup(t, i, path, plen, True)
        else:
            for d in range(plen):
                t.n_inflight[i, path[d]] -= 1
        status.nn_evals += 1


@njit(cache=True, nogil=True, _nrt=False)
def apply_results(t, r, w, b, policy, value, misc, leaves, first, stop, lane):
    """Expand and back up the leaves of games first..stop-1 from the network's outputs (row
    b.rows[slot] of policy [n, W * W + 1] logits, value [n, 3] logits and misc [n, >= 3])."""
    for i in range(first, stop):
        _apply_game(t, r, w, b, policy, value, misc, i, leaves, lane)


@njit(cache=True, inline="always", _nrt=False)
def _store_share(t, r, w, b, cache, leaves, share, shares):
    """Write this step's evaluations into the cache slots s with s % shares == share, in game order
    (so the shares can be written in parallel, and the cache ends the same for any number of them)."""
    for i in range(t.status.shape[0]):
        for j in range(t.status[i].leaves):
            slot = i * leaves + j
            key = b.keys[slot]
            if cache_slot(cache, stored_key(key)) % shares == share:
                leaf = w.path[i, j, w.path_len[i, j] - 1]
                cache_put(
                    cache,
                    key,
                    b.probs[slot],
                    b.values[slot],
                    t.ladder[i, leaf],
                    r.boards[i, M_XSIZE],
                    r.boards[i, M_YSIZE],
                )


@njit(cache=True, nogil=True)
def finish_step(st):
    """Close a step: clear the leaf counts, stop the games whose search is done (listed in
    w.finished). Returns (finished games, root visits the step added)."""
    return _finish(st.t, st.w)


@njit(cache=True, _nrt=False)
def _finish(t, w):
    done = 0
    added = 0
    for i in range(t.status.shape[0]):
        status = t.status[i]
        status.leaves = 0
        if not status.active:
            continue
        added += t.n_visits[i, 0] - w.root_before[i]
        if search_done(t.n_visits[i, 0], t.n_inflight[i, 0], t.params[i].target, status.full):
            status.active = False
            w.finished[done] = i
            done += 1
    return done, added


@njit(cache=True, nogil=True)
def apply_pass(st, policy, value, misc, leaves, use_cache):
    """The other half of a step in one thread, on the arrays of st: expand and back up every leaf,
    cache the new evaluations, close the step (:func:`finish_step`)."""
    t, r, w, b, cache = st.t, st.r, st.w, st.b, st.cache
    apply_results(t, r, w, b, policy, value, misc, leaves, np.int64(0), t.status.shape[0], np.int64(0))
    if use_cache:
        _store_share(t, r, w, b, cache, leaves, 0, 1)
    return _finish(t, w)


@njit(cache=True, nogil=True)
def apply_pass_ranges(st, policy, value, misc, leaves, use_cache, bounds):
    """apply_pass with the game ranges bounds[k]..bounds[k + 1] in parallel, one per thread, and
    the cache written in as many shares."""
    return _apply_ranges(st.t, st.r, st.w, st.b, st.cache, policy, value, misc, leaves, use_cache, bounds)


@njit(cache=True, nogil=True, parallel=True)
def _apply_ranges(t, r, w, b, cache, policy, value, misc, leaves, use_cache, bounds):
    shares = bounds.shape[0] - 1
    for k in prange(shares):
        apply_results(t, r, w, b, policy, value, misc, leaves, bounds[k], bounds[k + 1], np.int64(k))
    if use_cache:
        for k in prange(shares):
            _store_share(t, r, w, b, cache, leaves, k, shares)
    return _finish(t, w)
