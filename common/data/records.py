"""One self-play game as the search records it: :class:`TurnRecord` per move (the search's values and
policy target, the raw network's values), :class:`GameResult` and :class:`GameRecord` for the whole
game. The writer (:mod:`common.data.rows`) turns a record into training rows, and the row weights
(:mod:`common.data.weights`) are derived from it.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np

from common.data.schema import (
    DATA_AREA,
    DATA_LEN,
    GAME_MODE_NORMAL,
    NUM_GAME_MODES,
    NUM_GLOBAL_INPUTS,
    NUM_QVALUE,
    NUM_SPATIAL_INPUTS,
    POLICY_LEN,
)
from common.go.geometry import BLACK, EMPTY, WHITE
from common.go.rules import Rules


def white_value(player: int, value: float) -> float:
    """A value from player's view, seen from white's."""
    return value if player == WHITE else -value


def _white_wl(player: int, win: float, loss: float) -> tuple[float, float]:
    return (win, loss) if player == WHITE else (loss, win)


@dataclass(frozen=True)
class SearchValues:
    """The search's root values, from the side to move: win/loss/no-result probabilities (summing to
    1), score mean and, on turns that estimated it, the lead (else None)."""

    win: float
    loss: float
    no_result: float = 0.0
    score: float = 0.0
    lead: float | None = None


@dataclass(frozen=True)
class NetValues:
    """The raw network's outputs at the root (no search), from the side to move."""

    win: float
    loss: float
    no_result: float = 0.0
    score: float = 0.0


@dataclass
class TurnRecord:
    """One turn of a self-play game as the search produced it. Every move of the game from the start
    position on has a record, cheap searches too (their values and targets feed the neighbouring
    rows); ``weight`` decides how often the turn becomes a row.

    - ``spatial`` [22, 361] 0/1 and ``global_inputs`` [19]: the encoded inputs of the position
      (``common.encoding.features``), on the 19x19 grid.
    - ``player``: BLACK or WHITE, the side to move; every value here is from its view.
    - ``move``: the grid position played (``y * 19 + x``; 361 = pass).
    - ``policy_target`` [362]: the pruned visit counts the search keeps as its policy target (any
      non-negative scale; None when the search kept none).
    - ``search``: the root values; ``raw``: the raw network's values at the root.
    - ``policy_surprise``: KL(target || root prior); ``policy_entropy``: entropy of the root prior the
      search used; ``search_entropy``: entropy of the target (None: computed from the target);
      ``raw_policy_entropy``: entropy of the unnoised network policy (None: ``policy_entropy``). See
      :func:`policy_surprise_and_entropy`.
    - ``weight``: 1 for a full search, 0 for a cheap one, between 0.1 and 1 once soft resignation
      reduced the search (:func:`common.data.weights.soft_resignation_weight`); ``reduced`` says it did.
    - ``visits``: the search's root visits.
    - ``q_targets`` [3, 362] or None: per move the child's win-loss (in [-1, 1]), score and visits.
    - ``encore_phase``: 0 in the main phase, 1 or 2 in KataGo's encore (territory scoring).
    - ``white_bonus``: white's bonus points before the move (``common.go.game.Game.white_bonus``);
      with the game's ``final_white_bonus`` it gives the bonus points still to come.
    """

    spatial: np.ndarray
    global_inputs: np.ndarray
    player: int
    move: int
    policy_target: np.ndarray | None
    search: SearchValues
    raw: NetValues
    policy_surprise: float = 0.0
    policy_entropy: float = 0.0
    search_entropy: float | None = None
    raw_policy_entropy: float | None = None
    weight: float = 1.0
    reduced: bool = False
    visits: int = 0
    q_targets: np.ndarray | None = None
    encore_phase: int = 0
    white_bonus: float = 0.0


@dataclass
class SideTurn:
    """A side position (game branching, paper section 6.2.2): a position off the game's line, a
    move or three away from it, searched once for a policy row whose value targets are the search's.
    ``turn`` is the moves made before it (the game's before the branch, and the branch's)."""

    turn: int
    record: TurnRecord


@dataclass(frozen=True)
class GameResult:
    """How the game ended: ``white_score`` is white's points minus black's (komi included), ``winner``
    BLACK, WHITE or EMPTY (a draw, or no result)."""

    winner: int
    white_score: float
    no_result: bool = False

    def __post_init__(self) -> None:
        if self.winner not in (BLACK, WHITE, EMPTY):
            raise ValueError(f"game result: winner {self.winner!r} is not BLACK, WHITE or EMPTY")
        if not math.isfinite(self.white_score):
            raise ValueError(f"game result: white_score {self.white_score!r} is not finite")
        if self.no_result:
            if self.winner != EMPTY:
                raise ValueError("game result: a game without result has no winner")
            return
        expected = WHITE if self.white_score > 0 else BLACK if self.white_score < 0 else EMPTY
        if self.winner != expected:
            raise ValueError(f"game result: winner {self.winner} disagrees with white_score {self.white_score:+g}")

    @classmethod
    def from_score(cls, white_score: float) -> GameResult:
        winner = WHITE if white_score > 0 else BLACK if white_score < 0 else EMPTY
        return cls(winner=winner, white_score=float(white_score))

    @classmethod
    def without_result(cls) -> GameResult:
        return cls(winner=EMPTY, white_score=0.0, no_result=True)


