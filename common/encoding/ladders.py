"""Ladder reading for the network's ladder features, as numba kernels.

A chain is "ladder captured" when the attacker can keep it in atari until it dies: the defender
may extend on its liberty or capture an attacking chain in atari; the attacker must play one of
the defender's two liberties. The search follows KataGo's rules of thumb: the defender wins as
soon as it has two liberties after the attacker's move (three before it), or whenever the attacker
leaves a simple-ko point (ladders that depend on ko do not count); the attacker wins at one
liberty and in double-ko death; suicide is never legal; a node budget bounds pathological cases.
As in KataGo, the defender's move list follows the order of its chain's stones and the liberty
bound looks at the list's last move, so on rare boards (the chain's own liberty is also the liberty
of an attacking chain in atari) the answer depends on that order, and a board turned by a symmetry
can read differently; everywhere else the answer does not depend on chain-list order.

Boards are searched in place with a play and undo of their own (``_play``, ``_undo``): they keep
only what the search reads up to date (stones, chains, liberty counts, the ko point) and put it
back exactly, so the caller's board is left as it was, chain heads and list orders included, and
the empty list, hash and capture counts are never touched. Only the board's scratch marks move on.

The kernels are written for speed: the search is one function with its helpers inlined, indices
are unsigned (no wraparound checks), the hot neighbour scans branch only on rare events, and no
kernel allocates (they are compiled without the reference-counting runtime).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from common.go.board import (
    COLOR,
    HEAD,
    LIBS,
    M_KO,
    M_STAMP,
    M_XSIZE,
    M_YSIZE,
    MARK,
    NEXT,
    NSTONES,
    neighbour_chains,
)
from common.go.geometry import ADJ, ARR, BLACK, EMPTY, MAX_POINTS, NO_LOC, STRIDE, WALL, WHITE

STACK_DEPTH = MAX_POINTS * 3 // 2 + 1
NODE_BUDGET = 25000

# Undo record of one move (int64 slots in ``buf``).
R_MOVE = 0
R_KO = 1
R_CELL = 2  # HEAD, NEXT, LIBS, NSTONES of the move's point before it was played (4 slots)
R_NBR = 6  # distinct chains next to the move, each lost a liberty (4 slots, 0 padded)
R_BIG = 10  # head of the chain the move joined (the move itself when it joined none)
R_BIG_LIBS = 11
R_BIG_STONES = 12
R_NPARTS = 13
R_PARTS = 14  # chains merged into R_BIG, in merge order (4 slots)
R_NCAPS = 18
R_CAPS = 19  # captured chains (4 slots): their stones keep HEAD and NEXT while empty
REC_LEN = 23

# Layout of the int64 workspace ``buf`` the searches share (allocated once by the caller).
MOVES_LEN = 8 * STACK_DEPTH + 2 * MAX_POINTS  # move lists of every level; one needs <= MAX_POINTS + 1
W_LIST_START = MOVES_LEN
W_LIST_LEN = W_LIST_START + STACK_DEPTH + 2
W_LIST_CUR = W_LIST_LEN + STACK_DEPTH + 2
W_CHECKED = W_LIST_CUR + STACK_DEPTH + 2  # chain heads already looked at, per call
# For features._ladder_planes: the stones it reads, each chain's result by head, a stamp.
W_SOLVED = W_CHECKED + MAX_POINTS
W_RECORDS = W_SOLVED + MAX_POINTS + ARR + 1  # undo records of the moves on the search stack
ROOT_RECORD = W_RECORDS + REC_LEN * (STACK_DEPTH + 1)  # the attacker's first move
BUF_LEN = W_RECORDS + REC_LEN * (STACK_DEPTH + 2)

# How a node ends.
LOSS = 0  # not captured
WIN = 1  # captured
UNKNOWN = 2  # not by a base case: its moves are to be tried


def new_buf() -> np.ndarray:
    """The int64 workspace of the ladder kernels."""
    return np.zeros(BUF_LEN, dtype=np.int64)


# --- board access ---------------------------------------------------------------------------------


@njit(cache=True, inline="always", _nrt=False)
def _u(i):
    """A non-negative index as unsigned, so that indexing skips the wraparound check."""
    return np.uint64(i)


@njit(cache=True, inline="always", _nrt=False)
def _color(b, p):
    return b[_u(COLOR + p)]


@njit(cache=True, inline="always", _nrt=False)
def _head(b, p):
    return b[_u(HEAD + p)]


@njit(cache=True, inline="always", _nrt=False)
def _next(b, p):
    return b[_u(NEXT + p)]


@njit(cache=True, inline="always", _nrt=False)
def _libs(b, head):
    return b[_u(LIBS + head)]


@njit(cache=True, inline="always", _nrt=False)
def _nstones(b, head):
    return b[_u(NSTONES + head)]


@njit(cache=True, inline="always", _nrt=False)
def _chain_libs(b, p):
    """Liberties of the chain at p; any point has a valid HEAD, so this reads safely anywhere."""
    return b[_u(LIBS + b[_u(HEAD + p)])]


# --- play and undo --------------------------------------------------------------------------------


@njit(cache=True, inline="always", _nrt=False)
def _new_stamp(b):
    s = b[M_STAMP] + 1
    if s > 2_000_000_000:
        for i in range(ARR):
            b[_u(MARK + i)] = 0
        s = 1
    b[M_STAMP] = s
    return s


@njit(cache=True, inline="always", _nrt=False)
def _touches(b, e, head, p):
    """1 if the point e is next to a stone of the chain `head` (of colour p), else 0."""
    t = 0
    for d in range(4):
        f = e + ADJ[d]
        t |= (_color(b, f) == p) & (_head(b, f) == head)
    return t


@njit(cache=True, inline="always", _nrt=False)
def _play(b, mv, p, buf, r):
    """Play the legal, non-suicidal move mv of p, writing its undo record at buf[r:]. Only the
    stones, chains, liberty counts and ko point change (not the empty list, hash or captures)."""
    opp = 3 - p
    buf[_u(r + R_MOVE)] = mv
    buf[_u(r + R_KO)] = b[M_KO]
    buf[_u(r + R_CELL)] = _head(b, mv)
    buf[_u(r + R_CELL + 1)] = _next(b, mv)
    buf[_u(r + R_CELL + 2)] = _libs(b, mv)
    buf[_u(r + R_CELL + 3)] = _nstones(b, mv)
    b[_u(COLOR + mv)] = p
    b[_u(HEAD + mv)] = mv
    b[_u(NEXT + mv)] = mv
    b[_u(NSTONES + mv)] = 1
    # The distinct chains next to mv (R_NBR, padded with 0, a wall corner) each lose the liberty
    # mv; friends join the largest of them. Without branching on what the neighbours are.
    libs = 0
    nn = 0
    h0 = -1
    h1 = -1
    h2 = -1
    nfriends = 0
    big = mv
    anycap = False
    for d in range(4):
        n = mv + ADJ[d]
        c = _color(b, n)
        hd = _head(b, n)
        libs += c == EMPTY
        new = ((c == p) | (c == opp)) & (hd != h0) & (hd != h1) & (hd != h2)
        left = _libs(b, hd) - new
        b[_u(LIBS + hd)] = left
        buf[_u(r + R_NBR + nn)] = hd
        h0 = hd if new & (nn == 0) else h0
        h1 = hd if new & (nn == 1) else h1
        h2 = hd if new & (nn == 2) else h2
        nn += new
        friend = new & (c == p)
        nfriends += friend
        big = hd if friend & ((big == mv) | (_nstones(b, hd) > _nstones(b, big))) else big
        anycap |= new & (c == opp) & (left == 0)
    for k in range(nn, 4):
        buf[_u(r + R_NBR + k)] = 0
    b[_u(LIBS + mv)] = libs
    buf[_u(r + R_BIG)] = big

    if big != mv:
        buf[_u(r + R_BIG_LIBS)] = _libs(b, big) + 1
        buf[_u(r + R_BIG_STONES)] = _nstones(b, big)
        newlibs = _libs(b, big)
        if nfriends == 1:
            # Only the new stone joins: its empty neighbours that big does not touch are new. (A
            # wall's neighbours may lie outside the board's array: only empty points are asked.)
            for d in range(4):
                e = mv + ADJ[d]
                if _color(b, e) == EMPTY:
                    newlibs += 1 - _touches(b, e, big, p)
            b[_u(HEAD + mv)] = big
            b[_u(NEXT + mv)] = _next(b, big)
            b[_u(NEXT + big)] = mv
            b[_u(NSTONES + big)] += 1
            buf[_u(r + R_PARTS)] = mv
            buf[_u(r + R_NPARTS)] = 1
        else:
            stamp = _new_stamp(b)
            for k in range(-1, 4):
                hd = mv if k < 0 else buf[_u(r + R_NBR + k)]
                if hd == 0 or hd == big or _color(b, hd) != p:
                    continue
                s = hd
                while True:
                    for d in range(4):
                        e = s + ADJ[d]
                        if _color(b, e) != EMPTY or b[_u(MARK + e)] == stamp:
                            continue
                        b[_u(MARK + e)] = stamp
                        newlibs += 1 - _touches(b, e, big, p)
                    s = _next(b, s)
                    if s == hd:
                        break
            nparts = 0
            for k in range(-1, 4):
                hd = mv if k < 0 else buf[_u(r + R_NBR + k)]
                if hd == 0 or hd == big or _color(b, hd) != p:
                    continue
                s = hd
                while True:
                    b[_u(HEAD + s)] = big
                    s = _next(b, s)
                    if s == hd:
                        break
                tmp = _next(b, big)
                b[_u(NEXT + big)] = _next(b, hd)
                b[_u(NEXT + hd)] = tmp
                b[_u(NSTONES + big)] += _nstones(b, hd)
                buf[_u(r + R_PARTS + nparts)] = hd
                nparts += 1
            buf[_u(r + R_NPARTS)] = nparts
        b[_u(LIBS + big)] = newlibs

    # Captures: the stones go, keeping HEAD and NEXT so that _undo can put them back.
    ncap = 0
    ncaps = 0
    cap_loc = NO_LOC
    for k in range(4 if anycap else 0):
        hd = buf[_u(r + R_NBR + k)]
        if hd == 0 or _color(b, hd) != opp or _libs(b, hd) != 0:
            continue
        s = hd
        while True:
            b[_u(COLOR + s)] = EMPTY
            g0 = -1
            g1 = -1
            g2 = -1
            for d in range(4):
                n = s + ADJ[d]
                if _color(b, n) == p:
                    g = _head(b, n)
                    if g != g0 and g != g1 and g != g2:
                        b[_u(LIBS + g)] += 1
                        if g0 < 0:
                            g0 = g
                        elif g1 < 0:
                            g1 = g
                        else:
                            g2 = g
            ncap += 1
            s = _next(b, s)
            if s == hd:
                break
        buf[_u(r + R_CAPS + ncaps)] = hd
        ncaps += 1
        cap_loc = hd
    buf[_u(r + R_NCAPS)] = ncaps
    mine = _head(b, mv)
    if ncap == 1 and _nstones(b, mine) == 1 and _libs(b, mine) == 1:
        b[M_KO] = cap_loc
    else:
        b[M_KO] = NO_LOC


@njit(cache=True, inline="always", _nrt=False)
def _undo(b, buf, r):
    """Take back the move recorded at buf[r:], restoring the board exactly."""
    mv = buf[_u(r + R_MOVE)]
    p = _color(b, mv)
    opp = 3 - p
    for k in range(buf[_u(r + R_NCAPS)] - 1, -1, -1):
        hd = buf[_u(r + R_CAPS + k)]
        s = hd
        while True:
            b[_u(COLOR + s)] = opp
            g0 = -1
            g1 = -1
            g2 = -1
            for d in range(4):
                n = s + ADJ[d]
                if _color(b, n) == p:
                    g = _head(b, n)
                    if g != g0 and g != g1 and g != g2:
                        b[_u(LIBS + g)] -= 1
                        if g0 < 0:
                            g0 = g
                        elif g1 < 0:
                            g1 = g
                        else:
                            g2 = g
            s = _next(b, s)
            if s == hd:
                break
    big = buf[_u(r + R_BIG)]
    if big != mv:
        for k in range(buf[_u(r + R_NPARTS)] - 1, -1, -1):
            hd = buf[_u(r + R_PARTS + k)]
            tmp = _next(b, big)
            b[_u(NEXT + big)] = _next(b, hd)
            b[_u(NEXT + hd)] = tmp
            s = hd
            while True:
                b[_u(HEAD + s)] = hd
                s = _next(b, s)
                if s == hd:
                    break
    for k in range(4):
        hd = buf[_u(r + R_NBR + k)]
        b[_u(LIBS + hd)] += hd != 0
    if big != mv:
        b[_u(LIBS + big)] = buf[_u(r + R_BIG_LIBS)]
        b[_u(NSTONES + big)] = buf[_u(r + R_BIG_STONES)]
    b[_u(COLOR + mv)] = EMPTY
    b[_u(HEAD + mv)] = buf[_u(r + R_CELL)]
    b[_u(NEXT + mv)] = buf[_u(r + R_CELL + 1)]
    b[_u(LIBS + mv)] = buf[_u(r + R_CELL + 2)]
    b[_u(NSTONES + mv)] = buf[_u(r + R_CELL + 3)]
    b[M_KO] = buf[_u(r + R_KO)]


@njit(cache=True, inline="always", _nrt=False)
def _legal(b, mv, p):
    """board.is_pseudo_legal(b, mv, p, False) for an on-board point: empty, not the ko point, and
    not suicide (single or multi-stone)."""
    opp = 3 - p
    ok = False
    for d in range(4):
        n = mv + ADJ[d]
        c = _color(b, n)
        libs = _chain_libs(b, n)
        ok |= (c == EMPTY) | ((c == p) & (libs > 1)) | ((c == opp) & (libs == 1))
    return ok & (_color(b, mv) == EMPTY) & (mv != b[M_KO])


# --- KataGo's helpers -----------------------------------------------------------------------------


@njit(cache=True, inline="always", _nrt=False)
def _immediate_libs(b, loc):
    n = 0
    for d in range(4):
        n += _color(b, loc + ADJ[d]) == EMPTY
    return n


@njit(cache=True, inline="always", _nrt=False)
def _two_liberties(b, loc):
    """The two liberties of loc's chain (which has exactly two), in list order from loc."""
    l0 = -1
    cur = loc
    while True:
        for d in range(4):
            lib = cur + ADJ[d]
            if _color(b, lib) == EMPTY and lib != l0:
                if l0 >= 0:
                    return l0, lib
                l0 = lib
        cur = _next(b, cur)


