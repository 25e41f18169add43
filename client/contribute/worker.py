"""One worker of the contributing client: the games on one device, in a process of its own.

The worker takes its work from a :class:`TaskQueue` and plays it in two lanes at once:

* self-play: one :class:`SelfPlayDriver` session per network and settings version, fed game by game
  from the tasks in hand. When the next task has another network (a new one was accepted) or new
  settings, the session takes no more games and, while its last games finish, the next session
  starts beside it, so the device never waits for a whole batch of games to end;
* rating: the rating tasks, each played as a match between its two networks with the run's match
  settings.

The games in play of both lanes together are at most the worker's ``parallel``: while rating games
play, a self-play game that ends is not replaced until they end. A gating decision holds up the
whole run (every volunteer plays the old network until it is made), and its games would otherwise
compete with a full set of self-play games for the device (with the random network's self-play,
which needs no forward pass, a rating game took tens of times longer than alone).

Every finished game is put in the outbox at once, held there until a canary check of its networks
on this device passed after it ended (:mod:`client.contribute.canary`: each network is checked as
it is loaded, before its first game, and again while games are held); the supervisor delivers it. The worker reports
its state to the supervisor every second, and a :class:`Fatal` problem (a refused token, a client
the run does not take, a network file that stays wrong) as its last message. At its end it tells the
server of the games of its tasks it will not deliver (see :meth:`TaskQueue.release_unplayed`).

The supervisor steers it through :class:`Control`: ``finishing`` (start no more games; end when the
games in play are done), ``stopping`` (end now; unfinished games are dropped), ``paused``. Every game
a worker starts, self-play (forks of finished games included: they start only as a new game the
driver asks its feed for), played on from a save, or rating, is started through
:meth:`Control.start_game`, the one check of whether a game may start. Signals are the supervisor's
to act on: a worker ignores Ctrl-C, SIGTERM and SIGHUP, which a terminal or a service manager sends
to every process of the client, and stops as Ctrl-C twice would when its supervisor is gone.
"""

from __future__ import annotations

import gc
import importlib
import logging
import logging.handlers
import math
import multiprocessing
import os
import platform
import signal
import threading
import time
import traceback
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from client.build import BUILD
from client.contribute.bounded import DEFAULT_MAX_DOWNLOAD
from client.contribute.canary import CanaryGuard
from client.contribute.crashes import record_fatal_signals
from client.contribute.inplay import DEFAULT_CHECKPOINT_SECONDS, InPlay, Saved
from client.contribute.netcache import NetworkCache, NetworkRef
from client.contribute.outbox import Outbox
from client.contribute.server import ServerClient
from client.contribute.sizing import Sizing
from client.contribute.tasks import CANARY, LOOK_SECONDS, PROTOCOL, Fatal, Task, TaskQueue
from common.files import atomic_write
from common.protocol import CONTROL_CHARS, MACHINE_TEXT

if TYPE_CHECKING:  # imported where they are used: they bring in torch
    from client.evaluator import Evaluator
    from client.search.engine import NullEvaluator
    from client.selfplay.run import SelfPlayDriver

log = logging.getLogger(__name__)
T = TypeVar("T")

STATUS_SECONDS = 1.0
SHARED_POLL_SECONDS = 0.05  # how often a waiting driver looks at the supervisor's stop
FINISH_WAIT_SECONDS = 5.0  # how long finishing waits for a game being started
EVALUATORS_KEPT = 4  # networks kept loaded: the self-play one, the next, and a rating pair
RATE_SECONDS = 600.0  # the evaluations per second a task request reports are over this long
RATE_MIN_SECONDS = 60.0  # and over at least this long
MAX_WORKERS = 128  # the most devices one client plays on


