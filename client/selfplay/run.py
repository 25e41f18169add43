"""The self-play driver: G games at a time in one :class:`BatchedSearch`, each finished game written
as one SGF and one npz of training rows (both atomically), with a progress bar and a summary.

Every game draws its randomness from its own generator, seeded by the run's seed and the game's
index, and the lock-step batches are the same from run to run, so a seeded run with the same
parallelism reproduces its games and rows exactly.
"""

from __future__ import annotations

import gc
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from client.search.engine import BatchedSearch
from client.selfplay.game import PLAY, SelfPlayGame
from client.selfplay.init import draw_start
from common.data.rows import write_game_rows
from common.files import atomic_write
from common.go.geometry import BLACK, WHITE
from common.nn.features import Encoder
from common.settings import SelfPlaySettings

log = logging.getLogger(__name__)


@dataclass
class SelfPlaySummary:
    games: int = 0
    moves: int = 0
    rows: int = 0
    games_without_rows: int = 0
    full_searches: int = 0
    cheap_searches: int = 0
    visits: int = 0
    nn_evals: int = 0
    seconds: float = 0.0
    batch_fill: float = 0.0
    black_wins: int = 0
    white_wins: int = 0
    draws_or_no_result: int = 0
    search_visits: int = 0  # every visit made, unfinished games' too
    steps: int = 0
    files: list[Path] = field(default_factory=list)

    def lines(self) -> list[str]:
        s = max(self.seconds, 1e-9)
        return [
            f"games {self.games} (black {self.black_wins}, white {self.white_wins}, "
            f"draw or no result {self.draws_or_no_result}), moves {self.moves}, training rows {self.rows}"
            + (f" ({self.games_without_rows} games had none)" if self.games_without_rows else ""),
            f"searches: {self.full_searches} full, {self.cheap_searches} cheap; {self.search_visits} visits, "
            f"{self.nn_evals} network evaluations",
            f"time {self.seconds:.1f} s: {self.moves / s:.1f} moves/s, {self.search_visits / s:.0f} visits/s, "
            f"{self.nn_evals / s:.0f} evaluations/s, average batch fill {100 * self.batch_fill:.0f}%",
        ]


def run_selfplay(
    evaluator,
    settings: SelfPlaySettings,
    games: int,
    parallel: int,
    out_dir: str | Path,
    seed: int = 0,
    leaves_per_game: int = 1,
    cache_entries: int = 1 << 15,
    player_name: str = "sente",
    progress: bool = True,
    time_limit: float | None = None,
) -> SelfPlaySummary:
    """Play `games` self-play games, `parallel` at a time, into out_dir. With a time limit (seconds),
    games still unfinished then are dropped (nothing is written for them)."""
    if games < 1 or parallel < 1:
        raise ValueError("games and parallel must be at least 1")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    parallel = min(parallel, games)
    engine = BatchedSearch(evaluator, parallel, max(settings.visits, settings.cheap_visits), leaves_per_game,
                           cache_entries=cache_entries, seed=seed, history=settings.max_moves + 8)
    encoder = Encoder()
    summary = SelfPlaySummary()
    slots: list[SelfPlayGame | None] = [None] * parallel
    started = 0
    bar = _progress_bar(games, progress)
    t0 = time.perf_counter()
    last_update = t0

    def new_game() -> SelfPlayGame:
        nonlocal started
        index = started
        started += 1
        rng = np.random.default_rng([seed, index])
        return SelfPlayGame(f"s{seed}-g{index:06d}", settings, draw_start(settings, rng), rng, encoder)

    def finish(game: SelfPlayGame) -> None:
        summary.games += 1
        summary.moves += game.game.num_moves
        summary.full_searches += game.full_searches
        summary.cheap_searches += game.cheap_searches
        summary.visits += game.visits
        res = game.game.result
        if res is not None and not res.no_result and res.winner == BLACK:
            summary.black_wins += 1
        elif res is not None and not res.no_result and res.winner == WHITE:
            summary.white_wins += 1
        else:
            summary.draws_or_no_result += 1
        index = int(game.game_id.rsplit("g", 1)[1])
        rows_path = write_game_rows(game.training_record(), out, np.random.default_rng([seed, index, 1]),
                                    filename=f"{game.game_id}.npz")
        if rows_path is None:
            summary.games_without_rows += 1
        else:
            with np.load(rows_path) as z:
                summary.rows += int(z["globalTargetsNC"].shape[0])
            summary.files.append(rows_path)
        summary.files.append(atomic_write(out / f"{game.game_id}.sgf", game.sgf(player_name).encode()))
        bar.update(1)

    def launch(i: int) -> None:
        """Start slot i's next search, finishing games and starting new ones as needed."""
        while True:
            game = slots[i]
            if game is None:
                return
            request = game.next_search()
            if request is None:
                finish(game)
                slots[i] = new_game() if started < games else None
                continue
            engine.start(i, request.game, request.visits, settings.search, full=request.full, reuse=request.reuse,
                         draw_equivalent_wins=settings.draw_equivalent_wins)
            if engine.searching()[i]:
                return
            _take_result(engine, i, game)  # a cheap search whose reused tree was big enough already

    for i in range(parallel):
        slots[i] = new_game()
        launch(i)
    # The long-lived objects of the imports (torch's above all) need no more garbage collection
    # passes: without this, each pass walks them all again, a tenth of the run's time.
    gc.freeze()
    while engine.searching().any():
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            break
        for i in engine.step():
            _take_result(engine, int(i), slots[int(i)])
            launch(int(i))
        now = time.perf_counter()
        if now - last_update > 0.5:
            last_update = now
            elapsed = now - t0
            moves = summary.moves + _moves_in_play(slots)
            bar.set_postfix_str(f"{moves / elapsed:.1f} moves/s, {engine.batch_rows / elapsed:.0f} evals/s, "
                                f"fill {100 * engine.average_batch_fill:.0f}%")
    bar.close()
    summary.seconds = time.perf_counter() - t0
    summary.nn_evals = engine.batch_rows
    summary.search_visits = engine.visits_total
    summary.steps = engine.steps
    summary.batch_fill = engine.average_batch_fill
    return summary


def _take_result(engine: BatchedSearch, i: int, game: SelfPlayGame) -> None:
    move = game.on_result(engine.result(i, inputs=game.phase == PLAY))
    if move is not None:
        engine.advance(i, move, keep=True)


def _moves_in_play(slots: list[SelfPlayGame | None]) -> int:
    return sum(g.game.num_moves for g in slots if g is not None)


def _progress_bar(total: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, unit="game", disable=not enabled, dynamic_ncols=True, smoothing=0.1)
