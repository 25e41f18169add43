"""The self-play driver: G games at a time in a few groups, each group one :class:`BatchedSearch`
driven by its own thread, fed games by its caller and handing each finished game back
(:class:`SelfPlayDriver`); and the offline run of a number of games, each written as one SGF and one
npz of training rows (both atomically), with a progress bar and a summary (:func:`run_selfplay`).

In the offline run every game draws its randomness from its own generator, seeded by the run's seed
and the game's index; each group always plays the same games and its lock-step batches are the same
from run to run, so a seeded run with the same parallelism and groups reproduces its games and rows
exactly.
"""

from __future__ import annotations

import collections
import gc
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import numba
import numpy as np

from client.search.engine import BatchedSearch
from client.selfplay.game import SelfPlayGame
from client.selfplay.init import GameStart, draw_start
from client.stop import Stop
from common.data.rows import game_rows_npz
from common.encoding.features import Encoder
from common.files import atomic_write
from common.go.geometry import BLACK, WHITE
from common.settings import SelfPlaySettings

log = logging.getLogger(__name__)

DEFAULT_GROUPS = 2
GIL_SWITCH_SECONDS = 0.0005


@dataclass
class SelfPlaySummary:
    games: int = 0
    moves: int = 0
    rows: int = 0
    games_without_rows: int = 0
    full_searches: int = 0
    cheap_searches: int = 0
    side_searches: int = 0  # side positions searched (game branching)
    forked: int = 0  # games started from an early fork
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
            f"searches: {self.full_searches} full, {self.cheap_searches} cheap, {self.side_searches} of side "
            f"positions; {self.search_visits} visits, {self.nn_evals} network evaluations"
            + (f"; {self.forked} games from early forks" if self.forked else ""),
            f"time {self.seconds:.1f} s: {self.moves / s:.1f} moves/s, {self.search_visits / s:.0f} visits/s, "
            f"{self.nn_evals / s:.0f} evaluations/s, average batch fill {100 * self.batch_fill:.0f}%",
        ]


@dataclass(frozen=True)
class GameOrder:
    """A game for the driver to play: its id, its own random generator, and whatever the feed wants
    back with it when it is finished."""

    game_id: str
    rng: np.random.Generator
    tag: object = None
    resume: SelfPlayGame | None = None  # a game in play saved earlier, to play on (its rng is this rng)


# What a feed answers when it has no game now but may have one later (the slot asks again soon).
LATER = "later"


