"""The platform's processes on one machine: started with their own logs, watched, and stopped in order.

Each child runs in a session of its own, so a Ctrl-C in the terminal reaches only the platform,
which then stops the children one by one with the signal each expects (the client first: it
finishes and delivers its games; then the trainer, which checkpoints; then the background worker
and the web server). On Linux a child is also sent SIGTERM if the platform itself dies without
stopping it (killed, or its terminal closed), so no process is left behind holding the port.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def database_url(settings_dict: dict) -> str:
    """A DATABASE_URL for a Django connection's settings (PostgreSQL or SQLite)."""
    if settings_dict["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{settings_dict['NAME']}"
    user = quote(settings_dict.get("USER") or "postgres", safe="")
    password = f":{quote(settings_dict['PASSWORD'], safe='')}" if settings_dict.get("PASSWORD") else ""
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{quote(settings_dict['NAME'], safe='')}"


def load_average() -> float | None:
    """The machine's 1-minute load average (None where the system keeps none)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


class LoadMeter:
    """The machine's 1-minute load average, read every ``every`` seconds by a background thread
    while inside ``with``: what a report says the machine was doing meanwhile."""

    def __init__(self, every: float = 30.0) -> None:
        self.every = every
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="load-meter", daemon=True)

    def _run(self) -> None:
        while True:
            load = load_average()
            if load is not None:
                self.samples.append(load)
            if self._stop.wait(self.every):
                return

    def __enter__(self) -> LoadMeter:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        load = load_average()
        if load is not None:
            self.samples.append(load)

    def summary(self) -> dict | None:
        """{mean, min, max, samples} of the readings (None without any)."""
        if not self.samples:
            return None
        return {
            "mean": round(sum(self.samples) / len(self.samples), 2),
            "min": round(min(self.samples), 2),
            "max": round(max(self.samples), 2),
            "samples": len(self.samples),
        }


def _terminate_with_parent() -> None:
    """In the child, before it runs its program: SIGTERM when the parent dies (Linux only)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _before_exec(nice: int):
    """What a child runs before its program: :func:`_terminate_with_parent` on Linux, and ``nice``
    added to its niceness where the system has one (None when there is nothing to do)."""
    linux = sys.platform == "linux"
    nice = nice if hasattr(os, "nice") else 0
    if not nice and not linux:
        return None

    def prepare() -> None:
        if linux:
            _terminate_with_parent()
        if nice:
            with contextlib.suppress(OSError):
                os.nice(nice)

    return prepare


@dataclass
class Child:
    name: str
    argv: list[str]
    log_path: Path
    process: subprocess.Popen = field(repr=False)
    stop_signal: int = signal.SIGTERM
    asked: bool = False  # sent its stop signal (a second one hurries it)

    def running(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


class Supervisor:
    """Children started with :meth:`start`, in order; :meth:`stop` stops them in reverse order."""

    def __init__(self, logs: Path, env: dict[str, str]) -> None:
        self.logs = logs
        # A child killed by a fatal signal (a crash in compiled code) writes every thread's stack to
        # its log, where its last lines are shown when it ends by itself.
        self.env = {"PYTHONFAULTHANDLER": "1", **env}
        self.children: list[Child] = []
        logs.mkdir(parents=True, exist_ok=True)

    def start(
        self,
        name: str,
        argv: list[str],
        stop_signal: int = signal.SIGTERM,
        env: dict[str, str] | None = None,
        nice: int = 0,
    ) -> Child:
        """Start ``argv`` as the child ``name`` (its output in ``name.log``), with ``env`` added to the
        supervisor's environment and ``nice`` added to its niceness (a lower priority for positive
        values: it gets the cores the others leave)."""
        log_path = self.logs / f"{name}.log"
        with open(log_path, "ab") as out:
            out.write(f"\n--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting: {' '.join(argv)}\n".encode())
            out.flush()
            process = subprocess.Popen(
                argv,
                cwd=ROOT,
                env={**self.env, **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_before_exec(nice),
            )
        child = Child(name, argv, log_path, process, stop_signal)
        self.children.append(child)
        return child

    def exited(self) -> Child | None:
        """A child that ended by itself, if any."""
        return next((c for c in self.children if not c.running()), None)

    def signal(self, child: Child, signum: int) -> None:
        if child.running():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.process.pid, signum)

    def ask(self, child: Child) -> None:
        """Ask ``child`` to stop with its signal, once: a second signal would hurry it."""
        if not child.asked:
            child.asked = True
            self.signal(child, child.stop_signal)

    def stop(self, child: Child, timeout: float, hurry=lambda: False) -> None:
        """Ask ``child`` to stop with its signal (unless it was asked already) and wait up to
        ``timeout`` seconds (less once ``hurry()`` says so: then it is asked again, and killed after a
        few seconds)."""
        if not child.running():
            return
        self.ask(child)
        deadline = time.monotonic() + timeout
        hurried = False
        while child.running() and time.monotonic() < deadline:
            if not hurried and hurry():
                hurried = True
                self.signal(child, child.stop_signal)
                deadline = min(deadline, time.monotonic() + 10)
            time.sleep(0.2)
        if child.running():
            log.warning("%s did not stop in time; killing it", child.name)
            self.signal(child, signal.SIGKILL)
            child.process.wait()

    def stop_all(self, timeouts: dict[str, float], hurry=lambda: False, at_once: tuple[str, ...] = ()) -> None:
        """Stop the children in reverse order, each once the one started after it has ended; those
        named in ``at_once`` are all asked at the start, so that they wind down side by side."""
        for child in self.children:
            if child.name in at_once:
                self.ask(child)
        for child in reversed(self.children):
            self.stop(child, timeouts.get(child.name, 30.0), hurry)
