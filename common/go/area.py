"""Who owns each point: Benson's pass-alive analysis and area scoring, as numba kernels.

- ``area_for_player``: Benson's algorithm (paper §6.2.3). A chain is pass-alive when it keeps two
  vital regions after every chain without two has been removed, iterated to a fixed point; a
  region is vital to a chain when all its empty points (all its points, where multi-stone suicide
  is legal) are liberties of that chain. Marks pass-alive chains and pass-alive territory (regions
  bordered only by pass-alive chains with at most one point not adjacent to them), optionally
  large empty regions bordered by the player alone.
- ``area``: both players, as KataGo scores area games: pass-alive stones and territory first
  (opponent stones inside pass-alive territory are dead), then every other stone for its colour,
  then empty regions bordered by one colour only.
- ``tromp_taylor_area``: plain Tromp-Taylor: every stone counts, empty regions that reach one colour.
- ``independent_life_area``: the area that counts under seki and group tax rules.

Each kernel has a ``*_ws`` form that takes a workspace from ``new_area_workspace`` and allocates
nothing; the plain forms allocate one workspace per call. A workspace is one int32 array with
fixed sections (``W_*``) and may be reused for any board, by one kernel at a time. No call clears
it as a whole: a call labels the points for both players' analyses in one pass over the board
array, and the floods of Tromp-Taylor and independent life compare visit marks with a counter
bumped per use.

The kernels read the board's empty list (regions grow from empty points) and expect every chain
to have a liberty, as the board kernels keep them. For speed, indices are cast to unsigned
(``_u``), which spares numba's wraparound check on every signed index; the flood fills queue and
label neighbours by arithmetic rather than by branches the processor would mispredict; and
Benson's removal walks only the chains that could still be pass-alive.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from common.go.board import COLOR, ELIST, HEAD, LIBS, M_NEMPTY, M_XSIZE, M_YSIZE, NEXT, board_end
from common.go.geometry import ARR, BLACK, EMPTY, MAX_POINTS, STRIDE, WALL, WHITE

TAX_NONE = 0
TAX_SEKI = 1
TAX_ALL = 2

# Regions of one player's analysis never touch each other and each holds an empty point, so
# there are at most as many as a checkerboard has points of one colour.
MAX_REGIONS = MAX_POINTS // 2 + 2

# --- workspace layout (int32) ---------------------------------------------------------------------
W_MARK_GEN = 0  # last visit mark used
W_NSTONES = 1  # [2] black's and white's numbers of stones
W_LABEL_B = 8  # [ARR] black's analysis: region of each point (see L_*)
W_LABEL_W = W_LABEL_B + ARR  # [ARR] white's analysis: region of each point
W_MARK = W_LABEL_W + ARR  # [ARR] visit marks
W_COUNT = W_MARK + ARR  # [ARR] at a chain head: vital regions bordering no removed chain, or < 0
W_OWNER = W_COUNT + ARR  # [ARR] owner of each point as the analyses mark it (area's result)
W_POINTS = W_OWNER + ARR  # [MAX_POINTS + 1] the points of every region in turn; also a flood queue
W_HEADS = W_POINTS + MAX_POINTS + 1  # [MAX_POINTS + 1] heads of the chains held pass-alive
W_STACK = W_HEADS + MAX_POINTS + 1  # [MAX_POINTS + 1] chains to remove; also a flood queue
W_RSTART = W_STACK + MAX_POINTS + 1  # [MAX_REGIONS + 1] first point of each region in W_POINTS
W_DEAD = W_RSTART + MAX_REGIONS + 1  # [MAX_REGIONS] does the region border a removed chain
W_VLEN = W_DEAD + MAX_REGIONS  # [MAX_REGIONS] number of vital chains of each region
W_VITAL = W_VLEN + MAX_REGIONS  # [4 * MAX_REGIONS] heads of the vital chains of each region
W_EALIVE = W_VITAL + 4 * MAX_REGIONS  # [MAX_REGIONS + 8] edges from held chains to each region
WS_LEN = W_EALIVE + MAX_REGIONS + 8

# Labels of one player's analysis: 0 for an empty point or opponent stone not yet in a region,
# r + 1 once in region r, L_PLA for the player's stones, L_WALL off the board.
L_PLA = 1 << 20
L_WALL = L_PLA + 1

# Options of an analysis, as one run-time int: numba compiles a separate copy of a kernel for
# each combination of constant arguments, so flags keep the heavy kernels to one copy each.
F_STONES = 1  # non_pass_alive_stones
F_SAFE_BIG = 2
F_UNSAFE_BIG = 4
F_SUICIDE = 8  # multi_stone_suicide_legal

_GEN_LIMIT = 1 << 30
_REMOVED = -(1 << 20)  # vital count of a removed chain: stays negative through later decrements


@njit(cache=True)
def new_area_workspace():
    """A workspace for the ``*_ws`` kernels (int32[WS_LEN])."""
    ws = np.empty(WS_LEN, dtype=np.int32)
    ws[W_MARK_GEN] = 0
    for i in range(ARR):
        ws[W_MARK + i] = 0
    return ws


@njit(cache=True, inline="always", _nrt=False)
def _u(i):
    """A non-negative index as unsigned, so that indexing skips the wraparound check."""
    return np.uint64(i)


@njit(cache=True, inline="always", _nrt=False)
def _new_mark(ws):
    """A visit mark no point of W_MARK carries yet."""
    s = ws[W_MARK_GEN] + 1
    if s > _GEN_LIMIT:
        for i in range(ARR):
            ws[W_MARK + i] = 0
        s = 1
    ws[W_MARK_GEN] = s
    return s


@njit(cache=True, inline="always", _nrt=False)
def _flags(non_pass_alive_stones, safe_big, unsafe_big, multi_stone_suicide_legal):
    """The options as F_* flags, a run-time int64 whatever the arguments."""
    return (
        np.int64(non_pass_alive_stones) * F_STONES
        | np.int64(safe_big) * F_SAFE_BIG
        | np.int64(unsafe_big) * F_UNSAFE_BIG
        | np.int64(multi_stone_suicide_legal) * F_SUICIDE
    )


@njit(cache=True, inline="always", _nrt=False)
def _prepare(b, ws):
    """Label the points for both players' analyses and count their stones."""
    nb = np.int64(0)
    nw = np.int64(0)
    for i in range(board_end(b)):
        c = b[COLOR + i]
        wall = c == WALL
        ws[W_LABEL_B + i] = L_WALL if wall else (L_PLA if c == BLACK else 0)
        ws[W_LABEL_W + i] = L_WALL if wall else (L_PLA if c == WHITE else 0)
        nb += np.int64(c == BLACK)
        nw += np.int64(c == WHITE)
    ws[W_NSTONES] = nb
    ws[W_NSTONES + 1] = nw


