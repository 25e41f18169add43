"""Game-level rules as numba kernels: superko, passes, the button, the end of the game and its score.

A game is a board array (``common.go.board``) plus:
- ``g``: int64[G_LEN], the rules and the game's scalars (G_* below);
- ``hist``: int64[cap + 1], the ko hash of the position after each turn (index 0 is the start);
  the ko hash is the position hash, plus the side to move under situational superko and simple
  ko (whose long-cycle detection counts situations);
- ``moves``: int32[cap, MOVE_COLS], the location, the colour and the kind of each turn (MV_*);
- ``table``: int64[T], an open-addressing multiset of hist[G_HSTART..], so a superko test
  is O(1).

The behaviour follows KataGo's BoardHistory: positional superko bans recreating any board since
the start; situational bans recreating a board with the same player to move; the simple-ko point
is banned under every ko rule; the button goes to the first player to pass and its pass clears the
ko history; under simple ko a pass clears the history, a pass in a situation where that player
already passed ends the phase, and a third occurrence of a situation without a pass between ends
the game without result. Two consecutive passes end the phase.

Under area scoring the main phase is the whole game. Under territory scoring (KataGo's encore) the
end of the main phase starts encore phase 1, whose end starts encore phase 2, whose end ends the
game. In the encore phases:
- ko works as under simple ko for passes and cycles, but with ko-recapture blocks instead of the
  simple-ko point: a stone that captures a ko is blocked, and the opponent cannot retake the ko;
  their move at the recapture point, or on the blocked stone, is a "pass for ko", which leaves the
  board unchanged and lifts the block. A block goes with its stone when the stone is captured;
- a player may capture a given ko from a given position only once in a phase;
- the second phase records the stones on the board at its start: at the end only those still
  standing count as points for their colour (a stone placed in the second phase counts nothing).
Territory counting is area counting "chilled": every stone played in the main phase or the first
encore gives the opponent a point (``G_WBONUS2``), which makes the area count equal territory plus
captures. The score counts territory as KataGo does: pass-alive and (with tax NONE) other owned
regions, under seki and group tax only regions of independent life.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from common.go.area import (
    TAX_ALL,
    TAX_NONE,
    all_pass_alive,
    area_score_ws,
    independent_life_area_ws,
    new_area_workspace,
)
from common.go.board import (
    COLOR,
    HEAD,
    LIBS,
    M_CAPS_BLACK,
    M_CAPS_WHITE,
    M_KO,
    M_NEMPTY,
    M_XSIZE,
    M_YSIZE,
    NSTONES,
    ZOBRIST_TO_MOVE,
    board_clear,
    get_hash,
    hash_after_move,
    is_pseudo_legal,
    play,
)
from common.go.geometry import ADJ, ARR, BLACK, EMPTY, NO_LOC, PASS, STRIDE, WALL, WHITE


class Position(NamedTuple):
    """A game's arrays as the kernels take them (see the module docstring)."""

    g: np.ndarray  # int64[G_LEN]
    b: np.ndarray  # int32[BOARD_LEN]
    hist: np.ndarray  # int64[cap + 1]
    moves: np.ndarray  # int32[cap, MOVE_COLS]
    table: np.ndarray  # int64[T]


SCORING_AREA = 0
SCORING_TERRITORY = 1

KO_SIMPLE = 0
KO_POSITIONAL = 1
KO_SITUATIONAL = 2

WHB_ZERO = 0
WHB_N = 1
WHB_N_MINUS_ONE = 2

END_NONE = 0
END_PASSES = 1  # two consecutive passes
END_REPEATED_PASS = 2  # simple ko: a player passed again in a situation where they had passed
END_CYCLE = 3  # simple ko: a situation occurred three times; no result
END_ALL_PASS_ALIVE = 4  # every point pass-alive or pass-alive territory
END_RESIGNATION = 5
END_MOVE_LIMIT = 6  # no result

