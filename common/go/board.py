"""The board: stones, chains, liberties, captures, simple ko and Zobrist hashing, as numba kernels.

A board is one flat int32 array of length BOARD_LEN (see the layout constants below), so a board is
copied with one memcpy, many boards stack into a 2-D array for batched self-play, and every kernel
takes the array and nothing else. Chains are circular linked lists (HEAD, NEXT) with exact
liberty and stone counts kept at the chain head; the empty points are kept in a list with O(1)
insertion and removal, which makes random move choice cheap.

Legality here is the position's own: occupied points, the simple-ko point and suicide. Superko,
passes, the button and the game's end live in ``common.go.gamestate``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from common.go.geometry import ADJ, ARR, BLACK, EMPTY, MAX_POINTS, NO_LOC, PASS, STRIDE, WALL, WHITE

# --- layout of the board array -------------------------------------------------------------------
COLOR = 0  # [ARR] EMPTY, BLACK, WHITE or WALL
HEAD = ARR  # [ARR] head location of the chain a stone belongs to
NEXT = 2 * ARR  # [ARR] next stone of the same chain (circular)
LIBS = 3 * ARR  # [ARR] liberties of the chain, valid at its head
NSTONES = 4 * ARR  # [ARR] stones of the chain, valid at its head
EPOS = 5 * ARR  # [ARR] index of an empty point in the empty list
ELIST = 6 * ARR  # [MAX_POINTS] the empty points
MARK = ELIST + MAX_POINTS  # [ARR] scratch marks for de-duplication, compared against M_STAMP
META = MARK + ARR
M_XSIZE = META + 0
M_YSIZE = META + 1
M_KO = META + 2  # simple-ko banned point or NO_LOC
M_NEMPTY = META + 3
M_HASH_LO = META + 4
M_HASH_HI = META + 5
M_CAPS_BLACK = META + 6  # stones captured by black (white stones removed)
M_CAPS_WHITE = META + 7
M_STAMP = META + 8
BOARD_LEN = META + 16

# --- Zobrist keys --------------------------------------------------------------------------------
# Fixed seed: hashes are stable across processes and machines, so they can be stored and compared.
_rng = np.random.Generator(np.random.PCG64(0x5E17E))
ZOBRIST = _rng.integers(-(2**63), 2**63 - 1, size=(3, ARR), dtype=np.int64)
ZOBRIST_SIZE = _rng.integers(-(2**63), 2**63 - 1, size=(2, 32), dtype=np.int64)
ZOBRIST_TO_MOVE = _rng.integers(-(2**63), 2**63 - 1, size=3, dtype=np.int64)
del _rng


def new_board(x_size: int, y_size: int) -> np.ndarray:
    b = np.zeros(BOARD_LEN, dtype=np.int32)
    board_clear(b, x_size, y_size)
    return b


@njit(cache=True, inline="always", _nrt=False)
def board_end(b):
    """Where b's locations end for anything that reads or changes them: just past the wall row
    below the board (beyond it, every board of a size is alike, so a small board's work stops at a
    fraction of the per-location sections)."""
    return min((b[M_YSIZE] + 2) * STRIDE + 1, ARR)


@njit(cache=True, inline="always", _nrt=False)
def copy_board(dst, src):
    """dst[:] = src. When dst already holds a board of the same size, only what can differ is
    copied: of each per-location section the locations up to just past the wall row below the board
    (beyond it two boards of one size are alike: play never changes it), of the empty list its
    entries. A small board thus copies a fraction of the array."""
    if dst[M_XSIZE] != src[M_XSIZE] or dst[M_YSIZE] != src[M_YSIZE]:
        for k in range(BOARD_LEN):
            dst[k] = src[k]
        return
    end = board_end(src)
    for base in (COLOR, HEAD, NEXT, LIBS, NSTONES, EPOS, MARK):
        for k in range(base, base + end):
            dst[k] = src[k]
    for k in range(ELIST, ELIST + src[M_NEMPTY]):
        dst[k] = src[k]
    for k in range(META, BOARD_LEN):
        dst[k] = src[k]


@njit(cache=True, inline="always", _nrt=False)
def get_hash(b):
    return (np.int64(b[M_HASH_HI]) << 32) | (np.int64(b[M_HASH_LO]) & 0xFFFFFFFF)


@njit(cache=True, inline="always", _nrt=False)
def _set_hash(b, h):
    b[M_HASH_LO] = np.int32((h << 32) >> 32)
    b[M_HASH_HI] = np.int32(h >> 32)


@njit(cache=True, _nrt=False)
def _new_stamp(b):
    s = b[M_STAMP] + 1
    if s > 2_000_000_000:
        for i in range(ARR):
            b[MARK + i] = 0
        s = 1
    b[M_STAMP] = s
    return s


@njit(cache=True, _nrt=False)
def board_clear(b, x_size, y_size):
    """Empty board of x_size columns and y_size rows."""
    for i in range(BOARD_LEN):
        b[i] = 0
    for loc in range(ARR):
        b[COLOR + loc] = WALL
        b[HEAD + loc] = loc
        b[NEXT + loc] = loc
    n = 0
    for y in range(y_size):
        for x in range(x_size):
            loc = (y + 1) * STRIDE + x + 1
            b[COLOR + loc] = EMPTY
            b[EPOS + loc] = n
            b[ELIST + n] = loc
            n += 1
    b[M_NEMPTY] = n
    b[M_XSIZE] = x_size
    b[M_YSIZE] = y_size
    b[M_KO] = NO_LOC
    _set_hash(b, ZOBRIST_SIZE[0, x_size] ^ ZOBRIST_SIZE[1, y_size])


@njit(cache=True, inline="always", _nrt=False)
def _remove_empty(b, loc):
    i = b[EPOS + loc]
    n = b[M_NEMPTY] - 1
    last = b[ELIST + n]
    b[ELIST + i] = last
    b[EPOS + last] = i
    b[M_NEMPTY] = n


@njit(cache=True, inline="always", _nrt=False)
def _add_empty(b, loc):
    n = b[M_NEMPTY]
    b[ELIST + n] = loc
    b[EPOS + loc] = n
    b[M_NEMPTY] = n + 1


@njit(cache=True, inline="always", _nrt=False)
def chain_libs(b, loc):
    return b[LIBS + b[HEAD + loc]]


@njit(cache=True, inline="always", _nrt=False)
def is_suicide(b, loc, pla):
    """Would a stone of pla at the empty point loc have no liberties after its captures?"""
    opp = 3 - pla
    for d in range(4):
        n = loc + ADJ[d]
        c = b[COLOR + n]
        if c == EMPTY:
            return False
        if c == pla:
            if b[LIBS + b[HEAD + n]] > 1:
                return False
        elif c == opp and b[LIBS + b[HEAD + n]] == 1:
            return False
    return True


@njit(cache=True, inline="always", _nrt=False)
def is_illegal_suicide(b, loc, pla, multi_stone_suicide_legal):
    """Suicide that the rules forbid: single-stone suicide always, multi-stone unless allowed."""
    if not is_suicide(b, loc, pla):
        return False
    if not multi_stone_suicide_legal:
        return True
    for d in range(4):
        if b[COLOR + loc + ADJ[d]] == pla:
            return False
    return True


@njit(cache=True, inline="always", _nrt=False)
def is_pseudo_legal(b, loc, pla, multi_stone_suicide_legal):
    """Legal as far as this position alone can tell: empty, not the simple-ko point, no illegal suicide."""
    if loc == PASS:
        return True
    if loc <= 0 or loc >= ARR or b[COLOR + loc] != EMPTY or loc == b[M_KO]:
        return False
    return not is_illegal_suicide(b, loc, pla, multi_stone_suicide_legal)


@njit(cache=True, inline="always", _nrt=False)
def neighbour_chains(b, loc):
    """Heads of the distinct chains next to loc, padded with -1: (h0, h1, h2, h3)."""
    h0 = -1
    h1 = -1
    h2 = -1
    h3 = -1
    for d in range(4):
        n = loc + ADJ[d]
        c = b[COLOR + n]
        if c != BLACK and c != WHITE:
            continue
        hd = b[HEAD + n]
        if hd == h0 or hd == h1 or hd == h2:
            continue
        if h0 < 0:
            h0 = hd
        elif h1 < 0:
            h1 = hd
        elif h2 < 0:
            h2 = hd
        else:
            h3 = hd
    return h0, h1, h2, h3


@njit(cache=True, inline="always", _nrt=False)
def _chain_hash(b, head):
    c = b[COLOR + head]
    h = np.int64(0)
    s = head
    while True:
        h ^= ZOBRIST[c, s]
        s = b[NEXT + s]
        if s == head:
            break
    return h


@njit(cache=True, inline="always", _nrt=False)
def hash_after_move(b, loc, pla):
    """Position hash after pla plays at loc (a pseudo-legal move), without playing it."""
    h = get_hash(b)
    if loc == PASS:
        return h
    opp = 3 - pla
    h ^= ZOBRIST[pla, loc]
    captured = False
    suicide = True
    for d in range(4):
        if b[COLOR + loc + ADJ[d]] == EMPTY:
            suicide = False
    h0, h1, h2, h3 = neighbour_chains(b, loc)
    for hd in (h0, h1, h2, h3):
        if hd < 0:
            continue
        if b[COLOR + hd] == opp:
            if b[LIBS + hd] == 1:
                h ^= _chain_hash(b, hd)
                captured = True
        elif b[LIBS + hd] > 1:
            suicide = False
    if suicide and not captured:
        # Multi-stone suicide: the new stone and the friendly chains it joins all disappear.
        h ^= ZOBRIST[pla, loc]
        for hd in (h0, h1, h2, h3):
            if hd >= 0 and b[COLOR + hd] == pla:
                h ^= _chain_hash(b, hd)
    return h


@njit(cache=True, _nrt=False)
def _merge_into(b, big, small):
    """Relabel chain `small` as part of `big` and splice the circular lists (liberties: caller)."""
    s = small
    while True:
        b[HEAD + s] = big
        s = b[NEXT + s]
        if s == small:
            break
    tmp = b[NEXT + big]
    b[NEXT + big] = b[NEXT + small]
    b[NEXT + small] = tmp
    b[NSTONES + big] += b[NSTONES + small]


@njit(cache=True, _nrt=False)
def _remove_chain(b, head):
    """Take a chain off the board; its points become liberties of the chains around it."""
    c = b[COLOR + head]
    other = 3 - c
    h = get_hash(b)
    count = 0
    s = head
    while True:
        nxt = b[NEXT + s]
        b[COLOR + s] = EMPTY
        h ^= ZOBRIST[c, s]
        _add_empty(b, s)
        count += 1
        h0 = -1
        h1 = -1
        h2 = -1
        for d in range(4):
            n = s + ADJ[d]
            if b[COLOR + n] == other:
                hd = b[HEAD + n]
                if hd != h0 and hd != h1 and hd != h2:
                    b[LIBS + hd] += 1
                    if h0 < 0:
                        h0 = hd
                    elif h1 < 0:
                        h1 = hd
                    else:
                        h2 = hd
        b[HEAD + s] = s
        b[NEXT + s] = s
        s = nxt
        if s == head:
            break
    _set_hash(b, h)
    return count


@njit(cache=True, _nrt=False)
def play(b, loc, pla):
    """Play a pseudo-legal move (or PASS) for pla. Returns the number of stones removed."""
    if loc == PASS:
        b[M_KO] = NO_LOC
        return 0
    opp = 3 - pla
    _remove_empty(b, loc)
    b[COLOR + loc] = pla
    _set_hash(b, get_hash(b) ^ ZOBRIST[pla, loc])
    b[HEAD + loc] = loc
    b[NEXT + loc] = loc
    b[NSTONES + loc] = 1
    libs = 0
    for d in range(4):
        if b[COLOR + loc + ADJ[d]] == EMPTY:
            libs += 1
    b[LIBS + loc] = libs

    # loc was one liberty of each neighbouring chain.
    h0, h1, h2, h3 = neighbour_chains(b, loc)
    for hd in (h0, h1, h2, h3):
        if hd >= 0:
            b[LIBS + hd] -= 1

    # Merge the new stone with its friendly neighbours into the largest of them.
    big = loc
    for hd in (h0, h1, h2, h3):
        if hd >= 0 and b[COLOR + hd] == pla and (big == loc or b[NSTONES + hd] > b[NSTONES + big]):
            big = hd
    if big != loc:
        stamp = _new_stamp(b)
        newlibs = b[LIBS + big]
        # Liberties the smaller parts bring that `big` does not already have.
        for hd in (np.int64(loc), h0, h1, h2, h3):
            if hd < 0 or hd == big or b[COLOR + hd] != pla:
                continue
            s = hd
            while True:
                for d in range(4):
                    e = s + ADJ[d]
                    if b[COLOR + e] != EMPTY or b[MARK + e] == stamp:
                        continue
                    b[MARK + e] = stamp
                    adj_big = False
                    for d2 in range(4):
                        f = e + ADJ[d2]
                        if b[COLOR + f] == pla and b[HEAD + f] == big:
                            adj_big = True
                    if not adj_big:
                        newlibs += 1
                s = b[NEXT + s]
                if s == hd:
                    break
        for hd in (np.int64(loc), h0, h1, h2, h3):
            if hd < 0 or hd == big or b[COLOR + hd] != pla:
                continue
            _merge_into(b, big, hd)
        b[LIBS + big] = newlibs

    # Capture opponent chains left without liberties.
    ncap = 0
    cap_loc = NO_LOC
    for hd in (h0, h1, h2, h3):
        if hd >= 0 and b[COLOR + hd] == opp and b[LIBS + hd] == 0:
            ncap += _remove_chain(b, hd)
            cap_loc = hd
    mine = b[HEAD + loc]
    if ncap == 1 and b[NSTONES + mine] == 1 and b[LIBS + mine] == 1:
        b[M_KO] = cap_loc
    else:
        b[M_KO] = NO_LOC
    if pla == BLACK:
        b[M_CAPS_BLACK] += ncap
    else:
        b[M_CAPS_WHITE] += ncap

    # Multi-stone suicide (only reached when the rules allow it).
    if b[LIBS + mine] == 0:
        nself = _remove_chain(b, mine)
        if pla == BLACK:
            b[M_CAPS_WHITE] += nself
        else:
            b[M_CAPS_BLACK] += nself
        return ncap + nself
    return ncap


# --- play with undo (for short tactical reading) ----------------------------------------------------
REC_LEN = 6  # capture directions, ko point, hash lo, hash hi, captures by black, captures by white


@njit(cache=True, _nrt=False)
def play_recorded(b, loc, pla, rec):
    """play() a pseudo-legal, non-suicidal move, saving in rec[REC_LEN] what undo_recorded needs."""
    opp = 3 - pla
    dirs = 0
    for d in range(4):
        n = loc + ADJ[d]
        if b[COLOR + n] == opp and b[LIBS + b[HEAD + n]] == 1:
            dirs |= 1 << d
    rec[0] = dirs
    rec[1] = b[M_KO]
    rec[2] = b[M_HASH_LO]
    rec[3] = b[M_HASH_HI]
    rec[4] = b[M_CAPS_BLACK]
    rec[5] = b[M_CAPS_WHITE]
    play(b, loc, pla)


@njit(cache=True, _nrt=False)
def count_liberties(b, start):
    """Liberties of the chain through start, counted from its stones (not the stored count)."""
    stamp = _new_stamp(b)
    libs = 0
    cur = start
    while True:
        for d in range(4):
            e = cur + ADJ[d]
            if b[COLOR + e] == EMPTY and b[MARK + e] != stamp:
                b[MARK + e] = stamp
                libs += 1
        cur = b[NEXT + cur]
        if cur == start:
            break
    return libs


@njit(cache=True, _nrt=False)
def _relink_chain(b, start, visited):
    """Rebuild the chain through start (heads, circular list, size, liberties); its stones get
    MARK == visited."""
    c = b[COLOR + start]
    b[MARK + start] = visited
    b[HEAD + start] = start
    b[NEXT + start] = start
    size = 1
    # Depth-first over the chain, using the circular list itself as the to-do list.
    cur = start
    while True:
        for d in range(4):
            t = cur + ADJ[d]
            if b[COLOR + t] == c and b[MARK + t] != visited:
                b[MARK + t] = visited
                b[HEAD + t] = start
                b[NEXT + t] = b[NEXT + cur]
                b[NEXT + cur] = t
                size += 1
        cur = b[NEXT + cur]
        if cur == start:
            break
    b[NSTONES + start] = size
    b[LIBS + start] = count_liberties(b, start)


@njit(cache=True, _nrt=False)
def undo_recorded(b, loc, pla, rec):
    """Take back the last move, played by play_recorded: same stones, chains, liberties, hash,
    ko point and captures (chain heads and list orders may differ)."""
    opp = 3 - pla
    b[COLOR + loc] = EMPTY
    _add_empty(b, loc)
    dirs = rec[0]
    # Put the captured chains back: each was exactly the empty region now next to loc there.
    for d in range(4):
        if not (dirs >> d) & 1:
            continue
        start = loc + ADJ[d]
        if b[COLOR + start] != EMPTY:
            continue  # already refilled from another direction
        b[COLOR + start] = opp
        _remove_empty(b, start)
        b[NEXT + start] = start
        cur = start
        while True:
            for k in range(4):
                t = cur + ADJ[k]
                if b[COLOR + t] == EMPTY and t != loc:
                    b[COLOR + t] = opp
                    _remove_empty(b, t)
                    b[NEXT + t] = b[NEXT + cur]
                    b[NEXT + cur] = t
            cur = b[NEXT + cur]
            if cur == start:
                break
    # Rebuild every chain the move or its captures touched.
    stamp = _new_stamp(b)
    for d in range(4):
        n = loc + ADJ[d]
        c = b[COLOR + n]
        if (c == BLACK or c == WHITE) and b[MARK + n] != stamp:
            _relink_chain(b, n, stamp)
            # Stones of the restored chains touch the capturer's chains: rebuild those too.
            if c == opp and (dirs >> d) & 1:
                cur = n
                while True:
                    for k in range(4):
                        t = cur + ADJ[k]
                        if b[COLOR + t] == pla and b[MARK + t] != stamp:
                            _relink_chain(b, t, stamp)
                    cur = b[NEXT + cur]
                    if cur == n:
                        break
    b[M_KO] = rec[1]
    b[M_HASH_LO] = rec[2]
    b[M_HASH_HI] = rec[3]
    b[M_CAPS_BLACK] = rec[4]
    b[M_CAPS_WHITE] = rec[5]


@njit(cache=True, _nrt=False)
def rebuild(b):
    """Recompute chains, liberties, the empty list and the hash from the colours alone.

    Used after setup stones are placed. Returns the location of a chain left without
    liberties, or NO_LOC when every chain has at least one.
    """
    x_size = b[M_XSIZE]
    y_size = b[M_YSIZE]
    h = ZOBRIST_SIZE[0, x_size] ^ ZOBRIST_SIZE[1, y_size]
    n = 0
    for y in range(y_size):
        for x in range(x_size):
            loc = (y + 1) * STRIDE + x + 1
            c = b[COLOR + loc]
            if c == EMPTY:
                b[EPOS + loc] = n
                b[ELIST + n] = loc
                n += 1
            else:
                h ^= ZOBRIST[c, loc]
    b[M_NEMPTY] = n
    _set_hash(b, h)
    b[M_KO] = NO_LOC
    dead = NO_LOC
    visited = _new_stamp(b)
    for y in range(y_size):
        for x in range(x_size):
            start = (y + 1) * STRIDE + x + 1
            if b[COLOR + start] == EMPTY or b[MARK + start] == visited:
                continue
            _relink_chain(b, start, visited)
            if b[LIBS + start] == 0 and dead == NO_LOC:
                dead = start
    # Off-board and empty cells point to themselves, as after board_clear.
    for loc in range(ARR):
        if b[COLOR + loc] == EMPTY or b[COLOR + loc] == WALL:
            b[HEAD + loc] = loc
            b[NEXT + loc] = loc
    return dead


@njit(cache=True, _nrt=False)
def check_consistency(b):
    """Verify every derived field against the colours; returns an error code, 0 when consistent."""
    x_size = b[M_XSIZE]
    y_size = b[M_YSIZE]
    h = ZOBRIST_SIZE[0, x_size] ^ ZOBRIST_SIZE[1, y_size]
    nempty = 0
    for loc in range(ARR):
        x = loc % STRIDE - 1
        y = loc // STRIDE - 1
        inside = 0 <= x < x_size and 0 <= y < y_size
        c = b[COLOR + loc]
        if not inside:
            if c != WALL:
                return 1
            continue
        if c == EMPTY:
            nempty += 1
            if b[ELIST + b[EPOS + loc]] != loc:
                return 2
            continue
        if c != BLACK and c != WHITE:
            return 3
        h ^= ZOBRIST[c, loc]
        hd = b[HEAD + loc]
        if b[COLOR + hd] != c or b[HEAD + hd] != hd:
            return 4
        for d in range(4):
            n = loc + ADJ[d]
            if b[COLOR + n] == c and b[HEAD + n] != hd:
                return 5
        if hd == loc:
            size = 0
            s = loc
            while True:
                size += 1
                if size > MAX_POINTS or b[HEAD + s] != hd:
                    return 6
                s = b[NEXT + s]
                if s == loc:
                    break
            if size != b[NSTONES + loc]:
                return 7
            libs = count_liberties(b, loc)
            if libs != b[LIBS + loc] or libs == 0:
                return 8
    if nempty != b[M_NEMPTY]:
        return 9
    if h != get_hash(b):
        return 10
    return 0