@njit(cache=True, inline="always", _nrt=False)
def _region_step(ws, lab, n, tag, qt):
    """A neighbour n of a point of the region labelled tag, labelled and queued when it is new to
    the region; returns the queue end. Branch-free: the label and the queue slot are written
    either way (the slot is overwritten unless the queue grows)."""
    old = ws[_u(lab + n)]
    grow = old == 0
    ws[_u(lab + n)] = tag if grow else old
    ws[_u(W_POINTS + qt)] = n
    return qt + np.int64(grow)


@njit(cache=True, inline="always", _nrt=False)
def _pla_edges(ws, lab, p):
    """Number of pla stones next to p."""
    return (
        np.int64(ws[_u(lab + p - STRIDE)] == L_PLA)
        + np.int64(ws[_u(lab + p - 1)] == L_PLA)
        + np.int64(ws[_u(lab + p + 1)] == L_PLA)
        + np.int64(ws[_u(lab + p + STRIDE)] == L_PLA)
    )


@njit(cache=True, inline="always", _nrt=False)
def _pla_head(b, n, pla):
    """Head of n's chain if n is pla's stone, else -2."""
    return b[_u(HEAD + n)] if b[_u(COLOR + n)] == pla else -2


@njit(cache=True, inline="always", _nrt=False)
def _kept(v, h0, h1, h2, h3):
    """Candidate vital chain v (or a negative value) after a point whose pla neighbours are the
    chains h0..h3: v when it is one of them, else negative."""
    return v if (v == h0) | (v == h1) | (v == h2) | (v == h3) else -1


@njit(cache=True, inline="always", _nrt=False)
def _count_edge(ws, lab, n, nregions):
    """A neighbour n of a stone of a held chain: one more edge between held chains and n's
    region (if n is in one; else the count goes to a spare slot)."""
    r = ws[_u(lab + n)] - 1
    # Eight spare slots, so that the many increments landing there do not wait for each other.
    r = r if np.uint64(r) < np.uint64(nregions) else MAX_REGIONS + (n & 7)
    ws[_u(W_EALIVE + r)] += 1