@njit(cache=True, inline="always", _nrt=False)
def _the_liberty(b, loc):
    """The liberty of loc's chain (which has exactly one)."""
    cur = loc
    while True:
        for d in range(4):
            lib = cur + ADJ[d]
            if _color(b, lib) == EMPTY:
                return lib
        cur = _next(b, cur)


@njit(cache=True, inline="always", _nrt=False)
def _defender_moves(b, loc, buf, start):
    """KataGo's moves for a defender in atari, written to buf[start:]: the liberties of the
    attacking chains in atari next to loc's chain (in list order from loc), then its own liberty,
    each once. Returns their number."""
    opp = 3 - _color(b, loc)
    nchecked = 0
    n = 0
    lib = -1
    cur = loc
    while True:
        for d in range(4):
            a = cur + ADJ[d]
            c = _color(b, a)
            if c == EMPTY:
                lib = a
            # A chain in atari is rare: test both facts before branching.
            if (c == opp) & (_chain_libs(b, a) == 1):
                head = _head(b, a)
                seen = False
                for j in range(nchecked):
                    seen |= buf[_u(W_CHECKED + j)] == head
                if not seen:
                    buf[_u(W_CHECKED + nchecked)] = head
                    nchecked += 1
                    m = _the_liberty(b, a)
                    dup = False
                    for j in range(start, start + n):
                        dup |= buf[_u(j)] == m
                    if not dup:
                        buf[_u(start + n)] = m
                        n += 1
        cur = _next(b, cur)
        if cur == loc:
            break
    dup = False
    for j in range(start, start + n):
        dup |= buf[_u(j)] == lib
    if not dup:
        buf[_u(start + n)] = lib
        n += 1
    return n


