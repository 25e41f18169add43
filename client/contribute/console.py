"""The volunteer's hold on the running client: its log (a file in the data folder, warnings on the
console), the signals it acts on and the commands typed on stdin. Ctrl-C (SIGINT, SIGTERM, SIGHUP,
Ctrl-Break, or ``stop`` typed) once finishes the games in play, twice stops at once; ``pause`` and
``resume`` (or SIGUSR1 and SIGUSR2) hold and release the workers. Signals are acted on as they
arrive, from a thread of their own (:mod:`client.contribute.signals`)."""

from __future__ import annotations

import logging
import logging.handlers
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from client.build import describe
from client.contribute.signals import SignalActions
from client.contribute.supervision import Pauses
from client.contribute.worker import Control

log = logging.getLogger("client.contribute")

LOG_NAME = "contribute.log"


def start_logging(data_dir: Path, log_queue, config_path: Path) -> logging.handlers.QueueListener:
    """Every process's log records, through ``log_queue``, to ``data_dir/contribute.log`` (kept to
    four files of 10 MiB) and, from warnings up, to the console."""
    data_dir.mkdir(parents=True, exist_ok=True)
    file = logging.handlers.RotatingFileHandler(data_dir / LOG_NAME, maxBytes=10 << 20, backupCount=3)
    file.setFormatter(logging.Formatter("%(asctime)s %(processName)s %(levelname)s %(name)s: %(message)s"))
    file.setLevel(logging.INFO)
    console = _ConsoleHandler()
    console.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
    console.setLevel(logging.WARNING)
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(logging.handlers.QueueHandler(log_queue))
    root.setLevel(logging.INFO)
    for noisy in ("urllib3", "requests"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    listener = logging.handlers.QueueListener(log_queue, file, console, respect_handler_level=True)
    listener.start()
    log.info("sente client %s starting; settings %s, data %s", describe(), config_path, data_dir)
    return listener


class Console:
    """Stop, pause and resume, by signal or typed: they act on the workers' ``control`` and
    ``pauses``, and set ``wake`` so that the supervisor looks at once."""

    def __init__(self, control: Control, pauses: Pauses, wake: threading.Event) -> None:
        self.control = control
        self.pauses = pauses
        self.wake = wake
        self._interrupts = 0
        self._lock = threading.Lock()  # signals, and stop typed on stdin, come from threads
        self._signal_actions: SignalActions | None = None

    def start(self) -> None:
        """Take the signals (only in the main thread, where signals can be taken) and stdin."""
        self._signal_actions = take_signals(self.interrupt, self.pause)
        if sys.stdin is not None and not sys.stdin.closed:
            threading.Thread(target=self._read_commands, name="commands", daemon=True).start()

    def close(self) -> None:
        """Give the signals back to the caller's handlers (a test, a program)."""
        if self._signal_actions is not None:
            self._signal_actions.close()
            self._signal_actions = None

    def interrupt(self) -> None:
        """Ctrl-C, SIGTERM, SIGHUP or stop typed: the first time, no game starts any more (the games
        in play finish and are sent, then the client ends); again, the client stops at once."""
        with self._lock:
            self._interrupts += 1
            first = self._interrupts == 1
        if first:
            self.control.finish()  # once it returns, no worker starts a game
            self.pauses.apply()  # the games in play finish, paused or not
            log.warning(
                "finishing the games in play, then sending them (press Ctrl-C again to stop at once; "
                "finished games are kept either way)"
            )
        else:
            self.control.stopping.set()
            log.warning(
                "stopping now; the finished games stay in the outbox for the next start, which plays on the "
                "games in play from their last save"
            )
        self.wake.set()

    def pause(self, on: bool) -> None:
        self.pauses.hand(on)
        self.wake.set()

    def _read_commands(self) -> None:
        """pause / resume / stop typed on stdin (a line each)."""
        for line in sys.stdin:
            word = line.strip().lower()
            if word in ("pause", "p"):
                self.pause(True)
            elif word in ("resume", "r", "continue"):
                self.pause(False)
            elif word in ("stop", "quit", "q"):
                self.interrupt()
            elif word:
                log.warning("unknown command %r: pause, resume or stop", word)


def take_signals(interrupt: Callable[[], None], pause: Callable[[bool], None]) -> SignalActions | None:
    """Act on the stopping signals with ``interrupt`` and on SIGUSR1 and SIGUSR2 with ``pause``, as
    they arrive; a game that ends just after Ctrl-C is not replaced. A signal the caller ignores
    (SIGHUP under nohup) stays ignored. None when signals cannot be taken here (not the main thread)."""
    wanted: dict[int, Callable[[], None]] = {signal.SIGINT: interrupt, signal.SIGTERM: interrupt}
    # Where they exist: the terminal closed (unless started under nohup), Ctrl-Break on Windows,
    # and pause and resume (typing them works everywhere).
    optional: tuple[tuple[str, Callable[[], None]], ...] = (
        ("SIGHUP", interrupt),
        ("SIGBREAK", interrupt),
        ("SIGUSR1", lambda: pause(True)),
        ("SIGUSR2", lambda: pause(False)),
    )
    for name, action in optional:
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) is not signal.SIG_IGN:
            wanted[sig] = action
    actions = SignalActions(wanted)
    return actions if actions.start() else None


class _ConsoleHandler(logging.StreamHandler):
    """Warnings on whatever sys.stderr is at the time (the live panel redirects it above itself)."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass
