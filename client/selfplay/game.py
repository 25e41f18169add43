"""One self-play game from its first draw to its training record, as a sequence of searches.

A :class:`SelfPlayGame` says what to search next (:meth:`next_search`) and takes the finished
search's result (:meth:`on_result`); the driver runs the searches of many games in lock step. The
phases, with the paper's Appendix C and section 6.1:

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
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from client.search.engine import SearchResult, move_positions
from client.search.targets import choose_move, pruned_visits
from client.selfplay.init import GameStart
from common.data.records import GameRecord, GameResult, NetValues, SearchValues, TurnRecord
from common.data.rows import policy_surprise_and_entropy
from common.data.schema import GAME_MODE_HANDICAP, GAME_MODE_NORMAL
from common.data.selfplay_sgf import RootInfo, SearchNote, StartNote
from common.data.weights import soft_resignation_weight
from common.go.game import Game
from common.go.geometry import BLACK, PASS, WHITE
from common.go.rules import round_komi
from common.go.sgf import GameRecord as SgfRecord
from common.nn.features import NN_AREA, NUM_GLOBAL, NUM_SPATIAL, Encoder
from common.settings import SelfPlaySettings

HANDICAP, COMPENSATE, OPENING, PLAY, OVER = "handicap", "compensate", "opening", "play", "over"


@dataclass(frozen=True)
class SearchRequest:
    game: Game
    visits: int
    full: bool  # noise and forced playouts (the settings' search); else a cheap search
    reuse: bool  # keep the tree the previous move left


@dataclass
class SelfPlayGame:
    game_id: str
    settings: SelfPlaySettings
    start: GameStart
    rng: np.random.Generator
    encoder: Encoder
    phase: str = HANDICAP
    game: Game = field(init=False)  # made by __post_init__ from start
    handicap_stones: list[int] = field(default_factory=list)
    compensation_rounds: int = 0
    opening_played: int = 0
    start_turn: int = 0
    turns: list[TurnRecord] = field(default_factory=list)
    notes: list[SearchNote | None] = field(default_factory=list)
    white_winloss: list[float] = field(default_factory=list)
    pending_full: bool = False
    hit_move_limit: bool = False
    full_searches: int = 0
    cheap_searches: int = 0
    visits: int = 0

    def __post_init__(self) -> None:
        s = self.start
        self.game = Game(s.x_size, s.y_size, s.rules, s.komi, capacity=self.settings.max_moves + 8)
        self._spatial = np.zeros((1, NUM_SPATIAL, NN_AREA), np.float32)
        self._glob = np.zeros((1, NUM_GLOBAL), np.float32)
        self.phase = HANDICAP if s.extra_black > 0 else OPENING
        self.compensation_rounds = self.settings.handicap_compensation_rounds if s.compensate_komi else 0
        self._advance_phase()

    @property
    def board_length(self) -> float:
        return math.sqrt(self.start.x_size * self.start.y_size)

    # --- what to search --------------------------------------------------------------------------
    def next_search(self) -> SearchRequest | None:
        """The next search this game needs, or None once it is over."""
        if self.phase == HANDICAP:
            position = Game(self.start.x_size, self.start.y_size, self.start.rules, self.start.komi)
            if self.handicap_stones:
                position.setup(black=self.handicap_stones, to_move=BLACK)
            return SearchRequest(position, 1, False, False)
        if self.phase in (COMPENSATE, OPENING):
            return SearchRequest(self.game, 1, False, False)
        if self.phase == PLAY:
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
            return SearchRequest(self.game, visits, full, not full)
        return None

    # --- results ---------------------------------------------------------------------------------
    def on_result(self, result: SearchResult) -> int | None:
        """Take a finished search; returns the move played on self.game (None if none was)."""
        if self.phase == HANDICAP:
            self.handicap_stones.append(self._raw_policy_move(result, allow_pass=False))
            if len(self.handicap_stones) == self.start.extra_black + 1:
                self.game.place_free_handicap(self.handicap_stones)
                self.phase = COMPENSATE
                self._advance_phase()
            return None
        if self.phase == COMPENSATE:
            self.game.komi = round_komi(self.game.komi - result.raw_score)
            self.compensation_rounds -= 1
            self._advance_phase()
            return None
        if self.phase == OPENING:
            move = self._raw_policy_move(result, allow_pass=False)
            self._play(move, None)
            self.opening_played += 1
            self._advance_phase()
            return move
        if self.phase == PLAY:
            return self._play_searched(result)
        raise RuntimeError(f"game {self.game_id}: no search was asked for in phase {self.phase}")

    def _advance_phase(self) -> None:
        if self.phase == COMPENSATE and self.compensation_rounds <= 0:
            self.phase = OPENING
        if self.phase == OPENING and (self.opening_played >= self.start.opening_moves or self.game.is_over):
            self.phase = PLAY
            self.start_turn = self.game.num_moves
        if self.phase == PLAY and self.game.is_over:
            self.phase = OVER

    def _raw_policy_move(self, result: SearchResult, allow_pass: bool) -> int:
        p = result.raw_priors.astype(np.float64)
        if not allow_pass:
            p = np.where(result.moves == PASS, 0.0, p)
        if p.sum() <= 0:
            return PASS
        return int(result.moves[int(self.rng.choice(p.size, p=p / p.sum()))])

    def _play_searched(self, result: SearchResult) -> int:
        s = self.settings
        full = self.pending_full
        game = self.game
        pla = game.to_move
        if full:
            visits = pruned_visits(result, s.search) if s.search.forced_playouts else result.visits.astype(np.float64)
            self.full_searches += 1
        else:
            visits = result.visits.astype(np.float64)
            self.cheap_searches += 1
        self.visits += result.root_visits
        temperature = s.move_temperature_at(game.num_moves, self.board_length)
        move = int(result.moves[choose_move(visits, temperature, self.rng)])
        self._record_turn(result, visits, move, full)
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
            self.phase = OVER

    def _record_turn(self, result: SearchResult, visits: np.ndarray, move: int, full: bool) -> None:
        game = self.game
        if result.inputs is not None:
            spatial, glob = result.inputs
        else:
            self.encoder.encode([game], self._spatial, self._glob)
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
            if self.settings.reduce_visits:
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
        side = 1.0 if game.to_move == WHITE else -1.0
        q = np.zeros((3, NN_AREA + 1), np.float32)
        pos = move_positions(result.moves)
        seen = result.visits > 0
        q[0, pos[seen]] = result.winloss[seen]
        q[1, pos[seen]] = side * result.score[seen]
        q[2, pos[seen]] = result.visits[seen]
        self.turns.append(
            TurnRecord(
                spatial=spatial.astype(np.uint8),
                global_inputs=glob.copy(),
                player=game.to_move,
                move=int(move_positions(np.array([move]))[0]),
                policy_target=target,
                search=SearchValues(
                    win=0.5 * (1.0 + wl),
                    loss=0.5 * (1.0 - wl),
                    no_result=0.0,
                    score=side * result.root_score,
                    lead=side * result.root_lead,
                ),
                raw=NetValues(
                    win=0.5 * (1.0 + raw_wl), loss=0.5 * (1.0 - raw_wl), no_result=0.0, score=side * result.raw_score
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
            mode=GAME_MODE_HANDICAP if self.start.extra_black else GAME_MODE_NORMAL,
            start_turn=self.start_turn,
            extra_black=self.start.extra_black,
            hit_turn_limit=self.hit_move_limit,
            draw_equivalent_wins_for_white=self.settings.draw_equivalent_wins,
        )

    def sgf(self, player: str) -> str:
        game = self.game
        record = SgfRecord.from_game(game, black_player=player, white_player=player, game_name=self.game_id)
        start = StartNote(self.start.komi, self.start.extra_black, self.start.compensate_komi, self.opening_played)
        record.nodes[0].comment = RootInfo(self.settings.to_dict(), start, self.hit_move_limit).to_comment()
        for node, note in zip(record.nodes[1:], self.notes):
            if note is not None:
                node.comment = note.text()
        return record.to_sgf()