@njit(cache=True, inline="always", _nrt=False)
def _has_liberty_gaining_captures(b, loc):
    opp = 3 - _color(b, loc)
    cur = loc
    while True:
        for d in range(4):
            adj = cur + ADJ[d]
            if (_color(b, adj) == opp) & (_chain_libs(b, adj) == 1):
                return True
        cur = _next(b, cur)
        if cur == loc:
            break
    return False


@njit(cache=True, inline="always", _nrt=False)
def _bound_libs_after_play(b, loc, pla):
    """Cheap (lower, upper) bounds on the liberties of a stone of pla played at loc."""
    opp = 3 - pla
    immediate = 0
    caps = 0
    cap_stones = 0
    conn_sum = 0
    conn_max = 0
    for d in range(4):
        adj = loc + ADJ[d]
        c = _color(b, adj)
        head = _head(b, adj)
        libs = _libs(b, head)
        immediate += c == EMPTY
        cap = (c == opp) & (libs == 1)
        caps += cap
        cap_stones += _nstones(b, head) if cap else 0
        conn = libs - 1 if c == pla else 0
        conn_sum += conn
        conn_max = max(conn_max, conn)
    lower = caps + (conn_max if conn_max > immediate else immediate)
    upper = immediate + cap_stones + conn_sum
    return lower, upper


