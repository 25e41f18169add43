"""One self-play game from its first draw to its training record, as a sequence of searches.

A :class:`SelfPlayGame` says what to search next (:meth:`next_search`) and takes the finished
search's result (:meth:`on_result`); the driver runs the searches of many games in lock step. The
phases, with the paper's Appendix C and section 6.1:

0. fair komi (with ``komi_auto``, KataGo's komiAuto, for games whose komi is not compensated
   after their handicap): from the settings' mean, komi moves by the network's predicted score on
   the empty board a few times over; the game plays that plus its draw's offset from the mean;
1. handicap: black's extra stones, each drawn from the raw policy (a one-visit search's network
   priors) with black to move; then, for most handicap games, komi moves by the network's predicted
   score, a few times over, to compensate white;
2. opening: the first r moves straight from the raw policy;
3. play: each move a full search (probability p, N visits, noise, forced playouts, a fresh tree,
   recorded for training) or a cheap one (n visits as a cap on the reused tree, played for strength,
   not recorded); soft resignation lowers the visits and the weight of full searches once one side
   has been far ahead for a few turns; moves are drawn from the (pruned) visits at a temperature
   decaying from early to late with a half-life of one board length.

The game ends by two passes (under territory scoring: the passes that end the second encore phase;
or the other ways the rules end it), when every point is pass-alive or pass-alive territory, or at
the move limit (no result).

Game branching (section 6.2.2) adds two phases after the end:

4. side positions: at a share of the searched turns a move off the game's line was drawn from the
   raw policy; each such position now gets a full search of its own, recorded as a side row whose
   value targets are the search's, and some lines go one move further (the search's reply, then
   another move off the line);
5. early fork: some even games choose their next game's start: the game's first r moves and the best
   (by one network evaluation each) of a few random legal moves, whose komi that game then makes fair
   as a handicap game's.

A game that starts from a fork plays the fork's moves as its opening, then moves komi by the
network's score, then plays on as any game.

A game of asymmetric playouts (KataGo's) gives one side 2^d times the other's visits in every search
of phases 3 and 4, each from a fresh tree, and tells the network d (the other side's positions -d).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from client.search.engine import SearchResult, move_positions
from client.search.targets import choose_move, gumbel_move, gumbel_policy, pruned_visits
from client.selfplay.init import Fork, GameStart
from common.data.records import GameRecord, GameResult, NetValues, SearchValues, SideTurn, TurnRecord
from common.data.rows import policy_surprise_and_entropy
from common.data.schema import GAME_MODE_ASYM, GAME_MODE_FORK, GAME_MODE_HANDICAP, GAME_MODE_NORMAL, POLICY_TARGET_MAX
from common.data.selfplay_sgf import BRANCH_NOTE, ForkNote, RootInfo, SearchNote, StartNote
from common.data.weights import soft_resignation_weight
from common.encoding.features import NN_AREA, NUM_GLOBAL, NUM_SPATIAL, Encoder
from common.go.game import Game
from common.go.geometry import BLACK, PASS, WHITE
from common.go.rules import round_komi
from common.go.sgf import GameRecord as SgfRecord
from common.go.sgf import Node
from common.settings import SelfPlaySettings


class Phase(StrEnum):
    """Where a game stands, in the order of the module's list (a checkpoint keeps its value)."""

    FAIR = "fair"
    HANDICAP = "handicap"
    COMPENSATE = "compensate"
    OPENING = "opening"
    PLAY = "play"
    SIDE = "side"
    FORK = "fork"
    OVER = "over"


# A side position's move off the line (play.cpp chooseRandomForkingMove): from the raw policy at
# temperature 1 with this probability, at temperature 2 up to the next, else any legal move.
BRANCH_TEMPERATURES = ((0.70, 1.0), (0.95, 2.0))


@dataclass(frozen=True)
class SearchRequest:
    game: Game
    visits: int
    full: bool  # noise and forced playouts (the settings' search); else a cheap search
    reuse: bool  # keep the tree the previous move left
    pda_black: float = 0.0  # black's playout doubling advantage, told to the network


@dataclass
class SideLine:
    """A side position's line: it branches off before the game's move `turn`; `nodes` are its moves
    as the SGF will show them, `game` the position they lead to. The position waits for its full
    search, or (`searched`, after a continued reply) for the network's policy to draw the next move
    off the line. `records` are the rows of its searches."""

    turn: int
    game: Game
    nodes: list[Node] = field(default_factory=list)
    searched: bool = False
    records: list[SideTurn] = field(default_factory=list)