@njit(cache=True, inline="always", _nrt=False)
def _remove_step(ws, lab, n, nregions, top):
    """A neighbour n of a stone of a removed chain: its region (if any) now borders a removed
    chain, so its vital chains lose it; those left with one vital region are removed in turn
    (pushed on the stack). Returns the new stack top."""
    r = ws[_u(lab + n)] - 1
    if np.uint64(r) >= np.uint64(nregions) or ws[_u(W_DEAD + r)]:
        return top
    ws[_u(W_DEAD + r)] = 1
    vb = W_VITAL + 4 * r
    for k in range(ws[_u(W_VLEN + r)]):
        hd = ws[_u(vb + k)]
        c = ws[_u(W_COUNT + hd)] - 1
        ws[_u(W_COUNT + hd)] = _REMOVED if c == 1 else c
        ws[_u(W_STACK + top)] = hd
        top += np.int64(c == 1)
    return top


@njit(cache=True, _nrt=False)
def _benson(b, pla, flags, ws):
    """area_for_player on the owners in ws[W_OWNER:], after _prepare. pla and flags are run-time
    int64 (flags as F_*)."""
    opp = 3 - pla
    safe_big = (flags & F_SAFE_BIG) != 0
    unsafe_big = (flags & F_UNSAFE_BIG) != 0
    multi_stone_suicide_legal = (flags & F_SUICIDE) != 0
    lab = W_LABEL_B if pla == BLACK else W_LABEL_W
    nstones = ws[W_NSTONES + pla - 1]

    # Regions: connected non-pla areas grown from each unlabelled empty point (opponent stones
    # out of reach of every empty point belong to none), and their vital chains: pla chains next
    # to every point that counts.
    nregions = 0
    npoints = 0
    for i in range(b[M_NEMPTY]):
        seed = b[_u(ELIST + i)]
        if ws[_u(lab + seed)] != 0:
            continue
        r = nregions
        nregions += 1
        tag = r + 1
        ws[_u(W_RSTART + r)] = npoints
        ws[_u(lab + seed)] = tag
        ws[_u(W_POINTS + npoints)] = seed
        qh = npoints
        qt = npoints + 1
        while qh < qt:
            p = ws[_u(W_POINTS + qh)]
            qt = _region_step(ws, lab, p - STRIDE, tag, qt)
            qt = _region_step(ws, lab, p - 1, tag, qt)
            qt = _region_step(ws, lab, p + 1, tag, qt)
            qt = _region_step(ws, lab, p + STRIDE, tag, qt)
            qh += 1
        # Candidate vital chains: pla chains next to the (empty) seed, kept while next to every
        # further point that counts.
        v0 = _pla_head(b, seed - STRIDE, pla)
        v1 = _pla_head(b, seed - 1, pla)
        v2 = _pla_head(b, seed + 1, pla)
        v3 = _pla_head(b, seed + STRIDE, pla)
        if (v0 & v1 & v2 & v3) >= 0:
            for j in range(npoints + 1, qt):
                p = ws[_u(W_POINTS + j)]
                if multi_stone_suicide_legal or b[_u(COLOR + p)] == EMPTY:
                    h0 = _pla_head(b, p - STRIDE, pla)
                    h1 = _pla_head(b, p - 1, pla)
                    h2 = _pla_head(b, p + 1, pla)
                    h3 = _pla_head(b, p + STRIDE, pla)
                    v0 = _kept(v0, h0, h1, h2, h3)
                    v1 = _kept(v1, h0, h1, h2, h3)
                    v2 = _kept(v2, h0, h1, h2, h3)
                    v3 = _kept(v3, h0, h1, h2, h3)
                    if (v0 & v1 & v2 & v3) < 0:
                        break
        npoints = qt
        # The distinct surviving candidates are the region's vital chains. Branch-free: each is
        # written, the count decides what stays.
        vb = W_VITAL + 4 * r
        ws[_u(vb)] = v0
        nv = np.int64(v0 >= 0)
        ws[_u(vb + nv)] = v1
        nv += np.int64((v1 >= 0) & (v1 != v0))
        ws[_u(vb + nv)] = v2
        nv += np.int64((v2 >= 0) & (v2 != v0) & (v2 != v1))
        ws[_u(vb + nv)] = v3
        nv += np.int64((v3 >= 0) & (v3 != v0) & (v3 != v1) & (v3 != v2))
        ws[_u(W_VLEN + r)] = nv
    ws[_u(W_RSTART + nregions)] = npoints
    if nstones == 0:
        return

    # Benson: remove every chain with fewer than two vital regions that border no removed chain,
    # until none is left (the fixed point does not depend on the order). Every chain with fewer
    # than two vital regions at all goes at once; the others are held for now. A region borders
    # no removed chain when all its edges to pla stones are edges to held chains; a held chain
    # left with fewer than two such vital regions goes, and the regions it borders with it.
    nheld = np.int64(0)
    for r in range(nregions):
        vb = W_VITAL + 4 * r
        for k in range(ws[_u(W_VLEN + r)]):
            ws[_u(W_COUNT + ws[_u(vb + k)])] = 0
    for r in range(nregions):
        vb = W_VITAL + 4 * r
        for k in range(ws[_u(W_VLEN + r)]):
            hd = ws[_u(vb + k)]
            c = ws[_u(W_COUNT + hd)] + 1
            ws[_u(W_COUNT + hd)] = c
            ws[_u(W_HEADS + nheld)] = hd
            nheld += np.int64(c == 2)
    if nheld == 0:
        # Every chain goes, and every region borders one (pla has stones).
        for r in range(nregions):
            ws[_u(W_DEAD + r)] = 1
    else:
        for r in range(MAX_REGIONS + 8):
            ws[_u(W_EALIVE + r)] = 0
        for i in range(nheld):
            hd = ws[_u(W_HEADS + i)]
            ws[_u(W_COUNT + hd)] = 0
            s = hd
            while True:
                _count_edge(ws, lab, s - STRIDE, nregions)
                _count_edge(ws, lab, s - 1, nregions)
                _count_edge(ws, lab, s + 1, nregions)
                _count_edge(ws, lab, s + STRIDE, nregions)
                s = b[_u(NEXT + s)]
                if s == hd:
                    break
        for r in range(nregions):
            e = 0
            for i in range(ws[_u(W_RSTART + r)], ws[_u(W_RSTART + r + 1)]):
                e += _pla_edges(ws, lab, ws[_u(W_POINTS + i)])
            dead = ws[_u(W_EALIVE + r)] != e
            ws[_u(W_DEAD + r)] = dead
            if not dead:
                # All its vital chains are held.
                vb = W_VITAL + 4 * r
                for k in range(ws[_u(W_VLEN + r)]):
                    ws[_u(W_COUNT + ws[_u(vb + k)])] += 1
        top = 0
        for i in range(nheld):
            hd = ws[_u(W_HEADS + i)]
            if ws[_u(W_COUNT + hd)] < 2:
                ws[_u(W_COUNT + hd)] = _REMOVED
                ws[_u(W_STACK + top)] = hd
                top += 1
        while top > 0:
            top -= 1
            hd = ws[_u(W_STACK + top)]
            s = hd
            while True:
                top = _remove_step(ws, lab, s - STRIDE, nregions, top)
                top = _remove_step(ws, lab, s - 1, nregions, top)
                top = _remove_step(ws, lab, s + 1, nregions, top)
                top = _remove_step(ws, lab, s + STRIDE, nregions, top)
                s = b[_u(NEXT + s)]
                if s == hd:
                    break
        for i in range(nheld):
            hd = ws[_u(W_HEADS + i)]
            if ws[_u(W_COUNT + hd)] < 0:
                continue
            s = hd
            while True:
                ws[_u(W_OWNER + s)] = pla
                s = b[_u(NEXT + s)]
                if s == hd:
                    break

    # Territory: regions bordering no removed chain with at most one point not next to pla (or,
    # with safe_big, without opponent stones); with unsafe_big, any other region without
    # opponent stones where the opponent owns nothing yet.
    for r in range(nregions):
        start = ws[_u(W_RSTART + r)]
        end = ws[_u(W_RSTART + r + 1)]
        mark = False
        if not ws[_u(W_DEAD + r)]:
            internal = np.int64(0)
            for i in range(start, end):
                internal += np.int64(_pla_edges(ws, lab, ws[_u(W_POINTS + i)]) == 0)
            mark = bool(internal <= 1)
        if not mark and (safe_big or unsafe_big):
            has_opp = False
            for i in range(start, end):
                has_opp |= b[_u(COLOR + ws[_u(W_POINTS + i)])] == opp
            if not has_opp:
                if safe_big and not ws[_u(W_DEAD + r)]:
                    mark = True
                elif unsafe_big:
                    # Never overwrite points the opponent already owns as pass-alive territory.
                    for i in range(start, end):
                        p = W_OWNER + ws[_u(W_POINTS + i)]
                        o = ws[_u(p)]
                        ws[_u(p)] = o if o != EMPTY else pla
        if mark:
            for i in range(start, end):
                ws[_u(W_OWNER + ws[_u(W_POINTS + i)])] = pla


