"""``manage.py platform``: the whole platform on this machine (what ``make run`` starts)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import time
from pathlib import Path

import requests
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from common.interrupt import on_signals
from common.settings import RunSettings, SettingsError
from server.platform.demo import OWNER, VOLUNTEER, ensure_demo
from server.platform.processes import Supervisor, database_url
from server.platform.status import run_status

STOP_TIMEOUTS = {"client": 300.0, "trainer": 120.0, "worker": 30.0, "web": 30.0}
# The machine's own client plays the small board fast (a dozen games a second with the random network):
# the throttles meant for the public are set far above that.
# Self-play takes the cores the others leave: the trainer, the web server and the worker keep their
# priority, so that a busy client never holds back training or an upload.
CLIENT_NICE = 10
LOCAL_THROTTLES = {f"SENTE_THROTTLE_{scope}": "100000/min" for scope in ("USER", "IP", "TASKS", "UPLOADS")}


class Command(BaseCommand):
    help = (
        "Start the whole platform on this machine: the web server (gunicorn), the background worker, the "
        "trainer and one contributing client, on the demo run (a small board and a small network). Ctrl-C "
        "stops everything cleanly; started again, it continues the run."
    )

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8000, help="the web server's port (default 8000)")
        parser.add_argument(
            "--board",
            type=int,
            default=7,
            choices=range(5, 10),
            metavar="5..9",
            help="board size of a new demo run (default 7)",
        )
        parser.add_argument(
            "--architecture", help="network of a new demo run (default b3c32 on 9x9, tiny on the smaller boards)"
        )
        parser.add_argument(
            "--settings-file", type=Path, help="a JSON settings document for a new demo run (default: the demo's own)"
        )
        parser.add_argument(
            "--parallel", type=int, default=16, help="games each self-play worker plays at once (default 16)"
        )
        parser.add_argument("--device", help="the client's and the trainer's device (default: the GPU if any)")
        parser.add_argument(
            "--selfplay-workers",
            type=int,
            help="the client's worker processes when it plays on the CPU (default: one per core); on GPUs it "
            "runs one per GPU",
        )
        parser.add_argument("--status-seconds", type=float, default=15.0, help="how often to print the status")
        parser.add_argument(
            "--minutes", type=float, help="stop by itself after this many minutes (default: run until Ctrl-C)"
        )

    def handle(self, *args, **options):
        data = Path(settings.DATA_DIR)
        port = options["port"]
        if not 1 <= port <= 65535:
            raise CommandError(f"--port {port}: not a port number")
        if options["selfplay_workers"] is not None and options["selfplay_workers"] < 1:
            raise CommandError(f"--selfplay-workers {options['selfplay_workers']}: must be at least 1")
        if not _port_free(port):
            raise CommandError(f"port {port} is in use (another platform or server?): choose another with --port")
        self.stdout.write(f"data folder {data} (database, files, checkpoints, logs)")
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        document = settings_document(options["settings_file"])
        run, credentials = ensure_demo(data / "platform.json", options["board"], options["architecture"], document)
        current = run.current_settings() if document is not None else None
        if current is not None and current.document != document:
            self.stderr.write(f"run {run.name} exists already: it keeps its settings (not {options['settings_file']})")

        url = f"http://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "SENTE_DATA_DIR")}
        env.update(
            DJANGO_SETTINGS_MODULE="server.settings",
            SENTE_DATA_DIR=str(data),
            PYTHONUNBUFFERED="1",
            DATABASE_URL=os.environ.get("DATABASE_URL") or database_url(connection.settings_dict),
        )
        supervisor = Supervisor(data / "logs", env)
        stop = {"requests": 0}

        def on_signal(count: int) -> None:
            stop["requests"] = count
            if count == 1:
                with contextlib.suppress(OSError):  # the terminal may be gone (SIGHUP)
                    self.stdout.write(
                        "stopping: the client finishes its games and delivers them, the trainer "
                        "checkpoints (Ctrl-C again to hurry)"
                    )

        # A closed terminal (SIGHUP) stops it as Ctrl-C does.
        handlers = contextlib.ExitStack()
        handlers.enter_context(on_signals(on_signal, (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)))
        python = sys.executable
        device = ["--device", options["device"]] if options["device"] else []
        client_device = _client_device(options["device"], options["selfplay_workers"])
        try:
            web = supervisor.start(
                "web",
                [python, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py"],
                env={
                    "SENTE_BIND": f"127.0.0.1:{port}",
                    "SENTE_WORKERS": "2",
                    "SENTE_ACCESS_LOG": "",
                    **LOCAL_THROTTLES,
                },
            )
            if not _wait_for(url, web, stopping=lambda: stop["requests"] > 0):
                return
            supervisor.start("worker", [python, "manage.py", "db_worker"])
            # Everything shares this machine's cores: torch threads that wait for a busy core slow
            # every operation down (tens of times for small batches), so the trainer takes half. It
            # looks for new rows every 2 s: the database is on this machine, and a trainer that has
            # used its rows should not sleep while self-play brings more.
            supervisor.start(
                "trainer",
                [
                    python,
                    "manage.py",
                    "train",
                    "--run",
                    run.name,
                    "--poll-seconds",
                    "2",
                    "--checkpoint-minutes",
                    "2",
                    *device,
                ],
                env={"OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 2) // 2))},
            )
            client = data / "client"
            supervisor.start(
                "client",
                [
                    python,
                    "-m",
                    "client",
                    "contribute",
                    "--server",
                    url,
                    "--config",
                    str(client / "client.json"),
                    "--data-dir",
                    str(client),
                    "--parallel",
                    str(options["parallel"]),
                    # Its server is on this machine: looking at the run every 2 s costs nothing, and a
                    # candidate gets its gating games within seconds rather than up to a minute.
                    "--look-seconds",
                    "2",
                    *client_device,
                ],
                stop_signal=signal.SIGINT,
                env={"SENTE_TOKEN": credentials.volunteer_token, "SENTE_USERNAME": VOLUNTEER},
                nice=CLIENT_NICE,
            )
            login = (
                f"log in as {OWNER} with the password {credentials.owner_password}"
                if credentials.owner_password
                else f"log in as {OWNER} with the password you set"
            )
            self.stdout.write(
                self.style.SUCCESS(
                    f"Sente is running: the dashboard is {url}/ ({login}; it is kept in {data / 'platform.json'})"
                )
            )
            self.stdout.write(f"run {run.name}; logs in {supervisor.logs}; Ctrl-C stops everything")
            last = 0.0
            until = time.monotonic() + 60.0 * options["minutes"] if options["minutes"] else None
            while not stop["requests"]:
                if until is not None and time.monotonic() >= until:
                    self.stdout.write(f"{options['minutes']:g} minutes are over: stopping")
                    break
                ended = supervisor.exited()
                if ended is not None:
                    raise CommandError(
                        f"the {ended.name} process ended (status {ended.process.returncode}); the "
                        f"end of {ended.log_path}:\n{ended.log_tail()}"
                    )
                if time.monotonic() - last >= options["status_seconds"]:
                    last = time.monotonic()
                    self.stdout.write(f"[{time.strftime('%H:%M:%S')}] {run_status(run)}")
                time.sleep(0.5)
        finally:
            # The trainer checkpoints while the client finishes its games: trained on after the
            # stop, it only held cores back from the games in play.
            supervisor.stop_all(STOP_TIMEOUTS, hurry=lambda: stop["requests"] > 1, at_once=("client", "trainer"))
            handlers.close()
        self.stdout.write(f"stopped; {run_status(run)}")
        self.stdout.write("start it again to continue the run")


def _client_device(device: str | None, workers: int | None) -> list[str]:
    """The client's ``--device`` argument: on the CPU (asked for, or the machine has no GPU) one
    worker per core (or ``workers``), each searching with its own Python thread, since one worker's
    thread keeps about one core busy; on a GPU the client's own choice (one worker per GPU)."""
    if device is None:
        from common.nn.device import default_device

        device = "cpu" if default_device().type == "cpu" else None
    if device != "cpu":
        return ["--device", device] if device else []
    return ["--device", ",".join(["cpu"] * (workers or os.cpu_count() or 1))]


def _port_free(port: int) -> bool:
    """Whether a server could listen on the port (connections of an earlier one that linger in
    TIME_WAIT do not count, as they do not for gunicorn, which also sets SO_REUSEADDR)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _wait_for(url: str, web, stopping, seconds: float = 120.0) -> bool:
    """Whether the web server answered (False: a stop was asked for meanwhile)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if stopping():
            return False
        if not web.running():
            raise CommandError(f"the web server ended (status {web.process.returncode}):\n{web.log_tail()}")
        try:
            if requests.get(url + "/healthz", timeout=2).status_code == 200:
                return True
        except requests.RequestException:
            pass
        time.sleep(0.3)
    raise CommandError(f"the web server did not answer at {url} within {seconds:.0f} s:\n{web.log_tail()}")


def settings_document(path: Path | None) -> dict | None:
    """The run settings document in the JSON file ``path``, checked and completed with the defaults
    (None without a file); CommandError names the file and what is wrong with it."""
    if path is None:
        return None
    try:
        return RunSettings.from_dict(json.loads(path.read_text())).to_dict()
    except (OSError, ValueError, SettingsError) as e:
        raise CommandError(f"settings file {path}: {e}") from None
