"""What anyone can ask for without signing in cannot tie the server up, under the real gunicorn with the
production configuration's workers and threads, Redis as the shared cache and PostgreSQL:

- twelve anonymous readers (from twelve addresses) ask for a large export and read a byte a second or
  nothing; a signed-in client's task requests are answered within 5 s meanwhile, at most the site's
  cap of exports runs, and those are cut off at their send deadline, which gives their slots back;
- a network's KataGo file is 503 with Retry-After until the background worker (``manage.py db_worker``)
  made it, then 200; an architecture KataGo's format cannot hold is refused from what the worker
  remembered, by the one task it ran."""

from __future__ import annotations

import gzip
import io
import os
import runpy
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests

from tests.e2e.needs import missing
from tests.server import helpers
from tests.server.live import ROOT, LiveServer, free_port

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

READERS = 12
GAMES = 100
NPZ_BYTES = 512 * 1024  # each game's rows (random bytes: the export does not look inside): a 50 MB export
DEADLINE = 20  # SENTE_EXPORT_SECONDS of the test's server
EXPORT = "/api/v1/games/export/?kind=npz"


@pytest.fixture
def redis_url(tmp_path):
    """A Redis of the test's own on a free port (the production cache: shared by every process)."""
    program = shutil.which("redis-server")
    if program is None:
        missing("redis-server", "apt-get install redis-server (.ci/run installs it)")
    import redis

    port = free_port()
    process = subprocess.Popen(
        [
            program,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                redis.Redis(host="127.0.0.1", port=port, socket_timeout=1).ping()
                break
            except redis.RedisError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("redis-server did not answer within 20 s") from None
                time.sleep(0.1)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
def storage(settings, tmp_path) -> Path:
    """The data folder the test's server uses; this process stores files in its storage folder too."""
    data = tmp_path / "data"
    (data / "files").mkdir(parents=True)
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "server.files.AtomicFileSystemStorage", "OPTIONS": {"location": str(data / "files")}},
    }
    return data


def _production_workers() -> tuple[int, int]:
    """The workers and threads deploy/gunicorn.conf.py gives this machine (SENTE_WORKERS and
    SENTE_THREADS unset)."""
    saved = {k: os.environ.pop(k) for k in ("SENTE_WORKERS", "SENTE_THREADS") if k in os.environ}
    try:
        conf = runpy.run_path(str(ROOT / "deploy" / "gunicorn.conf.py"))
    finally:
        os.environ.update(saved)
    return conf["workers"], conf["threads"]


def _games(run, user) -> None:
    """GAMES self-play games of NPZ_BYTES of rows each (one stored file, GAMES rows)."""
    from server.games.models import TrainingGame

    metadata = {"board_x_size": 9, "board_y_size": 9, "komi": 7.0, "result": "B+R", "moves": 50, "rows": 50}
    game = helpers.PlayedGame(sgf=b"(;FF[4]GM[1]SZ[9])", npz=os.urandom(NPZ_BYTES), metadata=metadata)
    (template,) = helpers.store_training_games(run, user, [game])
    fields = {
        f.attname: getattr(template, f.attname)
        for f in TrainingGame._meta.concrete_fields
        if f.attname not in ("id", "client_game_id")
    }
    TrainingGame.objects.bulk_create([TrainingGame(client_game_id=f"copy-{k}", **fields) for k in range(GAMES - 1)])