@njit(cache=True, _nrt=False)
def area_for_player_ws(b, pla, safe_big, unsafe_big, multi_stone_suicide_legal, result, ws):
    """area_for_player with a workspace from new_area_workspace (allocates nothing). Like it,
    changes only the points it marks: result is not cleared first."""
    for i in range(ARR):
        ws[W_OWNER + i] = result[i]
    _prepare(b, ws)
    _benson(b, np.int64(pla), _flags(False, safe_big, unsafe_big, multi_stone_suicide_legal), ws)
    for i in range(ARR):
        result[i] = ws[W_OWNER + i]


@njit(cache=True)
def area_for_player(b, pla, safe_big, unsafe_big, multi_stone_suicide_legal, result):
    """Mark pla's pass-alive chains and territory in result (see the module doc)."""
    area_for_player_ws(b, pla, safe_big, unsafe_big, multi_stone_suicide_legal, result, new_area_workspace())


@njit(cache=True, _nrt=False)
def _area(b, flags, ws):
    """area into ws[W_OWNER:] up to board_end(b) (the rest is not written); flags as F_STONES..."""
    end = board_end(b)
    for i in range(end):
        ws[W_OWNER + i] = EMPTY
    _prepare(b, ws)
    for pla in range(BLACK, WHITE + 1):
        _benson(b, pla, flags, ws)
    if flags & F_STONES:
        for i in range(end):
            o = ws[W_OWNER + i]
            c = b[COLOR + i]
            ws[W_OWNER + i] = o if o != EMPTY else (c if c != WALL else EMPTY)


