"""How much work a worker asks the server for, sized in time by the rate the worker plays at.

* The game rate: the self-play games the worker finished per second over the last ten minutes
  (:class:`GameRate`; from its first game on until ten minutes have passed; known once as many
  games as it plays at once have finished, or one has and ten seconds have passed).
* A task request asks for ten minutes of play at that rate (``TASK_SECONDS``), at least the games
  the worker plays at once and at most the server's limit per task (256 by default); before the
  rate is known, for four times the games played at once.
* The reserve: the worker keeps self-play games in hand for two hours of play (``RESERVE_SECONDS``),
  so that it plays on through an outage of the server of an hour and more. It asks for a task at
  once when the games in hand fall below the games it plays at once, and otherwise, while the
  reserve is short, at most one task every ``FILL_SECONDS``: the reserve fills up in minutes (about
  an hour at ten games a second) without a burst of requests. Until the rate is known the first
  task is the whole reserve. The reserve is never more than half the tasks' lifetime (the server's
  ``SENTE_TASK_SECONDS``, six hours by default), so its games are played long before their tasks
  expire.

So a full reserve means one task request per ten minutes of play; at the fastest (tasks capped at
256 games) one per 256 games finished: a worker finishing 10 games a second asks 2.3 times a minute.
Even while it fills its reserve a worker asks at most 6 times a minute: several workers on one
account stay under the server's default limit of 60 task requests a minute per account.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

RESERVE_SECONDS = 2 * 3600.0  # play kept in hand against an outage of the server
TASK_SECONDS = 600.0  # play asked for per task
FILL_SECONDS = 10.0  # the shortest time between two requests that only fill the reserve
RATE_WINDOW = 600.0  # seconds over which the game rate is measured
RATE_MIN_SPAN = 10.0  # the shortest measurement that gives a rate
MOST_GAMES = 256  # the server's default limit of games per task, until it says its own
LIFETIME_SHARE = 0.5  # the largest share of a task's lifetime the reserve may span


class GameRate:
    """Games finished per second over the last `window` seconds (since the first game was handed
    out, while that is more recent); no rate before `min_games` games have finished or
    ``RATE_MIN_SPAN`` seconds have passed."""

    def __init__(
        self, window: float = RATE_WINDOW, min_games: int = 1, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.window = window
        self.min_games = min_games
        self.clock = clock
        self._began: float | None = None
        self._finished: deque[float] = deque()

    def began(self) -> None:
        """A game was handed out (the first one starts the measurement)."""
        if self._began is None:
            self._began = self.clock()

    def finished(self) -> None:
        self._finished.append(self.clock())

    def per_second(self) -> float | None:
        """None until a game has finished."""
        now = self.clock()
        while self._finished and self._finished[0] < now - self.window:
            self._finished.popleft()
        if not self._finished or self._began is None:
            return None
        span = now - max(self._began, now - self.window)
        if span <= 0 or (span < RATE_MIN_SPAN and len(self._finished) < self.min_games):
            return None
        return len(self._finished) / span


@dataclass(frozen=True)
class Sizing:
    """The sizes of a worker's requests and reserve; see the module docstring."""

    parallel: int  # games played at once
    reserve_seconds: float = RESERVE_SECONDS
    task_seconds: float = TASK_SECONDS
    fill_seconds: float = FILL_SECONDS

    def task_games(self, rate: float | None, most: int = MOST_GAMES) -> int:
        """The games to ask for in one task."""
        wanted = 4 * self.parallel if rate is None else max(self.parallel, math.ceil(rate * self.task_seconds))
        return max(1, min(most, wanted))

    def reserve_games(self, rate: float | None, lifetime: float | None = None) -> int:
        """The self-play games to keep in hand (not yet started); until the rate is known, no more
        than the games in hand must not fall below."""
        if rate is None:
            return self.parallel
        seconds = self.reserve_seconds if lifetime is None else min(self.reserve_seconds, LIFETIME_SHARE * lifetime)
        return max(4 * self.parallel, math.ceil(rate * seconds))

    def urgent(self, in_hand: int) -> bool:
        """Do the games in hand run out: is a task needed at once?"""
        return in_hand < self.parallel
