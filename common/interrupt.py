"""Ctrl-C and its relatives for long commands: the first signal asks the work to stop at a clean
point, a second stops it at once. Handlers are installed only in the main thread (the only one
Python delivers signals to) and put back when the block ends, so a command called in-process
leaves its caller's handlers as they were."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def on_signals(handler: Callable[[int], None], signals: tuple[int, ...] = STOP_SIGNALS) -> Iterator[None]:
    """While the block runs, each of ``signals`` calls ``handler(n)``, n the signals so far (1, 2, ...)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    count = 0

    def handle(signum, frame) -> None:
        nonlocal count
        count += 1
        handler(count)

    previous = {s: signal.signal(s, handle) for s in signals}
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


@contextmanager
def stop_on_signals(
    stop: threading.Event, notice: Callable[[], None] | None = None, signals: tuple[int, ...] = STOP_SIGNALS
) -> Iterator[None]:
    """The first of ``signals`` sets ``stop`` (and calls ``notice()``, which says what happens now);
    a second raises KeyboardInterrupt where the main thread is."""

    def handler(count: int) -> None:
        if count > 1:
            raise KeyboardInterrupt
        stop.set()
        if notice is not None:
            notice()

    with on_signals(handler, signals):
        yield
