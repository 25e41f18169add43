"""The platform's processes on one machine: started with their own logs, watched, and stopped in order.

Each child runs in a session of its own, so a Ctrl-C in the terminal reaches only the platform,
which then stops the children one by one with the signal each expects (the client first: it
finishes and delivers its games; then the trainer, which checkpoints; then the background worker
and the web server).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]


def database_url(settings_dict: dict) -> str:
    """A DATABASE_URL for a Django connection's settings (PostgreSQL or SQLite)."""
    if settings_dict["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{settings_dict['NAME']}"
    user = settings_dict.get("USER") or "postgres"
    password = f":{settings_dict['PASSWORD']}" if settings_dict.get("PASSWORD") else ""
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{settings_dict['NAME']}"


@dataclass
class Child:
    name: str
    argv: list[str]
    log_path: Path
    stop_signal: int = signal.SIGTERM
    process: subprocess.Popen | None = field(default=None, repr=False)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


class Supervisor:
    """Children started with :meth:`start`, in order; :meth:`stop` stops them in reverse order."""

    def __init__(self, logs: Path, env: dict[str, str]) -> None:
        self.logs = logs
        self.env = env
        self.children: list[Child] = []
        logs.mkdir(parents=True, exist_ok=True)

    def start(self, name: str, argv: list[str], stop_signal: int = signal.SIGTERM,
              env: dict[str, str] | None = None) -> Child:
        child = Child(name, argv, self.logs / f"{name}.log", stop_signal)
        with open(child.log_path, "ab") as out:
            out.write(f"\n--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting: {' '.join(argv)}\n".encode())
            out.flush()
            child.process = subprocess.Popen(argv, cwd=ROOT, env={**self.env, **(env or {})}, stdin=subprocess.DEVNULL,
                                             stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.children.append(child)
        return child

    def exited(self) -> Child | None:
        """A child that ended by itself, if any."""
        return next((c for c in self.children if not c.running()), None)

    def signal(self, child: Child, signum: int) -> None:
        if child.running():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.process.pid, signum)

    def stop(self, child: Child, timeout: float, hurry=lambda: False) -> None:
        """Ask ``child`` to stop with its signal and wait up to ``timeout`` seconds (less once
        ``hurry()`` says so: then it is asked again, and killed after a few seconds)."""
        if not child.running():
            return
        self.signal(child, child.stop_signal)
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

    def stop_all(self, timeouts: dict[str, float], hurry=lambda: False) -> None:
        for child in reversed(self.children):
            self.stop(child, timeouts.get(child.name, 30.0), hurry)
