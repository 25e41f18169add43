"""A real server for tests and benchmarks: gunicorn with the project's configuration, serving the
database and storage the caller names, on a free port; optionally with an access log that names the
worker process that answered each request (:meth:`LiveServer.requests`)."""

from __future__ import annotations

import os
import re
import socket
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_sqlite(db: Path, sql: str) -> list[tuple]:
    """The rows ``sql`` selects from a running platform's embedded database, opened read-only so that
    looking takes no lock the platform waits on."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as connection:
        return connection.execute(sql).fetchall()


# The access log's lines: the worker's pid, the time (whole seconds), the request line, the status and
# the Retry-After of the answer.
ACCESS_FORMAT = '%(p)s %(t)s "%(r)s" %(s)s %({retry-after}o)s'
_ACCESS_LINE = re.compile(r'^<(\d+)> \[([^\]]+)\] "(\S+) (\S+) [^"]*" (\d{3}) (\S+)$')


@dataclass(frozen=True)
class Request:
    """One line of the access log."""

    pid: int
    at: float  # the time it was logged, in whole seconds (epoch)
    method: str
    path: str  # with its query string
    status: int
    retry_after: int | None


class LiveServer:
    """gunicorn -c deploy/gunicorn.conf.py on 127.0.0.1:<free port>, stopped by stop() (or `with`)."""

    def __init__(
        self,
        database: str,
        data_dir: Path,
        workers: int = 2,
        env: dict[str, str] | None = None,
        log: Path | None = None,
        access_log: bool = False,
    ) -> None:
        self.port = free_port()
        self.data_dir = data_dir
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log or data_dir / "gunicorn.log"
        self.access_log_path = data_dir / "access.log" if access_log else None
        environment = {k: v for k, v in os.environ.items() if not k.startswith(("SENTE_", "DJANGO_"))}
        environment.update(
            {
                "DJANGO_SETTINGS_MODULE": "server.settings",
                "DATABASE_URL": database,
                "SENTE_DATA_DIR": str(data_dir),
                "STORAGE_URL": (data_dir / "files").as_uri(),
                "SENTE_BIND": f"127.0.0.1:{self.port}",
                "SENTE_WORKERS": str(workers),
                "SENTE_ACCESS_LOG": str(self.access_log_path or ""),
                "SENTE_RUN_STATE_SECONDS": "0",  # tests change the run and look at once
                "PYTHONPATH": str(ROOT),
            }
        )
        if access_log:
            environment["GUNICORN_CMD_ARGS"] = f"--access-logformat '{ACCESS_FORMAT}'"
        environment.update(env or {})
        self._environment = environment
        self._log = open(self.log_path, "wb")  # noqa: SIM115 (open for the server's whole life)
        self.start()

    def start(self) -> None:
        """Start gunicorn (again, after stop(): on the same port, with the same data)."""
        if self._log.closed:
            self._log = open(self.log_path, "ab")  # noqa: SIM115 (open for the server's whole life)
        self._log.flush()
        self._log_start = self.log_path.stat().st_size
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "deploy/gunicorn.conf.py")],
            cwd=ROOT,
            env=self._environment,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self._wait()

    def _wait(self, seconds: float = 60.0) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {self.process.returncode}:\n{self.log()}")
            try:
                if requests.get(self.url + "/healthz", timeout=2).status_code == 200:
                    return
            except requests.RequestException:  # not listening yet, or still loading
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"gunicorn did not answer within {seconds} s:\n{self.log()}")

    def requests(self) -> list[Request]:
        """The requests answered so far, as the access log has them (access_log=True)."""
        if self.access_log_path is None or not self.access_log_path.exists():
            return []
        found = []
        for line in self.access_log_path.read_text(errors="replace").splitlines():
            m = _ACCESS_LINE.match(line)
            if m:
                pid, at, method, path, status, retry_after = m.groups()
                found.append(
                    Request(
                        int(pid),
                        datetime.strptime(at, "%d/%b/%Y:%H:%M:%S %z").timestamp(),
                        method,
                        path,
                        int(status),
                        int(retry_after) if retry_after.isdigit() else None,
                    )
                )
        return found

    def worker_pids(self) -> set[int]:
        """The worker processes of the last start."""
        text = self.log_path.read_bytes()[self._log_start :].decode(errors="replace")
        return {int(pid) for pid in re.findall(r"Booting worker with pid: (\d+)", text)}

    def log(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")[-5000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()

    def __enter__(self) -> LiveServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
