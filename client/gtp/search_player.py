"""The search as a GTP player, and KataGo's analysis lines for GUIs (Sabaki, Lizzie).

:class:`SearchPlayer` runs the batched search on one game, several leaves per batch, and keeps its
tree between moves when the position it is asked about continues the one it last searched. Moves
are the most visited child. Analysis reports follow KataGo's ``kata-analyze`` format: one line of
``info move ... pv ...`` entries, best first, values from the side to move, optionally followed by
``ownership`` (the network's ownership of the root position, row by row from the top left).
:func:`move_infos` gives the same entries as data, for KataGo's JSON analysis engine
(:mod:`client.analysis`, which KaTrain uses).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from client.search.engine import BatchedSearch, SearchResult
from client.search.targets import play_values, utility_lcb
from common.go.game import Game
from common.go.geometry import BLACK, EMPTY, PASS, WHITE
from common.settings import SearchSettings, play_search

GTP_LEAVES = 8


class SearchPlayer:
    def __init__(
        self,
        evaluator,
        visits: int,
        settings: SearchSettings | None = None,
        leaves_per_batch: int = GTP_LEAVES,
        seed: int = 0,
        max_analysis_visits: int = 20000,
    ) -> None:
        if visits < 1:
            raise ValueError(f"visits {visits}: must be at least 1")
        self.visits = visits
        self.max_analysis_visits = max(max_analysis_visits, visits)
        self.settings = settings or play_search()
        self.search = BatchedSearch(evaluator, 1, self.max_analysis_visits, leaves_per_batch, seed=seed)
        self.rng = np.random.default_rng(seed)
        self._key: tuple | None = None
        self._moves: list[tuple[int, int]] | None = None

    # --- the tree across moves -------------------------------------------------------------------
    def _sync(self, game: Game) -> bool:
        """Bring the tree to game's position if it continues the last searched one; else reset it.
        Returns whether a tree was kept."""
        key = (
            game.x_size,
            game.y_size,
            game.rules,
            game.komi,
            tuple(game.setup_black),
            tuple(game.setup_white),
            game.start_to_move,
        )
        kept = self.search.follow(0, game, self._moves if key == self._key else None)
        self._key = key
        self._moves = game.move_list
        return kept

    def clear_cache(self) -> None:
        """Forget every evaluation and the tree: the next search starts afresh."""
        self.search.cache.keys[:] = 0
        self.search.reset(0, BLACK)
        self._key = None

    def position_for(self, game: Game, color: int) -> Game:
        """The position to search for color: if the other side is to move, it passes first."""
        if game.to_move == color or game.is_over:
            return game
        position = game.copy()
        position.play(PASS, 3 - color)
        return position

    def run_search(
        self,
        game: Game,
        visits: int,
        report: Callable[[SearchResult], None] | None = None,
        interval: float = 0.0,
        stop: threading.Event | None = None,
    ) -> SearchResult:
        """Search game's position to `visits` root visits (kept tree included), calling report with
        the current result every `interval` seconds, until done or until stop is set."""
        reuse = self._sync(game)
        self.search.start(0, game, min(visits, self.max_analysis_visits), self.settings, full=True, reuse=reuse)
        last = time.monotonic()
        while self.search.n_searching:
            if stop is not None and stop.is_set():
                break
            self.search.step()
            if report is not None and interval > 0 and time.monotonic() - last >= interval:
                last = time.monotonic()
                report(self.search.result(0))
        self.search.stop(0)
        return self.search.result(0)

    # --- the GTP player --------------------------------------------------------------------------
    def choose_move(self, game: Game, color: int) -> int:
        position = self.position_for(game, color)
        if position.is_over:
            return PASS
        result = self.run_search(position, self.visits)
        return best_move(result, self.settings)

    def choose_handicap(self, game: Game, count: int, exclude: set[int]) -> list[int]:
        free = [loc for loc in game.locs() if game.color_at(loc) == EMPTY and loc not in exclude]
        return [int(x) for x in self.rng.choice(free, count, replace=False)]

    def principal_variation(self, move: int) -> list[int]:
        return self.search.principal_variation(0, move)


def best_move(result: SearchResult, settings: SearchSettings) -> int:
    """The move to play: the highest play value (visits, or with the settings' lower confidence
    bounds; ties: higher prior), PASS when the search has no move."""
    if result.moves.size == 0:
        return PASS
    return int(result.moves[np.lexsort((-result.priors, -play_values(result, settings)))[0]])


@dataclass
class MoveInfo:
    """One root move of a search as KataGo's analysis reports it, values from the side to move:
    winrate and its lcb in [0, 1], utility, score (the self-play score mean), its standard
    deviation, lead, the network's prior, the rank (``order``, 0 = best) and the principal variation
    (vertices, starting with the move); ``weight`` is the sum of its visits' weights (the visits
    unless playouts are weighted)."""

    loc: int
    vertex: str
    visits: int
    weight: float
    utility: float
    winrate: float
    score: float
    score_stdev: float
    lead: float
    prior: float
    lcb: float
    utility_lcb: float
    order: int
    pv: list[str]


def move_infos(
    result: SearchResult,
    game: Game,
    pv: Callable[[int], list[int]],
    settings: SearchSettings,
    max_moves: int = 0,
) -> list[MoveInfo]:
    """The visited root moves, best first (play value: see best_move), at most max_moves (0: all).

    As KataGo reports them, ``utility_lcb`` is the utility's lower confidence bound (``lcb_stdevs``
    standard errors) and ``lcb`` the winrate less that radius scaled to the winrate's share of the
    utility."""
    side = 1.0 if result.pla == WHITE else -1.0
    values = play_values(result, settings)
    order = [int(k) for k in np.lexsort((-result.priors, -values)) if result.visits[k] > 0]
    utility_lcb_, radius = utility_lcb(result, settings.score_utility_factor, settings.lcb_stdevs)
    winrate_share = 0.5 / (1.0 + settings.score_utility_factor)
    if max_moves > 0:
        order = order[:max_moves]
    infos = []
    for rank, k in enumerate(order):
        move = int(result.moves[k])
        winrate = 0.5 * (1.0 + result.winloss[k])
        utility = float(result.utility[k])
        infos.append(
            MoveInfo(
                loc=move,
                vertex=game.vertex(move),
                visits=int(result.visits[k]),
                weight=float(result.weights[k]),
                utility=utility,
                winrate=winrate,
                score=side * result.score[k],
                score_stdev=math.sqrt(max(0.0, result.score_sq[k] - result.score[k] ** 2)),
                lead=side * result.lead[k],
                prior=float(result.raw_priors[k]),
                lcb=winrate - winrate_share * float(radius[k]),
                utility_lcb=float(utility_lcb_[k]),
                order=rank,
                pv=[game.vertex(m) for m in pv(move)],
            )
        )
    return infos


def analysis_line(
    result: SearchResult,
    game: Game,
    pv: Callable[[int], list[int]],
    settings: SearchSettings,
    max_moves: int = 0,
    ownership: np.ndarray | None = None,
) -> str:
    """KataGo's ``info move ...`` line for a search result (from the side to move). As in KataGo,
    ``scoreMean`` is the lead (the name kept for older tools) and ``scoreSelfplay`` the score mean."""
    parts = []
    for m in move_infos(result, game, pv, settings, max_moves):
        parts.append(
            f"info move {m.vertex} visits {m.visits} edgeVisits {m.visits} "
            f"utility {_num(m.utility)} winrate {_num(m.winrate)} scoreMean {_num(m.lead)} "
            f"scoreStdev {_num(m.score_stdev)} scoreLead {_num(m.lead)} scoreSelfplay {_num(m.score)} "
            f"prior {_num(m.prior)} lcb {_num(m.lcb)} utilityLcb {_num(m.utility_lcb)} "
            f"weight {_num(m.weight)} order {m.order} pv {' '.join(m.pv)}"
        )
    text = " ".join(parts)
    if ownership is not None:
        text += " ownership " + " ".join(_num(float(v)) for v in np.asarray(ownership).ravel())
    return text


def _num(x: float) -> str:
    return f"{x:.6g}"