@njit(cache=True, _nrt=False)
def area_ws(b, non_pass_alive_stones, safe_big, unsafe_big, multi_stone_suicide_legal, result, ws):
    """area with a workspace from new_area_workspace (allocates nothing)."""
    _area(b, _flags(non_pass_alive_stones, safe_big, unsafe_big, multi_stone_suicide_legal), ws)
    end = board_end(b)
    for i in range(end):
        result[i] = ws[W_OWNER + i]
    for i in range(end, ARR):
        result[i] = EMPTY


@njit(cache=True)
def area(b, non_pass_alive_stones, safe_big, unsafe_big, multi_stone_suicide_legal, result):
    """Owner of every location (EMPTY where nobody); see the module doc."""
    area_ws(b, non_pass_alive_stones, safe_big, unsafe_big, multi_stone_suicide_legal, result, new_area_workspace())


@njit(cache=True, inline="always", _nrt=False)
def _tt_step(b, ws, n, seen, qt, reach):
    """A neighbour n of an empty region point: (queue end, colours reached as bits), with n
    marked and queued when it is a new empty point. Branch-free, as _region_step."""
    cn = b[_u(COLOR + n)]
    old = ws[_u(W_MARK + n)]
    grow = (cn == EMPTY) & (old != seen)
    ws[_u(W_MARK + n)] = seen if cn == EMPTY else old
    ws[_u(W_POINTS + qt)] = n
    return qt + np.int64(grow), reach | (cn if cn != WALL else EMPTY)


