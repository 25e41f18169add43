"""The Game: a thin Python wrapper over the board and game-state kernels.

A Game owns its arrays (board, game scalars, history, moves, hash table) and calls the numba
kernels for everything that happens on the board. Moves are board locations
(``common.go.geometry.loc_of``) or ``PASS``; colours are ``BLACK`` and ``WHITE``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numba import njit

from common.go import area as area_kernels
from common.go import board as bk
from common.go import gamestate as gs
from common.go.geometry import (
    ARR,
    BLACK,
    EMPTY,
    PASS,
    WHITE,
    board_locs,
    check_size,
    color_letter,
    grid_index,
    gtp_vertex,
    loc_of,
    opponent,
    xy_of,
)
from common.go.handicap import fixed_handicap_locs
from common.go.rules import Rules, check_komi

_KO = {"SIMPLE": gs.KO_SIMPLE, "POSITIONAL": gs.KO_POSITIONAL, "SITUATIONAL": gs.KO_SITUATIONAL}
_TAX = {"NONE": area_kernels.TAX_NONE, "SEKI": area_kernels.TAX_SEKI, "ALL": area_kernels.TAX_ALL}
_WHB = {"0": gs.WHB_ZERO, "N": gs.WHB_N, "N-1": gs.WHB_N_MINUS_ONE}
_END_REASONS = {
    gs.END_NONE: "",
    gs.END_PASSES: "two passes",
    gs.END_REPEATED_PASS: "a pass in a situation where that player had passed",
    gs.END_CYCLE: "a position repeated three times",
    gs.END_ALL_PASS_ALIVE: "every point pass-alive",
    gs.END_RESIGNATION: "resignation",
    gs.END_MOVE_LIMIT: "move limit",
}


class IllegalMoveError(ValueError):
    """A move the rules forbid; the message says why."""


@dataclass(frozen=True)
class GameResult:
    winner: int  # BLACK, WHITE, or EMPTY for a draw or no result
    score: float  # white minus black, komi included; 0 when not scored
    no_result: bool
    resignation: bool
    reason: str

    def sgf(self) -> str:
        """The SGF RE value: 'B+3.5', 'W+R', '0' for a draw, 'Void' for no result."""
        if self.no_result:
            return "Void"
        if self.resignation:
            return f"{color_letter(self.winner)}+R"
        if self.winner == EMPTY:
            return "0"
        return f"{color_letter(self.winner)}+{abs(self.score):g}"


@njit(cache=True)
def _legal_mask(g, b, table, pla, out):
    n = 0
    for i in range(b[bk.M_NEMPTY]):
        loc = b[bk.ELIST + i]
        if gs.is_legal(g, b, table, loc, pla):
            out[n] = loc
            n += 1
    if g[gs.G_NBLOCKS] != 0:
        # In the encore a move on a blocked stone is a pass for ko.
        for loc in range(ARR):
            if b[bk.COLOR + loc] == 3 - pla and gs.pass_for_ko_target(g, b, loc, pla) == loc:
                out[n] = loc
                n += 1
    return n


class Game:
    """A game of Go with its rules (area or territory scoring), komi and history."""

    def __init__(
        self,
        x_size: int = 19,
        y_size: int | None = None,
        rules: Rules | None = None,
        komi: float = 7.5,
        capacity: int = 256,
    ) -> None:
        y_size = x_size if y_size is None else y_size
        check_size(x_size, y_size)
        rules = rules or Rules()
        rules.check_playable()
        self.x_size = x_size
        self.y_size = y_size
        self._rules = rules
        self.b = bk.new_board(x_size, y_size)
        self.g = np.zeros(gs.G_LEN, dtype=np.int64)
        self._set_rule_fields(rules)
        self.g[gs.G_KOMI2] = round(2 * check_komi(komi))
        self._alloc(capacity)
        self._resigned = False
        self._played = False  # any move since the start: later setup keeps the handicap
        self._undo: list[tuple[np.ndarray, np.ndarray, bool]] = []
        self.setup_black: list[int] = []
        self.setup_white: list[int] = []
        self.start_encore_phase = 0
        self._start(BLACK)

    @classmethod
    def from_diagram(cls, diagram: str, rules: Rules | None = None, komi: float = 7.5, to_move: int = BLACK) -> Game:
        """A game starting from a text diagram: one row per line, top row first; X or B black,
        O or W white, '.' or '+' empty; spaces are ignored."""
        rows = [line.replace(" ", "") for line in diagram.strip().splitlines()]
        if not rows or any(len(r) != len(rows[0]) for r in rows):
            raise ValueError("diagram rows must be non-empty and of equal length")
        game = cls(len(rows[0]), len(rows), rules, komi)
        black, white = [], []
        for y, row in enumerate(rows):
            for x, ch in enumerate(row):
                if ch in "XxBb":
                    black.append(loc_of(x, y))
                elif ch in "OoWw":
                    white.append(loc_of(x, y))
                elif ch not in ".+":
                    raise ValueError(f"diagram character {ch!r} at row {y + 1}, column {x + 1} is not X, O or .")
        game.setup(black, white, to_move=to_move)
        return game

    # --- storage ---------------------------------------------------------------------------------
    def _alloc(self, cap: int) -> None:
        self.cap = cap
        self.hist = np.zeros(cap + 1, dtype=np.int64)
        self.moves = np.zeros((cap, gs.MOVE_COLS), dtype=np.int32)
        self.table = gs.new_table(cap)

    def _ensure_room(self) -> None:
        n = self.num_moves
        if n + 1 < self.cap:
            return
        old_hist, old_moves = self.hist, self.moves
        self._alloc(self.cap * 2)
        self.hist[: n + 1] = old_hist[: n + 1]
        self.moves[:n] = old_moves[:n]
        gs.table_rebuild(self.g, self.hist, self.table)

    def _set_rule_fields(self, rules: Rules) -> None:
        g = self.g
        g[gs.G_KO_RULE] = _KO[rules.ko]
        g[gs.G_SUICIDE] = int(rules.suicide)
        g[gs.G_TAX] = _TAX[rules.tax]
        g[gs.G_BUTTON_RULE] = int(rules.has_button)
        g[gs.G_WHB] = _WHB[rules.white_handicap_bonus]
        g[gs.G_SCORING] = gs.SCORING_TERRITORY if rules.scoring == "TERRITORY" else gs.SCORING_AREA

    def copy(self) -> Game:
        other = Game.__new__(Game)
        other.__dict__.update(self.__dict__)
        for name in ("b", "g", "hist", "moves", "table"):
            setattr(other, name, getattr(self, name).copy())
        other._undo = [(b.copy(), g.copy(), r) for b, g, r in self._undo]
        other.setup_black = list(self.setup_black)
        other.setup_white = list(self.setup_white)
        return other

    # --- state -----------------------------------------------------------------------------------
    @property
    def rules(self) -> Rules:
        return self._rules

    @property
    def komi(self) -> float:
        return float(self.g[gs.G_KOMI2]) / 2

    @komi.setter
    def komi(self, value: float) -> None:
        self.g[gs.G_KOMI2] = round(2 * check_komi(value))
        result = self.result  # None while the game goes on
        if result is not None and not result.no_result and not self._resigned:
            s = gs.final_score2(self.g, self.b, np.empty(ARR, dtype=np.int8))
            self.g[gs.G_SCORE2] = s
            self.g[gs.G_WINNER] = WHITE if s > 0 else (BLACK if s < 0 else 0)

    @property
    def to_move(self) -> int:
        return int(self.g[gs.G_TO_MOVE])

    @property
    def num_moves(self) -> int:
        return int(self.g[gs.G_NMOVES])

    @property
    def move_list(self) -> list[tuple[int, int]]:
        """(colour, location) of every move since the start (or since the last setup)."""
        return [(int(c), int(loc)) for loc, c in self.moves[: self.num_moves, :2]]

    @property
    def last_move(self) -> int | None:
        n = self.num_moves
        return int(self.moves[n - 1, 0]) if n else None

    @property
    def ko_loc(self) -> int | None:
        k = int(self.b[bk.M_KO])
        return None if k < 0 else k

    @property
    def hash(self) -> int:
        """Position hash (stones and board size)."""
        return int(bk.get_hash(self.b))

    @property
    def situation_hash(self) -> int:
        """Position hash combined with the side to move."""
        return int(bk.get_hash(self.b) ^ bk.ZOBRIST_TO_MOVE[self.to_move])

    @property
    def handicap(self) -> int:
        return int(self.g[gs.G_HANDICAP])

    @property
    def button_available(self) -> bool:
        return bool(self.g[gs.G_BUTTON])

    @property
    def white_bonus(self) -> float:
        """White's bonus points so far, as the score adds them to the board's count: the button once
        taken and, under territory scoring, a point for each stone the opponent played (KataGo's
        whiteBonusScore; handicap bonus apart)."""
        return float(self.g[gs.G_WBONUS2]) / 2

    @property
    def consecutive_passes(self) -> int:
        return int(self.g[gs.G_PASSES])

    @property
    def encore_phase(self) -> int:
        """0 in the main phase; 1 or 2 in the encore phases of territory scoring."""
        return int(self.g[gs.G_ENCORE])

    def is_pass_for_ko(self, loc: int, color: int | None = None) -> bool:
        """Would color's move at loc be an encore pass for ko (the board stays, the block goes)?"""
        color = self.to_move if color is None else color
        if loc == PASS or not self._on_board(loc):
            return False
        return int(gs.pass_for_ko_target(self.g, self.b, loc, color)) != bk.NO_LOC if self.encore_phase else False

    def pass_for_ko_turns(self) -> list[int]:
        """The turns (0-based) that were passes for ko."""
        kinds = self.moves[: self.num_moves, gs.MV_KIND]
        return [int(i) for i in np.flatnonzero(kinds == gs.KIND_PASS_FOR_KO)]

    def captures(self, color: int) -> int:
        """Stones captured by color."""
        return int(self.b[bk.M_CAPS_BLACK if color == BLACK else bk.M_CAPS_WHITE])

    def color_at(self, loc: int) -> int:
        return int(self.b[bk.COLOR + loc])

    def locs(self) -> list[int]:
        return board_locs(self.x_size, self.y_size)

    def stones(self, color: int) -> list[int]:
        return [loc for loc in self.locs() if self.b[bk.COLOR + loc] == color]

    def _grid(self, by_loc: np.ndarray) -> np.ndarray:
        """A per-location array as a y_size x x_size grid (row 0 is the top)."""
        return by_loc[grid_index(self.x_size, self.y_size)].astype(np.int8)

    def colors(self) -> np.ndarray:
        """Colours as a y_size x x_size array (row 0 is the top)."""
        return self._grid(self.b[bk.COLOR : bk.COLOR + ARR])

    def chain_liberties(self, loc: int) -> int:
        if self.color_at(loc) not in (BLACK, WHITE):
            raise ValueError(f"no stone at {self.vertex(loc)}")
        return int(bk.chain_libs(self.b, loc))

    def vertex(self, loc: int) -> str:
        return gtp_vertex(loc, self.x_size, self.y_size)

    # --- moves -----------------------------------------------------------------------------------
    def is_legal(self, loc: int, color: int | None = None) -> bool:
        color = self.to_move if color is None else color
        if loc != PASS and not self._on_board(loc):
            return False
        return bool(gs.is_legal(self.g, self.b, self.table, loc, color))

    def legal_moves(self, color: int | None = None) -> list[int]:
        """Legal board points for color (pass, always legal, is not listed), in board order."""
        color = self.to_move if color is None else color
        out = np.empty(self.x_size * self.y_size, dtype=np.int64)
        n = _legal_mask(self.g, self.b, self.table, color, out)
        return sorted(int(x) for x in out[:n])

    def illegal_reason(self, loc: int, color: int) -> str | None:
        if loc == PASS:
            return None
        if not self._on_board(loc):
            return "point is off the board"
        if self.b[bk.COLOR + loc] != EMPTY:
            return "point is occupied"
        if self.encore_phase and gs.has_bit(self.g, gs.G_BANNED, loc):
            return "encore ko: this ko was captured from this position before in this phase"
        if loc == self.b[bk.M_KO]:
            return "ko: the capture cannot be retaken immediately"
        if bk.is_illegal_suicide(self.b, loc, color, self._rules.suicide):
            return "suicide"
        if not self.is_legal(loc, color):
            return f"{self._rules.ko.lower()} superko: the move repeats an earlier position"
        return None

    def play(self, loc: int, color: int | None = None) -> None:
        """Play a move (PASS to pass); IllegalMoveError says why when the rules forbid it."""
        color = self.to_move if color is None else color
        if color not in (BLACK, WHITE):
            raise ValueError(f"invalid colour {color}")
        # One kernel call says whether the move is legal; the reason is looked for only when it is not.
        if loc != PASS and not (self._on_board(loc) and gs.is_legal(self.g, self.b, self.table, loc, color)):
            reason = self.illegal_reason(loc, color) or "the rules forbid it"
            raise IllegalMoveError(f"illegal move {color_letter(color)} {self._vertex_or_loc(loc)}: {reason}")
        self._ensure_room()
        self._undo.append((self.b.copy(), self.g.copy(), self._resigned))
        self._resigned = False
        self._played = True
        gs.game_play(self.g, self.b, self.hist, self.moves, self.table, loc, color)
        gs.game_finish(self.g, self.b)

    def undo(self) -> None:
        if not self._undo:
            raise IndexError("no move to undo")
        b, g, resigned = self._undo.pop()
        komi2 = self.g[gs.G_KOMI2]  # komi is a setting, not part of the history
        self.b[:] = b
        self.g[:] = g
        self.g[gs.G_KOMI2] = komi2
        self._resigned = resigned
        gs.table_rebuild(self.g, self.hist, self.table)

    def undo_boards(self, count: int) -> list[np.ndarray]:
        """The board arrays before the last `count` moves, most recent first (fewer when the
        history since the start or the last setup is shorter). Read-only views."""
        return [b for b, _, _ in reversed(self._undo[-count:])] if count > 0 else []

    @property
    def can_undo(self) -> bool:
        return bool(self._undo)

    def _on_board(self, loc: int) -> bool:
        if not 0 < loc < ARR:
            return False
        x, y = xy_of(loc)
        return 0 <= x < self.x_size and 0 <= y < self.y_size

    def _vertex_or_loc(self, loc: int) -> str:
        return self.vertex(loc) if self._on_board(loc) else f"location {loc}"

    # --- setup -----------------------------------------------------------------------------------
    def setup(
        self,
        black: Iterable[int] = (),
        white: Iterable[int] = (),
        empty: Iterable[int] = (),
        to_move: int | None = None,
    ) -> None:
        """Place setup stones (SGF AB/AW/AE). The history restarts from the resulting position."""
        black, white, empty = list(black), list(white), list(empty)
        for loc in black + white + empty:
            if not self._on_board(loc):
                raise ValueError(f"setup point {loc} is off the {self.x_size}x{self.y_size} board")
        saved = self.b.copy()
        for locs, c in ((empty, EMPTY), (black, BLACK), (white, WHITE)):
            for loc in locs:
                self.b[bk.COLOR + loc] = c
        dead = bk.rebuild(self.b)
        if dead >= 0:
            self.b[:] = saved
            raise ValueError(f"setup leaves the chain at {self.vertex(int(dead))} without liberties")
        self.setup_black = self.stones(BLACK)
        self.setup_white = self.stones(WHITE)
        self._undo.clear()
        self._resigned = False
        if not self._played:
            nb, nw = len(self.setup_black), len(self.setup_white)
            self.g[gs.G_HANDICAP] = nb if (nw == 0 and nb >= 2) else 0
        self._start(self.to_move if to_move is None else to_move)

    def place_fixed_handicap(self, count: int) -> list[int]:
        """Standard handicap placement on an empty board; white moves next."""
        self._require_empty("handicap stones")
        locs = fixed_handicap_locs(count, self.x_size, self.y_size)
        self.setup(black=locs, to_move=WHITE)
        return locs

    def place_free_handicap(self, locs: Iterable[int]) -> None:
        """Handicap stones on chosen points of an empty board; white moves next."""
        self._require_empty("handicap stones")
        locs = list(locs)
        if len(locs) < 2:
            raise ValueError("a handicap needs at least 2 stones")
        if len(set(locs)) != len(locs):
            raise ValueError("handicap stones repeat a point")
        if len(locs) >= self.x_size * self.y_size:
            raise ValueError("too many handicap stones for the board")
        self.setup(black=locs, to_move=WHITE)

    def _require_empty(self, what: str) -> None:
        if self.num_moves or self.stones(BLACK) or self.stones(WHITE):
            raise ValueError(f"{what} can only be placed on an empty board")

    def set_to_move(self, color: int) -> None:
        """Choose who moves next (SGF PL, GTP controllers); allowed before the first move."""
        if self.num_moves:
            raise ValueError("the side to move can only be chosen before the first move")
        self._start(color)

    def begin_in_encore(self, phase: int) -> None:
        """Start the game in encore phase 1 or 2 of territory scoring (0: the main phase), from the
        position on the board, as KataGo's cleanup training does; allowed before the first move."""
        if phase not in (0, 1, 2):
            raise ValueError(f"encore phase {phase} does not exist: a game starts in phase 0, 1 or 2")
        if phase and self._rules.scoring != "TERRITORY":
            raise ValueError(
                f"a game under {self._rules.scoring.lower()} scoring has no encore phase {phase} to begin in"
            )
        if self.num_moves:
            raise ValueError("the phase a game begins in can only be chosen before the first move")
        self.start_encore_phase = phase
        self._start(self.to_move)

    def _start(self, color: int) -> None:
        self.start_to_move = color
        gs.game_start(self.g, self.b, self.hist, self.table, color, self.start_encore_phase)

    def set_rules(self, rules: Rules) -> None:
        """Change the rules, replaying the game under them; refused if a move becomes illegal."""
        rules.check_playable()
        replay = Game(self.x_size, self.y_size, rules, self.komi, capacity=self.cap)
        if self.setup_black or self.setup_white:
            replay.setup(self.setup_black, self.setup_white, to_move=self.start_to_move)
        else:
            replay.set_to_move(self.start_to_move)
        if self.start_encore_phase:
            replay.begin_in_encore(self.start_encore_phase)
        replay.g[gs.G_HANDICAP] = self.g[gs.G_HANDICAP]
        replay._played = self._played
        for i, (color, loc) in enumerate(self.move_list):
            try:
                replay.play(loc, color)
            except IllegalMoveError as e:
                raise IllegalMoveError(f"move {i + 1} under the new rules: {e}") from None
        self.__dict__.update(replay.__dict__)

    # --- the end ---------------------------------------------------------------------------------
    @property
    def is_over(self) -> bool:
        return bool(self.g[gs.G_OVER])

    @property
    def result(self) -> GameResult | None:
        g = self.g
        if not g[gs.G_OVER]:
            return None
        return GameResult(
            winner=int(g[gs.G_WINNER]),
            score=float(g[gs.G_SCORE2]) / 2,
            no_result=bool(g[gs.G_NO_RESULT]),
            resignation=self._resigned,
            reason=_END_REASONS[int(g[gs.G_END])],
        )

    def resign(self, color: int) -> None:
        self._undo.append((self.b.copy(), self.g.copy(), self._resigned))
        self._resigned = True
        g = self.g
        g[gs.G_OVER] = 1
        g[gs.G_NO_RESULT] = 0
        g[gs.G_WINNER] = opponent(color)
        g[gs.G_SCORE2] = 0
        g[gs.G_END] = gs.END_RESIGNATION

    def end_without_result(self) -> None:
        """Stop the game here with no result (a move limit reached)."""
        gs.end_without_result(self.g, gs.END_MOVE_LIMIT)

    def end_if_all_pass_alive(self) -> bool:
        """KataGo's self-play ending: over and scored once every point is pass-alive."""
        return bool(gs.end_if_all_pass_alive(self.g, self.b))

    def score(self) -> float:
        """White-minus-black score of the position now by the game's rules (area, or territory
        as the current phase would count it), komi and bonuses included."""
        g = self.g.copy()
        if g[gs.G_BUTTON]:
            g[gs.G_WBONUS2] += 1 if self.to_move == WHITE else -1
        scratch = np.empty(ARR, dtype=np.int8)
        return gs.final_score2(g, self.b, scratch) / 2

    def ownership(self, method: str = "katago") -> np.ndarray:
        """Owner of every point as a y_size x x_size array of EMPTY, BLACK, WHITE.

        method: "katago" (pass-alive territory counts with any dead stones in it, then stones,
        then one-colour empty regions), "tromp-taylor" (stones and one-colour empty regions),
        "pass-alive" (pass-alive stones and territory only), "scoring" (the points the game's
        score counts for each player: "katago", or independent life under a seki or all tax;
        under territory scoring the territory and the stones that count).
        """
        result = np.empty(ARR, dtype=np.int8)
        sui = self._rules.suicide
        if method == "scoring":
            gs.final_score2(self.g, self.b, result)
        elif method == "katago":
            area_kernels.area(self.b, True, True, True, sui, result)
        elif method == "tromp-taylor":
            area_kernels.tromp_taylor_area(self.b, result)
        elif method == "pass-alive":
            area_kernels.area(self.b, False, False, False, sui, result)
        else:
            raise ValueError(f"unknown ownership method {method!r}")
        return self._grid(result)

    def tromp_taylor_score(self) -> float:
        """White-minus-black score counting every stone alive (pure Tromp-Taylor), komi included."""
        own = self.ownership("tromp-taylor")
        g = self.g
        bonus = g[gs.G_WBONUS2] / 2 + gs.handicap_bonus(g)
        return float((own == WHITE).sum() - (own == BLACK).sum()) + self.komi + bonus

    def dead_stones(self) -> list[int]:
        """Stones inside the opponent's area as KataGo scores it (pass-alive territory)."""
        own = self.ownership("katago")
        dead = []
        for loc in self.locs():
            c = self.color_at(loc)
            x, y = xy_of(loc)
            if c in (BLACK, WHITE) and own[y, x] == opponent(c):
                dead.append(loc)
        return dead

    def seki_stones(self) -> list[int]:
        """Living stones outside independent life (sharing liberties with the opponent or in
        atari), as seki and group-tax rules judge them."""
        independent = np.empty(ARR, dtype=np.int8)
        area_kernels.independent_life_area(self.b, False, self._rules.suicide, independent)
        dead = set(self.dead_stones())
        return [
            loc
            for loc in self.locs()
            if self.color_at(loc) in (BLACK, WHITE) and loc not in dead and independent[loc] == EMPTY
        ]

    def is_all_pass_alive(self) -> bool:
        return bool(area_kernels.all_pass_alive(self.b, self._rules.suicide))

    # --- display ---------------------------------------------------------------------------------
    def __str__(self) -> str:
        rows = []
        for y in range(self.y_size):
            row = "".join(".XO"[self.b[bk.COLOR + loc_of(x, y)]] for x in range(self.x_size))
            rows.append(row)
        return "\n".join(rows)