class SelfPlayDriver:
    """G games at a time in a few groups, each one :class:`BatchedSearch` driven by its own thread.

    The games come from a feed, ``next_game(group) -> GameOrder``, or None when it has no more for
    that group (the slot empties), or :data:`LATER`. Each finished game goes to ``finished(game,
    order)``, called from the group's thread outside any lock, which stores it and returns its
    number of training rows (None: it had none). :meth:`run` returns when every slot is empty.

    The games in play are split into `groups` (default: :func:`default_groups`), each with its own
    search engine and thread: while one group waits for the network or runs its Python bookkeeping
    (results, moves, records, files), the others' numba passes, which release the GIL, go on.
    """

    def __init__(
        self,
        evaluator,
        settings: SelfPlaySettings,
        parallel: int,
        seed: int = 0,
        leaves_per_game: int = 1,
        cache_entries: int = 1 << 15,
        groups: int | None = None,
    ) -> None:
        if parallel < 1:
            raise ValueError("parallel must be at least 1")
        groups = min(parallel, groups if groups is not None else default_groups(evaluator))
        if groups < 1:
            raise ValueError("groups must be at least 1")
        self.settings = settings
        self.summary = SelfPlaySummary()
        self._lock = threading.Lock()
        threads = _pass_threads(groups)
        self.groups = [
            _Group(
                k,
                settings,
                BatchedSearch(
                    evaluator,
                    parallel * (k + 1) // groups - parallel * k // groups,
                    settings.max_search_visits(),
                    leaves_per_game,
                    cache_entries=-(-cache_entries // groups),
                    seed=seed * groups + k if groups > 1 else seed,
                    history=settings.max_moves + 8,
                    threads=threads,
                ),
            )
            for k in range(groups)
        ]

    def live(self) -> dict[str, float]:
        """The run so far: games finished and in play, moves (in play included), network rows,
        batch fill."""
        with self._lock:
            finished, moves = self.summary.games, self.summary.moves
        return {
            "games": finished,
            "playing": sum(g.playing() for g in self.groups),
            "moves": moves + sum(g.moves_in_play() for g in self.groups),
            "evals": sum(g.engine.batch_rows for g in self.groups),
            "offered": sum(g.engine.slots_offered for g in self.groups),
        }

    def run(
        self,
        next_game,
        finished,
        stop: Stop | None = None,
        paused=None,
        time_limit: float | None = None,
        on_tick=None,
        on_move=None,
    ) -> SelfPlaySummary:
        """Play until the feed runs dry (every slot empty), `stop` is set, or `time_limit` seconds
        passed; games unfinished then are dropped. While ``paused()`` is true no step is taken.
        ``on_tick()`` is called after each step of any group (from its thread); ``on_move(game,
        order, first)`` after each move of every game (from its group's thread; ``first``: the game
        is the one in the first slot of the first group, the same game until it ends)."""
        stop = stop if stop is not None else threading.Event()
        summary = self.summary
        t0 = time.perf_counter()

        def finish(game: SelfPlayGame, order: GameOrder) -> None:
            rows = finished(game, order)
            res = game.game.result
            with self._lock:
                summary.games += 1
                summary.moves += game.game.num_moves
                summary.full_searches += game.full_searches
                summary.cheap_searches += game.cheap_searches
                summary.side_searches += game.side_searches
                summary.forked += game.start.fork is not None
                summary.visits += game.visits
                if res is not None and not res.no_result and res.winner == BLACK:
                    summary.black_wins += 1
                elif res is not None and not res.no_result and res.winner == WHITE:
                    summary.white_wins += 1
                else:
                    summary.draws_or_no_result += 1
                if rows is None:
                    summary.games_without_rows += 1
                else:
                    summary.rows += rows

        for g in self.groups:
            g.on_move = on_move
            g.begin(next_game, finish)
        helpers: list[threading.Thread] = []
        errors: list[BaseException] = []

        def drive(group: _Group) -> None:
            try:
                group.run(stop, paused, t0, time_limit, on_tick)
            except BaseException:
                stop.set()
                raise

        def helper(group: _Group) -> None:
            try:
                drive(group)
            except BaseException as e:  # handed to the calling thread
                errors.append(e)

        if len(self.groups) > 1:
            _short_switch_interval(True)
        try:
            for g in self.groups[1:]:
                helpers.append(
                    threading.Thread(target=helper, args=(g,), name=f"selfplay-group-{g.index}", daemon=True)
                )
                helpers[-1].start()
            drive(self.groups[0])
            for h in helpers:
                h.join()
        except BaseException:
            stop.set()
            for h in helpers:
                h.join()
            raise
        finally:
            if len(self.groups) > 1:
                _short_switch_interval(False)
            for g in self.groups:
                del g.next_game, g.finish  # the caller's closures: no cycle outlives the run
                g.on_move = None
        if errors:
            raise errors[0]
        summary.seconds = time.perf_counter() - t0
        summary.nn_evals = sum(g.engine.batch_rows for g in self.groups)
        summary.search_visits = sum(g.engine.visits_total for g in self.groups)
        summary.steps = sum(g.engine.steps for g in self.groups)
        summary.batch_fill = _fill(self.groups)
        return summary

    def fill(self) -> float:
        return _fill(self.groups)


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
    groups: int | None = None,
    stop: Stop | None = None,
) -> SelfPlaySummary:
    """Play `games` self-play games, `parallel` at a time, into out_dir. With a time limit (seconds),
    or once `stop` is set, games still unfinished are dropped (nothing is written for them).

    Group k of the :class:`SelfPlayDriver` plays the games numbered k, k + groups, ..., each with
    a generator seeded by the run's seed and the game's number, so a seeded run reproduces its
    games whatever the timing of the threads."""
    if games < 1 or parallel < 1:
        raise ValueError("games and parallel must be at least 1")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    parallel = min(parallel, games)
    driver = SelfPlayDriver(
        evaluator,
        settings,
        parallel,
        seed=seed,
        leaves_per_game=leaves_per_game,
        cache_entries=cache_entries,
        groups=groups,
    )
    count = len(driver.groups)
    numbers = [iter(range(k, games, count)) for k in range(count)]
    files: list[Path] = []
    # The long-lived objects of the imports (torch's above all) need no more garbage collection
    # passes: without this, each pass walks them all again, a tenth of the run's time.
    gc.freeze()
    bar = _progress_bar(games, progress)
    last_update = time.perf_counter()

    def next_game(group: int) -> GameOrder | None:
        number = next(numbers[group], None)
        if number is None:
            return None
        return GameOrder(f"s{seed}-g{number:06d}", np.random.default_rng([seed, number]), number)

    def finished(game: SelfPlayGame, order: GameOrder) -> int | None:
        # Each game's files are its own: written by its group's thread, outside any lock.
        number = cast(int, order.tag)  # next_game's: the game's number
        made = game_rows_npz(game.training_record(), np.random.default_rng([seed, number, 1]))
        count = None
        if made is not None:
            files.append(atomic_write(out / f"{game.game_id}.npz", made[0]))
            count = made[1]
        files.append(atomic_write(out / f"{game.game_id}.sgf", game.sgf(player_name).encode()))
        bar.update(1)
        return count

    def tick() -> None:
        nonlocal last_update
        now = time.perf_counter()
        if now - last_update > 0.5 and bar.disable is False:
            last_update = now
            live = driver.live()
            elapsed = now - start
            bar.set_postfix_str(
                f"{live['moves'] / elapsed:.1f} moves/s, {live['evals'] / elapsed:.0f} evals/s, "
                f"fill {100 * driver.fill():.0f}%"
            )

    start = time.perf_counter()
    try:
        summary = driver.run(next_game, finished, stop=stop, time_limit=time_limit, on_tick=tick)
    finally:
        bar.close()
    summary.files = files
    return summary