# --- layout of g ---------------------------------------------------------------------------------
G_KO_RULE = 0
G_SUICIDE = 1  # multi-stone suicide legal
G_TAX = 2
G_BUTTON_RULE = 3
G_WHB = 4
G_KOMI2 = 5  # komi in half points
G_TO_MOVE = 6
G_NMOVES = 7
G_HSTART = 8  # first index of hist that counts as ko history
G_PSTART = 9  # first turn whose passes count for the repeated-pass ending
G_PASSES = 10  # consecutive game-ending passes
G_BUTTON = 11  # 1 while the button has not been taken
G_WBONUS2 = 12  # white's button bonus in half points
G_HANDICAP = 13  # handicap stones on the initial board
G_OVER = 14
G_NO_RESULT = 15
G_WINNER = 16  # BLACK, WHITE, or 0 for a draw or no result
G_SCORE2 = 17  # final white-minus-black score in half points, when scored
G_END = 18  # END_* reason
G_SCORED = 19  # 1 once a finished game's score is in G_SCORE2 (see game_finish)
G_RECENT = 20  # recent turns that count as the network's move history (KataGo's "valid turns")
G_MIN_EMPTY = 21  # fewest empty points of a position in the ko history (hist[G_HSTART..])
G_SCORING = 22  # SCORING_AREA or SCORING_TERRITORY
G_ENCORE = 23  # 0 in the main phase; 1 or 2 in an encore phase (territory scoring)
G_PHASE_START = 24  # first turn of the current phase
G_KRB = 25  # hash of the ko-recapture blocks (0 when there are none)
G_NBLOCKS = 26  # ko-recapture-blocked stones
G_KOCAPS = 27  # ko captures in this encore phase (turns of kind KIND_KO_CAPTURE)
BITSET_WORDS = (ARR + 63) // 64  # one bit per location
G_BLOCKED = 28  # [BITSET_WORDS] the ko-recapture-blocked stones
G_BANNED = G_BLOCKED + BITSET_WORDS  # [BITSET_WORDS] encore: ko captures the side to move made here before
G_E2_BLACK = G_BANNED + BITSET_WORDS  # [BITSET_WORDS] black stones at the start of encore phase 2
G_E2_WHITE = G_E2_BLACK + BITSET_WORDS  # [BITSET_WORDS] white stones at the start of encore phase 2
G_LEN = G_E2_WHITE + BITSET_WORDS

# --- columns of moves ----------------------------------------------------------------------------
MV_LOC = 0
MV_COLOR = 1
MV_KIND = 2  # KIND_*
MV_HASH_LO = 3  # of a ko capture in the encore: the position hash before it (low, high 32 bits)
MV_HASH_HI = 4
MOVE_COLS = 5
KIND_PLAY = 0  # a move or a pass
KIND_KO_CAPTURE = 1  # a ko capture in an encore phase (its stone is then recapture-blocked)
KIND_PASS_FOR_KO = 2  # an encore move at a blocked ko: the board stays, the block goes

# Keys of the ko-recapture blocks' hash (own generator: the board's keys stay as they were).
_rng = np.random.Generator(np.random.PCG64(0xE2C0))
ZOBRIST_KO_BLOCK = _rng.integers(-(2**63), 2**63 - 1, size=ARR, dtype=np.int64)
del _rng


