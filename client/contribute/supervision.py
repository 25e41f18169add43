"""How the client looks after its worker processes: how often a crashed worker is started again
before the client gives up, how long stopping at once waits for the workers before it kills
them, and when they wait (paused by hand, or outside the hours to play). Times are the caller's
(``time.monotonic()``, the local time of day for the hours), so that all are plain arithmetic."""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable

from client.contribute.config import parse_hours, within_hours

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