_switch_lock = threading.Lock()
_switch_users = 0
_switch_saved = 0.005


def _short_switch_interval(on: bool) -> None:
    """While any driver runs several groups, the GIL switch interval is GIL_SWITCH_SECONDS: a thread
    coming back from a numba pass waits for the GIL, and Python's default of 5 ms before the
    holder must let go would leave its processor idle that long. The interval is process-wide, and
    drivers may overlap: the first sets it, the last puts the old value back."""
    global _switch_users, _switch_saved
    with _switch_lock:
        if on:
            if _switch_users == 0:
                _switch_saved = sys.getswitchinterval()
                sys.setswitchinterval(GIL_SWITCH_SECONDS)
            _switch_users += 1
        else:
            _switch_users -= 1
            if _switch_users == 0:
                sys.setswitchinterval(_switch_saved)


def default_groups(evaluator) -> int:
    """Two groups, so that one group's network evaluation (on a GPU) or Python work overlaps the
    other's search; one when the network runs on the CPU: its forward pass keeps every core busy,
    and a search running beside it would stall the pass's threads more than it gains."""
    device = getattr(evaluator, "device", None)
    return 1 if device is not None and getattr(device, "type", None) == "cpu" else DEFAULT_GROUPS


def _pass_threads(groups: int) -> int:
    """Numba threads for each group's passes: the cores shared among the groups, and one unless
    numba's threading layer may be entered from several threads at once (OpenMP, TBB; not its
    fallback work queue)."""
    threads = max(1, (os.cpu_count() or 1) // groups)
    if threads > 1 and groups > 1:
        _touch_parallel_layer(np.zeros(1))  # the layer is chosen at the first parallel call
        if numba.threading_layer() not in ("omp", "tbb"):
            return 1
    return threads


@numba.njit(parallel=True, cache=True)
def _touch_parallel_layer(a):
    for i in numba.prange(a.shape[0]):
        a[i] += 1.0


class _Group:
    """Some of the games in play, in one engine: slot i of the engine holds one game at a time."""

    # How long an idle group waits before asking its feed again (the feed said LATER).
    IDLE_SECONDS = 0.05

    # the run's feed and the sink of its finished games, from begin() to the run's end
    next_game: Callable[[int], GameOrder | str | None]
    finish: Callable[[SelfPlayGame, GameOrder], None]

    def __init__(self, index: int, settings: SelfPlaySettings, engine: BatchedSearch) -> None:
        self.index = index
        self.engine = engine
        self.settings = settings
        self.encoder = Encoder()  # each thread its own scratch
        self.slots: list[tuple[SelfPlayGame, GameOrder] | None] = [None] * engine.games
        self.waiting: set[int] = set()  # empty slots whose feed said LATER
        self.forks: collections.deque[GameStart] = collections.deque()  # starts the group's games forked
        self.on_move: Callable[[SelfPlayGame, GameOrder, bool], None] | None = None  # after each move

    def new_game(self, i: int) -> tuple[SelfPlayGame, GameOrder] | None:
        order = self.next_game(self.index)
        if order is None or isinstance(order, str):
            if order == LATER:
                self.waiting.add(i)
            else:
                self.waiting.discard(i)  # the feed is done with this slot
            return None
        self.waiting.discard(i)
        if order.resume is not None:
            game = order.resume
            game.encoder = self.encoder
            return game, order
        start = self.forks.popleft() if self.forks else draw_start(self.settings, order.rng)
        game = SelfPlayGame(order.game_id, self.settings, start, order.rng, self.encoder)
        return game, order

    def begin(
        self, next_game: Callable[[int], GameOrder | str | None], finish: Callable[[SelfPlayGame, GameOrder], None]
    ) -> None:
        self.next_game = next_game
        self.finish = finish
        for i in range(len(self.slots)):
            self.slots[i] = self.new_game(i)
            self.launch(i)

    def launch(self, i: int) -> None:
        """Start slot i's next search, finishing games and starting new ones as needed."""
        engine = self.engine
        while True:
            entry = self.slots[i]
            if entry is None:
                return
            game = entry[0]
            request = game.next_search()
            if request is None:
                if game.fork is not None:
                    self.forks.append(game.fork)
                self.finish(game, entry[1])
                self.slots[i] = self.new_game(i)
                continue
            engine.start(
                i,
                request.game,
                request.visits,
                self.settings.search,
                full=request.full,
                reuse=request.reuse,
                draw_equivalent_wins=self.settings.draw_equivalent_wins,
                pda_black=request.pda_black,
            )
            if engine.is_searching(i):
                return
            self._took(i, game)  # a cheap search whose reused tree was big enough already

    def _took(self, i: int, game: SelfPlayGame) -> None:
        """Play slot i's move from its search's result."""
        _take_result(self.engine, i, game)
        if self.on_move is not None:
            entry = self.slots[i]
            assert entry is not None
            self.on_move(game, entry[1], i == 0 and self.index == 0)

    def run(self, stop: Stop, paused, t0: float, time_limit: float | None, on_tick) -> None:
        engine = self.engine
        while (engine.n_searching or self.waiting) and not stop.is_set():
            if time_limit is not None and time.perf_counter() - t0 > time_limit:
                return
            if paused is not None and paused():
                stop.wait(self.IDLE_SECONDS * 4)
                continue
            if self.waiting:
                for i in sorted(self.waiting):
                    self.slots[i] = self.new_game(i)
                    self.launch(i)
                if not engine.n_searching:
                    stop.wait(self.IDLE_SECONDS)
                    continue
            for i in engine.step():
                entry = self.slots[int(i)]
                if entry is not None:  # a slot searching holds a game
                    self._took(int(i), entry[0])
                self.launch(int(i))
            if on_tick is not None:
                on_tick()

    def playing(self) -> int:
        return sum(entry is not None for entry in self.slots)

    def moves_in_play(self) -> int:
        return sum(entry[0].game.num_moves for entry in self.slots if entry is not None)


def _fill(groups: list[_Group]) -> float:
    offered = sum(g.engine.slots_offered for g in groups)
    return sum(g.engine.batch_rows for g in groups) / offered if offered else 0.0


def _take_result(engine: BatchedSearch, i: int, game: SelfPlayGame) -> None:
    move = game.on_result(engine.result(i, inputs=game.wants_inputs()))
    if move is not None:
        engine.advance(i, move, keep=True)


def _progress_bar(total: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, unit="game", disable=not enabled, dynamic_ncols=True, smoothing=0.1)
