"""How the client looks after its worker processes: how often a crashed worker is started again
before the client gives up, and how long stopping at once waits for the workers before it kills
them. Times are the caller's (``time.monotonic()``), so that both are plain arithmetic."""

from __future__ import annotations

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
