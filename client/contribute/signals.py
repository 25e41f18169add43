"""Signals acted on the moment they arrive, in a thread of their own.

A Python signal handler runs in the main thread between two of its bytecodes, possibly while that
thread holds a lock the action needs (a multiprocessing Event's, a queue's): a handler that acts
could hang the program, and one that only notes the signal for the main thread's loop acts as late
as that loop looks (the workers went on starting games meanwhile). Here the handlers do nothing;
the interpreter also writes each signal's number to a socket (:func:`signal.set_wakeup_fd`) as the
signal arrives, and a thread blocked reading that socket runs the signal's action at once, whatever
the main thread is doing.
"""

from __future__ import annotations

import logging
import signal
import socket
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class SignalActions:
    """Run ``actions[signal]`` in a thread as each signal arrives, from :meth:`start` to :meth:`close`."""

    def __init__(self, actions: dict[int, Callable[[], None]]) -> None:
        self.actions = {int(sig): action for sig, action in actions.items()}
        self._before: list[tuple[int, Any]] = []
        self._wakeup_before = -1
        self._sockets: tuple[socket.socket, socket.socket] | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> bool:
        """Take the signals (False, and nothing done, outside the main thread, where signals cannot
        be taken)."""
        if threading.current_thread() is not threading.main_thread():
            return False
        receiver, sender = socket.socketpair()
        sender.setblocking(False)
        self._sockets = (receiver, sender)
        self._thread = threading.Thread(target=self._run, args=(receiver,), name="signals", daemon=True)
        self._thread.start()
        self._wakeup_before = signal.set_wakeup_fd(sender.fileno(), warn_on_full_buffer=False)
        for sig in self.actions:
            self._before.append((sig, signal.getsignal(sig)))
            signal.signal(sig, _noted)
        return True

    def close(self) -> None:
        """The handlers and the wakeup descriptor of before again; the thread ends."""
        if self._sockets is None:
            return
        for sig, handler in self._before:
            signal.signal(sig, handler)
        self._before.clear()
        signal.set_wakeup_fd(self._wakeup_before)
        receiver, sender = self._sockets
        sender.close()  # the thread reads the end of the stream and returns
        if self._thread is not None:
            self._thread.join(timeout=5)
        receiver.close()
        self._sockets = None

    def _run(self, receiver: socket.socket) -> None:
        while True:
            try:
                numbers = receiver.recv(64)
            except OSError:
                return
            if not numbers:
                return
            for number in numbers:
                action = self.actions.get(number)
                if action is None:
                    continue
                try:
                    action()
                except Exception:  # one signal's trouble does not end the handling of the next
                    log.exception("acting on signal %d failed", number)


def _noted(signum: int, frame: object) -> None:
    """The Python-level handler: nothing, the wakeup descriptor has the signal already."""
