"""Training rows held against the game they say they come from.

The rows of a self-play game are written from its turns (:mod:`common.data.rows`): each row is the
position before one move of the game, encoded as the network's inputs, with that turn's policy target
and the game's final outcome, ownership and later boards. All of that follows from the game's record
except what the search said (policy targets, search values). :class:`RowsAgainstGame` replays the
record and recomputes, for every row:

- its position: the turn (globalTargetsNC ``GT_TURN_INDEX``) is a move of this game, and the row's
  input planes and global inputs are, bit for bit, that position's (:class:`common.encoding.features.Encoder`);
- the move played: the row's policy target holds it (a search plays a move it visited), and a row's
  next-turn target is the next turn's own target where that turn has rows too;
- the outcome: the final win/loss/no-result and score, the final score's distribution, the final
  ownership and seki, the boards 8 and 32 moves on, the bonus points still to come, all from the
  side to move; the scoring flag of the turn's encore phase;
- the game: its hash (the game id's), first recorded turn, handicap, mode, move limit, scoring and
  weights, the same on every row and as the record says;
- the turns: a row comes only from a full search (the record's :class:`~common.data.selfplay_sgf.SearchNote`),
  with that search's visits, and the game holds no more rows than its full searches' weights can
  give (see :meth:`RowsAgainstGame.check_count`).

Side positions (game branching) come last, each one row (channel ``GT_SIDE_POSITION``), and are held
against the record's variations (:meth:`RowsAgainstGame.check_side_positions`): each row is, in order,
the position before a variation's move searched for it, with that move in its policy target, its
visits, and no target the game's end would give (outcome, ownership, later boards, next move).

A row that is not a position of this game, or whose targets contradict it, is a :class:`RowMismatch`
naming the row and what differs. Checking costs about one feature encoding per turn with rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from common.data.records import GameRecord as RowsGame
from common.data.records import GameResult as RowsResult
from common.data.records import game_id_hash
from common.data.rows import (
    area_scoring_flag,
    bonus_points_target,
    dummy_score_distribution,
    game_hash_chunks,
    score_distribution,
)
from common.data.schema import (
    DATA_LEN,
    FUTURE_BOARD_TURNS,
    GAME_MODE_HANDICAP,
    GAME_MODE_NORMAL,
    GT_AREA_SCORING,
    GT_BONUS_POINTS,
    GT_EARLIER_NET,
    GT_EXTRA_BLACK,
    GT_FINAL_SCORE,
    GT_FIRST_TRAINING_TURN,
    GT_FUTURE_BOARD_WEIGHT,
    GT_GAME_FINISHED,
    GT_GAME_HASH,
    GT_GAME_MODE,
    GT_HIT_TURN_LIMIT,
    GT_INITIAL_TURN,
    GT_NETS_BEHIND,
    GT_NEXT_POLICY_WEIGHT,
    GT_OWNERSHIP_WEIGHT,
    GT_POLICY_WEIGHT,
    GT_ROW_WEIGHT,
    GT_SCORE,
    GT_SCORING_WEIGHT,
    GT_SELF_KOMI,
    GT_SIDE_POSITION,
    GT_TURN_INDEX,
    GT_UNREDUCED_VISITS,
    GT_VARIANCE_TIME,
    GT_WIN,
    PASS_POS,
    POLICY_TARGET_MAX,
    SCORE_TARGET_CAP,
    VT_FUTURE_8,
    VT_FUTURE_32,
    VT_OWNERSHIP,
    VT_SCORING,
    VT_SEKI,
    RowArrays,
)
from common.encoding.features import NN_AREA, NUM_GLOBAL, NUM_SPATIAL, Encoder, player_pda
from common.go.board import COLOR
from common.go.game import Game
from common.go.geometry import ARR, BLACK, PASS, WHITE, grid_index, xy_of
from common.go.rules import Rules

# How far the rows may exceed the weight of the game's full searches: the writer rounds each turn's
# weight up or down at random (common.data.weights.stochastic_row_counts), so the count exceeds the
# total weight by a sum of independent deviations with standard deviation at most sqrt(turns) / 2;
# ROW_COUNT_SIGMAS of those (plus one) is a bound an honest game passes with odds of about 1e-9 to fail.
ROW_COUNT_SIGMAS = 6.0


class RowMismatch(ValueError):
    """Rows that are not this game's; the message names the row (and its turn) and what differs."""


