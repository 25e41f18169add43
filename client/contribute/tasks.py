"""The worker's supply of work: tasks fetched from the server ahead of need, with their networks.

A :class:`TaskQueue` runs one thread that keeps the self-play games not yet started above a low-water
mark (the games the worker plays at once): when they fall below it, the thread asks the server for
the next task and downloads the task's networks into the cache *before* the task is offered, so
the games in play go on while the next task and its network arrive and the device never waits
for them. Every few minutes it also looks at the run's newest network and downloads it while the
current one plays (the pre-fetch of the network that comes next).

Self-play games are handed out one at a time (:meth:`TaskQueue.take_game`) to the self-play session
of their network and settings; rating tasks are taken whole (:meth:`TaskQueue.take_rating`).
Trouble reaching the server is waited out with growing pauses, and shown (``reachable``); what
waiting cannot mend (a refused token, a client too old for the run, settings this client cannot
read, a network file that stays wrong) stops the queue with a :class:`Fatal` for the worker to
report.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import requests

from client.contribute.netcache import NetworkCache, NetworkFileError, NetworkRef
from client.contribute.outbox import describe_error
from client.contribute.server import AuthError, ServerClient, ServerError, UpgradeRequired
from common.settings import RunSettings, SettingsError

log = logging.getLogger(__name__)

PREFETCH_SECONDS = 300.0  # how often to look for the run's next network
NO_WORK_SECONDS = 30.0  # the pause when the server has nothing to hand out
MAX_RATING_BACKLOG = 2  # rating tasks waiting to be played before only self-play is asked for

# The kinds of trouble a worker reports before it stops; the command's exit status follows them.
AUTH, UPGRADE, NETWORK, PROTOCOL = "auth", "upgrade", "network", "protocol"


class Fatal(Exception):
    """What the worker cannot wait out: ``kind`` (AUTH, UPGRADE, NETWORK, PROTOCOL) and a message
    in plain words."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass
class Task:
    """A task as the worker plays it."""

    id: str
    kind: str  # "selfplay" or "rating"
    settings: RunSettings
    settings_version: int
    networks: list[NetworkRef]  # one for self-play; black-first pair for rating
    files: list[Path | None]  # the cached network files (None: the random network, which has none)
    games: int
    started: int = 0  # games handed out
    received_at: float = field(default_factory=time.time)

    @property
    def key(self) -> tuple[str, int]:
        """Self-play tasks with the same key are played by one session."""
        return self.networks[0].name, self.settings_version

    @classmethod
    def parse(cls, body: dict) -> Task:
        """A task from the server's JSON (files not yet known); Fatal(PROTOCOL) naming what this client
        cannot read."""
        try:
            if not isinstance(body, dict):
                raise ValueError(f"expected a JSON object, got {type(body).__name__}")
            kind = body.get("kind")
            if kind not in ("selfplay", "rating"):
                raise ValueError(f"kind {kind!r} is not one of selfplay, rating")
            try:
                task_id = str(uuid.UUID(str(body.get("id"))))
            except ValueError:
                raise ValueError(f"id {body.get('id')!r} is not a task id") from None
            refs = [body.get("network")] if kind == "selfplay" else body.get("networks")
            if not isinstance(refs, list) or len(refs) != (1 if kind == "selfplay" else 2) or not all(
                    isinstance(r, dict) for r in refs):
                raise ValueError(f"a {kind} task needs " + ("a network" if kind == "selfplay" else "two networks"))
            games = body.get("games")
            if type(games) is not int or games < 1:
                raise ValueError(f"games {games!r} is not a positive whole number")
            version = body.get("settings_version")
            if type(version) is not int:
                raise ValueError(f"settings_version {version!r} is not a whole number")
            settings = RunSettings.from_dict(body.get("settings"))
            networks = [NetworkRef.from_task(r) for r in refs]
        except (SettingsError, ValueError) as e:
            raise Fatal(PROTOCOL, f"the server's task cannot be read by this client ({e}); a newer client "
                                  "probably can: please upgrade") from None
        return cls(id=task_id, kind=kind, settings=settings, settings_version=version, networks=networks,
                   files=[None] * len(networks), games=games)