@dataclass
class Reader:
    """An anonymous client asking for the export from ``address``, its receive buffer as small as the
    kernel allows; it reads a byte a second (``slow``) or nothing until told to read the rest."""

    port: int
    address: str
    slow: bool
    received: bytearray = field(default_factory=bytearray)
    ended_at: float | None = None  # when the server closed the connection
    started_at: float = 0.0

    def start(self) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.connect(("127.0.0.1", self.port))
        self.started_at = time.monotonic()
        self.sock.sendall(
            f"GET {EXPORT} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nX-Forwarded-For: {self.address}\r\n"
            "Connection: close\r\n\r\n".encode()
        )
        self.stop = threading.Event()
        if self.slow:
            self.thread = threading.Thread(target=self._trickle, daemon=True)
            self.thread.start()

    def _trickle(self) -> None:
        self.sock.settimeout(5)
        while not self.stop.is_set():
            try:
                byte = self.sock.recv(1)
            except TimeoutError:
                continue
            except OSError:
                byte = b""
            if not byte:
                self.ended_at = time.monotonic()
                return
            self.received += byte
            self.stop.wait(1.0)

    def read_rest(self, seconds: float) -> None:
        """Read what is left, until the server closes the connection (or ``seconds`` pass)."""
        if self.slow:
            self.stop.set()
            self.thread.join(10)
            if self.ended_at is not None:
                return
        self.sock.settimeout(seconds)
        try:
            while chunk := self.sock.recv(1 << 20):
                self.received += chunk
            self.ended_at = time.monotonic()
        except TimeoutError:
            pass
        except OSError:
            self.ended_at = time.monotonic()

    @property
    def status(self) -> int:
        return int(bytes(self.received[9:12]))

    def close(self) -> None:
        if hasattr(self, "stop"):
            self.stop.set()
        self.sock.close()


def _task_request(server: LiveServer, token: str) -> tuple[int, float]:
    start = time.monotonic()
    response = requests.post(
        server.url + "/api/v1/tasks/",
        headers={"Authorization": f"Token {token}"},
        json={"client_version": "0.1.0", "client_instance_id": "e2e", "kinds": ["selfplay"], "games": 2},
        timeout=30,
    )
    return response.status_code, time.monotonic() - start


def _exports_logged(server: LiveServer) -> list:
    return [r for r in server.requests() if r.path == EXPORT]


def test_slow_export_readers_do_not_delay_a_signed_in_client(storage, redis_url, capsys):
    from django.db import connection

    from server.accounts.models import ClientToken, User
    from server.platform.processes import database_url
    from server.runs.models import create_run

    run = create_run(helpers.RUN, helpers.SETTINGS.to_dict())
    user = User.objects.create_user("alice", "alice@example.org", "correct horse battery")
    _, token = ClientToken.issue(user, "e2e")
    _games(run, user)
    workers, threads = _production_workers()
    env = {
        "CACHE_URL": redis_url,
        "SENTE_NUM_PROXIES": "1",  # as behind nginx: X-Forwarded-For names the client
        "SENTE_EXPORT_SECONDS": str(DEADLINE),
    }
    server = LiveServer(database_url(connection.settings_dict), storage, workers=workers, env=env, access_log=True)
    readers = [Reader(server.port, f"10.0.0.{k + 1}", slow=k % 2 == 0) for k in range(READERS)]
    try:
        asked = time.time()
        for reader in readers:
            reader.start()
        # The refused readers are answered (and logged) at once; the admitted ones stream.
        at_once = 4  # SENTE_EXPORTS_AT_ONCE's default
        deadline = time.monotonic() + 60
        while len(_exports_logged(server)) < READERS - at_once and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)
        refused = _exports_logged(server)
        assert READERS - at_once <= len(refused) < READERS, [(r.status, r.retry_after) for r in refused]
        assert all(r.status in (429, 503) and r.retry_after for r in refused), refused
        admitted = READERS - len(refused)

        answers = [_task_request(server, token) for _ in range(2 * workers)]
        assert all(status == 201 for status, _ in answers), answers
        slowest = max(seconds for _, seconds in answers)
        assert slowest < 5.0, answers
        assert time.monotonic() - min(r.started_at for r in readers) < DEADLINE  # asked while they streamed

        # The admitted exports are cut off at their deadline (gunicorn logs a request when it ends),
        # and their connections closed with the answers incomplete (no chunked end).
        deadline = time.monotonic() + DEADLINE + 60
        while len(_exports_logged(server)) < READERS and time.monotonic() < deadline:
            time.sleep(0.5)
        ended = _exports_logged(server)
        assert len(ended) == READERS, server.log()
        assert max(r.at for r in ended) <= asked + DEADLINE + 15, (asked, [r.at for r in ended])
        for reader in readers:
            reader.read_rest(30)
        streamed = [r for r in readers if b" 200 " in r.received[:16]]
        assert len(streamed) == admitted, [bytes(r.received[:40]) for r in readers]
        for reader in streamed:
            assert reader.ended_at is not None, reader.address  # the server closed the connection
            assert not reader.received.endswith(b"\r\n0\r\n\r\n") and len(reader.received) < GAMES * NPZ_BYTES
        for reader in readers:
            if reader not in streamed:
                assert reader.status in (429, 503) and b"Retry-After: 30" in reader.received, bytes(reader.received)

        # Their slots came back: an address that streamed, and a new one, export the whole archive.
        for address in (streamed[0].address, "10.0.1.1"):
            response = requests.get(server.url + EXPORT, headers={"X-Forwarded-For": address}, timeout=120)
            assert response.status_code == 200, response.text
            with tarfile.open(fileobj=io.BytesIO(response.content)) as archive:
                assert len(archive.getnames()) == GAMES
        with capsys.disabled():
            print(
                f"\n{workers} workers x {threads} threads; {READERS} slow readers: {admitted} streamed until cut off "
                f"at {DEADLINE} s, {READERS - admitted} refused; task requests answered in at most "
                f"{slowest:.2f} s ({len(answers)} requests)"
            )
    finally:
        for reader in readers:
            reader.close()
        server.stop()