@dataclass
class GameRecord:
    """One finished self-play game.

    Boards are ``y_size`` rows of ``x_size`` points. The final maps are [y_size, x_size] arrays from
    white's view: ``final_ownership`` 1 white / -1 black / 0 neither, as scored; ``final_full_area``
    the same including points owned only as seki (optional: feeds valueTargetsNCHW C1, which stays
    0 without it); ``final_stones`` the stones on the final board (optional: the board after the last
    move, for the 8- and 32-turns-ahead targets near the end); ``final_scoring`` KataGo's per-point
    scoring values in [-1, 1] (optional: C4, weight 0 without it).

    Metadata: ``game_id`` the client-made id (file name), ``game_hash`` its 128-bit hash (None:
    derived from the id), ``mode`` a GAME_MODE_*, ``start_turn`` the moves made before the first
    record, ``initial_turn_number`` the turn number the history started at, ``extra_black`` handicap
    stones, ``hit_turn_limit`` whether the move limit ended it, ``net_switch_turns`` the turn indices
    at which a newer network took over, ``training_weight`` the weight every row carries,
    ``final_white_bonus`` white's bonus points at the end (the button's and, under territory
    scoring, the stones' points; see ``TurnRecord.white_bonus``). ``side_turns``: the game's side
    positions, each one row after the game's own.
    """

    x_size: int
    y_size: int
    komi: float
    rules: Rules
    result: GameResult
    turns: list[TurnRecord]
    final_ownership: np.ndarray | None
    game_id: str = ""
    game_hash: int | None = None
    final_full_area: np.ndarray | None = None
    final_stones: np.ndarray | None = None
    final_scoring: np.ndarray | None = None
    mode: int = GAME_MODE_NORMAL
    start_turn: int = 0
    initial_turn_number: int = 0
    extra_black: int = 0
    hit_turn_limit: bool = False
    draw_equivalent_wins_for_white: float = 0.5
    training_weight: float = 1.0
    net_switch_turns: tuple[int, ...] = field(default_factory=tuple)
    final_white_bonus: float = 0.0
    side_turns: list[SideTurn] = field(default_factory=list)

    @property
    def num_turns(self) -> int:
        return len(self.turns)

    @property
    def board_area(self) -> int:
        return self.x_size * self.y_size

    def hash128(self) -> int:
        """The game hash: ``game_hash`` or, when None, the first 16 bytes of BLAKE2b of ``game_id``."""
        if self.game_hash is not None:
            return int(self.game_hash) & ((1 << 128) - 1)
        return game_id_hash(self.game_id)

    def result_will_be_integer(self) -> bool:
        """KataGo's Rules::gameResultWillBeInteger: an integer komi, unless the button adds a half."""
        return (float(self.komi) == int(self.komi)) != bool(self.rules.has_button)

    def white_value_targets(self) -> np.ndarray:
        """[n+1, 4] win, loss, no result, score from white's view: each turn's search, then the final
        result (play.cpp: whiteValueTargetsByTurn plus finalValueTargets)."""
        n = self.num_turns
        out = np.zeros((n + 1, 4), dtype=np.float64)
        for i, turn in enumerate(self.turns):
            s = turn.search
            out[i, 0], out[i, 1] = _white_wl(turn.player, s.win, s.loss)
            out[i, 2] = s.no_result
            out[i, 3] = white_value(turn.player, s.score)
        result = self.result
        if result.no_result:
            out[n] = (0.0, 0.0, 1.0, 0.0)
        else:
            d = self.draw_equivalent_wins_for_white
            win = 1.0 if result.winner == WHITE else 0.0 if result.winner == BLACK else d
            adjust = (d - 0.5) if self.result_will_be_integer() else 0.0  # ScoreValue::whiteScoreDrawAdjust
            out[n] = (win, 1.0 - win, 0.0, result.white_score + adjust)
        return out

    def check(self) -> None:
        """Raise ValueError saying what is wrong when the game cannot become training rows (sizes, values
        and shapes of every turn and of the game's metadata)."""
        if not (2 <= self.x_size <= DATA_LEN and 2 <= self.y_size <= DATA_LEN):
            raise ValueError(f"board {self.x_size}x{self.y_size} does not fit the {DATA_LEN}x{DATA_LEN} data grid")
        if not 0 <= self.mode < NUM_GAME_MODES:
            raise ValueError(f"game mode {self.mode} is not one of KataGo's 0..{NUM_GAME_MODES - 1}")
        if not 0.0 <= self.draw_equivalent_wins_for_white <= 1.0:
            raise ValueError("draw_equivalent_wins_for_white must be within [0, 1]")
        if not (math.isfinite(self.training_weight) and self.training_weight >= 0):
            raise ValueError("training_weight must be finite and >= 0")
        if not math.isfinite(self.komi):
            raise ValueError(f"komi {self.komi!r} is not finite")
        if not math.isfinite(self.final_white_bonus):
            raise ValueError(f"final_white_bonus {self.final_white_bonus!r} is not finite")
        encore_possible = self.rules.scoring == "TERRITORY"
        for label, value in (
            ("start_turn", self.start_turn),
            ("initial_turn_number", self.initial_turn_number),
            ("extra_black", self.extra_black),
        ):
            if value < 0:
                raise ValueError(f"{label} {value} is negative")
        on_board = np.zeros((DATA_LEN, DATA_LEN), dtype=bool)
        on_board[: self.y_size, : self.x_size] = True
        board_mask = on_board.reshape(-1)
        for i, turn in enumerate(self.turns):
            self._check_turn(f"turn {i}", turn, board_mask, encore_possible)
        for i, side in enumerate(self.side_turns):
            where = f"side position {i}"
            if side.turn <= self.start_turn:
                raise ValueError(f"{where}: turn {side.turn} is not after the first recorded turn {self.start_turn}")
            if side.record.policy_target is None:
                raise ValueError(f"{where}: a side position's row needs its search's policy target")
            self._check_turn(where, side.record, board_mask, encore_possible)

    def _check_turn(self, where: str, turn: TurnRecord, board_mask: np.ndarray, encore_possible: bool) -> None:
        if turn.player not in (BLACK, WHITE):
            raise ValueError(f"{where}: player {turn.player!r} is not BLACK or WHITE")
        spatial = np.asarray(turn.spatial)
        if spatial.shape != (NUM_SPATIAL_INPUTS, DATA_AREA):
            raise ValueError(f"{where}: spatial inputs have shape {spatial.shape}")
        if not np.array_equal(spatial[0] != 0, board_mask):
            raise ValueError(
                f"{where}: input plane 0 (on board) is not the top-left {self.x_size}x{self.y_size} corner "
                "of the 19x19 grid"
            )
        g = np.asarray(turn.global_inputs)
        if g.shape != (NUM_GLOBAL_INPUTS,) or not np.all(np.isfinite(g)):
            raise ValueError(f"{where}: global inputs must be {NUM_GLOBAL_INPUTS} finite values")
        if not 0 <= turn.move < POLICY_LEN:
            raise ValueError(f"{where}: move {turn.move} is not a grid position or pass")
        if turn.visits < 0:
            raise ValueError(f"{where}: visits {turn.visits} is negative")
        if turn.encore_phase not in ((0, 1, 2) if encore_possible else (0,)):
            raise ValueError(f"{where}: encore phase {turn.encore_phase} under {self.rules.scoring} scoring")
        if not math.isfinite(turn.white_bonus):
            raise ValueError(f"{where}: white_bonus {turn.white_bonus!r} is not finite")
        if not (math.isfinite(turn.weight) and 0.0 <= turn.weight <= 1.0):
            raise ValueError(f"{where}: weight {turn.weight} is not within [0, 1]")
        s = turn.search
        raw = turn.raw
        for label, wld in (("search", (s.win, s.loss, s.no_result)), ("raw", (raw.win, raw.loss, raw.no_result))):
            if not all(math.isfinite(v) and -1e-6 <= v <= 1 + 1e-6 for v in wld) or abs(sum(wld) - 1.0) > 1e-3:
                raise ValueError(f"{where}: {label} win/loss/no-result {wld} are not probabilities summing to 1")
        if not (math.isfinite(s.score) and math.isfinite(turn.raw.score)):
            raise ValueError(f"{where}: score is not finite")
        if s.lead is not None and not math.isfinite(s.lead):
            raise ValueError(f"{where}: lead is not finite")
        for label, v in (("policy_surprise", turn.policy_surprise), ("policy_entropy", turn.policy_entropy)):
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"{where}: {label} {v} must be finite and >= 0")
        if turn.policy_target is not None:
            target = np.asarray(turn.policy_target, dtype=np.float64)
            if target.shape != (POLICY_LEN,):
                raise ValueError(f"{where}: policy target has shape {target.shape}; expected ({POLICY_LEN},)")
            off_board = np.concatenate((spatial[0] == 0, [False]))
            if np.any(target[off_board] != 0):
                raise ValueError(f"{where}: policy target has mass off the board")
        if turn.q_targets is not None and np.asarray(turn.q_targets).shape != (NUM_QVALUE, POLICY_LEN):
            raise ValueError(f"{where}: q_targets has shape {np.asarray(turn.q_targets).shape}")


def game_id_hash(game_id: str) -> int:
    """A game id's 128-bit hash: the first 16 bytes of BLAKE2b of the id, little-endian."""
    return int.from_bytes(hashlib.blake2b(game_id.encode(), digest_size=16).digest(), "little")