class TaskQueue:
    """See the module docstring. ``low_water``: the self-play games to keep in hand; ``games``: the
    games to ask for per task."""

    def __init__(self, server: ServerClient, cache: NetworkCache, games: int, low_water: int,
                 retry_start: float = 5.0, retry_cap: float = 300.0, prefetch_seconds: float = PREFETCH_SECONDS,
                 run_name: str | None = None) -> None:
        self.server = server
        self.cache = cache
        self.games = games
        self.low_water = low_water
        self.retry_start = retry_start
        self.retry_cap = retry_cap
        self.prefetch_seconds = prefetch_seconds
        self.run_name = run_name
        self._selfplay: deque[Task] = deque()
        self._rating: deque[Task] = deque()
        self._cond = threading.Condition()
        self._closed = False  # no more tasks will come (finishing, stopped, or fatal)
        self._stop = threading.Event()
        self.fatal: Fatal | None = None
        self.reachable: bool | None = None  # None: not asked yet
        self.state = "starting"
        self._thread = threading.Thread(target=self._run, name="task-queue", daemon=True)
        self._last_prefetch = 0.0
        self._unready: Task | None = None  # a task whose networks are not all downloaded yet

    # --- the worker's side ------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """Ask for no more tasks (the games already in hand are still handed out)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._stop.set()

    def take_game(self, key: tuple[str, int] | None) -> tuple[Task, int] | bool:
        """The next self-play game for the session of `key` (None: any): (task, game number).
        False: none for this session any more (the next task has another network or settings, or
        no more will come); True: none in hand now, ask again soon."""
        with self._cond:
            while self._selfplay and self._selfplay[0].started >= self._selfplay[0].games:
                self._selfplay.popleft()
            if not self._selfplay:
                return not self._closed
            task = self._selfplay[0]
            if key is not None and task.key != key:
                return False
            number = task.started
            task.started += 1
            self._cond.notify_all()
            return task, number

    def next_selfplay(self, timeout: float) -> Task | bool | None:
        """The self-play task whose games are handed out next (left in hand); None when there is none
        yet (after waiting up to timeout), False when none will come."""
        with self._cond:
            self._cond.wait_for(lambda: self._selfplay or self._closed, timeout)
            while self._selfplay and self._selfplay[0].started >= self._selfplay[0].games:
                self._selfplay.popleft()
            if self._selfplay:
                return self._selfplay[0]
            return False if self._closed else None

    def take_rating(self, timeout: float) -> Task | bool | None:
        """The next rating task (waiting up to timeout); None: none yet; False: none will come."""
        with self._cond:
            self._cond.wait_for(lambda: self._rating or self._closed, timeout)
            if self._rating:
                self._cond.notify_all()
                return self._rating.popleft()
            return False if self._closed else None

    # --- the thread -------------------------------------------------------------------------------
    def _run(self) -> None:
        delay = self.retry_start
        while not self._stop.is_set():
            with self._cond:
                self._cond.wait_for(lambda: self._closed or self._wanted(), timeout=1.0)
                if self._closed:
                    return
                wanted = self._wanted()
            try:
                try:
                    if wanted:
                        self._fetch()
                    else:
                        self._prefetch()
                except ServerError as e:
                    self._reached()
                    fatal = _fatal_refusal(e)
                    if fatal is not None:
                        raise fatal from None
                    raise
                delay = self.retry_start
            except Fatal as e:  # the supervisor says it (once, for every worker)
                self.fatal = e
                self.state = "stopped: " + e.message
                log.info("stopping: %s", e.message)
                self.close()
                return
            except ServerError as e:
                wait = NO_WORK_SECONDS if e.status == 503 else delay
                self.state = f"waiting: {e.message or e}"
                log.warning("no task from the server (%s %s); asking again in %.0f s", e.status, e.message, wait)
                delay = min(self.retry_cap, delay * 2)
                self._stop.wait(wait)
            except requests.RequestException as e:
                level = logging.WARNING if self.reachable is not False else logging.INFO
                self.reachable = False
                self.state = f"server unreachable ({describe_error(e)})"
                log.log(level, "no task: the server cannot be reached (%s); trying again in %.1f s, and the games "
                        "in hand go on", describe_error(e), delay)
                self._stop.wait(delay)
                delay = min(self.retry_cap, delay * 2)

    def _reached(self) -> None:
        if self.reachable is False:
            log.warning("the server is reachable again")
        self.reachable = True

    def _wanted(self) -> bool:
        """Is another task needed? Self-play games in hand below the low-water mark."""
        return sum(t.games - t.started for t in self._selfplay) < self.low_water

    def _fetch(self) -> None:
        """Get the next task and its networks. A task whose network download broke off is kept and
        its download resumed on the next call, rather than another task asked for."""
        task = self._unready
        if task is None:
            self.state = "asking for a task"
            with self._cond:
                kinds = ("selfplay",) if len(self._rating) >= MAX_RATING_BACKLOG else ("selfplay", "rating")
            body = self.server.task(games=self.games, kinds=kinds)
            self._reached()
            task = Task.parse(body)
            self.run_name = str(body.get("run") or self.run_name or "") or None
            log.info("task %s: %s, %d games, network %s, settings version %d", task.id, task.kind, task.games,
                     " vs ".join(n.name for n in task.networks), task.settings_version)
            self._unready = task
        self._download(task)
        self._unready = None
        with self._cond:
            (self._selfplay if task.kind == "selfplay" else self._rating).append(task)
            self._cond.notify_all()
        self.state = "ready"

    def _download(self, task: Task) -> None:
        for i, ref in enumerate(task.networks):
            if ref.is_random:
                continue
            self.state = f"downloading network {ref.name}"
            try:
                task.files[i] = self.cache.get(ref)
            except NetworkFileError as e:
                raise Fatal(NETWORK, f"{e}. The server's copy seems damaged; the client stops rather than "
                                     "play with a network it cannot check") from None

    def _prefetch(self) -> None:
        """Download the run's newest network (the next self-play network, or a candidate about to play
        its rating games) while the current one plays."""
        now = time.monotonic()
        if self.run_name is None or now - self._last_prefetch < self.prefetch_seconds:
            return
        self._last_prefetch = now
        try:
            newest = self.server.newest_network(self.run_name)
            ref = NetworkRef.from_task(newest) if newest is not None else None
        except (AuthError, UpgradeRequired):
            raise  # as for a task: the client must stop
        except (ServerError, ValueError, requests.RequestException) as e:  # only a look ahead: never fatal
            log.info("looking for the run's next network failed: %s", e)
            return
        self._reached()
        if ref is None:
            return
        if ref.is_random or self.cache.path_of(ref.name).exists():
            return
        self.state = f"pre-fetching network {ref.name}"
        log.info("pre-fetching network %s", ref.name)
        try:
            self.cache.get(ref)
        except (NetworkFileError, requests.RequestException) as e:  # a task that needs it will try again
            log.info("pre-fetch of network %s failed: %s", ref.name, e)
        self.state = "ready"


def _fatal_refusal(e: ServerError) -> Fatal | None:
    """A refusal that waiting cannot mend (the token, the client's version, a request the server will
    never take), as the Fatal the worker reports; None for one to wait out (408, 429, 5xx)."""
    if isinstance(e, AuthError):
        return Fatal(AUTH, f"the server refused this client's token: {e.message or e.status}")
    if isinstance(e, UpgradeRequired):
        return Fatal(UPGRADE, f"this client is too old for the server's run: {e.message or e.status}")
    if 400 <= e.status < 500 and e.status not in (408, 429):
        return Fatal(PROTOCOL, f"the server refused this client's task request: {e.message or e}")
    return None