@njit(cache=True, _nrt=False)
def tromp_taylor_area_ws(b, result, ws):
    """tromp_taylor_area with a workspace from new_area_workspace (allocates nothing)."""
    # Every stone for its colour, everything else nobody's for now.
    for i in range(ARR):
        c = b[COLOR + i]
        result[i] = c if c != WALL else EMPTY
    seen = _new_mark(ws)
    for i in range(b[M_NEMPTY]):
        seed = b[_u(ELIST + i)]
        if ws[_u(W_MARK + seed)] == seen:
            continue
        reach = 0  # BLACK and WHITE as bits
        qh = 0
        qt = 1
        ws[W_POINTS] = seed
        ws[_u(W_MARK + seed)] = seen
        while qh < qt:
            p = ws[_u(W_POINTS + qh)]
            qh += 1
            qt, reach = _tt_step(b, ws, p - STRIDE, seen, qt, reach)
            qt, reach = _tt_step(b, ws, p - 1, seen, qt, reach)
            qt, reach = _tt_step(b, ws, p + 1, seen, qt, reach)
            qt, reach = _tt_step(b, ws, p + STRIDE, seen, qt, reach)
        if reach == BLACK or reach == WHITE:
            for k in range(qt):
                result[_u(ws[_u(W_POINTS + k)])] = reach


@njit(cache=True)
def tromp_taylor_area(b, result):
    """Tromp-Taylor: every stone for its colour, an empty region for the one colour it reaches."""
    tromp_taylor_area_ws(b, result, new_area_workspace())


@njit(cache=True, inline="always", _nrt=False)
def _seki_seed(b, ws, n, dame, seki, qt):
    """A neighbour n of an empty point e (dame: e is neutral), marked and queued if new when it
    is owned and either e is neutral or n is a stone of its owner whose chain has e for its last
    liberty. Branch-free, as _region_step."""
    o = ws[_u(W_OWNER + n)]
    atari = (b[_u(COLOR + n)] == o) & (b[_u(LIBS + b[_u(HEAD + n)])] == 1)
    old = ws[_u(W_MARK + n)]
    grow = (o != EMPTY) & (dame | atari) & (old != seki)
    ws[_u(W_MARK + n)] = seki if grow else old
    ws[_u(W_STACK + qt)] = n
    return qt + np.int64(grow)


@njit(cache=True, inline="always", _nrt=False)
def _seki_step(ws, n, owner, seki, qt):
    """A neighbour n in the flood of areas that are not independent life: marked and queued when
    it has the same owner and is new. Branch-free, as _region_step."""
    old = ws[_u(W_MARK + n)]
    grow = (ws[_u(W_OWNER + n)] == owner) & (old != seki)
    ws[_u(W_MARK + n)] = seki if grow else old
    ws[_u(W_STACK + qt)] = n
    return qt + np.int64(grow)


@njit(cache=True, inline="always", _nrt=False)
def _life_step(result, ws, n, owner, qt):
    """A neighbour n in the flood of an independent-life area: claimed and queued when it has
    the same owner and is new. Branch-free, as _region_step."""
    old = result[_u(n)]
    grow = (ws[_u(W_OWNER + n)] == owner) & (old != owner)
    result[_u(n)] = owner if grow else old
    ws[_u(W_STACK + qt)] = n
    return qt + np.int64(grow)


@njit(cache=True, _nrt=False)
def _independent_life(b, keep_stones, keep_territories, flags, result, ws):
    """independent_life_area, keep_stones and keep_territories int64s and the analysis' options as flags."""
    _area(b, flags, ws)
    for i in range(ARR):
        result[i] = EMPTY
    x_size = b[M_XSIZE]
    y_size = b[M_YSIZE]
    # Areas that are not independent life: every connected area of one owner with a point next
    # to a neutral empty point or a chain of the owner in atari, flooded from all such points at
    # once. Those points are found from the empty points: the neighbours of the neutral ones, and
    # the stones next to their chain's last liberty.
    seki = _new_mark(ws)
    qt = 0
    for i in range(b[M_NEMPTY]):
        e = b[_u(ELIST + i)]
        dame = ws[_u(W_OWNER + e)] == EMPTY
        qt = _seki_seed(b, ws, e - STRIDE, dame, seki, qt)
        qt = _seki_seed(b, ws, e - 1, dame, seki, qt)
        qt = _seki_seed(b, ws, e + 1, dame, seki, qt)
        qt = _seki_seed(b, ws, e + STRIDE, dame, seki, qt)
    qh = 0
    while qh < qt:
        p = ws[_u(W_STACK + qh)]
        qh += 1
        owner = ws[_u(W_OWNER + p)]
        qt = _seki_step(ws, p - STRIDE, owner, seki, qt)
        qt = _seki_step(ws, p - 1, owner, seki, qt)
        qt = _seki_step(ws, p + 1, owner, seki, qt)
        qt = _seki_step(ws, p + STRIDE, owner, seki, qt)
    # The other connected areas of one owner are independent life: counted and claimed.
    regions = 0
    for y in range(y_size):
        row = (y + 1) * STRIDE + 1
        for x in range(x_size):
            loc = row + x
            owner = ws[_u(W_OWNER + loc)]
            if not ((owner != EMPTY) & (ws[_u(W_MARK + loc)] != seki) & (result[_u(loc)] != owner)):
                continue
            regions += 1 if owner == WHITE else -1
            result[_u(loc)] = owner
            qh = 0
            qt = 1
            ws[W_STACK] = loc
            while qh < qt:
                p = ws[_u(W_STACK + qh)]
                qh += 1
                qt = _life_step(result, ws, p - STRIDE, owner, qt)
                qt = _life_step(result, ws, p - 1, owner, qt)
                qt = _life_step(result, ws, p + 1, owner, qt)
                qt = _life_step(result, ws, p + STRIDE, owner, qt)
    if keep_territories:
        for i in range(board_end(b)):
            o = ws[W_OWNER + i]
            result[i] = o if (o != EMPTY) & (o != b[COLOR + i]) else result[i]
    if keep_stones:
        for i in range(board_end(b)):
            o = ws[W_OWNER + i]
            result[i] = o if (o != EMPTY) & (o == b[COLOR + i]) else result[i]
    return regions