@dataclass(frozen=True)
class WorkerSpec:
    """What a worker needs to know; sent to its process."""

    index: int
    device: str
    server: str
    token: str
    instance_id: str
    parallel: int  # games at once; with auto_parallel, until a measurement says otherwise
    data_dir: str
    retry_start: float = 5.0
    look_seconds: float = LOOK_SECONDS  # how often the task queue looks at the server's run
    seed: int | None = None
    kinds: tuple[str, ...] = ("selfplay", "rating")  # the kinds of task it asks for
    proxy: str | None = None
    max_download: int = DEFAULT_MAX_DOWNLOAD  # the most bytes any download may bring (bounded)
    mirror: str | None = None  # where networks are fetched first (netcache.NetworkCache)
    sgf_dir: str | None = None  # a copy of every finished game's SGF
    watch_file: str | None = None  # one self-play game in play, rewritten after each of its moves
    checkpoint_seconds: float = DEFAULT_CHECKPOINT_SECONDS  # how often a game in play is saved (inplay)
    cores: int | None = None  # on the CPU: the cores this worker shares with no other (None: all)
    auto_parallel: bool = False  # measure the games at once per network size (autoparallel)
    gpu_share: float | None = None  # the share of the measured games at once to play (--gpu-share)
    precision: str = "auto"  # the network's precision (common.nn.precision)

    @property
    def outbox_dir(self) -> Path:
        return Path(self.data_dir) / "outbox"

    @property
    def networks_dir(self) -> Path:
        return Path(self.data_dir) / "networks"


class Control:
    """The supervisor's hold on its workers: three events shared with their processes, the games
    left to start when the volunteer asked for a number of games (``--games``), and per worker the
    share of its games at once it may play (a hot GPU plays fewer, 0 pauses it:
    :mod:`client.contribute.gpuwatch`) and a count of the canary checks asked of it."""

    def __init__(self, context, games: int | None = None) -> None:
        self.finishing = context.Event()
        self.stopping = context.Event()
        self.paused = context.Event()
        self.games_left = context.Value("q", -1 if games is None else games)  # -1: no limit
        # Each written by the supervisor alone and read whole: no lock.
        self.shares = context.Array("d", [1.0] * MAX_WORKERS, lock=False)
        self.rechecks = context.Array("q", MAX_WORKERS, lock=False)

    def set_share(self, index: int, share: float) -> None:
        if self.shares[index] != share:
            self.shares[index] = share

    def games_at_once(self, index: int, parallel: int) -> int:
        """The games worker ``index`` may have in play now (0 while it is held)."""
        share = self.shares[index]
        return 0 if share <= 0 else max(1, math.floor(parallel * share))

    def held(self, index: int) -> bool:
        """Do worker ``index``'s games wait: paused, or held by its GPU's limits or owner?"""
        return self.paused.is_set() or self.shares[index] <= 0

    def recheck(self, index: int) -> None:
        """Ask worker ``index`` for a canary check now; its held games wait for one begun later."""
        self.rechecks[index] += 1

    def start_game(self, take: Callable[[], T]) -> T | None:
        """``take()`` a game to start, unless the workers are finishing or stopping, or the games asked
        for have all started (None then, and take is not called): the one check before any game
        starts. The last of the games asked for sets ``finishing``: the games in play end, and then
        the workers."""
        with self.games_left.get_lock():
            if self.done() or self.games_left.value == 0:
                return None
            got = take()
            if got is not None and self.games_left.value > 0:
                self.games_left.value -= 1
                if self.games_left.value == 0:
                    log.info("the last of the games asked for has started; the workers end after it")
                    self.finishing.set()
            return got

    def finish(self) -> None:
        """Start no more games: once this returns no game starts (one being started as it is called
        is waited for). A lock its holder never gives back (a worker killed while it held it) is
        waited for a few seconds only."""
        lock = self.games_left.get_lock()
        held = lock.acquire(timeout=FINISH_WAIT_SECONDS)
        try:
            self.finishing.set()
        finally:
            if held:
                lock.release()

    def budget_spent(self) -> bool:
        """Did the workers end because the games asked for were played?"""
        return self.games_left.value == 0

    def done(self) -> bool:
        return self.finishing.is_set() or self.stopping.is_set()

    def mode(self) -> str:
        """What the status calls the workers' state: stopping, finishing, paused or running."""
        if self.stopping.is_set():
            return "stopping"
        if self.finishing.is_set():
            return "finishing"
        if self.paused.is_set():
            return "paused"
        return "running"