@njit(cache=True, _nrt=False)
def _at_most_two_libs_after_play(b, loc, pla):
    """Would a stone of pla at loc have at most two liberties (captures counted)?"""
    opp = 3 - pla
    h0, h1, h2, h3 = neighbour_chains(b, loc)  # the distinct chains next to loc
    # Up to two liberties found so far (-1: none): a third means the answer is no.
    l0 = -1
    l1 = -1
    for d in range(4):
        adj = loc + ADJ[d]
        c = _color(b, adj)
        if c == EMPTY or (c == opp and _chain_libs(b, adj) == 1):
            if l0 < 0:
                l0 = adj
            elif l1 < 0:
                l1 = adj
            else:
                return False
    for k in range(4):
        hd = h0 if k == 0 else h1 if k == 1 else h2 if k == 2 else h3
        if hd < 0 or _color(b, hd) != pla:
            continue
        cur = hd
        while True:
            for d in range(4):
                lib = cur + ADJ[d]
                if lib == loc or lib == l0 or lib == l1:
                    continue
                c = _color(b, lib)
                if c == opp:
                    # A stone of a captured chain (one in atari next to loc) becomes a liberty.
                    h = _head(b, lib)
                    if _libs(b, h) != 1 or not (h == h0 or h == h1 or h == h2 or h == h3):
                        continue
                elif c != EMPTY:
                    continue
                if l0 < 0:
                    l0 = lib
                elif l1 < 0:
                    l1 = lib
                else:
                    return False
            cur = _next(b, cur)
            if cur == hd:
                break
    return True


