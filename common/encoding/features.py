"""KataGo's network inputs, version 7: 22 spatial planes and 19 global values per position.

Spatial planes (side to move "own", the other "opp"; a board smaller than 19x19 sits in the
top-left corner of the 19x19 grid, position ``y * 19 + x``):

 0 on board              1 own stone            2 opp stone
 3-5 chain has 1, 2, 3 liberties
 6 ko or superko banned for the side to move (in the encore: ko captures it made here before)
 7 encore: ko-recapture-blocked stones          8 unused (zero)
 9-13 the last five moves (most recent first)
14 stones in a chain capturable by ladder now   15, 16 the same one and two turns ago
17 moves that start a working ladder on an opp chain with two liberties
18, 19 own and opp area (KataGo's scoring area; under seki/group tax, independent life; under
       territory scoring only in the second encore phase, as that phase's count would score it)
20, 21 own and opp stones at the start of the second encore phase

Global values: 0-4 the last five moves were passes; 5 komi from the side to move / 20 (with the
points played stones gave under territory scoring); 6, 7 ko rule (simple 0,0; positional 1,0.5;
situational 1,-0.5); 8 multi-stone suicide legal; 9 territory scoring; 10, 11 tax seki (1,0) /
all (1,1); 12, 13 encore phase > 0, > 1; 14 a pass would end the phase; 15, 16 playout doubling
advantage; 17 the button is still on the table; 18 the komi parity wave (under territory scoring
only in the second encore phase).

History (moves, their ladders, pass flags) reaches back at most five turns, one once the game is
over, none before the first move of an encore phase; after play goes on past an end only the
ending move and later ones count (KataGo's "valid turns"); and it stops where moves do not
alternate colours back from the side to move.

``fill_row_at`` is the numba kernel over a position's arrays (``gamestate.Position``), writing
straight into a crop of the grid under a symmetry (the search calls it for every leaf, with the
history's ladder planes kept from the ancestors); ``Encoder.encode`` fills a batch from ``Game``
objects.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numba import njit

from common.encoding.ladders import W_SOLVED, ladder_captured, ladder_captured_attacker_first, new_buf
from common.go import gamestate as gs
from common.go.area import TAX_ALL, TAX_NONE, area_ws, independent_life_area_ws, new_area_workspace
from common.go.board import (
    COLOR,
    HEAD,
    LIBS,
    M_KO,
    M_NEMPTY,
    M_XSIZE,
    M_YSIZE,
    ZOBRIST,
    ZOBRIST_TO_MOVE,
    get_hash,
    is_pseudo_legal,
)
from common.go.game import Game
from common.go.geometry import ADJ, ARR, BLACK, EMPTY, NO_LOC, PASS, STRIDE, WHITE

NUM_SPATIAL = 22
NUM_GLOBAL = 19
NN_LEN = 19
NN_AREA = NN_LEN * NN_LEN  # the network's grid: smaller boards sit in its top-left corner
POLICY_LEN = NN_AREA + 1  # board points, then pass
# A playout doubling advantage (global inputs 15-16) is a multiple of 1 / PDA_STEPS: exact in the
# float32 inputs, in JSON and as a whole number in a position's key.
PDA_STEPS = 1024


@njit(cache=True, inline="always", _nrt=False)
def player_pda(pda_black, pla):
    """The playout doubling advantage the network is told for pla's positions, from black's
    (white's is its opposite)."""
    return pda_black if pla == BLACK else -pda_black


@njit(cache=True, inline="always", _nrt=False)
def _pos(loc):
    return (loc // STRIDE - 1) * NN_LEN + (loc % STRIDE - 1)


@njit(cache=True, _nrt=False)
def _ladder_planes(b, plane, working_plane, opp, spatial, buf, work):
    """KataGo's iterLadders: mark every stone of a chain with 1 or 2 liberties that a ladder
    captures in `plane`; if working_plane >= 0, mark in it the attacker's working first moves
    against opp chains with 2 liberties."""
    x_size = b[M_XSIZE]
    y_size = b[M_YSIZE]
    # buf[W_SOLVED:] holds the stones of chains with one or two liberties (gathered without
    # branching on the board), then each chain's result by its head, as stamp * 2 + captured, then
    # the stamp of this call. The searches leave every chain head as it was.
    memo = W_SOLVED + NN_AREA
    stamp = buf[memo + ARR] + 1
    buf[memo + ARR] = stamp
    n = 0
    for y in range(y_size):
        for x in range(x_size):
            loc = (y + 1) * STRIDE + x + 1
            c = b[COLOR + loc]
            libs = b[LIBS + b[HEAD + loc]]
            buf[W_SOLVED + n] = loc
            n += ((c == BLACK) | (c == WHITE)) & ((libs == 1) | (libs == 2))
    for i in range(n):
        loc = buf[W_SOLVED + i]
        head = b[HEAD + loc]
        v = buf[memo + head]
        if v >> 1 != stamp:
            if b[LIBS + head] == 1:
                laddered = ladder_captured(b, loc, True, buf)
            else:
                nwork = ladder_captured_attacker_first(b, loc, buf, work)
                laddered = nwork > 0
                if working_plane >= 0 and b[COLOR + loc] == opp:
                    for k in range(nwork):
                        spatial[working_plane, _pos(work[k])] = 1.0
            v = stamp * 2 + (1 if laddered else 0)
            buf[memo + head] = v
        if v & 1:
            spatial[plane, _pos(loc)] = 1.0


@njit(cache=True, inline="always", _nrt=False)
def _quiet_point(b, loc, opp):
    """Does the empty point loc have an empty neighbour and no opp chain in atari next to it?
    A move there is then legal by the position alone (no suicide) and captures nothing."""
    empty = False
    atari = False
    for d in range(4):
        n = loc + ADJ[d]
        c = b[COLOR + n]
        empty |= c == EMPTY
        atari |= (c == opp) and b[LIBS + b[HEAD + n]] == 1
    return empty and not atari


@njit(cache=True, _nrt=False)
def pass_would_end_phase(g, hist, moves, pla):
    """Would a pass by pla now end the phase (two passes, or a repeated pass where passes clear the
    ko history: simple ko, the encore)? Under area scoring the phase is the game, and under
    territory scoring the second encore phase is the last."""
    if g[gs.G_BUTTON] != 0:
        return False  # that pass would take the button
    if g[gs.G_PASSES] + 1 >= 2:
        return True
    return gs.passes_clear_history(g) and gs.passed_here_before(g, hist, moves, pla)


@njit(cache=True, _nrt=False)
def ladder_plane(b, out, scratch):
    """out[361] (uint8, y * 19 + x): 1 on the stones of chains a ladder captures (plane 14)."""
    planes = scratch.planes
    planes[14, :] = 0.0
    _ladder_planes(b, 14, -1, BLACK, planes, scratch.ladder_buf, scratch.ladder_work)
    for p in range(NN_AREA):
        out[p] = 1 if planes[14, p] != 0.0 else 0


class EncodeScratch(NamedTuple):
    """Working memory of one encoding at a time."""

    ladder_buf: np.ndarray  # int64[BUF_LEN]: ladder reading
    ladder_work: np.ndarray  # int64[4]
    area_ws: np.ndarray  # int32[WS_LEN]: Benson and area
    owner: np.ndarray  # int8[ARR]: owners of the points
    planes: np.ndarray  # float32[18, 361]: ladder planes before they are placed


def new_scratch() -> EncodeScratch:
    return EncodeScratch(
        new_buf(),
        np.zeros(4, np.int64),
        new_area_workspace(),
        np.zeros(ARR, np.int8),
        np.zeros((18, NN_AREA), np.float32),
    )


class InputRow(NamedTuple):
    """Where :func:`fill_row_at` writes one position's inputs, and in which layout."""

    places: np.ndarray  # int32[362]: board position y * 19 + x -> its place in a plane (crop, symmetry)
    spatial: np.ndarray  # float32[22, P]
    glob: np.ndarray  # float32[19]
    legal: np.ndarray  # uint8[362], board layout: 1 where the player may play, pass last
    ladder: np.ndarray  # uint8[361], board layout: the position's ladder plane (as ladder_plane)


@njit(cache=True, _nrt=False)
def fill_row_at(pos, pla, draw_equiv_white, pda, lad_prev1, lad_prev2, row, scratch):
    """Write the inputs of position pos (:class:`common.go.gamestate.Position`) for player pla into
    row (:class:`InputRow`): spatial[22, P] and glob[19] (both zeroed here), board position
    p = y * 19 + x going to places[p] of each plane (a crop of the grid, a symmetry), and, in board
    layout, the legal moves and this position's ladder plane.

    lad_prev1 and lad_prev2 [361] are the ladder planes (as :func:`ladder_plane`) of the positions
    one and two turns ago (read only where the history reaches). Allocates nothing: scratch
    (:class:`EncodeScratch`) is its working memory.
    """
    g, b, hist, moves, table = pos
    index, spatial, glob, legal, lad_now = row
    spatial[:, :] = 0.0
    glob[:] = 0.0
    opp = 3 - pla
    x_size = b[M_XSIZE]
    y_size = b[M_YSIZE]
    suicide = g[gs.G_SUICIDE] != 0
    superko = g[gs.G_KO_RULE] != gs.KO_SIMPLE
    encore = g[gs.G_ENCORE]
    # A move that captures nothing adds a stone: it can only recreate a position of the ko history
    # with one empty point fewer than now, and there is none unless captures have brought the
    # board below a position of that history (most often there is nothing to look up).
    quiet_superko = superko and g[gs.G_MIN_EMPTY] < b[M_NEMPTY]
    ko = b[M_KO]
    legal[:] = 0
    legal[NN_AREA] = 1
    quiet_hash = get_hash(b)
    if g[gs.G_KO_RULE] == gs.KO_SITUATIONAL:
        quiet_hash ^= ZOBRIST_TO_MOVE[opp]

    for y in range(y_size):
        for x in range(x_size):
            loc = (y + 1) * STRIDE + x + 1
            p = y * NN_LEN + x
            q = index[p]
            spatial[0, q] = 1.0
            c = b[COLOR + loc]
            if c == pla:
                spatial[1, q] = 1.0
            elif c == opp:
                spatial[2, q] = 1.0
            if c == BLACK or c == WHITE:
                libs = b[LIBS + b[HEAD + loc]]
                if libs == 1:
                    spatial[3, q] = 1.0
                elif libs == 2:
                    spatial[4, q] = 1.0
                elif libs == 3:
                    spatial[5, q] = 1.0
            if encore > 0:
                _encore_point(g, b, loc, pla, c, q, p, suicide, spatial, legal)
            elif c == EMPTY:
                # Ko and superko bans for the side to move; the legal moves on the way.
                if loc == ko:
                    spatial[6, q] = 1.0
                elif _quiet_point(b, loc, opp):
                    # Legal in this position and capturing nothing: the hash after it is one xor away.
                    if quiet_superko and gs.table_contains(table, quiet_hash ^ ZOBRIST[pla, loc]):
                        spatial[6, q] = 1.0
                    else:
                        legal[p] = 1
                elif is_pseudo_legal(b, loc, pla, suicide):
                    if superko and not gs.is_legal(g, b, table, loc, pla):
                        spatial[6, q] = 1.0
                    else:
                        legal[p] = 1

    # Recent moves: at most five (one once the game is over), only those that count since the
    # start or since play went on after an end, and only while they alternate from the side to move.
    n = g[gs.G_NMOVES]
    reach = min(1 if g[gs.G_OVER] != 0 else 5, g[gs.G_RECENT], n)
    turns = 0
    expect = opp
    while turns < reach and moves[n - 1 - turns, 1] == expect:
        loc = moves[n - 1 - turns, 0]
        if loc == PASS:
            glob[turns] = 1.0
        else:
            spatial[9 + turns, index[_pos(loc)]] = 1.0
        turns += 1
        expect = 3 - expect

    # Ladders now (and the working ladder moves), one and two turns ago.
    planes = scratch.planes
    for y in range(y_size):
        for x in range(x_size):
            p = y * NN_LEN + x
            planes[14, p] = 0.0
            planes[17, p] = 0.0
    _ladder_planes(b, 14, 17, opp, planes, scratch.ladder_buf, scratch.ladder_work)
    for y in range(y_size):
        for x in range(x_size):
            p = y * NN_LEN + x
            q = index[p]
            lad_now[p] = 1 if planes[14, p] != 0.0 else 0
            spatial[14, q] = planes[14, p]
            spatial[17, q] = planes[17, p]
    p1 = lad_prev1 if turns >= 1 else lad_now
    p2 = lad_prev2 if turns >= 2 else p1
    for y in range(y_size):
        for x in range(x_size):
            p = y * NN_LEN + x
            q = index[p]
            spatial[15, q] = p1[p]
            spatial[16, q] = p2[p]

    # Area: what the count would score now. Territory scoring shows it only in the second encore
    # phase, with the stones standing since that phase began; there too, those stones.
    owner = scratch.owner
    territory = g[gs.G_SCORING] == gs.SCORING_TERRITORY
    if not territory or encore >= 2:
        if territory:
            independent_life_area_ws(b, False, suicide, owner, scratch.area_ws, g[gs.G_TAX] == TAX_NONE)
        elif g[gs.G_TAX] == TAX_NONE:
            area_ws(b, True, True, True, suicide, owner, scratch.area_ws)
        else:
            independent_life_area_ws(b, True, suicide, owner, scratch.area_ws)
        pla_e2 = gs.G_E2_BLACK if pla == BLACK else gs.G_E2_WHITE
        opp_e2 = gs.G_E2_WHITE if pla == BLACK else gs.G_E2_BLACK
        for y in range(y_size):
            for x in range(x_size):
                loc = (y + 1) * STRIDE + x + 1
                o = owner[loc]
                q = index[y * NN_LEN + x]
                if territory:
                    c = b[COLOR + loc]
                    if gs.has_bit(g, pla_e2, loc):
                        spatial[20, q] = 1.0
                    elif gs.has_bit(g, opp_e2, loc):
                        spatial[21, q] = 1.0
                    if o == EMPTY:
                        if c == pla and gs.has_bit(g, pla_e2, loc):
                            o = pla
                        elif c == opp and gs.has_bit(g, opp_e2, loc):
                            o = opp
                if o == pla:
                    spatial[18, q] = 1.0
                elif o == opp:
                    spatial[19, q] = 1.0

    _fill_global(g, hist, moves, pla, draw_equiv_white, pda, x_size, y_size, glob)


@njit(cache=True, inline="always", _nrt=False)
def _encore_point(g, b, loc, pla, c, q, p, suicide, spatial, legal):
    """Planes 6 and 7 and the legal move at loc in an encore phase: the ko captures banned here, the
    recapture-blocked stones, and passes for ko (a move on a blocked stone is one)."""
    if c == EMPTY:
        banned = gs.has_bit(g, gs.G_BANNED, loc)
        if banned:
            spatial[6, q] = 1.0
        if gs.pass_for_ko_target(g, b, loc, pla) != NO_LOC or (not banned and is_pseudo_legal(b, loc, pla, suicide)):
            legal[p] = 1
    elif g[gs.G_NBLOCKS] != 0 and gs.has_bit(g, gs.G_BLOCKED, loc):
        spatial[7, q] = 1.0
        if c == 3 - pla and gs.pass_for_ko_target(g, b, loc, pla) == loc:
            legal[p] = 1


@njit(cache=True, _nrt=False)
def _fill_global(g, hist, moves, pla, draw_equiv_white, pda, x_size, y_size, glob):
    """The global inputs 5-18 (0-4, the passes, come with the history)."""
    # Komi from the side to move, with the bonuses white already has.
    white_komi = (g[gs.G_KOMI2] + g[gs.G_WBONUS2]) * 0.5 + gs.handicap_bonus(g)
    if g[gs.G_KOMI2] % 2 == 0:  # integer komi: draws count as draw_equiv_white wins for white
        white_komi += draw_equiv_white - 0.5
    self_komi = np.float32(white_komi if pla == WHITE else -white_komi)
    board_area = np.float32(x_size * y_size)
    if self_komi > board_area + 20:
        self_komi = board_area + 20
    if self_komi < -board_area - 20:
        self_komi = -board_area - 20
    glob[5] = self_komi / np.float32(20.0)

    if g[gs.G_KO_RULE] == gs.KO_POSITIONAL:
        glob[6] = 1.0
        glob[7] = 0.5
    elif g[gs.G_KO_RULE] == gs.KO_SITUATIONAL:
        glob[6] = 1.0
        glob[7] = -0.5
    if g[gs.G_SUICIDE] != 0:
        glob[8] = 1.0
    if g[gs.G_SCORING] == gs.SCORING_TERRITORY:
        glob[9] = 1.0
    if g[gs.G_TAX] != TAX_NONE:
        glob[10] = 1.0
        if g[gs.G_TAX] == TAX_ALL:
            glob[11] = 1.0
    if g[gs.G_ENCORE] > 0:
        glob[12] = 1.0
    if g[gs.G_ENCORE] > 1:
        glob[13] = 1.0
    if pass_would_end_phase(g, hist, moves, pla):
        glob[14] = 1.0
    if pda != 0.0:
        glob[15] = 1.0
        glob[16] = 0.5 * pda
    if g[gs.G_BUTTON] != 0:
        glob[17] = 1.0

    # Komi parity wave: a triangle wave of period 2 around the komis where a draw is possible
    # (under territory scoring the count's parity is known only once the second encore began).
    if g[gs.G_SCORING] == gs.SCORING_TERRITORY and g[gs.G_ENCORE] < 2:
        return
    if (x_size * y_size) % 2 == 0:
        komi_floor = np.float32(math.floor(self_komi / np.float32(2.0))) * np.float32(2.0)
    else:
        komi_floor = np.float32(math.floor((self_komi - np.float32(1.0)) / np.float32(2.0))) * np.float32(2.0) + 1
    delta = self_komi - komi_floor
    delta = min(max(delta, np.float32(0.0)), np.float32(2.0))
    if delta < 0.5:
        wave = delta
    elif delta < 1.5:
        wave = 1.0 - delta
    else:
        wave = delta - 2.0
    glob[18] = wave


@njit(cache=True, _nrt=False)
def _mix(h, v):
    h ^= v + np.int64(0x1E3779B97F4A7C15) + (h << 6) + (h >> 2)
    h ^= h >> 31
    h *= np.int64(0x1F58476D1CE4E5B9)
    h ^= h >> 29
    return h


@njit(cache=True, _nrt=False)
def position_key(g, b, hist, moves, pla, symmetry, extra):
    """A 64-bit hash of everything the network's inputs depend on (see common.encoding.features)."""
    h = np.int64(0x51E7E)
    h = _mix(h, get_hash(b))
    h = _mix(h, pla)
    h = _mix(h, b[M_KO])
    for k in (
        gs.G_KO_RULE,
        gs.G_SUICIDE,
        gs.G_TAX,
        gs.G_KOMI2,
        gs.G_WBONUS2,
        gs.G_HANDICAP,
        gs.G_WHB,
        gs.G_BUTTON,
        gs.G_OVER,
        gs.G_SCORING,
        gs.G_ENCORE,
        gs.G_KRB,
    ):
        h = _mix(h, g[k])
    if g[gs.G_ENCORE] > 0:
        for w in range(gs.BITSET_WORDS):
            h = _mix(h, g[gs.G_BANNED + w])
            h = _mix(h, g[gs.G_E2_BLACK + w])
            h = _mix(h, g[gs.G_E2_WHITE + w])
    h = _mix(h, 1 if pass_would_end_phase(g, hist, moves, pla) else 0)
    n = g[gs.G_NMOVES]
    reach = min(1 if g[gs.G_OVER] != 0 else 5, g[gs.G_RECENT], n)
    h = _mix(h, reach)
    for t in range(reach):
        h = _mix(h, moves[n - 1 - t, 0] * 4 + moves[n - 1 - t, 1])
        h = _mix(h, hist[n - 1 - t])  # the earlier positions, for the ladder planes
    if g[gs.G_KO_RULE] != gs.KO_SIMPLE:
        fold = np.int64(0)
        for i in range(g[gs.G_HSTART], n + 1):
            fold ^= hist[i] * np.int64(0x2545F4914F6CDD1D)
        h = _mix(h, fold)  # the positions superko forbids
    h = _mix(h, symmetry)
    h = _mix(h, extra)
    return h


class Encoder:
    """Encodes Game positions into preallocated batch buffers, reusing its ladder scratch."""

    def __init__(self) -> None:
        self.scratch = new_scratch()
        self.index = np.zeros(NN_AREA + 1, dtype=np.int32)
        self.lad = np.zeros((3, NN_AREA), dtype=np.uint8)
        self.legal = np.zeros(NN_AREA + 1, dtype=np.uint8)

    def encode(
        self,
        games: Sequence[Game],
        spatial: np.ndarray,
        glob: np.ndarray,
        legal: np.ndarray | None = None,
        draw_equiv_white: float = 0.5,
        pda: float = 0.0,
        symmetries: Sequence[int] | None = None,
        players: Sequence[int] | None = None,
    ) -> None:
        """Fill spatial[i] ([22, 361] float32), glob[i] ([19]) and legal[i] ([362]) for each game,
        evaluated for players[i] (default: the side to move), transformed by symmetries[i]."""
        for i, game in enumerate(games):
            pla = game.to_move if players is None else players[i]
            prev1, prev2 = recent_boards(game)
            ladder_plane(prev1, self.lad[0], self.scratch)
            ladder_plane(prev2, self.lad[1], self.scratch)
            s = 0 if symmetries is None else symmetries[i]
            symmetry_index(game.x_size, game.y_size, s, NN_LEN, self.index)
            _fill_row_from_python(
                game.g,
                game.b,
                game.hist,
                game.moves,
                game.table,
                pla,
                draw_equiv_white,
                pda,
                self.lad[0],
                self.lad[1],
                self.index,
                spatial[i],
                glob[i],
                self.legal,
                self.lad[2],
                self.scratch,
            )
            if legal is not None:
                _scatter_legal(self.legal, self.index, game.x_size, game.y_size, legal[i])


@njit(cache=True, _nrt=False)
def _fill_row_from_python(
    g,
    b,
    hist,
    moves,
    table,
    pla,
    draw_equiv_white,
    pda,
    lad_prev1,
    lad_prev2,
    places,
    spatial,
    glob,
    legal,
    lad_now,
    scratch,
):
    """:func:`fill_row_at` for a caller in Python, with the records' arrays loose: numba types a
    record passed from Python field by field in Python on every call (about 2 us), which the
    encoder, called for every turn of every uploaded game, should not pay; built here, the records
    cost nothing."""
    fill_row_at(
        gs.Position(g, b, hist, moves, table),
        pla,
        draw_equiv_white,
        pda,
        lad_prev1,
        lad_prev2,
        InputRow(places, spatial, glob, legal, lad_now),
        scratch,
    )


@njit(cache=True, _nrt=False)
def _scatter_legal(legal_board, index, x_size, y_size, out):
    out[:] = 0.0
    for y in range(y_size):
        for x in range(x_size):
            p = y * NN_LEN + x
            out[index[p]] = legal_board[p]
    out[index[NN_AREA]] = legal_board[NN_AREA]


def recent_boards(game: Game) -> tuple[np.ndarray, np.ndarray]:
    """The boards one and two turns ago (the current board where the history is shorter)."""
    snaps = game.undo_boards(2)
    prev1 = snaps[0] if len(snaps) >= 1 else game.b
    prev2 = snaps[1] if len(snaps) >= 2 else prev1
    return prev1, prev2


def new_batch(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Zeroed spatial [n, 22, 361], global [n, 19] and legal [n, 362] float32 buffers."""
    return (
        np.zeros((n, NUM_SPATIAL, NN_AREA), dtype=np.float32),
        np.zeros((n, NUM_GLOBAL), dtype=np.float32),
        np.zeros((n, NN_AREA + 1), dtype=np.float32),
    )


# --- symmetries ----------------------------------------------------------------------------------
# Symmetry s (0..7), as KataGo numbers them: bit 1 flips x, bit 0 flips y, then bit 2 transposes.
# They act on the board's own rectangle in the top-left corner of the grid, so a board stays there
# (a transposed W x H board becomes H x W).


def inverse_symmetry(s: int) -> int:
    return {5: 6, 6: 5}.get(s, s)


@njit(cache=True, inline="always", _nrt=False)
def _symmetric_xy(x, y, x_size, y_size, s):
    """Where point (x, y) of an x_size x y_size board goes under symmetry s: bit 1 flips y, bit 2
    flips x, bit 4 transposes."""
    sx = x_size - 1 - x if s & 2 else x
    sy = y_size - 1 - y if s & 1 else y
    if s & 4:
        sx, sy = sy, sx
    return sx, sy


@njit(cache=True, _nrt=False)
def symmetry_map(x_size, y_size, s, out):
    """out[p] = the grid position that position p goes to under symmetry s (-1 off the board)."""
    out[:] = -1
    for y in range(y_size):
        for x in range(x_size):
            sx, sy = _symmetric_xy(x, y, x_size, y_size, s)
            out[y * NN_LEN + x] = sy * NN_LEN + sx


@njit(cache=True, _nrt=False)
def symmetry_index(x_size, y_size, s, width, index):
    """index[p]: where board position p = y * 19 + x goes under symmetry s in planes laid out
    width points to a row (a crop of the grid to width x width); index[361] = width^2, pass.
    Entries off the board are left as they are (no reader looks at them)."""
    for y in range(y_size):
        for x in range(x_size):
            sx, sy = _symmetric_xy(x, y, x_size, y_size, s)
            index[y * NN_LEN + x] = sy * width + sx
    index[NN_AREA] = width * width


def unapply_symmetry(values: np.ndarray, x_size: int, y_size: int, s: int) -> np.ndarray:
    """Map outputs computed on a symmetric position ([..., 361] or [..., 362] with pass last)
    back to the original board's positions."""
    perm = np.empty(NN_AREA, dtype=np.int64)
    symmetry_map(x_size, y_size, s, perm)
    out = np.zeros_like(values)
    on = perm >= 0
    out[..., :NN_AREA][..., on] = values[..., perm[on]]
    if values.shape[-1] > NN_AREA:
        out[..., NN_AREA:] = values[..., NN_AREA:]
    return out