@dataclass
class SelfPlayGame:
    game_id: str
    settings: SelfPlaySettings
    start: GameStart
    rng: np.random.Generator
    encoder: Encoder
    phase: Phase = Phase.HANDICAP
    game: Game = field(init=False)  # made by __post_init__ from start
    handicap_stones: list[int] = field(default_factory=list)
    compensation_rounds: int = 0
    fair_komi: float | None = None  # komi_auto: the empty board's fair komi (while found, then found)
    fair_rounds: int = 0
    opening_played: int = 0
    start_turn: int = 0
    turns: list[TurnRecord] = field(default_factory=list)
    notes: list[SearchNote | None] = field(default_factory=list)
    white_winloss: list[float] = field(default_factory=list)
    pending_full: bool = False
    hit_move_limit: bool = False
    full_searches: int = 0
    cheap_searches: int = 0
    side_searches: int = 0
    visits: int = 0
    side_lines: list[SideLine] = field(default_factory=list)  # every one, in the order made
    side_queue: list[SideLine] = field(default_factory=list)  # the ones still to search
    fork_base: Game | None = None  # the position an early fork branches from, while it is chosen
    fork_candidates: list[int] = field(default_factory=list)
    fork_scores: list[float] = field(default_factory=list)
    fork: GameStart | None = None  # the start this game gives the next one (an early fork)

    def __post_init__(self) -> None:
        s = self.start
        self.game = Game(s.x_size, s.y_size, s.rules, s.komi, capacity=self.settings.max_moves + 8)
        self._scratch()
        self.phase = Phase.HANDICAP if s.extra_black > 0 else Phase.OPENING
        self.compensation_rounds = self.settings.handicap_compensation_rounds if s.compensate_komi else 0
        if s.komi_auto and s.fork is None:
            self.fair_komi = round_komi(self.settings.komi_mean)
            self.fair_rounds = self.settings.handicap_compensation_rounds
            self.phase = Phase.FAIR
        if s.fork is not None:
            for color, loc in s.fork.moves:
                self.game.play(loc, color)
                self.notes.append(None)
            self.opening_played = len(s.fork.moves)
            self.phase = Phase.COMPENSATE
        self._advance_phase()

    def _scratch(self) -> None:
        self._spatial = np.zeros((1, NUM_SPATIAL, NN_AREA), np.float32)
        self._glob = np.zeros((1, NUM_GLOBAL), np.float32)

    # A game in play is saved without the search's tree (the engine's) and without the scratch it
    # shares or can make again: what a checkpoint holds, to be played on by another process.
    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        for name in ("encoder", "_spatial", "_glob"):
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.encoder = None  # type: ignore[assignment]  # the group that plays it on gives its own
        self._scratch()

    @property
    def board_length(self) -> float:
        return math.sqrt(self.start.x_size * self.start.y_size)

    # --- what to search --------------------------------------------------------------------------
    def next_search(self) -> SearchRequest | None:
        """The next search this game needs, or None once it is over."""
        handlers = _PHASES.get(self.phase)
        return handlers[0](self) if handlers is not None else None

    def _search_fair(self) -> SearchRequest:
        assert self.fair_komi is not None
        position = Game(self.start.x_size, self.start.y_size, self.start.rules, self.fair_komi)
        return SearchRequest(position, 1, False, False)

    def _search_handicap(self) -> SearchRequest:
        position = Game(self.start.x_size, self.start.y_size, self.start.rules, self.game.komi)
        if self.handicap_stones:
            position.setup(black=self.handicap_stones, to_move=BLACK)
        return SearchRequest(position, 1, False, False)

    def _search_raw(self) -> SearchRequest:
        """The network's look at the game's position (komi compensation, opening moves)."""
        return SearchRequest(self.game, 1, False, False)

    def _search_play(self) -> SearchRequest:
        s = self.settings
        full = bool(self.rng.random() < s.full_search_prob)
        visits = s.visits if full else s.cheap_visits
        if full and s.reduce_visits:
            proportion, _ = soft_resignation_weight(
                self.white_winloss,
                1.0,
                s.reduce_visits_threshold,
                s.reduce_visits_lookback,
                s.reduced_visits_weight,
            )
            if proportion > 0:
                visits = max(1, round(visits + proportion * (min(s.reduced_visits_min, visits) - visits)))
        self.pending_full = full
        if self.start.playouts:  # each from a fresh tree, as KataGo's: the other side's was bigger
            visits = self._asymmetric(visits, self.game)
            return SearchRequest(self.game, visits, full, False, self.start.pda_of(BLACK))
        return SearchRequest(self.game, visits, full, not full)

    def _search_side(self) -> SearchRequest:
        line = self.side_queue[0]
        pda_black = self.start.pda_of(BLACK)
        if line.searched:
            return SearchRequest(line.game, 1, False, False, pda_black)
        return SearchRequest(line.game, self._asymmetric(self.settings.visits, line.game), True, False, pda_black)

    def _search_fork(self) -> SearchRequest:
        position = self._fork_position(self.fork_candidates[len(self.fork_scores)])
        return SearchRequest(position, 1, False, False)

    def wants_inputs(self) -> bool:
        """Does the next result become a row (its root's network inputs are wanted)?"""
        return self.phase == Phase.PLAY or (self.phase == Phase.SIDE and not self.side_queue[0].searched)

    # --- results ---------------------------------------------------------------------------------
    def on_result(self, result: SearchResult) -> int | None:
        """Take a finished search; returns the move played on self.game (None if none was)."""
        handlers = _PHASES.get(self.phase)
        if handlers is None:
            raise RuntimeError(f"game {self.game_id}: no search was asked for in phase {self.phase}")
        return handlers[1](self, result)

    def _handicap_result(self, result: SearchResult) -> None:
        self.handicap_stones.append(self._raw_policy_move(result, allow_pass=False))
        if len(self.handicap_stones) == self.start.extra_black + 1:
            self.game.place_free_handicap(self.handicap_stones)
            self.phase = Phase.COMPENSATE
            self._advance_phase()

    def _compensate_result(self, result: SearchResult) -> None:
        self.game.komi = round_komi(self.game.komi - result.raw_score)
        self.compensation_rounds -= 1
        self._advance_phase()

    def _opening_result(self, result: SearchResult) -> int:
        move = self._raw_policy_move(result, allow_pass=False)
        self._play(move, None)
        self.opening_played += 1
        self._advance_phase()
        return move

    def _fork_result(self, result: SearchResult) -> None:
        self.fork_scores.append(result.raw_score)
        if len(self.fork_scores) == len(self.fork_candidates):
            self._choose_fork()

    def _fair_result(self, result: SearchResult) -> None:
        """One query of the empty board's fair komi (kept within the board's area); after the last,
        the game's komi is that plus the draw's offset from the settings' mean, as KataGo's komiAuto."""
        assert self.fair_komi is not None
        area = self.start.x_size * self.start.y_size
        self.fair_komi = round_komi(min(area, max(-area, self.fair_komi - result.raw_score)))
        self.fair_rounds -= 1
        if self.fair_rounds > 0:
            return
        self.game.komi = self.settings.auto_komi(self.fair_komi, self.start.komi)
        self.phase = Phase.HANDICAP if self.start.extra_black > 0 else Phase.OPENING
        self._advance_phase()

    def _advance_phase(self) -> None:
        if self.phase == Phase.COMPENSATE and self.compensation_rounds <= 0:
            self.phase = Phase.OPENING
        if self.phase == Phase.OPENING and (self.opening_played >= self.start.opening_moves or self.game.is_over):
            self.phase = Phase.PLAY
            self.start_turn = self.game.num_moves
        if self.phase == Phase.PLAY and self.game.is_over:
            self.phase = Phase.SIDE
        if self.phase == Phase.SIDE and not self.side_queue:
            self.phase = Phase.FORK
            self._draw_fork()
        if self.phase == Phase.FORK and not self.fork_candidates:
            self.phase = Phase.OVER

    def _asymmetric(self, visits: int, game: Game) -> int:
        """The visits of a search of game's position: as given, or with asymmetric playouts its side's share."""
        playouts = self.start.playouts
        if playouts is None:
            return visits
        return self.settings.asymmetric_visits(visits, playouts.doublings, game.to_move == playouts.player)

    def _raw_policy_move(self, result: SearchResult, allow_pass: bool) -> int:
        p = result.raw_priors.astype(np.float64)
        if not allow_pass:
            p = np.where(result.moves == PASS, 0.0, p)
        if p.sum() <= 0:
            return PASS
        return int(result.moves[int(self.rng.choice(p.size, p=p / p.sum()))])

    def _target_and_move(self, result: SearchResult, full: bool, temperature: float) -> tuple[np.ndarray, int]:
        """The policy target of a search (per root edge) and the index of the edge to play: the visits
        (pruned of forced playouts on a full search) and a move drawn from them at ``temperature``;
        for a Gumbel search, its improved policy (at the resolution the rows keep: its largest share
        at their largest count) and its move."""
        search = self.settings.search
        if search.gumbel:
            target = gumbel_policy(result, search)
            return target * (POLICY_TARGET_MAX / target.max()), gumbel_move(result, search)
        visits = pruned_visits(result, search) if full and search.forced_playouts else result.weights.copy()
        return visits, choose_move(visits, temperature, self.rng)

    def _play_searched(self, result: SearchResult) -> int:
        s = self.settings
        full = self.pending_full
        game = self.game
        pla = game.to_move
        if full:
            self.full_searches += 1
        else:
            self.cheap_searches += 1
        self.visits += result.root_visits
        visits, index = self._target_and_move(result, full, s.move_temperature_at(game.num_moves, self.board_length))
        move = int(result.moves[index])
        self.turns.append(self._turn_record(game, result, visits, move, full, side=False))
        if s.side_position_prob > 0 and self.rng.random() < s.side_position_prob:
            self._branch_off(result, move)
        sign = 1.0 if pla == WHITE else -1.0
        self.white_winloss.append(sign * result.root_winloss)
        winrate = 0.5 * (1.0 + result.root_winloss)
        self._play(move, SearchNote(full, result.root_visits, winrate, result.root_score))
        return move

    def _play(self, move: int, note: SearchNote | None) -> None:
        game = self.game
        game.play(move)
        self.notes.append(note)
        if not game.is_over and self.settings.end_when_all_pass_alive:
            game.end_if_all_pass_alive()
        if not game.is_over and game.num_moves >= self.settings.max_moves:
            game.end_without_result()
            self.hit_move_limit = True
        if game.is_over:
            self._advance_phase()

    # --- side positions --------------------------------------------------------------------------
    def _branch_move(self, result: SearchResult, banned: int | None) -> int | None:
        """A move off the line at the searched position (play.cpp chooseRandomForkingMove): from the
        raw policy at temperature 1 or 2, or any legal move; never `banned` (the move the game plays)."""
        moves = result.moves
        allowed = moves != banned if banned is not None else np.ones(moves.size, bool)
        if not allowed.any():
            return None
        r = self.rng.random()
        for share, temperature in BRANCH_TEMPERATURES:
            if r < share:
                weights = np.where(allowed, result.raw_priors.astype(np.float64) ** (1.0 / temperature), 0.0)
                if weights.sum() > 0:
                    return int(moves[self.rng.choice(moves.size, p=weights / weights.sum())])
                break
        return int(moves[self.rng.choice(np.flatnonzero(allowed))])

    def _branch_off(self, result: SearchResult, played: int) -> None:
        """Start a side line at the game's position (before `played` is played on it)."""
        move = self._branch_move(result, played)
        if move is None:
            return
        line = SideLine(self.game.num_moves, self.game.copy())
        self._extend_line(line, move, BRANCH_NOTE)
        if not line.game.is_over:
            self.side_lines.append(line)
            self.side_queue.append(line)

    @staticmethod
    def _extend_line(line: SideLine, move: int, comment: str) -> None:
        color = line.game.to_move
        line.game.play(move)
        line.nodes.append(Node(move=(color, move), comment=comment))

    def _side_result(self, result: SearchResult) -> None:
        s = self.settings
        line = self.side_queue[0]
        game = line.game
        if line.searched:  # the reply was played: draw the next move off the line
            move = self._branch_move(result, None)
            line.searched = False
            if move is not None:
                self._extend_line(line, move, BRANCH_NOTE)
            if move is None or game.is_over:
                self.side_queue.pop(0)
            self._advance_phase()
            return
        visits, index = self._target_and_move(result, True, s.move_temperature_at(game.num_moves, self.board_length))
        reply = int(result.moves[index])
        line.records.append(SideTurn(game.num_moves, self._turn_record(game, result, visits, reply, True, side=True)))
        self.side_searches += 1
        self.visits += result.root_visits
        winrate = 0.5 * (1.0 + result.root_winloss)
        note = SearchNote(True, result.root_visits, winrate, result.root_score, side=True).text()
        # (a line goes on again and again at random: the game's move limit bounds it)
        go_on = game.num_moves + 2 <= s.max_moves and s.side_position_continue_prob > 0
        go_on = go_on and self.rng.random() < s.side_position_continue_prob
        if go_on:
            self._extend_line(line, reply, note)
            line.searched = not game.is_over
        else:
            color = game.to_move
            line.nodes.append(Node(move=(color, reply), comment=note))
        if not line.searched:
            self.side_queue.pop(0)
        self._advance_phase()

    # --- early fork ------------------------------------------------------------------------------
    def _draw_fork(self) -> None:
        """Decide whether this game forks (an even game, with early_fork_prob) and where; the
        candidate moves are then evaluated one by one."""
        s = self.settings
        if s.early_fork_prob <= 0 or self.start.extra_black or self.start.fork is not None:
            return
        if self.rng.random() >= s.early_fork_prob:
            return
        turn = math.floor(self.rng.exponential(s.early_fork_move_prop * self.start.x_size * self.start.y_size))
        if turn >= self.game.num_moves:
            return
        base = self._replay(turn)
        choices = int(self.rng.integers(s.fork_min_choices, s.fork_max_choices + 1))
        legal = [loc for loc in base.legal_moves() if loc != PASS]
        if not legal:
            return
        picked = self.rng.choice(len(legal), size=min(choices, len(legal)), replace=False)
        self.fork_base = base
        # (a stone's move cannot end a game, but a game's end is no start: make sure)
        self.fork_candidates = [m for m in (legal[int(k)] for k in picked) if not self._fork_position(m).is_over]
        self.fork_scores = []

    def _replay(self, moves: int) -> Game:
        s = self.start
        game = Game(s.x_size, s.y_size, s.rules, self.game.komi, capacity=self.settings.max_moves + 8)
        for color, loc in self.game.move_list[:moves]:
            game.play(loc, color)
        return game

    def _fork_position(self, move: int) -> Game:
        assert self.fork_base is not None
        position = self.fork_base.copy()
        position.play(move)
        return position

    def _choose_fork(self) -> None:
        """The candidate the network likes best for the player who plays it starts the next game."""
        assert self.fork_base is not None
        base = self.fork_base
        sign = 1.0 if base.to_move == WHITE else -1.0
        best = max(range(len(self.fork_candidates)), key=lambda k: sign * self.fork_scores[k])
        moves = (*base.move_list, (base.to_move, self.fork_candidates[best]))
        s = self.start
        self.fork = GameStart(
            s.x_size,
            s.y_size,
            s.komi,
            s.rules,
            0,
            self.settings.handicap_compensation_rounds > 0,
            len(moves),
            Fork(self.game_id, moves, len(self.fork_candidates)),
        )
        self.fork_base = None
        self.fork_candidates = []
        self.phase = Phase.OVER

    def _turn_record(
        self, game: Game, result: SearchResult, visits: np.ndarray, move: int, full: bool, side: bool
    ) -> TurnRecord:
        if result.inputs is not None:
            spatial, glob = result.inputs
        else:
            self.encoder.encode([game], self._spatial, self._glob, pda=self.start.pda_of(game.to_move))
            spatial, glob = self._spatial[0], self._glob[0]
        target = result.policy_target(visits)
        if target.sum() <= 0:
            target = result.policy_target()
        if full:
            prior = result.prior_grid(raw=False)
            surprise, search_entropy, prior_entropy = policy_surprise_and_entropy(target, prior)
            _, _, raw_entropy = policy_surprise_and_entropy(target, result.prior_grid(raw=True))
        else:
            # A cheap turn becomes no row: its surprise and entropies would never be read.
            surprise, search_entropy, prior_entropy, raw_entropy = 0.0, None, 0.0, None
        weight = 0.0
        reduced = False
        if full:
            weight = 1.0
            if self.settings.reduce_visits and not side:
                proportion, weight = soft_resignation_weight(
                    self.white_winloss,
                    1.0,
                    self.settings.reduce_visits_threshold,
                    self.settings.reduce_visits_lookback,
                    self.settings.reduced_visits_weight,
                )
                reduced = proportion > 0
        wl = result.root_winloss
        raw_wl = result.raw_winloss
        sign = 1.0 if game.to_move == WHITE else -1.0
        q = np.zeros((3, NN_AREA + 1), np.float32)
        pos = move_positions(result.moves)
        seen = result.visits > 0
        q[0, pos[seen]] = result.winloss[seen]
        q[1, pos[seen]] = sign * result.score[seen]
        q[2, pos[seen]] = result.visits[seen]
        return TurnRecord(
            spatial=spatial.astype(np.uint8),
            global_inputs=glob.copy(),
            player=game.to_move,
            move=int(move_positions(np.array([move]))[0]),
            policy_target=target,
            search=SearchValues(
                win=0.5 * (1.0 + wl),
                loss=0.5 * (1.0 - wl),
                no_result=0.0,
                score=sign * result.root_score,
                lead=sign * result.root_lead,
            ),
            raw=NetValues(
                win=0.5 * (1.0 + raw_wl), loss=0.5 * (1.0 - raw_wl), no_result=0.0, score=sign * result.raw_score
            ),
            policy_surprise=surprise,
            policy_entropy=prior_entropy,
            search_entropy=search_entropy,
            raw_policy_entropy=raw_entropy,
            weight=weight,
            reduced=reduced,
            visits=result.root_visits,
            q_targets=q if full else None,
            encore_phase=game.encore_phase,
            white_bonus=game.white_bonus,
        )

    # --- the record ------------------------------------------------------------------------------
    def training_record(self) -> GameRecord:
        game = self.game
        res = game.result
        full_area = None
        if res is None or res.no_result:
            result = GameResult.without_result()
            ownership = None
        else:
            result = GameResult.from_score(res.score)
            own = game.ownership("scoring")
            ownership = (own == WHITE).astype(np.float32) - (own == BLACK).astype(np.float32)
            # What would be owned with every stone alive that is not pass-dead: where the score owns
            # nothing of it, the rows' seki target.
            area = game.ownership("katago")
            full_area = (area == WHITE).astype(np.float32) - (area == BLACK).astype(np.float32)
        colors = game.colors()
        stones = (colors == WHITE).astype(np.float32) - (colors == BLACK).astype(np.float32)
        return GameRecord(
            x_size=game.x_size,
            y_size=game.y_size,
            komi=game.komi,
            rules=game.rules,
            result=result,
            turns=self.turns,
            final_ownership=ownership,
            final_full_area=full_area,
            final_white_bonus=game.white_bonus,
            game_id=self.game_id,
            final_stones=stones,
            mode=self.mode,
            start_turn=self.start_turn,
            extra_black=self.start.extra_black,
            hit_turn_limit=self.hit_move_limit,
            draw_equivalent_wins_for_white=self.settings.draw_equivalent_wins,
            side_turns=[side for line in self.side_lines for side in line.records],
        )

    @property
    def mode(self) -> int:
        """KataGo's game mode of the rows."""
        if self.start.fork is not None:
            return GAME_MODE_FORK
        if self.start.playouts is not None:
            return GAME_MODE_ASYM
        return GAME_MODE_HANDICAP if self.start.extra_black else GAME_MODE_NORMAL

    def sgf(self, player: str) -> str:
        game = self.game
        record = SgfRecord.from_game(game, black_player=player, white_player=player, game_name=self.game_id)
        s = self.start
        fork = None if s.fork is None else ForkNote(s.fork.of, len(s.fork.moves) - 1, s.fork.choices)
        start = StartNote(
            s.komi, s.extra_black, s.compensate_komi, self.opening_played, fork, self.fair_komi, s.playouts
        )
        record.nodes[0].comment = RootInfo(self.settings.to_dict(), start, self.hit_move_limit).to_comment()
        for node, note in zip(record.nodes[1:], self.notes):
            if note is not None:
                node.comment = note.text()
        for line in self.side_lines:
            record.nodes[line.turn + 1].variations.append(line.nodes)
        return record.to_sgf()


# Each phase's handlers: the search it asks for and the taking of that search's result (the phase
# OVER has none).
_Search = Callable[[SelfPlayGame], SearchRequest]
_Take = Callable[[SelfPlayGame, SearchResult], int | None]
_PHASES: dict[Phase, tuple[_Search, _Take]] = {
    Phase.FAIR: (SelfPlayGame._search_fair, SelfPlayGame._fair_result),
    Phase.HANDICAP: (SelfPlayGame._search_handicap, SelfPlayGame._handicap_result),
    Phase.COMPENSATE: (SelfPlayGame._search_raw, SelfPlayGame._compensate_result),
    Phase.OPENING: (SelfPlayGame._search_raw, SelfPlayGame._opening_result),
    Phase.PLAY: (SelfPlayGame._search_play, SelfPlayGame._play_searched),
    Phase.SIDE: (SelfPlayGame._search_side, SelfPlayGame._side_result),
    Phase.FORK: (SelfPlayGame._search_fork, SelfPlayGame._fork_result),
}
