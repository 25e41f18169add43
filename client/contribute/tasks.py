"""The worker's supply of work: tasks fetched from the server ahead of need, with their networks.

A :class:`TaskQueue` runs one thread that keeps a reserve of self-play games not yet started,
sized in time by the rate the worker plays at (:mod:`client.contribute.sizing`: two hours of play,
asked for in tasks of ten minutes), so that the device plays on through an outage of the server.
It downloads a task's networks into the cache *before* the task is offered, so the games in play go
on while the next task and its network arrive and the device never waits for them.

Every minute (``look_seconds``) it also looks at the server's current run. A reserve never means
stale data: when the run's self-play network or settings version changed, the games not yet started
of the tasks for the old ones are given up (the games in play finish) and new tasks are asked for.
Every five minutes the look also downloads the run's newest network while the current one plays (a
candidate about to play its rating games, or the next self-play network). A task whose lifetime (as
the server gave it) is over is given up the same way. The server is told of every game given up,
and at the worker's end of every game the worker will not deliver, so that its ledger of open tasks
owes no game that will not come.

While the look says a candidate waits for its gating games, a worker that takes both kinds of task
also asks for a rating task whenever it has none in hand or in play, and looks again as soon as one
is played. A gating decision holds up the whole run, and once the reserve is full the ordinary task
requests come only once per ten minutes of play: drawn at those alone, a slow worker's rating tasks
came half an hour apart.

Self-play games are handed out one at a time (:meth:`TaskQueue.take_game`) to the self-play session
of their network and settings; rating tasks are taken whole (:meth:`TaskQueue.take_rating`).
Trouble reaching the server is waited out with growing pauses, and shown (``reachable``); a server
that asks to be asked later (``Retry-After``) is not asked anything before then. What waiting cannot
mend (a refused token, a client the run does not take, settings this client cannot read, a network
file that stays wrong) stops the queue with a :class:`Fatal` for the worker to report.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

import requests

from client.contribute.bounded import DEFAULT_MAX_DOWNLOAD
from client.contribute.netcache import NetworkCache, NetworkFileError, NetworkRef
from client.contribute.outbox import describe_error
from client.contribute.server import AuthError, ServerClient, ServerError, UpgradeRequired
from client.contribute.sizing import MOST_GAMES, GameRate, Sizing
from common.settings import RunSettings, SettingsError

log = logging.getLogger(__name__)

LOOK_SECONDS = 60.0  # how often to look at the server's current run (its self-play network and settings)
PREFETCH_SECONDS = 300.0  # how often to look for the run's newest network, to download it ahead
NO_WORK_SECONDS = 30.0  # the pause when the server has nothing to hand out
MAX_RATING_BACKLOG = 2  # rating tasks waiting to be played before only self-play is asked for

# The kinds of trouble a worker reports before it stops; the command's exit status follows them.
AUTH, UPGRADE, NETWORK, PROTOCOL, CANARY = "auth", "upgrade", "network", "protocol", "canary"
# The queue's kinds of request; when the server asks to wait for one, the others go on.
TASK, LOOK, RELEASE, RATING = "task request", "look at the run", "giving up games", "rating task request"


class Fatal(Exception):
    """What the worker cannot wait out: ``kind`` (AUTH, UPGRADE, NETWORK, PROTOCOL, CANARY) and a
    message in plain words."""

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
    games: int  # the games to play (lowered when the rest is given up)
    lifetime: float | None = None  # seconds from its issue to its expiry, as the server said
    started: int = 0  # games handed out
    done: int = 0  # games finished and put in the outbox
    lost: int = 0  # games handed out that will not be delivered (no training rows, or stopped)
    promised: int | None = None  # the games the server is to expect, once some were given up
    received_at: float = field(default_factory=time.monotonic)

    @property
    def key(self) -> tuple[str, int]:
        """Self-play tasks with the same key are played by one session."""
        return self.networks[0].name, self.settings_version

    def expired(self, now: float) -> bool:
        return self.lifetime is not None and now >= self.received_at + self.lifetime

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
            if (
                not isinstance(refs, list)
                or len(refs) != (1 if kind == "selfplay" else 2)
                or not all(isinstance(r, dict) for r in refs)
            ):
                raise ValueError(f"a {kind} task needs " + ("a network" if kind == "selfplay" else "two networks"))
            games = body.get("games")
            if type(games) is not int or games < 1:
                raise ValueError(f"games {games!r} is not a positive whole number")
            version = body.get("settings_version")
            if type(version) is not int:
                raise ValueError(f"settings_version {version!r} is not a whole number")
            settings = RunSettings.from_dict(body.get("settings"))
            networks = [NetworkRef.from_task(r) for r in refs]
            lifetime = _lifetime(body.get("created_at"), body.get("expires_at"))
        except (SettingsError, ValueError) as e:
            raise Fatal(
                PROTOCOL,
                f"the server's task cannot be read by this client ({e}); a newer client probably can: please upgrade",
            ) from None
        return cls(
            id=task_id,
            kind=kind,
            settings=settings,
            settings_version=version,
            networks=networks,
            files=[None] * len(networks),
            games=games,
            lifetime=lifetime,
        )


def _lifetime(created: object, expires: object) -> float | None:
    """Seconds from a task's issue to its expiry (both the server's times, so this machine's clock
    does not matter); None when the server did not say."""
    if created is None or expires is None:
        return None
    try:
        seconds = (datetime.fromisoformat(str(expires)) - datetime.fromisoformat(str(created))).total_seconds()
    except (TypeError, ValueError) as e:
        raise ValueError(f"created_at {created!r} and expires_at {expires!r}: {e}") from None
    if seconds <= 0:
        raise ValueError(f"expires_at {expires!r} is not after created_at {created!r}")
    return seconds


ANNOUNCEMENT_CHARS = 300  # of one announcement shown
MAX_ANNOUNCEMENTS = 5


def announcements(value: object) -> tuple[str, ...]:
    """The server's announcements as the status panel shows them: each message with its link. What is
    not a list of announcements (an older server sends none) shows nothing; control characters are
    dropped, so that a message cannot steer the terminal."""
    if not isinstance(value, list):
        return ()
    shown = []
    for item in value[:MAX_ANNOUNCEMENTS]:
        if not isinstance(item, dict) or not isinstance(item.get("message"), str):
            continue
        text = item["message"]
        if isinstance(item.get("link"), str) and item["link"]:
            text += f" ({item['link']})"
        text = "".join(c for c in text if c.isprintable())[:ANNOUNCEMENT_CHARS]
        if text:
            shown.append(text)
    return tuple(shown)


class TaskQueue:
    """See the module docstring. ``sizing``: how many games to keep in hand and to ask for."""

    def __init__(
        self,
        server: ServerClient,
        cache: NetworkCache,
        sizing: Sizing,
        retry_start: float = 5.0,
        retry_cap: float = 300.0,
        look_seconds: float = LOOK_SECONDS,
        prefetch_seconds: float = PREFETCH_SECONDS,
        run_name: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        kinds: tuple[str, ...] = ("selfplay", "rating"),
    ) -> None:
        """``kinds``: the kinds of task to ask for (the volunteer's choice)."""
        self.kinds = kinds
        self.server = server
        self.cache = cache
        self.sizing = sizing
        self.retry_start = retry_start
        self.retry_cap = retry_cap
        self.look_seconds = look_seconds
        self.prefetch_seconds = prefetch_seconds
        self.run_name = run_name
        self.clock = clock
        self.rate = GameRate(min_games=sizing.parallel, clock=clock)
        self.most_games = MOST_GAMES  # the server's limit of games per task
        self._selfplay: deque[Task] = deque()
        self._rating: deque[Task] = deque()
        self._open: dict[str, Task] = {}  # tasks that may still bring games, by id
        self._release: dict[str, Task] = {}  # tasks whose games given up the server is still to hear of
        self._cond = threading.Condition()
        self._closed = False  # no more tasks will come (finishing, stopped, or fatal)
        self._stop = threading.Event()
        self.fatal: Fatal | None = None
        self.reachable: bool | None = None  # None: not asked yet
        self.announcements: tuple[str, ...] = ()  # the server's, as the last task answer gave them
        self.state = "starting"
        self._thread = threading.Thread(target=self._run, name="task-queue", daemon=True)
        self._last_look: float | None = None
        self._last_prefetch: float | None = None
        self._last_request: float | None = None  # the last task request
        self._key: tuple[str, int] | None = None  # the run's self-play network and settings version
        self._lifetime: float | None = None  # of the last task
        self._gating = False  # the last look said a candidate waits for gating games (cleared once asked)
        self._unready: Task | None = None  # a task whose networks are not all downloaded yet
        # Per kind of request: not before this time (the server's Retry-After, or a pause after a refusal).
        self._not_before = dict.fromkeys((TASK, LOOK, RELEASE, RATING), float("-inf"))
        self._pause = dict.fromkeys((TASK, LOOK, RELEASE, RATING), retry_start)

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
            self._drop_started()
            if not self._selfplay:
                return not self._closed
            task = self._selfplay[0]
            if key is not None and task.key != key:
                return False
            number = task.started
            task.started += 1
            self.rate.began()
            self._cond.notify_all()
            return task, number

    def next_selfplay(self, timeout: float) -> Task | Literal[False] | None:
        """The self-play task whose games are handed out next (left in hand); None when there is none
        yet (after waiting up to timeout), False when none will come."""
        with self._cond:
            self._cond.wait_for(lambda: self._selfplay or self._closed, timeout)
            self._drop_started()
            if self._selfplay:
                return self._selfplay[0]
            return False if self._closed else None

    def take_rating(self, timeout: float) -> Task | Literal[False] | None:
        """The next rating task (waiting up to timeout); None: none yet; False: none will come."""
        with self._cond:
            self._cond.wait_for(lambda: self._rating or self._closed, timeout)
            if self._rating:
                self._cond.notify_all()
                return self._rating.popleft()
            return False if self._closed else None

    def finished(self, task: Task, delivered: bool) -> None:
        """A game of task ended: put in the outbox (delivered) or not (it had nothing to send)."""
        with self._cond:
            if delivered:
                task.done += 1
            else:
                task.lost += 1
            if task.kind == "selfplay":
                self.rate.finished()
            if task.done + task.lost >= task.games:
                self._open.pop(task.id, None)
                if task.kind == "rating":
                    self._last_look = None  # does the gating want more games? look at once
                    self._cond.notify_all()
                if task.lost:  # games that had nothing to send: the server is not to wait for them
                    task.promised = task.done
                    self._release[task.id] = task
                    self._cond.notify_all()

    def in_hand(self) -> int:
        """Self-play games not yet started."""
        with self._cond:
            return self._in_hand()

    def reserve_seconds(self) -> float | None:
        """How long the games in hand last at the measured rate (None before it is known)."""
        with self._cond:
            rate = self.rate.per_second()
            return self._in_hand() / rate if rate else None

    def release_unplayed(self, timeout: float = 10.0, kept: dict[str, int] | None = None) -> int:
        """At the worker's end, after its games: tell the server of every game it will not get (each
        open task's games not put in the outbox, but for the games in play saved to be played on,
        ``kept`` by task id). One try: when the server cannot take it, the tasks expire in their
        time. Returns the games given up."""
        self.close()
        if self._thread.ident is not None:
            # A task request may be under way: its task is one of those to give up.
            self._thread.join(timeout)
        with self._cond:
            for task in self._open.values():
                task.promised = min(task.games, task.done + (kept or {}).get(task.id, 0))
                self._release[task.id] = task
            self._open.clear()
            self._selfplay.clear()
            self._rating.clear()
        try:
            return self._send_releases(
                ServerClient(
                    self.server.base_url,
                    self.server.token,
                    instance_id=self.server.instance_id,
                    timeout=timeout,
                    proxy=getattr(self.server.session, "proxy", None),
                    max_download=getattr(self.server.session, "max_download", DEFAULT_MAX_DOWNLOAD),
                )
            )
        except (ServerError, requests.RequestException) as e:
            log.info(
                "the server could not be told of the games this worker will not play (%s); their tasks "
                "expire in their time",
                e,
            )
            return 0

    # --- the bookkeeping (under the lock) ---------------------------------------------------------
    def _drop_started(self) -> None:
        while self._selfplay and self._selfplay[0].started >= self._selfplay[0].games:
            self._selfplay.popleft()

    def _in_hand(self) -> int:
        return sum(t.games - t.started for t in self._selfplay)

    def _give_up(self, which: Callable[[Task], bool], why: str) -> None:
        """Give up the games not yet started of the self-play tasks `which` picks."""
        games = tasks = 0
        for task in self._selfplay:
            if which(task) and task.started < task.games:
                games += task.games - task.started
                tasks += 1
                task.games = task.started
                task.promised = task.started - task.lost  # the games in play may still come
                self._release[task.id] = task
                if task.done + task.lost >= task.games:
                    self._open.pop(task.id, None)
        if games:
            self._drop_started()
            self._cond.notify_all()
            log.info("%s: %d games not started of %d tasks are given up", why, games, tasks)

    def _kinds_wanted(self) -> tuple[str, ...]:
        """The kinds of task to ask for: the volunteer's, without rating while enough rating tasks
        wait."""
        if len(self._rating) >= MAX_RATING_BACKLOG:
            return tuple(k for k in self.kinds if k != "rating")
        return self.kinds

    def _need(self) -> bool:
        """Is another task wanted now? At once when the games in hand run out; while the reserve is
        short, when the last request is old enough. Never while no kind may be asked for."""
        if not self._kinds_wanted():
            return False
        in_hand = self._in_hand()
        if self.sizing.urgent(in_hand):
            return True
        if in_hand >= self.sizing.reserve_games(self.rate.per_second(), self._lifetime):
            return False
        return self._last_request is None or self.clock() - self._last_request >= self.sizing.fill_seconds

    def _rating_wanted(self) -> bool:
        """Ask for a rating task beside the reserve: a candidate waits for gating games and no rating
        task is in hand or in play (only for a worker that takes both kinds; one that takes rating
        alone asks for it with every task request)."""
        return (
            self._gating
            and "selfplay" in self.kinds
            and "rating" in self.kinds
            and not self._rating
            and not any(t.kind == "rating" for t in self._open.values())
        )

    def _look_due(self) -> bool:
        return self._last_look is None or self.clock() - self._last_look >= self.look_seconds

    def _due(self) -> list[str]:
        """The requests to make now, in order (the server's waits kept)."""
        now = self.clock()
        wanted = (
            (LOOK, self._look_due()),
            (RELEASE, bool(self._release)),
            (TASK, self._need()),
            (RATING, self._rating_wanted()),
        )
        return [what for what, want in wanted if want and now >= self._not_before[what]]

    # --- the thread -------------------------------------------------------------------------------
    def _run(self) -> None:
        delay = self.retry_start
        while not self._stop.is_set():
            with self._cond:
                self._cond.wait_for(lambda: self._closed or self._due(), timeout=1.0)
                if self._closed:
                    return
                self._give_up(lambda t: t.expired(self.clock()), "tasks expired")
                due = self._due()
                urgent = self.sizing.urgent(self._in_hand())
            try:
                for what in due:
                    self._attempt(what, urgent)
                delay = self.retry_start
            except Fatal as e:  # the supervisor says it (once, for every worker)
                self.fatal = e
                self.state = "stopped: " + e.message
                log.info("stopping: %s", e.message)
                self.close()
                return
            except requests.RequestException as e:
                level = logging.WARNING if self.reachable is not False else logging.INFO
                self.reachable = False
                self.state = f"server unreachable ({describe_error(e)})"
                log.log(
                    level,
                    "the server cannot be reached (%s); trying again in %.1f s, and the games in hand go on",
                    describe_error(e),
                    delay,
                )
                self._stop.wait(delay)
                delay = min(self.retry_cap, delay * 2)

    def _attempt(self, what: str, urgent: bool) -> None:
        """One request of the kind `what`. A refusal waiting can mend makes this kind wait (as long as
        the server's Retry-After says, else a pause that doubles with each refusal); the others go on."""
        try:
            if what == LOOK:
                self._look(prefetch=not urgent)  # the look ahead waits while the games in hand run out
            elif what == RELEASE:
                self._send_releases(self.server)
            elif what == RATING:
                self._fetch(rating_only=True)
            else:
                self._fetch()
            self._pause[what] = self.retry_start
        except ServerError as e:
            self._reached()
            fatal = _fatal_refusal(e, TASK if what == RATING else what)
            if fatal is not None:
                raise fatal from None
            if what == RATING and e.status == 503 and e.retry_after is None:
                # The gating was decided since the look: nothing to say, the next look tells.
                log.info("no rating games are to be played now")
                return
            if e.retry_after is not None:  # the server said when: not a moment before
                wait = e.retry_after
            elif e.status == 503 and what == TASK:
                wait = NO_WORK_SECONDS
            else:
                wait = self._pause[what]
                self._pause[what] = min(self.retry_cap, wait * 2)
            self._not_before[what] = self.clock() + wait
            if what == TASK:
                self.state = f"waiting: {e.message or e}"
            log.warning("%s: the server answered %s %s; asking again in %.1f s", what, e.status, e.message, wait)

    def _reached(self) -> None:
        if self.reachable is False:
            log.warning("the server is reachable again")
        self.reachable = True

    def _look(self, prefetch: bool = True) -> None:
        """The server's current run: tasks for an older self-play network or settings version are
        given up; then the run's newest network is downloaded ahead of the tasks that will need it."""
        self._last_look = self.clock()
        current = self.server.current_run()
        self._reached()
        self.run_name = str(current.get("run") or self.run_name or "") or None
        most = current.get("games_per_task")
        if type(most) is int and most >= 1:
            self.most_games = most
        network, version = current.get("network"), current.get("settings_version")
        with self._cond:
            self._gating = current.get("gating") is True
        if isinstance(network, dict) and isinstance(network.get("name"), str) and type(version) is int:
            key = (network["name"], version)
            if key != self._key and self._key is not None:
                log.info("the run's self-play network is now %s (settings version %d)", *key)
            self._key = key
            with self._cond:
                self._give_up(lambda t: t.key != key, f"network {key[0]}, settings version {key[1]} came")
        if prefetch and (self._last_prefetch is None or self.clock() - self._last_prefetch >= self.prefetch_seconds):
            self._last_prefetch = self.clock()
            self._prefetch()

    def _send_releases(self, server: ServerClient) -> int:
        """Tell the server of the games given up (each task's games it will still get). Returns the games
        given up that it took."""
        with self._cond:
            tasks = dict(self._release)
            counts = {task_id: max(task.promised or 0, task.done) for task_id, task in tasks.items()}
        if not tasks:
            return 0
        try:
            answer = server.release(counts)
        except ServerError as e:
            if e.retry_after is not None or e.status >= 500 or e.status in (401, 403, 408, 426, 429):
                raise  # waited out, or the client stops
            log.warning("the server did not take the games given up (%s); their tasks expire in their time", e)
            answer = {"given_up": 0}
        with self._cond:
            for task_id, task in tasks.items():
                if self._release.get(task_id) is task and task.promised == counts[task_id]:
                    del self._release[task_id]
        given_up = int(answer.get("given_up", 0)) if isinstance(answer, dict) else 0
        log.info("the server was told of %d games given up of %d tasks", given_up, len(counts))
        return given_up

    def _fetch(self, rating_only: bool = False) -> None:
        """Get the next task (a rating task: `rating_only`) and its networks. A task whose network
        download broke off is kept and its download resumed on the next call, rather than another
        task asked for."""
        task = self._unready
        if task is None:
            self.state = "asking for a task"
            with self._cond:
                kinds = ("rating",) if rating_only else self._kinds_wanted()
                games = self.sizing.task_games(self.rate.per_second(), self.most_games)
                if rating_only:
                    self._gating = False  # asked once per look: a decided gating gets no more
            self._last_request = self.clock()
            body = self.server.task(games=games, kinds=kinds)
            self._reached()
            task = Task.parse(body)
            self.announcements = announcements(body.get("announcements"))
            self.run_name = str(body.get("run") or self.run_name or "") or None
            self._lifetime = task.lifetime
            log.info(
                "task %s: %s, %d games, network %s, settings version %d",
                task.id,
                task.kind,
                task.games,
                " vs ".join(n.name for n in task.networks),
                task.settings_version,
            )
            with self._cond:
                self._open[task.id] = task
            if task.kind == "selfplay" and self._key is not None and task.key != self._key:
                self._last_look = None  # the run changed since the last look: look again before the next step
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
                raise Fatal(
                    NETWORK,
                    f"{e}. The server's copy seems damaged; the client stops rather than "
                    "play with a network it cannot check",
                ) from None

    def _prefetch(self) -> None:
        """Download the run's newest network (the next self-play network, or a candidate about to play
        its rating games) while the current one plays."""
        if self.run_name is None:
            return
        try:
            newest = self.server.newest_network(self.run_name)
            ref = NetworkRef.from_task(newest) if newest is not None else None
        except (AuthError, UpgradeRequired):
            raise  # as for a task: the client must stop
        except ServerError as e:
            if e.retry_after is not None:
                raise  # the server asks to wait: nothing else is asked before then
            log.info("looking for the run's next network failed: %s", e)
            return
        except (ValueError, requests.RequestException) as e:  # only a look ahead: never fatal
            log.info("looking for the run's next network failed: %s", e)
            return
        if ref is None or ref.is_random or self.cache.path_of(ref.name).exists():
            return
        self.state = f"pre-fetching network {ref.name}"
        log.info("pre-fetching network %s", ref.name)
        try:
            self.cache.get(ref)
        except ServerError as e:
            if e.retry_after is not None:
                raise
            log.info("pre-fetch of network %s failed: %s", ref.name, e)
        except (NetworkFileError, requests.RequestException) as e:  # a task that needs it will try again
            log.info("pre-fetch of network %s failed: %s", ref.name, e)
        self.state = "ready"


def _fatal_refusal(e: ServerError, what: str = TASK) -> Fatal | None:
    """A refusal that waiting cannot mend (the token, the client's version or build, a task request
    the server will never take), as the Fatal the worker reports; None for one to wait out (408,
    429, 5xx, and a look at the run finding none)."""
    if isinstance(e, AuthError):
        return Fatal(AUTH, f"the server refused this client's token: {e.message or e.status}")
    if isinstance(e, UpgradeRequired):
        return Fatal(UPGRADE, f"the server's run does not take this client: {e.message or e.status}")
    if what == TASK and 400 <= e.status < 500 and e.status not in (408, 429):
        return Fatal(PROTOCOL, f"the server refused this client's task request: {e.message or e}")
    return None