@njit(cache=True, _nrt=False)
def independent_life_area_ws(b, keep_stones, multi_stone_suicide_legal, result, ws, keep_territories=False):
    """independent_life_area with a workspace from new_area_workspace (allocates nothing)."""
    flags = _flags(True, True, True, multi_stone_suicide_legal)
    return _independent_life(b, np.int64(keep_stones), np.int64(keep_territories), flags, result, ws)


@njit(cache=True)
def independent_life_area(b, keep_stones, multi_stone_suicide_legal, result, keep_territories=False):
    """Area in regions of independent life, as counted under seki and group-tax rules.

    A connected area of one owner (from ``area`` with every option on) is not independent life
    when it touches a neutral empty point or holds one of the owner's chains in atari. Returns
    the number of independent-life regions of white minus those of black (for group tax).
    keep_stones adds every stone the owner holds, keep_territories every other point owned
    (territory scoring without tax counts territory outside independent life too).
    """
    return independent_life_area_ws(
        b, keep_stones, multi_stone_suicide_legal, result, new_area_workspace(), keep_territories
    )


@njit(cache=True, _nrt=False)
def area_score_ws(b, tax, multi_stone_suicide_legal, result, ws):
    """area_score with a workspace from new_area_workspace (allocates nothing)."""
    regions = 0
    if tax == TAX_NONE:
        area_ws(b, True, True, True, multi_stone_suicide_legal, result, ws)
    else:
        regions = independent_life_area_ws(b, True, multi_stone_suicide_legal, result, ws)
    score = np.int64(0)
    for y in range(b[M_YSIZE]):
        row = (y + 1) * STRIDE + 1
        for x in range(b[M_XSIZE]):
            o = result[_u(row + x)]
            score += np.int64(o == WHITE) - np.int64(o == BLACK)
    if tax == TAX_ALL:
        score -= 2 * regions
    return score


@njit(cache=True)
def area_score(b, tax, multi_stone_suicide_legal, result):
    """Area score, white minus black, before komi and bonuses; fills result with the owners."""
    return area_score_ws(b, tax, multi_stone_suicide_legal, result, new_area_workspace())


@njit(cache=True, _nrt=False)
def all_pass_alive_ws(b, multi_stone_suicide_legal, ws):
    """all_pass_alive with a workspace from new_area_workspace (allocates nothing)."""
    _area(b, _flags(False, False, False, multi_stone_suicide_legal), ws)
    for y in range(b[M_YSIZE]):
        row = (y + 1) * STRIDE + 1
        for x in range(b[M_XSIZE]):
            if ws[_u(W_OWNER + row + x)] == EMPTY:
                return False
    return True


@njit(cache=True)
def all_pass_alive(b, multi_stone_suicide_legal):
    """Is every point a pass-alive stone or pass-alive territory of one player?"""
    return all_pass_alive_ws(b, multi_stone_suicide_legal, new_area_workspace())