@dataclass(frozen=True)
class SidePosition:
    """A side position as the record shows it: the position searched, the move its search chose
    there, and the search's visits."""

    game: Game
    reply: int
    visits: int


@dataclass(frozen=True)
class TurnRows:
    """The rows of one turn: the turn (moves before it), where its rows are (first index, count) and
    the visits its search had."""

    turn: int
    first_row: int
    count: int
    visits: int


def _side(grid: np.ndarray, player: int) -> np.ndarray:
    return grid if player == WHITE else -grid


def _policy_pos(loc: int) -> int:
    """A move's entry in a policy target: y * 19 + x, or pass."""
    if loc == PASS:
        return PASS_POS
    x, y = xy_of(loc)
    return y * DATA_LEN + x


def _first(bad: npt.ArrayLike) -> int | None:
    where = np.flatnonzero(bad)
    return int(where[0]) if where.size else None


class RowsAgainstGame:
    """Checks one game's rows while its record is replayed: pass :meth:`visit` as the replay's
    ``visit`` (``common.go.sgf.GameRecord.to_game``), then call :meth:`finish` with the game's end.

    ``moves`` are the record's moves (colour, location); ``game_id`` the id the rows were made under;
    ``handicap`` the record's handicap stones; ``draw_equivalent_wins`` the settings' value; ``mode``
    KataGo's game mode the rows must give (None: normal, or handicap for a handicap); ``pda_black``
    black's playout doubling advantage in a game of asymmetric playouts (an input). Whatever
    is found wrong before :meth:`finish` is raised by it, so that the replay's own errors (an illegal
    move, a wrong result) are reported first. The replay only records each turn's position; the rows
    are compared with them all at once at the end.
    """

    def __init__(
        self,
        rows: RowArrays,
        x_size: int,
        y_size: int,
        moves: list[tuple[int, int]],
        game_id: str,
        handicap: int,
        draw_equivalent_wins: float,
        mode: int | None = None,
        pda_black: float = 0.0,
    ) -> None:
        self.x_size, self.y_size = x_size, y_size
        self.moves = moves
        self.game_id = game_id
        self.extra_black = max(0, handicap - 1)
        self.draw_equivalent_wins = draw_equivalent_wins
        self.pda_black = pda_black
        self.mode = mode if mode is not None else GAME_MODE_HANDICAP if self.extra_black else GAME_MODE_NORMAL
        self._problem: RowMismatch | None = None
        side = np.asarray(rows["globalTargetsNC"])[:, GT_SIDE_POSITION] == 1
        n_main = int(np.argmax(side)) if side.any() else side.size
        if side[n_main:].size and not side[n_main:].all():
            self._problem = RowMismatch(
                f"row {n_main + int(np.argmin(side[n_main:]))}: a game's row after its side positions' (they come last)"
            )
        self.rows = {name: a[:n_main] for name, a in rows.items()}
        self.side_rows = {name: a[n_main:] for name, a in rows.items()}
        self.gt = np.asarray(self.rows["globalTargetsNC"], dtype=np.float64)
        self.n_rows = self.gt.shape[0]
        try:
            self.turns = self._turns()
        except RowMismatch as e:  # raised by finish, after the replay
            self._problem, self.turns = e, []
        n = len(self.turns)
        self._index = {t.turn: d for d, t in enumerate(self.turns)}
        self._future = {min(t.turn + k, len(moves)) for t in self.turns for k in FUTURE_BOARD_TURNS}
        self._boards: dict[int, np.ndarray] = {}  # moves made -> the colour of every location
        self._packed = np.zeros((n, *rows["binaryInputNCHWPacked"].shape[1:]), np.uint8)
        self._glob = np.zeros((n, NUM_GLOBAL), np.float32)
        self._player = np.zeros(n, np.int64)
        self._encore = np.zeros(n, np.int64)
        self._white_bonus = np.zeros(n, np.float64)
        self._seen = np.zeros(n, bool)
        self._encoder = Encoder()
        self._spatial_buf = np.zeros((1, NUM_SPATIAL, NN_AREA), np.float32)
        self._glob_buf = np.zeros((1, NUM_GLOBAL), np.float32)

    # --- the rows' turns ----------------------------------------------------------------------------
    def _where(self, r: int) -> str:
        return f"row {r} (turn {int(self.gt[r, GT_TURN_INDEX])})"

    def _turns(self) -> list[TurnRows]:
        gt = self.gt
        n_moves = len(self.moves)
        if self.n_rows == 0:
            return []
        r = _first(~np.isfinite(gt[:, [GT_TURN_INDEX, GT_FIRST_TRAINING_TURN, GT_UNREDUCED_VISITS]]).any(axis=1))
        if r is not None:
            raise RowMismatch(f"row {r}: its turn, first recorded turn or visits are not finite numbers")
        turn = gt[:, GT_TURN_INDEX]
        r = _first((turn != np.floor(turn)) | (turn < 0) | (turn >= n_moves))
        if r is not None:
            raise RowMismatch(f"row {r}: turn {turn[r]:g} is not a move of this game (it has {n_moves} moves)")
        r = _first(turn[1:] < turn[:-1])
        if r is not None:
            raise RowMismatch(
                f"row {r + 1}: turn {turn[r + 1]:g} comes after turn {turn[r]:g}; rows are in the order of the game"
            )
        first = gt[:, GT_FIRST_TRAINING_TURN]
        if np.any(first != first[0]) or first[0] != math.floor(first[0]) or first[0] > turn[0]:
            raise RowMismatch(
                f"the rows' first recorded turn ({first[0]:g}) differs between rows or comes after "
                f"their first turn ({turn[0]:g})"
            )
        starts = np.flatnonzero(np.r_[True, turn[1:] != turn[:-1]])
        ends = np.r_[starts[1:], self.n_rows]
        return [
            TurnRows(int(turn[a]), int(a), int(b - a), int(gt[a, GT_UNREDUCED_VISITS])) for a, b in zip(starts, ends)
        ]

    @property
    def first_recorded_turn(self) -> int | None:
        """The moves made before the first recorded turn, as the rows say (None: no rows)."""
        return int(self.gt[0, GT_FIRST_TRAINING_TURN]) if self.n_rows else None

    # --- during the replay --------------------------------------------------------------------------
    def visit(self, game: Game, played: int) -> None:
        """The game before move ``played`` (after the last move: ``played`` is the number of moves)."""
        if played in self._future:
            self._boards[played] = game.b[COLOR : COLOR + ARR].copy()
        d = self._index.get(played)
        if d is None:
            return
        if self.moves[played][0] != game.to_move and self._problem is None:
            self._problem = RowMismatch(
                f"{self._where(self.turns[d].first_row)}: the record's move there is played out of turn"
            )
        self._packed[d], self._glob[d] = self._inputs(game)
        self._player[d] = game.to_move
        self._encore[d] = game.encore_phase
        self._white_bonus[d] = game.white_bonus
        self._seen[d] = True

    # --- after the replay ---------------------------------------------------------------------------
    def finish(self, game: Game, result: str, komi: float, rules: Rules, move_limit_reached: bool) -> None:
        """Check every row against the game: ``game`` as the replay left it (ended by the rules, or not
        ended when the game stopped without result), ``result`` the SGF's."""
        if self._problem is not None:
            raise self._problem
        if not self.turns:
            return
        if not self._seen.all():
            raise RowMismatch(
                f"rows of turn {self.turns[int(np.argmin(self._seen))].turn} were not reached by the replay"
            )
        counts = np.array([t.count for t in self.turns])
        of_row = np.repeat(np.arange(len(self.turns)), counts)  # row -> its turn's index
        self._check_positions(of_row)
        self._check_policies(of_row)
        self._check_outcome(of_row, game, result, komi, rules, move_limit_reached)

    def _fail(self, bad: np.ndarray, what) -> None:
        r = _first(bad)
        if r is not None:
            raise RowMismatch(f"{self._where(r)}: {what(r) if callable(what) else what}")

    def _check_positions(self, of_row: np.ndarray) -> None:
        rows = self.rows
        packed = np.asarray(rows["binaryInputNCHWPacked"])
        differ = packed != self._packed[of_row]

        def planes(r: int) -> str:
            return (
                f"its input planes {np.flatnonzero(differ[r].any(axis=1)).tolist()} differ from the game's "
                "position at that turn"
            )

        self._fail(differ.any(axis=(1, 2)), planes)
        glob = np.asarray(rows["globalInputNC"], np.float32)
        differ = glob != self._glob[of_row]
        self._fail(
            differ.any(axis=1),
            lambda r: (
                f"its global inputs {np.flatnonzero(differ[r]).tolist()} differ from the game's position at that turn"
            ),
        )

    def _inputs(self, game: Game) -> tuple[np.ndarray, np.ndarray]:
        """The game's position as a row holds it: packed input planes and global inputs."""
        self._encoder.encode(
            [game],
            self._spatial_buf,
            self._glob_buf,
            draw_equiv_white=self.draw_equivalent_wins,
            pda=player_pda(self.pda_black, game.to_move),
        )
        packed = np.packbits(self._spatial_buf[0].astype(np.uint8), axis=1, bitorder="big")  # 0/1 planes
        return packed, self._glob_buf[0].copy()

    def _move_pos(self, turn: int) -> int:
        return _policy_pos(self.moves[turn][1])

    def _check_policies(self, of_row: np.ndarray) -> None:
        """A row's target holds the move played (a search plays a move it visited; only a target scaled
        down to POLICY_TARGET_MAX may round a small share to 0); the rows of one turn share it; the
        next-move target (C1) is the next turn's target where that turn has rows too, holds the next
        move, and after the last move is KataGo's filler (all ones)."""
        policies = np.asarray(self.rows["policyTargetsNCMove"])
        n_moves = len(self.moves)
        rows = np.arange(self.n_rows)
        firsts = np.array([t.first_row for t in self.turns])
        turns = np.array([t.turn for t in self.turns])
        scaled = policies.max(axis=2) >= POLICY_TARGET_MAX  # [R, 2]
        played = np.array([self._move_pos(t) for t in turns])
        self._fail(
            (policies[rows, 0, played[of_row]] <= 0) & ~scaled[:, 0],
            "its policy target has nothing on the move played there",
        )
        self._fail(
            np.any(policies[:, 0] != policies[firsts[of_row], 0], axis=1),
            "its policy target differs from another row of the same turn",
        )
        expected = policies[firsts, 1].copy()  # the own first row's: where the next turn has no rows
        for d, t in enumerate(turns):
            if t == n_moves - 1:
                expected[d] = 1
            elif t + 1 in self._index:
                expected[d] = policies[self.turns[self._index[t + 1]].first_row, 0]
        self._fail(
            np.any(policies[:, 1] != expected[of_row], axis=1), "its next-move policy target is not the next turn's"
        )
        following = np.array([self._move_pos(t + 1) if t + 1 < n_moves else -1 for t in turns])
        has_next = following[of_row] >= 0
        self._fail(
            has_next & (policies[rows, 1, np.maximum(following[of_row], 0)] <= 0) & ~scaled[:, 1],
            "its next-move policy target has nothing on the next move played",
        )

    def _check_outcome(
        self, of_row: np.ndarray, game: Game, result: str, komi: float, rules: Rules, move_limit_reached: bool
    ) -> None:
        full_area = None
        if result == "Void":
            outcome, ownership = RowsResult.without_result(), None
        else:
            if game.result is None:
                raise RowMismatch(f"the game has no counted result to check the rows against ({result!r})")
            outcome = RowsResult.from_score(game.result.score)
            own = game.ownership("scoring")
            ownership = (own == WHITE).astype(np.int8) - (own == BLACK).astype(np.int8)
            area = game.ownership("katago")
            full_area = (area == WHITE).astype(np.int8) - (area == BLACK).astype(np.int8)
        values = RowsGame(
            self.x_size,
            self.y_size,
            komi,
            rules,
            outcome,
            [],
            None,
            draw_equivalent_wins_for_white=self.draw_equivalent_wins,
        ).white_value_targets()[0]
        # What the end gives each side to move (index 0: black, 1: white); each turn takes its side's.
        y, x = self.y_size, self.x_size
        sides = (BLACK, WHITE)
        scores = [-float(values[3]), float(values[3])]
        capped = np.clip(scores, -SCORE_TARGET_CAP, SCORE_TARGET_CAP)
        by_side_final = np.array(
            [[values[1], values[0], values[2], capped[0]], [values[0], values[1], values[2], capped[1]]], np.float32
        )
        by_side_score = np.zeros(2, np.float32)
        by_side_distr = np.stack([dummy_score_distribution()] * 2)
        by_side_own = np.zeros((2, DATA_LEN, DATA_LEN), np.int8)
        by_side_seki = np.zeros((2, DATA_LEN, DATA_LEN), np.int8)
        if ownership is not None and full_area is not None:
            by_side_score[:] = capped
            by_side_distr = np.stack([score_distribution(v) for v in scores])
            seki = np.where((full_area != 0) & (ownership == 0), full_area, 0).astype(np.int8)
            for k, side in enumerate(sides):
                by_side_own[k, :y, :x] = _side(ownership, side)
                by_side_seki[k, :y, :x] = _side(seki, side)
        side = (self._player == WHITE).astype(np.int64)  # per turn: 0 black, 1 white
        final, final_score, distr = by_side_final[side], by_side_score[side], by_side_distr[side]
        n_moves = len(self.moves)
        n = len(self.turns)
        planes = np.zeros((n, *self.rows["valueTargetsNCHW"].shape[1:]), np.int8)
        planes[:, VT_OWNERSHIP] = by_side_own[side]
        planes[:, VT_SEKI] = by_side_seki[side]
        index = grid_index(x, y)
        sign = np.where(side == 1, 1, -1).astype(np.int8)
        for d, turn in enumerate(self.turns):
            for channel, ahead in zip((VT_FUTURE_8, VT_FUTURE_32), FUTURE_BOARD_TURNS):
                colors = self._boards[min(turn.turn + ahead, n_moves)][index]
                planes[d, channel, :y, :x] = sign[d] * ((colors == WHITE).astype(np.int8) - (colors == BLACK))
        next_weight = np.ones(n)
        next_weight[[d for d, t in enumerate(self.turns) if t.turn == n_moves - 1]] = 0.0
        gt = self.gt
        given = gt[:, GT_WIN : GT_SCORE + 1].astype(np.float32)

        def final_values(r: int) -> str:
            side = "white" if self._player[of_row[r]] == WHITE else "black"
            return (
                f"its final value targets {given[r].tolist()} contradict the game's end ({result}: "
                f"{final[of_row[r]].tolist()} for {side})"
            )

        self._fail(np.any(given != final[of_row], axis=1), final_values)
        self._fail(
            gt[:, GT_FINAL_SCORE].astype(np.float32) != final_score[of_row],
            lambda r: f"its final score {gt[r, GT_FINAL_SCORE]:g} is not the game's {float(final_score[of_row[r]]):g}",
        )
        constants = {
            GT_ROW_WEIGHT: 1.0,
            GT_POLICY_WEIGHT: 1.0,
            GT_FUTURE_BOARD_WEIGHT: 1.0,
            GT_SCORING_WEIGHT: 0.0,
            GT_EARLIER_NET: 0.0,
            GT_NETS_BEHIND: 0.0,
            GT_HIT_TURN_LIMIT: 1.0 if move_limit_reached else 0.0,
            GT_GAME_FINISHED: 0.0 if move_limit_reached else 1.0,
            GT_EXTRA_BLACK: float(self.extra_black),
            GT_INITIAL_TURN: 0.0,
            GT_GAME_MODE: float(self.mode),
            GT_OWNERSHIP_WEIGHT: 0.0 if ownership is None else 1.0,
        }
        channels = list(constants)
        expected = np.array([constants[c] for c in channels])
        differ = gt[:, channels] != expected

        def differing_channel(r: int) -> str:
            c = channels[int(np.argmax(differ[r]))]
            return f"globalTargetsNC channel {c} is {gt[r, c]:g}, the game gives {constants[c]:g}"

        self._fail(differ.any(axis=1), differing_channel)
        area_flag = np.array([area_scoring_flag(rules.scoring, int(e)) for e in self._encore])
        self._fail(
            gt[:, GT_AREA_SCORING] != area_flag[of_row],
            lambda r: (
                f"its area-scoring flag is {gt[r, GT_AREA_SCORING]:g}; in encore phase {self._encore[of_row[r]]} "
                f"under {rules.scoring} scoring it is {area_flag[of_row[r]]:g}"
            ),
        )
        bonus = np.array(
            [bonus_points_target(int(p), game.white_bonus, float(w)) for p, w in zip(self._player, self._white_bonus)],
            np.float32,
        )
        self._fail(
            gt[:, GT_BONUS_POINTS].astype(np.float32) != bonus[of_row],
            lambda r: f"its bonus points to come are {gt[r, GT_BONUS_POINTS]:g}, the game gives {bonus[of_row[r]]:g}",
        )
        self._fail(
            gt[:, GT_NEXT_POLICY_WEIGHT] != next_weight[of_row],
            lambda r: (
                f"its next-move policy weight is {gt[r, GT_NEXT_POLICY_WEIGHT]:g}, expected {next_weight[of_row[r]]:g}"
            ),
        )
        chunks = np.asarray(game_hash_chunks(game_id_hash(self.game_id)), np.float64)
        self._fail(
            np.any(gt[:, GT_GAME_HASH] != chunks, axis=1), f"its game hash is not the hash of game id {self.game_id!r}"
        )
        self_komi = np.asarray(self.rows["globalInputNC"], np.float32)[:, 5] * np.float32(20.0)
        self._fail(gt[:, GT_SELF_KOMI].astype(np.float32) != self_komi, "its self komi is not its input's")
        self._fail(
            np.any(np.asarray(self.rows["scoreDistrN"]) != distr[of_row], axis=1),
            "its final score distribution contradicts the game's score",
        )
        differ = np.asarray(self.rows["valueTargetsNCHW"]) != planes[of_row]  # [R, 5, 19, 19]
        names = {
            VT_OWNERSHIP: "final ownership",
            VT_SEKI: "seki",
            VT_FUTURE_8: "board 8 moves on",
            VT_FUTURE_32: "board 32 moves on",
            VT_SCORING: "scoring",
        }
        self._fail(
            differ.any(axis=(1, 2, 3)),
            lambda r: f"its {names[int(np.argmax(differ[r].any(axis=(1, 2))))]} target contradicts the game",
        )

    # --- side positions ---------------------------------------------------------------------------
    def check_side_positions(self, sides: list[SidePosition], move_limit_reached: bool) -> None:
        """The side rows against the record's side positions, in order: one row each."""
        gt = np.asarray(self.side_rows["globalTargetsNC"], np.float64)
        n = gt.shape[0]
        base = self.n_rows
        if n != len(sides):
            raise RowMismatch(f"the rows hold {n} side positions, the record's variations {len(sides)}")
        if n == 0:
            return
        packed = np.asarray(self.side_rows["binaryInputNCHWPacked"])
        glob = np.asarray(self.side_rows["globalInputNC"], np.float32)
        policies = np.asarray(self.side_rows["policyTargetsNCMove"])
        first_turn = self.gt[0, GT_FIRST_TRAINING_TURN] if self.n_rows else gt[0, GT_FIRST_TRAINING_TURN]
        constants = {
            GT_ROW_WEIGHT: 1.0,
            GT_POLICY_WEIGHT: 1.0,
            GT_NEXT_POLICY_WEIGHT: 0.0,
            GT_OWNERSHIP_WEIGHT: 0.0,
            GT_FUTURE_BOARD_WEIGHT: 0.0,
            GT_SCORING_WEIGHT: 0.0,
            GT_FINAL_SCORE: 0.0,
            GT_VARIANCE_TIME: 0.0,
            GT_BONUS_POINTS: 0.0,
            GT_GAME_FINISHED: 0.0,
            GT_EARLIER_NET: 0.0,
            GT_NETS_BEHIND: 0.0,
            GT_HIT_TURN_LIMIT: 1.0 if move_limit_reached else 0.0,
            GT_EXTRA_BLACK: float(self.extra_black),
            GT_INITIAL_TURN: 0.0,
            GT_GAME_MODE: float(self.mode),
            GT_FIRST_TRAINING_TURN: float(first_turn),
        }
        chunks = np.asarray(game_hash_chunks(game_id_hash(self.game_id)), np.float64)
        for j, side in enumerate(sides):
            r = base + j
            where = f"row {r} (side position {j + 1}, turn {side.game.num_moves})"
            game = side.game
            expected_packed, expected_glob = self._inputs(game)
            if not np.array_equal(packed[j], expected_packed) or not np.array_equal(glob[j], expected_glob):
                raise RowMismatch(f"{where}: its inputs are not the position of the record's side position")
            if gt[j, GT_TURN_INDEX] != game.num_moves:
                raise RowMismatch(f"{where}: its turn is {gt[j, GT_TURN_INDEX]:g}")
            if gt[j, GT_UNREDUCED_VISITS] != side.visits:
                raise RowMismatch(
                    f"{where}: its search had {gt[j, GT_UNREDUCED_VISITS]:g} visits, the record says {side.visits}"
                )
            pos = _policy_pos(side.reply)
            if policies[j, 0, pos] <= 0 and policies[j, 0].max() < POLICY_TARGET_MAX:
                raise RowMismatch(f"{where}: its policy target has nothing on the move its search chose")
            if np.any(policies[j, 1] != 1):
                raise RowMismatch(f"{where}: a side position has no next-move policy target (all ones)")
            values = gt[j, GT_WIN : GT_SCORE + 1]
            for k in range(1, 5):
                if np.any(gt[j, 4 * k : 4 * k + 4] != values):
                    raise RowMismatch(f"{where}: its value targets differ between horizons (all are its search's)")
            for c, v in constants.items():
                if gt[j, c] != v:
                    raise RowMismatch(
                        f"{where}: globalTargetsNC channel {c} is {gt[j, c]:g}, a side position gives {v:g}"
                    )
            if gt[j, GT_AREA_SCORING] != area_scoring_flag(game.rules.scoring, game.encore_phase):
                raise RowMismatch(f"{where}: its area-scoring flag contradicts the position")
            if np.any(gt[j, GT_GAME_HASH] != chunks):
                raise RowMismatch(f"{where}: its game hash is not the hash of game id {self.game_id!r}")
            if np.float32(gt[j, GT_SELF_KOMI]) != glob[j, 5] * np.float32(20.0):
                raise RowMismatch(f"{where}: its self komi is not its input's")
            if np.any(np.asarray(self.side_rows["scoreDistrN"][j]) != dummy_score_distribution()):
                raise RowMismatch(f"{where}: a side position has no final score distribution")
            if np.asarray(self.side_rows["valueTargetsNCHW"][j]).any():
                raise RowMismatch(f"{where}: a side position has no ownership or later-board targets")

    # --- the count --------------------------------------------------------------------------------
    def check_count(self, full_weight: float, full_turns: int) -> None:
        """The rows the full searches can give: their weights sum to ``full_weight`` (each at most 1)
        over ``full_turns`` turns, and the writer turns each weight into a whole number of rows at
        random, so an honest game exceeds ``full_weight`` by more than ROW_COUNT_SIGMAS standard
        deviations (plus one) with odds of about 1e-9."""
        bound = full_weight + ROW_COUNT_SIGMAS * math.sqrt(full_turns) / 2.0 + 1.0
        if self.n_rows > bound:
            raise RowMismatch(
                f"it holds {self.n_rows} rows, more than the {full_turns} full searches of the game "
                f"can give (their weight is {full_weight:g}; at most {math.floor(bound)} rows)"
            )