@njit(cache=True, _nrt=False)
def _would_be_ko_capture(b, loc, pla):
    """Would pla at loc capture exactly one lone stone with every neighbour the opponent's or the edge?"""
    if _color(b, loc) != EMPTY:
        return False
    opp = 3 - pla
    capturable = NO_LOC
    for d in range(4):
        adj = loc + ADJ[d]
        c = _color(b, adj)
        if c != opp and c != WALL:
            return False
        if c == opp and _chain_libs(b, adj) == 1:
            if capturable != NO_LOC:
                return False
            capturable = adj
    if capturable == NO_LOC:
        return False
    return _nstones(b, _head(b, capturable)) == 1


@njit(cache=True, inline="always", _nrt=False)
def _connection_libs_x2(b, loc, pla):
    n = 0
    for d in range(4):
        adj = loc + ADJ[d]
        libs = _chain_libs(b, adj)
        if (_color(b, adj) == pla) & (libs > 1):
            n += libs * 2 - 3
    return n


@njit(cache=True, inline="always", _nrt=False)
def _adjacent(a, c):
    return a == c - STRIDE or a == c - 1 or a == c + 1 or a == c + STRIDE


# --- the search -----------------------------------------------------------------------------------


@njit(cache=True, inline="always", _nrt=False)
def _enter(b, loc, defender, start, buf):
    """A node just entered: LOSS or WIN by a base case, else UNKNOWN with its moves written to
    buf[start:]; returns (outcome, number of moves)."""
    pla = _color(b, loc)
    opp = 3 - pla
    libs = _chain_libs(b, loc)
    if defender:
        if libs >= 2 or b[M_KO] != NO_LOC:
            return LOSS, 0
        n = _defender_moves(b, loc, buf, start)
        lower, upper = _bound_libs_after_play(b, buf[_u(start + n - 1)], pla)
        if lower >= 3:
            return LOSS, n
        if n == 1 and upper <= 1:
            return WIN, n
        return UNKNOWN, n
    if libs <= 1:
        return WIN, 0
    if libs >= 3:
        return LOSS, 0
    m0, m1 = _two_liberties(b, loc)
    buf[_u(start)] = m0
    buf[_u(start + 1)] = m1
    n = 2
    l0 = _immediate_libs(b, m0)
    l1 = _immediate_libs(b, m1)
    if (
        l0 == 0
        and l1 == 0
        and _would_be_ko_capture(b, m0, opp)
        and _would_be_ko_capture(b, m1, opp)
        and _at_most_two_libs_after_play(b, m0, pla)
        and _at_most_two_libs_after_play(b, m1, pla)
        and not _has_liberty_gaining_captures(b, loc)
    ):
        return WIN, n  # double-ko death
    if not _adjacent(m0, m1):
        if l0 >= 3 and l1 >= 3:
            pass
        elif l0 >= 3:
            n = 1
        elif l1 >= 3:
            n = 1
            buf[_u(start)] = m1
    if n > 1:
        s0 = l0 * 2 + _connection_libs_x2(b, m0, pla)
        s1 = l1 * 2 + _connection_libs_x2(b, m1, pla)
        if s1 > s0:
            buf[_u(start)] = m1
            buf[_u(start + 1)] = m0
    return UNKNOWN, n