def worker_main(spec: WorkerSpec, control: Control, messages, log_queue) -> None:
    """The worker process: its logging goes to the supervisor, which also acts on the signals."""
    # Ctrl-C and a closed terminal reach the whole process group, a service manager's SIGTERM every
    # process of the service: the supervisor tells the worker what they mean (finish or stop).
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None:
            signal.signal(sig, signal.SIG_IGN)
    root = logging.getLogger()
    root.handlers[:] = [logging.handlers.QueueHandler(log_queue)]
    root.setLevel(logging.INFO)
    record_fatal_signals(spec.data_dir, spec.index)  # faulthandler holds the file open from now on
    if spec.device == "cpu":
        share_the_cpu(spec.cores)
    try:
        Worker(spec, control, messages).run()
        messages.put(("done", spec.index, None, None))
    except Fatal as e:
        messages.put(("fatal", spec.index, e.kind, e.message))
    except BaseException as e:  # reported, then the process ends; the supervisor restarts it
        log.error("worker %d (%s) failed: %s", spec.index, spec.device, "".join(traceback.format_exception(e)))
        messages.put(("crashed", spec.index, type(e).__name__, str(e)))
    finally:
        if not supervisor_alive():  # nobody reads the queues: the process must not wait to flush them
            messages.cancel_join_thread()
            log_queue.cancel_join_thread()


def supervisor_alive() -> bool:
    """Is the process that started this one still running (True in a process nobody started)?"""
    parent = multiprocessing.parent_process()
    return parent is None or parent.is_alive()