def test_the_katago_file_waits_for_the_worker(storage):
    import torch
    from django.contrib.auth.models import Group
    from django.db import connection
    from django_tasks_db.models import DBTaskResult

    from common.nn.model import Model, named_config
    from common.nn.modelfile import encode_model
    from server.accounts.models import ClientToken, User
    from server.networks.models import Network
    from server.platform.processes import database_url
    from server.runs.models import create_run

    create_run(helpers.RUN, helpers.SETTINGS.to_dict())
    trainer = User.objects.create_user("gpu-box", "trainer@example.org", "another long password")
    trainer.groups.add(Group.objects.get(name="trainers"))
    _, key = ClientToken.issue(trainer, "gpu")
    headers = {"Authorization": f"Token {key}"}
    torch.manual_seed(0)
    mobile = Model(named_config("tinymobile"))
    files = {
        "test-net1": helpers.network_file("test-net1"),
        "mobile-1": encode_model(mobile.config, mobile.state_dict(), "mobile-1"),
    }
    with LiveServer(database_url(connection.settings_dict), storage, workers=2) as server:
        for name, data in files.items():
            r = requests.post(
                server.url + "/api/v1/networks/",
                headers=headers,
                data={"name": name, "run": helpers.RUN},
                files={"file": (f"{name}.safetensors", data)},
                timeout=60,
            )
            assert r.status_code == 201, r.text
        for name in files:
            for _ in range(2):  # asked twice before the worker came: queued once
                r = requests.get(f"{server.url}/api/v1/networks/{name}/katago", timeout=30)
                assert r.status_code == 503 and r.headers["Retry-After"] == "30", r.text
                assert r.json()["error"]["code"] == "not_ready"

        worker = subprocess.run(
            [sys.executable, "manage.py", "db_worker", "--batch", "--no-startup-delay", "--queue-name", "*"],
            cwd=ROOT,
            env=server._environment,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert worker.returncode == 0, worker.stderr[-3000:]
        builds = DBTaskResult.objects.filter(task_path__endswith="build_katago_file")
        networks = Network.objects.filter(name__in=list(files))
        assert sorted(b.args_kwargs["args"][0] for b in builds) == sorted(n.pk for n in networks)  # once each
        assert all(b.status == "SUCCESSFUL" for b in builds), [(b.status, b.traceback) for b in builds]

        r = requests.get(f"{server.url}/api/v1/networks/test-net1/katago", timeout=30)
        assert r.status_code == 200 and gzip.decompress(r.content).startswith(b"test-net1\n8\n")
        for _ in range(2):
            r = requests.get(f"{server.url}/api/v1/networks/mobile-1/katago", timeout=30)
            assert r.status_code == 409 and "no MobileNet blocks" in r.json()["error"]["message"], r.text
        assert DBTaskResult.objects.filter(task_path__endswith="build_katago_file").count() == 2  # nothing queued again