def new_table(cap: int) -> np.ndarray:
    """An empty multiset for a history of up to cap turns (load factor at most one half)."""
    size = 64
    while size < 2 * (cap + 1):
        size *= 2
    return np.zeros(size + size // 64, dtype=np.int64)


# --- hash multiset -------------------------------------------------------------------------------
# Linear probing over int64 keys, 0 marking an empty slot (a hash of 0 is stored as 1); each
# occurrence of a hash takes its own slot, so counting walks the probe chain. Entries are only
# ever removed newest first, which leaves the table exactly as before their insertion.
# The array holds P slots (P a power of two) followed by P / 64 words with one occupancy bit per
# slot. Nearly every lookup is of an absent hash (the superko test of each empty point, when the
# legal moves are listed or encoded), and its start slot is then empty: the bit answers from a few
# hundred bytes that stay in the first-level cache, where the slot would be a miss in a table sized
# for the longest game.
@njit(cache=True, inline="always", _nrt=False)
def _key(h):
    return h if h != 0 else np.int64(1)


@njit(cache=True, inline="always", _nrt=False)
def _slots(table):
    return table.shape[0] // 65 * 64


@njit(cache=True, inline="always", _nrt=False)
def _start(table, k):
    return (k ^ (k >> 29)) & (_slots(table) - 1)


@njit(cache=True, inline="always", _nrt=False)
def _occupied(table, i):
    return (table[_slots(table) + (i >> 6)] >> (i & 63)) & 1 != 0


@njit(cache=True, inline="always", _nrt=False)
def _put(table, i, k):
    table[i] = k
    table[_slots(table) + (i >> 6)] |= np.int64(1) << (i & 63)


@njit(cache=True, inline="always", _nrt=False)
def _free(table, i):
    table[i] = 0
    table[_slots(table) + (i >> 6)] &= ~(np.int64(1) << (i & 63))


@njit(cache=True, _nrt=False)
def table_clear(table):
    for i in range(table.shape[0]):
        table[i] = 0


@njit(cache=True, inline="always", _nrt=False)
def _scan(table, k):
    """Walk k's probe chain: (the first free slot after it, how many times k occurs)."""
    mask = _slots(table) - 1
    i = _start(table, k)
    count = 0
    while table[i] != 0:
        if table[i] == k:
            count += 1
        i = (i + 1) & mask
    return i, count


@njit(cache=True, inline="always", _nrt=False)
def table_add(table, h):
    """Add one occurrence of h; returns how many there are now."""
    k = _key(h)
    free, count = _scan(table, k)
    _put(table, free, k)
    return count + 1


@njit(cache=True, inline="always", _nrt=False)
def table_contains(table, h):
    k = _key(h)
    i = _start(table, k)
    if not _occupied(table, i):
        return False
    mask = _slots(table) - 1
    while table[i] != 0:
        if table[i] == k:
            return True
        i = (i + 1) & mask
    return False


@njit(cache=True, _nrt=False)
def _remove_newest(table, h):
    k = _key(h)
    mask = _slots(table) - 1
    i = _start(table, k)
    last = -1
    while table[i] != 0:
        if table[i] == k:
            last = i
        i = (i + 1) & mask
    if last >= 0:
        _free(table, last)


@njit(cache=True, _nrt=False)
def table_remove_history(g, hist, table):
    """Empty the table by removing hist[G_HSTART..G_NMOVES] newest first: O(history)."""
    for i in range(g[G_NMOVES], g[G_HSTART] - 1, -1):
        _remove_newest(table, hist[i])


@njit(cache=True, _nrt=False)
def table_restore(g_before, hist, table, n_after, hstart_after):
    """Put the table back as it was for game state g_before after play went on from it to n_after
    turns with the history starting at hstart_after: the positions those turns added are removed
    newest first, or, if a turn cleared the history, the table is rebuilt. The turns before
    g_before's end (hist[..G_NMOVES]) must be unchanged."""
    if hstart_after == g_before[G_HSTART]:
        for i in range(n_after, g_before[G_NMOVES], -1):
            _remove_newest(table, hist[i])
    else:
        table_rebuild(g_before, hist, table)


@njit(cache=True, _nrt=False)
def table_rebuild(g, hist, table):
    table_clear(table)
    for i in range(g[G_HSTART], g[G_NMOVES] + 1):
        table_add(table, hist[i])


# --- the game ------------------------------------------------------------------------------------
@njit(cache=True, inline="always", _nrt=False)
def ko_hash(g, b, to_move):
    h = get_hash(b) ^ g[G_KRB]
    if g[G_KO_RULE] != KO_POSITIONAL or g[G_ENCORE] > 0:
        h ^= ZOBRIST_TO_MOVE[to_move]
    return h


# --- bitsets in g --------------------------------------------------------------------------------
@njit(cache=True, inline="always", _nrt=False)
def has_bit(g, base, loc):
    return (g[base + (loc >> 6)] >> (loc & 63)) & 1 != 0


@njit(cache=True, inline="always", _nrt=False)
def _set_bit(g, base, loc):
    g[base + (loc >> 6)] |= np.int64(1) << (loc & 63)


@njit(cache=True, inline="always", _nrt=False)
def _clear_bit(g, base, loc):
    g[base + (loc >> 6)] &= ~(np.int64(1) << (loc & 63))


@njit(cache=True, inline="always", _nrt=False)
def _clear_bits(g, base):
    for w in range(BITSET_WORDS):
        g[base + w] = 0


@njit(cache=True, inline="always", _nrt=False)
def _unblock(g, loc):
    _clear_bit(g, G_BLOCKED, loc)
    g[G_KRB] ^= ZOBRIST_KO_BLOCK[loc]
    g[G_NBLOCKS] -= 1


@njit(cache=True, inline="always", _nrt=False)
def _clear_blocks(g):
    _clear_bits(g, G_BLOCKED)
    g[G_KRB] = 0
    g[G_NBLOCKS] = 0


# --- the encore's ko rules -----------------------------------------------------------------------
@njit(cache=True, inline="always", _nrt=False)
def ko_capture_loc(b, loc, pla):
    """The single opponent stone pla would capture in a ko shape by playing at the empty point loc
    (every neighbour an opponent stone or the edge, exactly one of them in atari, alone), else NO_LOC."""
    if b[COLOR + loc] != EMPTY:
        return NO_LOC
    opp = 3 - pla
    found = NO_LOC
    for d in range(4):
        n = loc + ADJ[d]
        c = b[COLOR + n]
        if c != WALL and c != opp:
            return NO_LOC
        if c == opp and b[LIBS + b[HEAD + n]] == 1:
            if found != NO_LOC:
                return NO_LOC
            found = n
    if found == NO_LOC or b[NSTONES + b[HEAD + found]] != 1:
        return NO_LOC
    return found


@njit(cache=True, inline="always", _nrt=False)
def pass_for_ko_target(g, b, loc, pla):
    """In an encore phase, the blocked stone a move of pla at loc would pass for (the move is on it,
    alone and in atari, or at the point that would capture it), else NO_LOC."""
    if g[G_NBLOCKS] == 0 or loc == PASS:
        return NO_LOC
    opp = 3 - pla
    if b[COLOR + loc] == opp:
        if has_bit(g, G_BLOCKED, loc) and b[NSTONES + b[HEAD + loc]] == 1 and b[LIBS + b[HEAD + loc]] == 1:
            return loc
        return NO_LOC
    k = ko_capture_loc(b, loc, pla)
    if k != NO_LOC and has_bit(g, G_BLOCKED, k):
        return k
    return NO_LOC


@njit(cache=True, _nrt=False)
def _mark_encore_bans(g, b, moves, n, pla):
    """G_BANNED: the points where pla captured a ko before, in this phase, from this position."""
    _clear_bits(g, G_BANNED)
    if g[G_KOCAPS] == 0:
        return
    h = get_hash(b)
    lo = np.int32((h << 32) >> 32)
    hi = np.int32(h >> 32)
    for i in range(g[G_PHASE_START], n):
        if (
            moves[i, MV_KIND] == KIND_KO_CAPTURE
            and moves[i, MV_COLOR] == pla
            and moves[i, MV_HASH_LO] == lo
            and moves[i, MV_HASH_HI] == hi
        ):
            _set_bit(g, G_BANNED, moves[i, MV_LOC])


@njit(cache=True, _nrt=False)
def _mark_second_encore_stones(g, b):
    """G_E2_BLACK/G_E2_WHITE: the stones on the board as the second encore phase starts."""
    _clear_bits(g, G_E2_BLACK)
    _clear_bits(g, G_E2_WHITE)
    for y in range(b[M_YSIZE]):
        for x in range(b[M_XSIZE]):
            loc = (y + 1) * STRIDE + x + 1
            c = b[COLOR + loc]
            if c == BLACK:
                _set_bit(g, G_E2_BLACK, loc)
            elif c == WHITE:
                _set_bit(g, G_E2_WHITE, loc)


@njit(cache=True, _nrt=False)
def game_start(g, b, hist, table, to_move, encore):
    """Start the game's history from the current position with to_move to play, in the main phase
    (encore 0) or, under territory scoring, in encore phase 1 or 2 (as KataGo's cleanup training
    starts a game: the stones on the board then are the second phase's starting stones)."""
    table_remove_history(g, hist, table)
    g[G_TO_MOVE] = to_move
    g[G_NMOVES] = 0
    g[G_HSTART] = 0
    g[G_PSTART] = 0
    g[G_PASSES] = 0
    g[G_BUTTON] = g[G_BUTTON_RULE] if encore == 0 else 0
    g[G_WBONUS2] = 0
    _clear_end(g)
    g[G_RECENT] = 0
    g[G_ENCORE] = encore
    g[G_PHASE_START] = 0
    g[G_KOCAPS] = 0
    _clear_blocks(g)
    _clear_bits(g, G_BANNED)
    _clear_bits(g, G_E2_BLACK)
    _clear_bits(g, G_E2_WHITE)
    if encore == 2:
        _mark_second_encore_stones(g, b)
    if g[G_SCORING] == SCORING_TERRITORY:
        # The stones already on the board were played: each gives the opponent a point, as do the
        # stones captured before (white's captured stones were white moves, and so on).
        for y in range(b[M_YSIZE]):
            for x in range(b[M_XSIZE]):
                c = b[COLOR + (y + 1) * STRIDE + x + 1]
                g[G_WBONUS2] += 2 if c == BLACK else (-2 if c == WHITE else 0)
        g[G_WBONUS2] -= 2 * (b[M_CAPS_BLACK] - b[M_CAPS_WHITE])
    hist[0] = ko_hash(g, b, to_move)
    table_add(table, hist[0])
    g[G_MIN_EMPTY] = b[M_NEMPTY]


@njit(cache=True, _nrt=False)
def game_new(g, b, hist, table, x_size, y_size):
    """Reuse a game's arrays for a new game on an empty board, black to move, same rules."""
    board_clear(b, x_size, y_size)
    g[G_HANDICAP] = 0
    game_start(g, b, hist, table, BLACK, 0)


@njit(cache=True, inline="always", _nrt=False)
def is_legal(g, b, table, loc, pla):
    """Is loc (or PASS) a legal move for pla now, superko included?"""
    if loc == PASS:
        return True
    if g[G_ENCORE] > 0:
        return _is_legal_encore(g, b, loc, pla)
    if not is_pseudo_legal(b, loc, pla, g[G_SUICIDE] != 0):
        return False
    if g[G_KO_RULE] != KO_SIMPLE:
        h = hash_after_move(b, loc, pla)
        if g[G_KO_RULE] == KO_SITUATIONAL:
            h ^= ZOBRIST_TO_MOVE[3 - pla]
        if table_contains(table, h):
            return False
    return True


@njit(cache=True, _nrt=False)
def _is_legal_encore(g, b, loc, pla):
    """is_legal in an encore phase, for a point on the board or off it."""
    if not is_pseudo_legal(b, loc, pla, g[G_SUICIDE] != 0):
        # A move on a blocked stone is a pass for ko.
        return 0 < loc < ARR and pass_for_ko_target(g, b, loc, pla) != NO_LOC
    return not has_bit(g, G_BANNED, loc) or pass_for_ko_target(g, b, loc, pla) != NO_LOC


@njit(cache=True, _nrt=False)
def handicap_bonus(g):
    n = g[G_HANDICAP]
    if g[G_WHB] == WHB_N:
        return n
    if g[G_WHB] == WHB_N_MINUS_ONE:
        return n - 1 if n > 1 else 0
    return 0


@njit(cache=True, _nrt=False)
def territory_board_score_ws(g, b, result, ws):
    """White-minus-black territory count of the board (before komi, bonuses and the points the
    stones played give: see G_WBONUS2); result gets the points counted for each player.

    Owned regions count (with tax NONE every owned region, else only regions of independent life);
    a stone not in the opponent's count counts for its colour unless the second encore phase
    began without it there."""
    tax = g[G_TAX]
    regions = independent_life_area_ws(b, False, g[G_SUICIDE] != 0, result, ws, tax == TAX_NONE)
    e2 = g[G_ENCORE] >= 2
    score = np.int64(0)
    for y in range(b[M_YSIZE]):
        for x in range(b[M_XSIZE]):
            loc = (y + 1) * STRIDE + x + 1
            o = result[loc]
            if o == WHITE:
                score += 1
            elif o == BLACK:
                score -= 1
            else:
                c = b[COLOR + loc]
                if c == WHITE and (not e2 or has_bit(g, G_E2_WHITE, loc)):
                    score += 1
                    result[loc] = WHITE
                elif c == BLACK and (not e2 or has_bit(g, G_E2_BLACK, loc)):
                    score -= 1
                    result[loc] = BLACK
    if tax == TAX_ALL:
        score -= 2 * regions
    return score


@njit(cache=True, _nrt=False)
def final_score2_ws(g, b, result, ws):
    """White-minus-black score in half points, komi and bonuses included; result gets the owners
    (ws: an area workspace).

    A territory game ended because every point is pass-alive is counted by area, as KataGo does
    (with the stones' points in G_WBONUS2 that is the same count), except under the group tax."""
    if g[G_SCORING] == SCORING_TERRITORY and not (g[G_END] == END_ALL_PASS_ALIVE and g[G_TAX] != TAX_ALL):
        board = territory_board_score_ws(g, b, result, ws)
    else:
        board = area_score_ws(b, g[G_TAX], g[G_SUICIDE] != 0, result, ws)
    return 2 * board + g[G_KOMI2] + g[G_WBONUS2] + 2 * handicap_bonus(g)


@njit(cache=True)
def final_score2(g, b, result):
    return final_score2_ws(g, b, result, new_area_workspace())


@njit(cache=True, _nrt=False)
def game_finish_ws(g, b, result, ws):
    """Score a game that has ended and is not scored yet (no-op otherwise); result and ws are
    working memory (owners, area workspace).

    Kept out of game_play so that the per-move kernel stays small: callers run it once the
    game is over.
    """
    if g[G_OVER] == 0 or g[G_NO_RESULT] != 0 or g[G_SCORED] != 0:
        return
    if g[G_BUTTON] != 0:
        # Nobody took the button: it goes to the player to move.
        g[G_BUTTON] = 0
        g[G_WBONUS2] += 1 if g[G_TO_MOVE] == WHITE else -1
    s = final_score2_ws(g, b, result, ws)
    g[G_SCORE2] = s
    g[G_WINNER] = WHITE if s > 0 else (BLACK if s < 0 else 0)
    g[G_SCORED] = 1


@njit(cache=True)
def game_finish(g, b):
    """game_finish_ws with working memory of its own."""
    game_finish_ws(g, b, np.empty(ARR, dtype=np.int8), new_area_workspace())


@njit(cache=True, inline="always", _nrt=False)
def _clear_end(g):
    """The game is not over (again): no end, result or score."""
    g[G_OVER] = 0
    g[G_NO_RESULT] = 0
    g[G_WINNER] = 0
    g[G_SCORE2] = 0
    g[G_SCORED] = 0
    g[G_END] = END_NONE


@njit(cache=True, inline="always", _nrt=False)
def _end(g, reason, no_result):
    g[G_OVER] = 1
    g[G_NO_RESULT] = no_result
    g[G_WINNER] = 0
    g[G_SCORE2] = 0
    g[G_SCORED] = 0
    g[G_END] = reason


@njit(cache=True)
def end_and_score(g, b, reason):
    _end(g, reason, 0)
    game_finish(g, b)


@njit(cache=True, inline="always", _nrt=False)
def end_without_result(g, reason):
    _end(g, reason, 1)


@njit(cache=True, inline="always", _nrt=False)
def passes_clear_history(g):
    """Does a pass clear the ko history (simple ko and the encore phases; then a repeated pass
    ends the phase and a third occurrence of a situation ends the game without result)?"""
    return g[G_KO_RULE] == KO_SIMPLE or g[G_ENCORE] > 0


@njit(cache=True, inline="always", _nrt=False)
def passed_here_before(g, hist, moves, pla):
    """Did pla pass before in the current situation, since the turn passes last started to count
    (G_PSTART)? Where passes clear the ko history such a pass ends the phase."""
    n = g[G_NMOVES]
    now = hist[n]
    for i in range(g[G_PSTART], n):
        if moves[i, MV_LOC] == PASS and moves[i, MV_COLOR] == pla and hist[i] == now:
            return True
    return False


@njit(cache=True, _nrt=False)
def game_play(g, b, hist, moves, table, loc, pla):
    """Play a legal move (or PASS) for pla and update the history, the phase and the game's end.

    The caller checks legality and that hist and moves have room for one more turn, and calls
    game_finish once the game is over to score it.
    """
    if g[G_SCORING] != SCORING_AREA:
        _territory_turn(g, b, hist, moves, table, loc, pla)
        return
    repeated_pass = _begin_turn(g, hist, moves, table, loc, pla)
    play(b, loc, pla)
    occurrences = _record_turn(g, b, hist, moves, table, loc, pla, KIND_PLAY)
    if g[G_PASSES] >= 2 or repeated_pass:
        _end_by_passes(g)
    elif loc != PASS and g[G_KO_RULE] == KO_SIMPLE and occurrences >= 3:
        end_without_result(g, END_CYCLE)


@njit(cache=True, _nrt=False)
def _territory_turn(g, b, hist, moves, table, loc, pla):
    """game_play under territory scoring: the end of the main phase or of encore phase 1 starts the
    next phase, the end of encore phase 2 ends the game."""
    n = g[G_NMOVES]
    encore = g[G_ENCORE]
    repeated_pass = _begin_turn(g, hist, moves, table, loc, pla)
    if encore > 0:
        kind = _encore_move(g, b, moves, n, loc, pla)
    else:
        kind = KIND_PLAY
        play(b, loc, pla)
        if loc != PASS:
            # Every stone played gives the opponent a point (chilled counting: see the top).
            g[G_WBONUS2] += 2 if pla == BLACK else -2
    occurrences = _record_turn(g, b, hist, moves, table, loc, pla, kind)
    if encore > 0:
        _mark_encore_bans(g, b, moves, n + 1, 3 - pla)
    if g[G_PASSES] >= 2 or repeated_pass:
        if encore >= 2:
            _end_by_passes(g)
        else:
            _next_phase(g, b, hist, table, n + 1, 3 - pla)
    elif loc != PASS and passes_clear_history(g) and occurrences >= 3:
        end_without_result(g, END_CYCLE)


@njit(cache=True, inline="always", _nrt=False)
def _begin_turn(g, hist, moves, table, loc, pla):
    """The history's part of a turn before the board changes: a move resets the passes; a pass
    takes the button, or counts, clearing the ko history where passes do. Returns whether the turn
    is a repeated pass (see passed_here_before)."""
    n = g[G_NMOVES]
    if g[G_OVER] != 0:
        # Play goes on after the end: of the history only the move that ended the game counts.
        g[G_RECENT] = min(g[G_RECENT], 1)
        _clear_end(g)
    g[G_RECENT] += 1
    if loc != PASS:
        g[G_PASSES] = 0
        return False
    if g[G_BUTTON] != 0:
        g[G_BUTTON] = 0
        g[G_WBONUS2] += 1 if pla == WHITE else -1
        g[G_PASSES] = 0
        # Taking the button clears the ko history: a buttonless position is a new position.
        table_remove_history(g, hist, table)
        g[G_HSTART] = n + 1
        g[G_PSTART] = n + 1
        return False
    repeated_pass = False
    if passes_clear_history(g):
        repeated_pass = passed_here_before(g, hist, moves, pla)
        table_remove_history(g, hist, table)
        g[G_HSTART] = n + 1
    g[G_PASSES] += 1
    return repeated_pass


@njit(cache=True, inline="always", _nrt=False)
def _record_turn(g, b, hist, moves, table, loc, pla, kind):
    """The history's part of a turn after the board changed: the turn, the new situation and its
    count in the ko history, which is returned."""
    n = g[G_NMOVES]
    opp = 3 - pla
    after = ko_hash(g, b, opp)
    hist[n + 1] = after
    moves[n, MV_LOC] = loc
    moves[n, MV_COLOR] = pla
    moves[n, MV_KIND] = kind
    g[G_NMOVES] = n + 1
    g[G_TO_MOVE] = opp
    occurrences = table_add(table, after)
    nempty = b[M_NEMPTY]
    g[G_MIN_EMPTY] = nempty if g[G_HSTART] == n + 1 else min(g[G_MIN_EMPTY], nempty)
    return occurrences


@njit(cache=True, inline="always", _nrt=False)
def _end_by_passes(g):
    _end(g, END_PASSES if g[G_PASSES] >= 2 else END_REPEATED_PASS, 0)


@njit(cache=True, _nrt=False)
def _encore_move(g, b, moves, n, loc, pla):
    """The board's part of turn n in an encore phase: a pass for ko (the board stays, the block
    goes) or a move or pass, a ko capture blocking its stone; blocks go with captured stones. Returns
    the turn's kind (KIND_*); a ko capture's turn gets the position hash before it."""
    target = pass_for_ko_target(g, b, loc, pla)
    if target != NO_LOC:
        _unblock(g, target)
        b[M_KO] = NO_LOC
        return KIND_PASS_FOR_KO
    kind = KIND_PLAY
    before = get_hash(b)
    play(b, loc, pla)
    if b[M_KO] != NO_LOC:
        # A ko capture: its stone is blocked from recapture instead of the ko point.
        kind = KIND_KO_CAPTURE
        moves[n, MV_HASH_LO] = np.int32((before << 32) >> 32)
        moves[n, MV_HASH_HI] = np.int32(before >> 32)
        _set_bit(g, G_BLOCKED, loc)
        g[G_KRB] ^= ZOBRIST_KO_BLOCK[loc]
        g[G_NBLOCKS] += 1
        g[G_KOCAPS] += 1
        b[M_KO] = NO_LOC
    if g[G_NBLOCKS] != 0:
        # A block goes with its stone.
        for y in range(b[M_YSIZE]):
            for x in range(b[M_XSIZE]):
                at = (y + 1) * STRIDE + x + 1
                if b[COLOR + at] == EMPTY and has_bit(g, G_BLOCKED, at):
                    _unblock(g, at)
    if g[G_ENCORE] == 1 and loc != PASS:
        # Stones played in the first encore give the opponent a point, as in the main phase.
        g[G_WBONUS2] += 2 if pla == BLACK else -2
    return kind


@njit(cache=True, _nrt=False)
def _next_phase(g, b, hist, table, start, to_move):
    """Start the next encore phase at turn start (the turn after the pass that ended the last)."""
    encore = g[G_ENCORE] + 1
    g[G_ENCORE] = encore
    g[G_PHASE_START] = start
    g[G_RECENT] = 0
    if encore == 2:
        _mark_second_encore_stones(g, b)
    g[G_PASSES] = 0
    g[G_PSTART] = start
    g[G_KOCAPS] = 0
    _clear_blocks(g)
    _clear_bits(g, G_BANNED)
    table_remove_history(g, hist, table)
    g[G_HSTART] = start
    hist[start] = ko_hash(g, b, to_move)
    table_add(table, hist[start])
    g[G_MIN_EMPTY] = b[M_NEMPTY]


@njit(cache=True)
def end_if_all_pass_alive(g, b):
    """End and score the game when every point is pass-alive or pass-alive territory."""
    if all_pass_alive(b, g[G_SUICIDE] != 0):
        end_and_score(g, b, END_ALL_PASS_ALIVE)
        return True
    return False
