"""How the client looks after its worker processes (:class:`Workers`): it starts one per device,
reads what they say, starts a crashed one again (:class:`RestartBudget`: how often before the
client gives up), waits for them when stopping (:class:`StopDeadline`: how long before it kills
them), and says when they wait (:class:`Pauses`: paused by hand, or outside the hours to play). The
policies take their times from the caller (``time.monotonic()``, the local time of day for the
hours), so that they are plain arithmetic."""

from __future__ import annotations

import datetime
import logging
import queue
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from client.contribute import inplay
from client.contribute.config import parse_hours, within_hours
from client.contribute.crashes import exit_words, read_crash
from client.contribute.exits import EXIT_FAILED, EXIT_OF_KIND
from client.contribute.status import Status
from client.contribute.worker import Control, WorkerSpec, worker_main

log = logging.getLogger(__name__)

RESTARTS_ALLOWED = 3  # crashed-worker restarts within RESTART_WINDOW before the client gives up
RESTART_WINDOW = 600.0
STOP_SECONDS = 15.0  # how long "stop now" waits for the workers before it kills them


class RestartBudget:
    """At most ``allowed`` restarts of crashed workers within any ``window`` seconds."""

    def __init__(self, allowed: int = RESTARTS_ALLOWED, window: float = RESTART_WINDOW) -> None:
        self.allowed = allowed
        self.window = window
        self._times: list[float] = []  # the restarts asked for within the window, refused ones too

    def spend(self, now: float) -> bool:
        """Count a restart asked for at ``now``: whether the budget allows it."""
        self._times = [t for t in self._times if now - t < self.window] + [now]
        return len(self._times) <= self.allowed


class StopDeadline:
    """When stopping gives up waiting for the workers: ``seconds`` after it began."""

    def __init__(self, seconds: float = STOP_SECONDS) -> None:
        self.seconds = seconds
        self.at: float | None = None

    def start(self, now: float) -> None:
        """Begin the wait at ``now``, unless it began earlier."""
        if self.at is None:
            self.at = now + self.seconds

    def passed(self, now: float) -> bool:
        return self.at is not None and now > self.at

    def left(self, now: float) -> float:
        """The seconds still to wait at ``now`` (all of them before the wait began)."""
        return self.seconds if self.at is None else max(0.0, self.at - now)


class Pauses:
    """Why the workers wait: a pause typed (or signalled), or the time of day outside the hours to
    play (``--hours``). ``paused`` is the workers' event; while ``finishing()`` they never wait (the
    games in play end)."""

    def __init__(self, paused, finishing: Callable[[], bool], hours: str | None = None) -> None:
        self.paused = paused
        self.finishing = finishing
        self.hours_text = hours
        self.hours = parse_hours(hours) if hours else None
        self.by_hand = False
        self.off_hours = False

    def hand(self, on: bool) -> None:
        """pause (True) or resume (False), typed or signalled."""
        if on != self.by_hand:
            self.by_hand = on
            log.warning("paused: the games wait (type resume, or send SIGUSR2)" if on else "resumed")
        self.apply()

    def clock(self, now: datetime.datetime) -> None:
        """Pause when the hours to play end, play again when they come."""
        if self.hours is None:
            return
        off = not within_hours(self.hours, now.hour * 60 + now.minute)
        if off != self.off_hours:
            self.off_hours = off
            if off:
                log.warning("outside the hours to play (%s): the games wait until they come", self.hours_text)
            else:
                log.warning("the hours to play (%s) have come: playing", self.hours_text)
        self.apply()

    def apply(self) -> None:
        wanted = (self.by_hand or self.off_hours) and not self.finishing()
        if wanted != self.paused.is_set():
            (self.paused.set if wanted else self.paused.clear)()


class Workers:
    """The worker processes, one per spec, and what they say: each status goes to ``status``, a
    fatal failure to ``fail(exit status, message)``."""

    def __init__(
        self,
        ctx,
        specs: list[WorkerSpec],
        control: Control,
        log_queue,
        status: Status,
        data_dir: Path,
        log_path: Path,
        fail: Callable[[int, str], None],
    ) -> None:
        self.ctx = ctx
        self.specs = specs
        self.control = control
        self.log_queue = log_queue
        self.status = status
        self.data_dir = data_dir
        self.log_path = log_path
        self.fail = fail
        self.messages = ctx.Queue()
        self.processes: dict[int, Any] = {}  # the context's Process objects, by worker
        self.ended: set[int] = set()
        self.restarts = RestartBudget()

    def start(self) -> None:
        self.processes = {spec.index: self._start(spec) for spec in self.specs}

    def pids(self) -> list[int]:
        """The process ids of the workers started."""
        return [p.pid for p in self.processes.values() if p.pid is not None]

    def all_ended(self) -> bool:
        return len(self.ended) >= len(self.specs)

    def look_after(self) -> None:
        """Read what the workers said and start crashed ones again."""
        self.read_messages()
        self._restart_crashed()

    def read_messages(self) -> None:
        while True:
            try:
                kind, index, what, detail = self.messages.get_nowait()
            except queue.Empty:
                return
            if kind == "status":
                self.status.update(index, detail)
            elif kind == "done":
                self.ended.add(index)
            elif kind == "fatal":
                self.ended.add(index)
                self.fail(EXIT_OF_KIND.get(what, EXIT_FAILED), detail)
            elif kind == "crashed":
                log.error("worker %d failed: %s: %s", index, what, detail)

    def _restart_crashed(self) -> None:
        """Start again each worker that ended without saying it was done, while the budget allows
        (past it the client fails); one that ended while finishing or stopping is not started."""
        for index, process in list(self.processes.items()):
            if index in self.ended or process.is_alive():
                continue
            process.join()
            self.read_messages()  # its last words may have come after the messages were read
            if index in self.ended:
                continue
            if self.control.done():
                self.ended.add(index)
                continue
            spec = self.specs[index]
            how = exit_words(process.exitcode)
            stacks = read_crash(spec.data_dir, index)
            if stacks:
                log.error("worker %d (%s) was %s; its threads then:\n%s", index, spec.device, how, stacks)
            if not self.restarts.spend(time.monotonic()):
                self.fail(EXIT_FAILED, f"worker {index} ({spec.device}) keeps failing ({how}); see {self.log_path}")
                self.ended.add(index)
                continue
            log.error("worker %d (%s) ended unexpectedly (%s); starting it again", index, spec.device, how)
            inplay.gather(self.data_dir, index)  # its games in play, for it to play on
            self.status.restarted(index)
            self.processes[index] = self._start(spec)

    def shut_down(self, deadline: StopDeadline) -> None:
        """Stop the workers; one still running when the deadline has passed is killed (its finished
        games are in the outbox already)."""
        self.control.stopping.set()
        deadline.start(time.monotonic())
        for process in self.processes.values():
            process.join(timeout=max(0.1, deadline.left(time.monotonic())))
            if process.is_alive():
                log.warning("worker %s did not stop in time; killed", process.name)
                process.kill()
                process.join(timeout=5)

    def _start(self, spec: WorkerSpec):
        process = self.ctx.Process(
            target=worker_main, args=(spec, self.control, self.messages, self.log_queue), name=f"worker-{spec.index}"
        )
        process.start()
        log.info(
            "worker %d started on %s (pid %d), %d games at once%s",
            spec.index,
            spec.device,
            process.pid,
            spec.parallel,
            " until a network is measured (--parallel auto)" if spec.auto_parallel else "",
        )
        return process