def share_the_cpu(cores: int | None) -> None:
    """On the CPU the self-play lane's numba passes and the rating lane's forward passes run at the
    same time: torch gets half the worker's cores, so that its threads do not wait for cores the
    numba threads hold (with every core each, a rating game's forward passes ran tens of times
    slower). The numba passes get the worker's cores (:func:`search_threads`): with several
    workers on the CPU, a pass's threads beyond its share only wait at its barrier for a core
    another worker holds (two workers on two cores played a test's games twice as fast with one
    thread each as with two)."""
    import torch

    torch.set_num_threads(max(1, (cores or os.cpu_count() or 2) // 2))
    search_threads(cores)


def cpu_share(devices: list[str]) -> int | None:
    """The cores of each worker on the CPU when several share it out (one worker keeps them all:
    None)."""
    on_cpu = devices.count("cpu")
    return max(1, (os.cpu_count() or 1) // on_cpu) if on_cpu > 1 else None


def search_threads(cores: int | None) -> None:
    """Give the calling thread's numba passes at most `cores` threads (None: numba's default).
    numba counts threads per calling thread, so each lane's thread calls this before it searches."""
    if cores is not None:
        import numba

        numba.set_num_threads(max(1, min(cores, numba.config.NUMBA_NUM_THREADS)))


class Worker:
    """See the module docstring."""

    def __init__(self, spec: WorkerSpec, control: Control, messages) -> None:
        self.spec = spec
        self.control = control
        self.messages = messages
        server = ServerClient(
            spec.server,
            spec.token,
            instance_id=f"{spec.instance_id}-{spec.index}",
            proxy=spec.proxy,
            max_download=spec.max_download,
        )
        server.machine = self.machine
        self.cache = NetworkCache(spec.networks_dir, session=server.session, mirror=spec.mirror)
        self.outbox = Outbox(spec.outbox_dir, deliver=False)  # the supervisor delivers
        self.queue = TaskQueue(
            server,
            self.cache,
            Sizing(spec.parallel),
            retry_start=spec.retry_start,
            look_seconds=spec.look_seconds,
            kinds=spec.kinds,
        )
        self.canary = CanaryGuard(spec.device, server.network_canary)
        self.inplay = InPlay(spec.data_dir, spec.index)
        self._paths: dict[str, Path] = {}  # the loaded networks' files
        self.rng = np.random.default_rng(spec.seed)
        self.parallel = spec.parallel  # games at once, both lanes together
        self.measuring = False  # the games at once are being measured (autoparallel)
        self._measure_lock = threading.Lock()
        self._evals: deque[tuple[float, float]] = deque()  # (time.monotonic(), evaluations so far)
        self._device_model: str | None = None
        self._evaluators: OrderedDict[str, object] = OrderedDict()
        self._evaluators_lock = threading.Lock()
        self._lock = threading.Lock()
        self.sessions: list[_Session] = []
        self.finished_before: dict[str, float] = {"games": 0, "moves": 0, "evals": 0, "offered": 0}
        self.rating_playing = 0
        self.selfplay_playing = 0  # self-play games handed to the sessions and not finished
        self.rating_finished = 0
        self.rating_moves = 0
        self.rows = 0
        self.errors: list[BaseException] = []
        self.last_network: str | None = None  # of the newest self-play session
        self.abort = threading.Event()  # a lane failed, or the supervisor is gone: the worker ends now

    # --- the lanes --------------------------------------------------------------------------------
    def run(self) -> None:
        for module in ("client.evaluator", "client.match.run", "client.selfplay.run", "common.data.rows"):
            importlib.import_module(module)  # torch and the search, before the freeze below
        # The imports' long-lived objects need no more garbage collection passes (each pass would
        # walk them all again); what the sessions make later stays collectable.
        gc.freeze()
        self._check_leftovers()
        resumed = self._resumable()
        self.queue.start()
        canary_done = threading.Event()
        checks = threading.Thread(
            target=self._guard, args=(lambda: self._canary_loop(canary_done),), name="canary", daemon=True
        )
        checks.start()
        rating = threading.Thread(target=self._guard, args=(self._rating_lane,), name="rating-lane", daemon=True)
        rating.start()
        status_done = threading.Event()
        status = threading.Thread(target=self._status_loop, args=(status_done,), name="status", daemon=True)
        status.start()
        try:
            self._play_on(resumed)
            self._selfplay_lane()
            rating.join()
        finally:
            self.queue.close()
            for s in list(self.sessions):
                s.thread.join()
            # The server's ledger owes no game this worker will not send (the saved ones it will).
            self.queue.release_unplayed(kept=self.inplay.kept_by_task())
            canary_done.set()
            checks.join()
            if not self.errors and self.queue.fatal is None:
                self._guard(self._check_and_release)  # the last games go out with the others
            status_done.set()
            status.join()
            self._send_status()  # the last word on the numbers
        if self.errors:
            raise self.errors[0]
        if self.queue.fatal is not None:
            raise self.queue.fatal

    def _guard(self, lane) -> None:
        """Run a lane; its error stops the worker (and is raised by run). A failed canary check sets
        the games held for a check aside."""
        try:
            if self.spec.device == "cpu":
                search_threads(self.spec.cores)
            lane()
        except BaseException as e:
            if isinstance(e, Fatal) and e.kind == CANARY:
                put_aside = self.outbox.set_aside(self.outbox.held(self.spec.device), e.message)
                log.error("%s (%d games set aside)", e.message, put_aside)
            self.errors.append(e)
            self.abort.set()
            self.queue.close()

    # --- canary checks ----------------------------------------------------------------------------
    def _canary_loop(self, done: threading.Event) -> None:
        """Check the loaded networks again while games wait for it, then let those games go."""
        rechecks = self.control.rechecks[self.spec.index]
        while not done.wait(min(1.0, self.canary.interval())):
            if self.abort.is_set():
                return
            if self.control.rechecks[self.spec.index] != rechecks:  # the GPU went over a limit
                rechecks = self.control.rechecks[self.spec.index]
                self.canary.distrust(time.time())
                log.info("a canary check of the networks on %s, asked for after a limit was passed", self.spec.device)
            elif time.monotonic() - self.canary.last_check < self.canary.interval():
                continue
            if not self.outbox.held(self.spec.device):
                continue
            self._check_and_release()

    def _check_and_release(self) -> None:
        started = time.monotonic()
        with self._evaluators_lock:
            loaded = [(name, ev) for name, ev in self._evaluators.items() if name in self._paths]
        for name, evaluator in loaded:
            self.canary.check(name, evaluator, self._paths[name])
        self.canary.last_check = time.monotonic()
        self.canary.last_seconds = self.canary.last_check - started
        ready = [e for e in self.outbox.held(self.spec.device) if self.canary.vouched(e.device, e.networks, e.created)]
        if ready:
            log.debug("%d games passed the canary check; they go out", self.outbox.release(ready))

    def _check_leftovers(self) -> None:
        """Games an earlier run of this device left held (it was killed): their networks are checked
        now, from the cache, and the games let go; those whose network is gone are set aside."""
        held = self.outbox.held(self.spec.device)
        names = sorted({n for e in held for n in e.networks})
        for name in names:
            path = self.cache.path_of(name)
            if not path.exists():
                gone = [e for e in held if name in e.networks]
                self.outbox.set_aside(
                    gone, f"network {name} is no longer in the cache, so these games of it cannot be checked"
                )
                continue
            self.evaluator(NetworkRef(name, None, None, 0), path)
        if names:
            self._check_and_release()

    def _resumable(self) -> dict[tuple[str, int], list[Saved]]:
        """The saved games this worker plays on, by session key; those whose network is no longer
        cached are set aside."""
        by_key: dict[tuple[str, int], list[Saved]] = {}
        for saved in self.inplay.claim_all():
            ref, path = saved.task.networks[0], saved.task.files[0]
            if not ref.is_random and (path is None or not Path(path).exists()):
                self.inplay.set_aside(saved.path, f"its network {ref.name} is no longer in the cache")
                continue
            by_key.setdefault(saved.task.key, []).append(saved)
        if by_key:
            games = sum(len(v) for v in by_key.values())
            log.info("playing on %d games saved when the client last ended", games)
        return by_key

    def _play_on(self, resumed: dict[tuple[str, int], list[Saved]]) -> None:
        """A session for each network and settings version of the saved games, beside the others."""
        for games in resumed.values():
            session = _Session(self, games[0].task, resumed=games)
            with self._lock:
                self.sessions.append(session)
            session.thread.start()

    def _selfplay_lane(self) -> None:
        """Start a session for each new network or settings version, overlapping the last one's end."""
        current: _Session | None = None
        while not self.control.stopping.is_set() and not self.abort.is_set():
            if self.control.finishing.is_set():
                self.queue.close()
                break
            if current is not None and not current.draining.wait(0.2):
                continue  # the current session still takes games
            task = self.queue.next_selfplay(timeout=0.5)
            if task is False:
                break
            if task is None:
                continue
            current = _Session(self, task)
            with self._lock:
                self.sessions.append(current)
                self.last_network = task.key[0]
            current.thread.start()
        for s in list(self.sessions):
            s.thread.join()

    def _rating_lane(self) -> None:
        while not self.control.done() and not self.abort.is_set() and self.queue.fatal is None:
            task = self.queue.take_rating(timeout=0.5)
            if task is False:
                return
            if task is None:
                continue
            self._play_rating(task)

    def held(self) -> bool:
        return self.control.held(self.spec.index)

    def machine(self) -> dict:
        """What task requests say of this machine and device: its name, the device's model, and the
        evaluations per second over the last ten minutes (None before a minute of play)."""
        from client.contribute.autoparallel import device_model

        if self._device_model is None:
            try:
                self._device_model = _printable(device_model(self.spec.device, self.spec.cores))
            except Exception as e:  # a driver that cannot name its card: the figures go without it
                log.debug("the model of %s cannot be read: %s", self.spec.device, e)
                self._device_model = ""
        return {
            "name": _printable(platform.node()),
            "device": self._device_model,
            "evals_per_second": self.evals_per_second(),
        }

    def evals_per_second(self) -> float | None:
        with self._lock:
            if len(self._evals) < 2 or self._evals[-1][0] - self._evals[0][0] < RATE_MIN_SECONDS:
                return None
            (t0, e0), (t1, e1) = self._evals[0], self._evals[-1]
        return round((e1 - e0) / (t1 - t0), 1)

    def room_for_selfplay(self) -> bool:
        """May a self-play game start: are fewer than ``parallel`` games of both lanes in play?"""
        with self._lock:
            playing = self.selfplay_playing + self.rating_playing
            return playing < self.control.games_at_once(self.spec.index, self.parallel)

    def parallel_for(self, evaluator, settings) -> int:
        """The games at once for a self-play session of this network and settings: with
        ``--parallel auto``, the count measured on this device for the network's size and the board
        (measured now the first time; :mod:`client.contribute.autoparallel`)."""
        if not self.spec.auto_parallel:
            return self.parallel
        from client.contribute.autoparallel import ParallelCache, games_at_once

        with self._measure_lock:
            self.measuring = True
            try:
                cache = ParallelCache(Path(self.spec.data_dir) / "parallel")
                count = games_at_once(cache, self.spec.device, self.spec.cores, evaluator, settings)
            finally:
                self.measuring = False
        if count is None:  # the random network: not measured
            return self.parallel
        if self.spec.gpu_share is not None and self.spec.device != "cpu":
            count = max(1, round(count * self.spec.gpu_share))
        if count != self.parallel:
            log.info("worker %d (%s): %d games at once from now on", self.spec.index, self.spec.device, count)
            self.parallel = count
            self.queue.sizing = Sizing(count)
        return count

    # --- networks ---------------------------------------------------------------------------------
    def evaluator(self, ref: NetworkRef, path: Path | None):
        """The loaded network (kept for later tasks; the least recently used beyond a few dropped)."""
        with self._evaluators_lock:
            if ref.name in self._evaluators:
                self._evaluators.move_to_end(ref.name)
                return self._evaluators[ref.name]
            if ref.is_random or path is None:
                from client.search.engine import NullEvaluator

                evaluator: Evaluator | NullEvaluator = NullEvaluator()
            else:
                from client.evaluator import Evaluator
                from common.nn.katago_import import KataGoModelError
                from common.nn.modelfile import ModelFileError

                log.info("loading network %s on %s", ref.name, self.spec.device)
                try:
                    evaluator = Evaluator.from_file(
                        path,
                        device=self.spec.device,
                        compile=self.spec.device.startswith("cuda"),
                        precision=self.spec.precision,
                    )
                except (OSError, KataGoModelError, ModelFileError, ValueError) as e:
                    raise Fatal(
                        PROTOCOL,
                        f"network {ref.name} cannot be loaded by this client ({e}); a newer "
                        "client probably can: please upgrade",
                    ) from None
                self.canary.check(ref.name, evaluator, path)  # before its first game
                self._paths[ref.name] = path
            self._evaluators[ref.name] = evaluator
            while len(self._evaluators) > EVALUATORS_KEPT:
                gone, _ = self._evaluators.popitem(last=False)
                self._paths.pop(gone, None)
            return evaluator

    # --- rating games -----------------------------------------------------------------------------
    def _play_rating(self, task: Task) -> None:
        from client.match.run import run_match

        evaluators = [self.evaluator(ref, path) for ref, path in zip(task.networks, task.files, strict=True)]
        names = (task.networks[0].name, task.networks[1].name)
        checked = tuple(ref.name for ref in task.networks if not ref.is_random)
        prefix = uuid.UUID(task.id).hex

        def on_game(game_name: str, sgf: bytes) -> None:
            from client.contribute.metadata import rating_metadata

            game_id = f"{prefix}-r{game_name.rsplit('-', 1)[1]}"
            self.keep_copy(game_id, sgf)
            meta = rating_metadata(sgf, game_id, task.settings_version)
            self.outbox.put(
                "rating",
                task.id,
                meta.to_dict(),
                sgf,
                build=BUILD,
                held_for=(self.spec.device, checked) if checked else None,
            )
            self.queue.finished(task, True)
            with self._lock:
                self.rating_finished += 1
                done[0] += 1
                self.rating_playing = min(parallel, task.games - done[0])
                self.rating_moves += meta.moves

        parallel = min(self.parallel, task.games)
        done = [0]
        with self._lock:
            self.rating_playing = parallel
        log.info("rating task %s: %d games, %s vs %s", task.id, task.games, *names)
        run_match(
            evaluators,
            names,
            task.settings.rating,
            games=task.games,
            parallel=parallel,
            out_dir=None,
            seed=int(self.rng.integers(1 << 31)),
            name=f"rating-{prefix}",
            on_game=on_game,
            stop=_StopView(self.control.stopping, self.abort),
            more=lambda: self.control.start_game(lambda: True) is not None,
            paused=self.held,
        )
        with self._lock:
            self.rating_playing = 0

    def keep_copy(self, game_id: str, sgf: bytes) -> None:
        """A copy of a finished game's SGF in the volunteer's folder (--sgf-dir), if any; a copy that
        cannot be written is said in the log and the game goes on to the server."""
        if self.spec.sgf_dir is None:
            return
        try:
            atomic_write(Path(self.spec.sgf_dir) / f"{game_id}.sgf", sgf)
        except OSError as e:
            log.warning("the copy of game %s could not be written in %s: %s", game_id, self.spec.sgf_dir, e)

    # --- status -----------------------------------------------------------------------------------
    def _status_loop(self, done: threading.Event) -> None:
        while not done.wait(STATUS_SECONDS):
            if not self.abort.is_set() and not supervisor_alive():
                log.error("worker %d: the client's supervisor is gone; stopping", self.spec.index)
                self.abort.set()
                self.queue.close()
            self._send_status()

    def _send_status(self) -> None:
        with self._lock:
            sessions = list(self.sessions)
            totals = dict(self.finished_before)
            rating = (self.rating_playing, self.rating_finished, self.rating_moves)
            rows = self.rows
        playing = 0
        network = self.last_network
        for s in sessions:
            live = s.driver.live() if s.driver is not None else None
            if live is None:
                continue
            playing += int(live["playing"])
            for k in ("moves", "evals", "offered"):
                totals[k] += live[k]
            totals["games"] += live["games"]
            network = s.task.networks[0].name
        self._remember_evals(totals["evals"])
        if self.control.held(self.spec.index):
            state = "paused"
        elif self.measuring:
            state = "measuring the best number of games at once"
        elif self.control.finishing.is_set():
            state = "finishing the games in play"
        elif playing or rating[0]:
            state = "playing"
        else:
            state = self.queue.state
        self.messages.put(
            (
                "status",
                self.spec.index,
                None,
                {
                    "device": self.spec.device,
                    "state": state,
                    "network": network,
                    "playing": playing + rating[0],
                    "selfplay_games": totals["games"],
                    "rating_games": rating[1],
                    "rows": rows,
                    "moves": totals["moves"] + rating[2],
                    "evals": totals["evals"],
                    "offered": totals["offered"],
                    "reachable": self.queue.reachable,
                    "announcements": self.queue.announcements,
                    "in_hand": self.queue.in_hand(),
                    "in_hand_seconds": self.queue.reserve_seconds(),
                },
            )
        )

    def _remember_evals(self, evals: float) -> None:
        now = time.monotonic()
        with self._lock:
            self._evals.append((now, evals))
            while self._evals and self._evals[0][0] < now - RATE_SECONDS:
                self._evals.popleft()

    def session_ended(self, session: _Session) -> None:
        live = session.driver.live() if session.driver is not None else {}
        with self._lock:
            for k in ("games", "moves", "evals", "offered"):
                self.finished_before[k] += live.get(k, 0)
            self.sessions.remove(session)


class _StopView:
    """What the drivers watch to stop: the supervisor's event or the worker's own abort. A driver
    that fails sets it, which sets only the worker's own (the other workers go on)."""

    def __init__(self, shared, own: threading.Event) -> None:
        self.shared = shared
        self.own = own

    def is_set(self) -> bool:
        return self.own.is_set() or self.shared.is_set()

    def set(self) -> None:
        self.own.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait on the worker's own event and look at the supervisor's in steps: a process killed
        while it sleeps in a multiprocessing Event's wait leaves that Event's set() blocked for good
        (it waits for the dead sleeper to wake), and the supervisor with it."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.is_set():
            left = SHARED_POLL_SECONDS if deadline is None else min(SHARED_POLL_SECONDS, deadline - time.monotonic())
            if left <= 0:
                return False
            self.own.wait(left)
        return True


class _Session:
    """The self-play games of one network and settings version."""

    def __init__(self, worker: Worker, task: Task, resumed: list[Saved] | None = None) -> None:
        """``resumed``: saved games to play on (the session takes no others, and ends after them)."""
        self.worker = worker
        self.task = task
        self.resumed = resumed
        self.key = task.key
        self.draining = threading.Event()
        self.driver: SelfPlayDriver | None = None
        self.thread = threading.Thread(
            target=worker._guard, args=(self._run,), name=f"selfplay-{task.key[0]}", daemon=True
        )

    def _next_resumed(self):
        """The next saved game to play on (None when there is none left: the session drains)."""
        from client.selfplay.run import GameOrder

        assert self.resumed is not None
        if not self.resumed:
            self.draining.set()
            return None
        saved = self.resumed[0]
        order = GameOrder(saved.game.game_id, saved.game.rng, saved.task, resume=saved.game)
        if self.worker.control.start_game(lambda: order) is None:  # the games asked for have started
            self.draining.set()
            return None
        self.resumed.pop(0)
        with self.worker._lock:
            self.worker.selfplay_playing += 1
        log.info("game %s: played on from move %d", saved.game.game_id, saved.game.game.num_moves)
        return order

    def _run(self) -> None:
        from client.selfplay.run import LATER, GameOrder, SelfPlayDriver

        worker = self.worker
        control = worker.control
        settings = self.task.settings.selfplay
        network = self.task.networks[0]
        try:
            evaluator = worker.evaluator(network, self.task.files[0])
            parallel = worker.parallel_for(evaluator, settings)
            self.driver = SelfPlayDriver(evaluator, settings, parallel, seed=int(worker.rng.integers(1 << 31)))
        except BaseException:
            self.draining.set()
            worker.session_ended(self)
            raise
        log.info("self-play with network %s, settings version %d", *self.key)

        def next_game(group: int):
            if not worker.room_for_selfplay():
                return LATER
            if self.resumed is not None:
                return self._next_resumed()
            answers = []

            def take():
                answers.append(worker.queue.take_game(self.key))
                return answers[0] if isinstance(answers[0], tuple) else None

            got = control.start_game(take)
            if got is None:
                if answers == [True]:  # none in hand now
                    return LATER
                self.draining.set()  # none for this session any more, or the games asked for have started
                return None
            task, number = got
            with worker._lock:
                worker.selfplay_playing += 1
            seed = int(worker.rng.integers(1 << 62))
            return GameOrder(f"{uuid.UUID(task.id).hex}-{number:03d}", np.random.default_rng(seed), task)

        def finished(game, order) -> int | None:
            from client.contribute.metadata import training_metadata

            task = order.tag
            with worker._lock:
                worker.selfplay_playing -= 1
            sgf = game.sgf(network.name).encode()
            worker.keep_copy(order.game_id, sgf)  # every finished game, sent or not
            made = _rows(game, order)
            if made is None:  # no full search was recorded: nothing to train on, nothing to send
                log.info("game %s has no training rows; it is not uploaded", order.game_id)
                worker.queue.finished(task, False)
                worker.inplay.drop(order.game_id)
                return None
            npz, rows = made
            meta = training_metadata(sgf, npz, network.name, order.game_id, task.settings_version)
            worker.outbox.put(
                "training",
                task.id,
                meta.to_dict(),
                sgf,
                npz,
                build=BUILD,
                held_for=None if network.is_random else (worker.spec.device, (network.name,)),
            )
            worker.queue.finished(task, True)
            worker.inplay.drop(order.game_id)  # after the outbox has it
            with worker._lock:
                worker.rows += rows
            return rows

        watch = watcher(Path(worker.spec.watch_file), network.name) if worker.spec.watch_file else None
        saved_at: dict[str, float] = {}

        def on_move(game, order, first: bool) -> None:
            """The watch file; a checkpoint of the game every checkpoint_seconds of its play."""
            if first and watch is not None:
                watch(game)
            now = time.monotonic()
            since = saved_at.setdefault(game.game_id, now)
            if now - since >= worker.spec.checkpoint_seconds:
                worker.inplay.save(order.tag, game)
                saved_at[game.game_id] = now

        try:
            self.driver.run(
                next_game,
                finished,
                stop=_StopView(control.stopping, worker.abort),
                paused=worker.held,
                on_move=on_move,
            )
        finally:
            self.draining.set()
            worker.session_ended(self)
        log.info("self-play with network %s, settings version %d: done", *self.key)


def watcher(path: Path, network: str) -> Callable:
    """What shows one game in play in ``path`` after each of its moves (--watch-file): its SGF when
    the name ends in .sgf, else the board as text with the game's name and move number."""
    from common.go.text import board_text

    failed: list[OSError] = []

    def watch(game) -> None:
        if path.suffix.lower() == ".sgf":
            text = game.sgf(network)
        else:
            text = f"game {game.game_id}, network {network}, move {game.game.num_moves}\n{board_text(game.game)}\n"
        try:
            atomic_write(path, text.encode())
        except OSError as e:
            if not failed:  # said once
                log.warning("the watch file %s cannot be written: %s", path, e)
            failed.append(e)

    return watch


def _rows(game, order):
    from common.data.rows import game_rows_npz

    return game_rows_npz(game.training_record(), order.rng)


def _printable(text: str) -> str:
    """A name as the server takes it: no control characters, at most MACHINE_TEXT characters."""
    return CONTROL_CHARS.sub("", text).strip()[:MACHINE_TEXT]