@njit(cache=True, _nrt=False)
def _search(b, loc, defender_first, buf):
    """KataGo's searchIsLadderCaptured from its root (the caller checks the chain and the ko)."""
    pla = _color(b, loc)
    opp = 3 - pla
    # KataGo's depth limit: a ladder this long is called captured.
    stack_size = b[M_XSIZE] * b[M_YSIZE] * 3 // 2 + 1
    depth = 0
    defender = defender_first
    start = 0  # where this node's moves start in buf
    nodes = 0
    entering = True
    result = False
    while True:
        if entering:
            entering = False
            outcome, n = _enter(b, loc, defender, start, buf)
            if outcome != UNKNOWN:
                result = outcome == WIN
            else:
                buf[_u(W_LIST_START + depth)] = start
                buf[_u(W_LIST_LEN + depth)] = n
                buf[_u(W_LIST_CUR + depth)] = 0
                continue
        else:
            cur = buf[_u(W_LIST_CUR + depth)]
            n = buf[_u(W_LIST_LEN + depth)]
            if cur < n:
                buf[_u(W_LIST_CUR + depth)] = cur + 1
                move = buf[_u(start + cur)]
                p = pla if defender else opp
                if not _legal(b, move, p):
                    continue
                nodes += 1
                if nodes >= NODE_BUDGET or (depth + 1 < stack_size - 1 and start + n + MAX_POINTS + 2 > MOVES_LEN):
                    # Out of budget: take every move back and call it not captured.
                    for k in range(depth - 1, -1, -1):
                        _undo(b, buf, W_RECORDS + REC_LEN * k)
                    return False
                if depth + 1 >= stack_size - 1:
                    # The child is at the depth limit, where the ladder counts as captured.
                    if defender:
                        continue
                    result = True
                else:
                    _play(b, move, p, buf, W_RECORDS + REC_LEN * depth)
                    depth += 1
                    defender = not defender
                    start += n
                    entering = True
                    continue
            else:
                result = defender  # no move worked
        # Return the result up the stack while it settles the nodes above: a defender's move that
        # escapes, or an attacker's that captures.
        while True:
            if depth == 0:
                return result
            depth -= 1
            defender = not defender
            _undo(b, buf, W_RECORDS + REC_LEN * depth)
            start = buf[_u(W_LIST_START + depth)]
            if defender == result:
                break  # not settled: the node tries its next move


@njit(cache=True, _nrt=False)
def ladder_captured(b, loc, defender_first, buf):
    """Can the chain at loc be captured in a ladder?

    defender_first: the chain (in atari) moves first; otherwise the attacker moves first on a
    chain with two liberties. The board is left exactly as it was.
    """
    c = _color(b, loc)
    if c != BLACK and c != WHITE:
        return False
    libs0 = _chain_libs(b, loc)
    if libs0 > 2 or (defender_first and libs0 > 1):
        return False
    saved_ko = b[M_KO]
    if defender_first:
        b[M_KO] = NO_LOC  # every ko works for the defender at the root
    result = _search(b, loc, defender_first, buf)
    b[M_KO] = saved_ko
    return result


@njit(cache=True, _nrt=False)
def ladder_captured_attacker_first(b, loc, buf, working):
    """For a chain with two liberties: the liberties at which the attacker starts a working
    ladder, written to working[0:n]; returns n (0 when the chain escapes)."""
    c = _color(b, loc)
    if (c != BLACK and c != WHITE) or _chain_libs(b, loc) != 2:
        return 0
    opp = 3 - c
    m0, m1 = _two_liberties(b, loc)
    n = 0
    for k in range(2):
        move = m0 if k == 0 else m1
        if not _legal(b, move, opp):
            continue
        _play(b, move, opp, buf, ROOT_RECORD)
        captured = ladder_captured(b, loc, True, buf)
        _undo(b, buf, ROOT_RECORD)
        if captured:
            working[n] = move
            n += 1
    return n
