"""``python -m client contribute``: the volunteer's program.

Setup: the first start with ``--server URL --username NAME`` asks for the password once (or reads it
from stdin with ``--password-stdin``), exchanges it for a client token and keeps the token, never the
password, in the settings file (:mod:`client.contribute.config`). Later starts need no options; a
start with ``--username`` logs in again, and so does one whose kept token the server refuses (it was
revoked, say) when the password can be had (a terminal, or ``--password-stdin``). Otherwise a refused
token ends the client with the command that logs in again.

Then it checks the server (reachable, the token taken, the client new enough) and says plainly what
is wrong if anything is, starts one worker process per device (:mod:`client.contribute.worker`), and
itself delivers the outbox (first what earlier runs left, then each game as the workers finish it),
shows the status, and takes commands: Ctrl-C (or SIGTERM, or ``stop`` on stdin) once starts no game
from that moment, finishes the games in play, delivers them and ends; twice ends at once (finished
games stay in the outbox for the next start). ``pause`` and ``resume`` on stdin, or SIGUSR1 and
SIGUSR2, hold and release the workers. Signals are acted on as they arrive
(:mod:`client.contribute.signals`).

Exit status: 0 when it ended as asked; 1 on an unexpected failure; 2 for bad settings; 3 when the
server refuses the login or the token; 4 when the server's run does not take this client's version or
build; 5 when the server cannot be reached at start; 6 when a network file stays wrong after repeated
downloads; 7 when a device fails the canary check (it does not compute what the network computes:
see :mod:`client.contribute.canary`; the games it played since its last passing check are not sent).
"""

from __future__ import annotations

import datetime
import getpass
import logging
import logging.handlers
import multiprocessing
import os
import queue
import shlex
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import requests

from client.build import BUILD, describe
from client.contribute import config as client_config
from client.contribute import inplay
from client.contribute.inplay import DEFAULT_CHECKPOINT_SECONDS
from client.contribute.netcache import NetworkCache
from client.contribute.outbox import DEFAULT_BACKOFF_CAP, FATAL, Outbox, Outcome, describe_error
from client.contribute.retry import patiently
from client.contribute.server import AuthError, ServerClient, ServerError
from client.contribute.signals import SignalActions
from client.contribute.status import Display, Status
from client.contribute.supervision import STOP_SECONDS, Pauses, RestartBudget, StopDeadline
from client.contribute.tasks import AUTH, CANARY, NETWORK, PROTOCOL, UPGRADE
from client.contribute.worker import Control, WorkerSpec, cpu_share, worker_main
from common.protocol import CLIENT_VERSION, parse_version

log = logging.getLogger("client.contribute")

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_AUTH, EXIT_UPGRADE, EXIT_UNREACHABLE, EXIT_NETWORK, EXIT_CANARY = range(8)
EXIT_OF_KIND = {
    AUTH: EXIT_AUTH,
    UPGRADE: EXIT_UPGRADE,
    PROTOCOL: EXIT_UPGRADE,
    NETWORK: EXIT_NETWORK,
    CANARY: EXIT_CANARY,
}
DEFAULT_PARALLEL_GPU = 64
DEFAULT_PARALLEL_CPU = 16


def default_parallel(device: str, gpu_share: float | None) -> int:
    """Games at once on a device when --parallel is not given: the default, times the share of the
    GPU (--gpu-share) on a GPU."""
    if device == "cpu":
        return DEFAULT_PARALLEL_CPU
    return max(1, round(DEFAULT_PARALLEL_GPU * (gpu_share or 1.0)))


PRUNE_SECONDS = 86400.0
FINAL_PATIENCE = 30.0  # the longest Retry-After the last delivery waits out before leaving the games for later


class Stop(Exception):
    """End the command with this exit status after printing the message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def add_arguments(parser) -> None:
    parser.add_argument("--server", help="the server's address, e.g. https://sente.example.org (kept)")
    parser.add_argument("--username", help="your account on the server: logs in and keeps a client token")
    parser.add_argument(
        "--password-stdin", action="store_true", help="read the password from the first line of stdin instead of asking"
    )
    parser.add_argument(
        "--config",
        type=Path,
        help="settings file (default: client.json in your settings folder, on Linux ~/.config/sente/)",
    )
    parser.add_argument(
        "--device",
        help="cpu, cuda:0, mps (a Mac's GPU), or several such as cuda:0,cuda:1 (one worker each; default: every "
        "GPU, else the CPU)",
    )
    parser.add_argument(
        "--parallel",
        help=f"games at once per worker (default {DEFAULT_PARALLEL_GPU} on a GPU, {DEFAULT_PARALLEL_CPU} on the CPU)",
    )
    parser.add_argument(
        "--data-dir", help="where the outbox, the networks and the log live (default: ~/.local/share/sente)"
    )
    parser.add_argument("--games", help="stop after this many games, self-play and rating together (default: never)")
    parser.add_argument(
        "--only", choices=client_config.ONLY, help="play only self-play games or only rating games (default: both)"
    )
    parser.add_argument(
        "--proxy", help="an HTTP(S) proxy for every request, e.g. http://proxy:3128 (default: HTTPS_PROXY, if set)"
    )
    parser.add_argument(
        "--mirror",
        help="download networks from here first, e.g. https://mirror.example.org/sente/{name}.safetensors "
        "({name} or {sha256} stands for the network; the server's copy if the mirror fails)",
    )
    parser.add_argument(
        "--max-download-mb",
        help="the most any download may bring, in MiB: a network announced larger is refused, and an answer that "
        "goes past it (or past the size it announced) is cut (default 2048)",
    )
    parser.add_argument("--sgf-dir", help="keep a copy of every finished game's SGF in this folder")
    parser.add_argument(
        "--watch-file",
        help="rewrite this file after each move of one self-play game in play: the board as text, or the SGF "
        "if the name ends in .sgf",
    )
    parser.add_argument(
        "--hours",
        help="play only at these hours of the day, local time, e.g. 22-7 or 9:30-17:00,20-23 (paused outside)",
    )
    parser.add_argument(
        "--gpu-share",
        help="the share of each GPU to use, 0.5 for half: that share of the default games at once (default 1)",
    )
    parser.add_argument(
        "--checkpoint-seconds",
        help=f"save each game in play this often, to play it on after a crash or a reboot (default "
        f"{DEFAULT_CHECKPOINT_SECONDS:.0f})",
    )
    parser.add_argument(
        "--retry-seconds",
        type=float,
        default=5.0,
        help="first pause before trying the server again; it doubles up to an hour (default 5)",
    )


def run(args) -> int:
    try:
        return _Contributor(args).run()
    except Stop as e:
        print(f"error: {e.message}" if e.status else e.message, file=sys.stderr)
        return e.status


class _Contributor:
    def __init__(self, args) -> None:
        self.args = args
        self.config_path = args.config or client_config.default_config_path()
        flags = {key: getattr(args, key) for key in client_config.ENV if key != "token"}
        try:
            self.stored = client_config.read_file(self.config_path)
            self.config = client_config.load(self.config_path, flags=flags)
        except client_config.ConfigError as e:
            raise Stop(EXIT_USAGE, str(e)) from None
        if args.retry_seconds <= 0:
            raise Stop(EXIT_USAGE, f"--retry-seconds: {args.retry_seconds} must be positive")
        if not self.config.server:
            raise Stop(
                EXIT_USAGE,
                "no server: give --server URL and --username NAME the first time (both are kept for later starts)",
            )
        self.server_url = self.config.server  # logging in keeps it: every later config has this server
        self.data_dir = self.config.data_path()
        self.ctx = multiprocessing.get_context("spawn")
        self.control = Control(self.ctx, games=self.config.games)
        self.pauses = Pauses(self.control.paused, self.control.done, self.config.hours)
        self._check_folders()
        self.messages = self.ctx.Queue()
        self.log_queue = self.ctx.Queue()
        self.status: Status  # made by _contribute before anything reads it
        self.fatal: tuple[int, str] | None = None
        self._interrupts = 0
        self._interrupts_lock = threading.Lock()  # signals, and stop typed on stdin, come from threads
        self._signal_actions: SignalActions | None = None
        self._wake = threading.Event()
        self._password_read = False

    def _check_folders(self) -> None:
        """The folder of the SGF copies and that of the watch file exist (made if need be) and take
        files, before any game is played."""
        folders = [("--sgf-dir", self.config.sgf_dir and Path(self.config.sgf_dir))]
        folders.append(("--watch-file", self.config.watch_file and Path(self.config.watch_file).parent))
        for flag, folder in folders:
            if not folder:
                continue
            try:
                folder.mkdir(parents=True, exist_ok=True)
                probe = folder / f".sente-probe-{os.getpid()}"
                probe.write_bytes(b"")
                probe.unlink()
            except OSError as e:
                raise Stop(EXIT_USAGE, f"{flag}: the folder {folder} cannot take files: {e}") from None

    # --- setup ------------------------------------------------------------------------------------
    def run(self) -> int:
        listener = self._logging()
        try:
            devices = self._devices()
            self._login_if_needed()
            server = self._check_server()
            if self.args.password_stdin and not self._password_read:
                sys.stdin.readline()  # the password line the kept token did not need: not a command
            return self._contribute(server, devices)
        finally:
            listener.stop()

    def _logging(self) -> logging.handlers.QueueListener:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.data_dir / "contribute.log"
        file = logging.handlers.RotatingFileHandler(self.log_path, maxBytes=10 << 20, backupCount=3)
        file.setFormatter(logging.Formatter("%(asctime)s %(processName)s %(levelname)s %(name)s: %(message)s"))
        file.setLevel(logging.INFO)
        console = _ConsoleHandler()
        console.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
        console.setLevel(logging.WARNING)
        self.console_handler = console
        root = logging.getLogger()
        for h in list(root.handlers):
            root.removeHandler(h)
        root.addHandler(logging.handlers.QueueHandler(self.log_queue))
        root.setLevel(logging.INFO)
        for noisy in ("urllib3", "requests"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
        listener = logging.handlers.QueueListener(self.log_queue, file, console, respect_handler_level=True)
        listener.start()
        log.info("sente client %s starting; settings %s, data %s", describe(), self.config_path, self.data_dir)
        return listener

    def _login_if_needed(self) -> None:
        """Log in when asked to (--username given), for another server than the kept one, or
        without a token; a token from the environment is used as it is."""
        cfg = self.config
        if self._token_from_env():
            return
        if cfg.token and not self.args.username and cfg.server == self.stored.server:
            return
        self._login()

    def _token_from_env(self) -> bool:
        return bool(os.environ.get(client_config.ENV["token"]))

    def _can_log_in(self) -> bool:
        """Can a refused kept token be replaced now: a user to log in as and a password to be had?"""
        return (
            not self._token_from_env()
            and bool(self.config.username)
            and (self.args.password_stdin or (sys.stdin is not None and sys.stdin.isatty()))
        )

    def _login(self) -> None:
        cfg = self.config
        username = cfg.username
        if not username:
            raise Stop(EXIT_USAGE, f"no client token for {cfg.server}: give --username NAME to log in once")
        password = self._password(username, self.server_url)
        server = ServerClient(
            self.server_url,
            instance_id=cfg.instance_id or "sente-client",
            proxy=cfg.proxy,
            max_download=cfg.max_download(),
        )
        try:
            login = patiently(lambda: server.login(username, password, f"client on {socket.gethostname()}"[:100]))
        except AuthError as e:
            raise Stop(
                EXIT_AUTH,
                f"the server at {cfg.server} did not accept user {cfg.username!r} with this password ({e.message})",
            ) from None
        except ServerError as e:
            raise Stop(EXIT_FAILED, f"logging in at {cfg.server} failed: {e}") from None
        except requests.RequestException as e:
            raise Stop(
                EXIT_UNREACHABLE,
                f"cannot reach the server at {cfg.server} ({describe_error(e)}); check the "
                "address and the network connection",
            ) from None
        kept = replace(
            self.stored,
            server=cfg.server,
            username=login.username,
            token=login.token,
            instance_id=self.stored.instance_id,
        )
        path = client_config.save(kept, self.config_path)
        self.stored = client_config.read_file(path)
        self.config = replace(cfg, username=login.username, token=login.token, instance_id=self.stored.instance_id)
        print(
            f"logged in to {cfg.server} as {login.username}; the client token is kept in {path} (the password is not)",
            flush=True,
        )

    def _login_again(self) -> str:
        """What to do about a refused token, as a command that does it."""
        if self._token_from_env():
            return (
                f"The token comes from {client_config.ENV['token']}: make a new one on the server's token page, "
                "or unset the variable and log in with --username NAME"
            )
        command = ["python", "-m", "client", "contribute"]
        if self.args.config:
            command += ["--config", str(self.args.config)]
        command += ["--username", self.config.username or "NAME"]
        return (
            f"Log in again: {shlex.join(command)} (it asks for the password; add --password-stdin to give it on stdin)"
        )

    def _password(self, username: str, server: str) -> str:
        if self.args.password_stdin:
            self._password_read = True
            line = sys.stdin.readline()
            if not line:
                raise Stop(EXIT_USAGE, "--password-stdin: stdin ended before a password line")
            return line.rstrip("\r\n")
        if not sys.stdin.isatty():
            raise Stop(
                EXIT_USAGE,
                f"logging in as {username} needs the password: run the command in a terminal "
                "once, or give it on stdin with --password-stdin",
            )
        return getpass.getpass(f"password for {username} at {server}: ")

    def _check_server(self) -> ServerClient:
        """The server, checked: it takes the client token (a refused one is replaced when the
        password can be had) and its run takes this client."""
        cfg = self.config
        if cfg.instance_id is None:  # a token from the environment, no settings file yet
            client_config.save(replace(self.stored, server=cfg.server, username=cfg.username), self.config_path)
            self.stored = client_config.read_file(self.config_path)
            self.config = replace(cfg, instance_id=self.stored.instance_id)
        server, me = self._signed_in()
        self.username = me.get("username", self.config.username or "?")
        self._check_run(server)
        return server

    def _signed_in(self) -> tuple[ServerClient, dict]:
        """A client of the server that took the token (logging in again if it refused the kept one
        and can), and the account the server says it is."""
        cfg = self.config
        server = self._client()
        try:
            try:
                return server, patiently(server.me)
            except AuthError as e:
                if not self._can_log_in():
                    raise
                print(
                    f"the server at {cfg.server} refused the client token kept for {cfg.username} ({e.message}); "
                    "logging in again",
                    flush=True,
                )
                self._login()
                cfg = self.config
                server = self._client()
                return server, patiently(server.me)
        except AuthError as e:
            raise Stop(
                EXIT_AUTH,
                f"the server at {cfg.server} refused the client token kept for "
                f"{cfg.username or 'this user'} ({e.message}); it may have been revoked. "
                f"{self._login_again()}",
            ) from None
        except ServerError as e:
            raise Stop(EXIT_FAILED, f"the server at {cfg.server} answered {e}") from None
        except requests.RequestException as e:
            raise Stop(
                EXIT_UNREACHABLE,
                f"cannot reach the server at {cfg.server} ({describe_error(e)}); check the "
                "address and the network connection, then start again",
            ) from None

    def _client(self) -> ServerClient:
        """A client of the server with the kept token (none: the server refuses it)."""
        instance_id = self.config.instance_id
        assert instance_id is not None, "_check_server has given the installation its id"
        return ServerClient(
            self.server_url,
            self.config.token,
            instance_id=instance_id,
            proxy=self.config.proxy,
            max_download=self.config.max_download(),
        )

    def _check_run(self, server: ServerClient) -> None:
        """Ends the command when the server's run does not take this client; a server without a run
        yet is waited for."""
        try:
            current = patiently(server.current_run)
            refusal = _not_taken(current)
            if refusal is not None:
                raise Stop(EXIT_UPGRADE, refusal)
            log.info("run %s, network %s", current.get("run"), (current.get("network") or {}).get("name"))
        except ServerError as e:
            log.warning("the server has no run to work for yet (%s); the client waits for one", e.message)
        except requests.RequestException as e:
            raise Stop(
                EXIT_UNREACHABLE, f"cannot reach the server at {self.config.server} ({describe_error(e)})"
            ) from None

    def _devices(self) -> list[str]:
        import torch

        from common.nn.device import mps_available

        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if self.config.device:
            devices = self.config.device.split(",")
            for d in devices:
                index = int(d.partition(":")[2] or 0) if d.startswith("cuda") else None
                if index is not None and index >= count:
                    there = f"cuda:0 to cuda:{count - 1}" if count > 1 else "cuda:0" if count else "none"
                    raise Stop(
                        EXIT_USAGE, f"--device {self.config.device}: there is no {d} on this machine (GPUs: {there})"
                    )
            if "mps" in devices and not mps_available():
                raise Stop(EXIT_USAGE, f"--device {self.config.device}: this machine has no Apple GPU torch can use")
        else:
            devices = [f"cuda:{i}" for i in range(count)] or (["mps"] if mps_available() else ["cpu"])
        if "cpu" in devices:
            log.warning(
                "playing on the CPU: it works, but a GPU plays tens of times more games; --device cuda:0 picks one"
            )
        return devices

    # --- running ----------------------------------------------------------------------------------
    def _contribute(self, server: ServerClient, devices: list[str]) -> int:
        """Run the workers and deliver their games until they end, then say what was done."""
        outbox = Outbox(self.data_dir / "outbox", backoff_start=self.args.retry_seconds)
        cache = NetworkCache(self.data_dir / "networks")
        cache.prune()
        self.status = Status(server=self.server_url, username=self.username)
        self.status.outbox = outbox.counts
        if outbox.counts.pending:
            log.warning(
                "%d finished games from an earlier run wait in the outbox; they go out first", outbox.counts.pending
            )
        specs = self._specs(devices)
        saved = inplay.gather(self.data_dir)  # the games in play when the client last ended
        if saved:
            log.warning("%d games in play when the client last ended are played on", saved)
        sender_done = threading.Event()
        sender = threading.Thread(target=self._send, args=(server, outbox, sender_done), name="sender", daemon=True)
        sender.start()  # the outbox left by earlier runs goes out first, while the workers start
        self._signals()
        self._commands()
        self._keep_hours()  # outside the hours to play, the workers start paused
        self.workers = {s.index: self._start(s) for s in specs}
        self.ended: set[int] = set()
        deadline = StopDeadline()
        try:
            with Display(self.status) as display:
                self._supervise(specs, cache, display, deadline)
                sender_done.set()
                sender.join(timeout=STOP_SECONDS)  # an upload in flight ends within its timeout
                if not self.control.stopping.is_set():
                    self.status.mode = "sending the last games"
                    display.refresh()
                    self._final_delivery(server, outbox)
        finally:
            self._shut_down(sender, sender_done, deadline)
        return self._goodbye(outbox)

    def _specs(self, devices: list[str]) -> list[WorkerSpec]:
        """One worker per device."""
        cfg = self.config
        token, instance_id = cfg.token, cfg.instance_id
        assert token is not None and instance_id is not None, "the server has taken both (_check_server)"
        kinds = (cfg.only,) if cfg.only else client_config.ONLY
        cores = cpu_share(devices)
        return [
            WorkerSpec(
                index=i,
                device=d,
                server=self.server_url,
                token=token,
                instance_id=instance_id,
                parallel=cfg.parallel or default_parallel(d, cfg.gpu_share),
                data_dir=str(self.data_dir),
                retry_start=self.args.retry_seconds,
                kinds=kinds,
                proxy=cfg.proxy,
                max_download=cfg.max_download(),
                mirror=cfg.mirror,
                sgf_dir=cfg.sgf_dir,
                watch_file=cfg.watch_file if i == 0 else None,  # one game to watch, of the first device
                checkpoint_seconds=cfg.checkpoint_seconds or DEFAULT_CHECKPOINT_SECONDS,
                cores=cores if d == "cpu" else None,
            )
            for i, d in enumerate(devices)
        ]

    def _supervise(
        self, specs: list[WorkerSpec], cache: NetworkCache, display: Display, deadline: StopDeadline
    ) -> None:
        """Look after the workers until every one has ended, or stopping has waited for them long
        enough: act on signals and messages, start crashed workers again, show the status."""
        restarts = RestartBudget()
        last_prune = time.monotonic()
        while len(self.ended) < len(specs):
            self._wake.wait(0.5)
            self._wake.clear()
            self._keep_hours()
            self._handle_messages()
            self._restart_crashed(specs, restarts)
            if self.control.stopping.is_set():
                # Stopping means now: a worker stuck in a long step is not waited for long.
                deadline.start(time.monotonic())
                if deadline.passed(time.monotonic()):
                    return
            self.status.mode = self.control.mode()
            self.status.sample()
            display.refresh()
            if time.monotonic() - last_prune > PRUNE_SECONDS:
                cache.prune()
                last_prune = time.monotonic()

    def _restart_crashed(self, specs: list[WorkerSpec], restarts: RestartBudget) -> None:
        """Start again each worker that ended without saying it was done, while the budget allows
        (past it the client fails); one that ended while finishing or stopping is not started."""
        for index, process in list(self.workers.items()):
            if index in self.ended or process.is_alive():
                continue
            process.join()
            self._handle_messages()  # its last words may have come after the messages were read
            if index in self.ended:
                continue
            if self.control.done():
                self.ended.add(index)
                continue
            if not restarts.spend(time.monotonic()):
                self._fail(
                    EXIT_FAILED,
                    f"worker {index} ({specs[index].device}) keeps failing "
                    f"(exit code {process.exitcode}); see {self.log_path}",
                )
                self.ended.add(index)
                continue
            log.error(
                "worker %d (%s) ended unexpectedly (exit code %s); starting it again",
                index,
                specs[index].device,
                process.exitcode,
            )
            inplay.gather(self.data_dir, index)  # its games in play, for it to play on
            self.workers[index] = self._start(specs[index])

    def _shut_down(self, sender: threading.Thread, sender_done: threading.Event, deadline: StopDeadline) -> None:
        """Stop the workers and the sender; a worker still running when the deadline has passed is
        killed (its finished games are in the outbox already)."""
        self.control.stopping.set()
        sender_done.set()
        deadline.start(time.monotonic())
        for process in self.workers.values():
            process.join(timeout=max(0.1, deadline.left(time.monotonic())))
            if process.is_alive():
                log.warning("worker %s did not stop in time; killed", process.name)
                process.kill()
                process.join(timeout=5)
        sender.join(timeout=STOP_SECONDS)
        if self._signal_actions is not None:  # the caller's handlers again (a test, a program)
            self._signal_actions.close()
            self._signal_actions = None

    def _start(self, spec: WorkerSpec):
        process = self.ctx.Process(
            target=worker_main, args=(spec, self.control, self.messages, self.log_queue), name=f"worker-{spec.index}"
        )
        process.start()
        log.info(
            "worker %d started on %s (pid %d), %d games at once", spec.index, spec.device, process.pid, spec.parallel
        )
        return process

    def _handle_messages(self) -> None:
        while True:
            try:
                kind, index, what, detail = self.messages.get_nowait()
            except queue.Empty:
                return
            if kind == "status":
                self.status.update(index, detail)
            elif kind == "done":
                self.ended.add(index)
            elif kind == "fatal":
                self.ended.add(index)
                self._fail(EXIT_OF_KIND.get(what, EXIT_FAILED), detail)
            elif kind == "crashed":
                log.error("worker %d failed: %s: %s", index, what, detail)

    def _fail(self, status: int, message: str) -> None:
        """Stop everything now and end with this status and message (the first failure counts)."""
        if self.fatal is None:
            if status == EXIT_AUTH:
                message += f". {self._login_again()}"
            self.fatal = (status, message)
            log.info("stopping: %s", message)  # said on the console once, as the command ends
        self.control.stopping.set()
        self._wake.set()

    # --- delivering -------------------------------------------------------------------------------
    def _send(self, server: ServerClient, outbox: Outbox, done: threading.Event) -> None:
        """Deliver the outbox until done: each pass sends what is due; while the server cannot be
        reached, passes wait longer and longer (from --retry-seconds, doubling, up to an hour)."""
        pause = self.args.retry_seconds
        while not done.is_set():
            try:
                outbox.refresh()
                outcome = outbox.deliver_due(server.upload, stop=done.is_set)
            except Exception:  # the disk's trouble, say: logged, and tried again
                log.exception("delivering the outbox failed; trying again in %.0f s", pause)
                done.wait(pause)
                continue
            if outcome is not None and outcome.kind == FATAL:
                self._fail(_exit_of_refusal(outcome), f"uploading games stopped: {outcome.message}")
                return
            if outcome is not None and outcome.retry_after is not None and not outcome.unreachable:
                log.info(
                    "the server asks to wait %.0f s before the next upload (%s)", outcome.retry_after, outcome.message
                )
                done.wait(outcome.retry_after)
                continue
            if outcome is not None and outcome.unreachable:
                if self.status.upload_reachable is not False:
                    log.warning(
                        "the server cannot be reached to upload games (%s); they wait in the outbox "
                        "(%d now) and go out when it is back",
                        outcome.message,
                        outbox.counts.pending,
                    )
                self.status.upload_reachable = False
                done.wait(pause)
                pause = min(DEFAULT_BACKOFF_CAP, pause * 2)
                continue
            if self.status.upload_reachable is False:
                log.warning("the server is reachable again; the games that waited are being sent")
            if outcome is None and (outbox.counts.delivered or outbox.counts.rejected):
                self.status.upload_reachable = True
            pause = self.args.retry_seconds
            done.wait(0.5)

    def _final_delivery(self, server: ServerClient, outbox: Outbox) -> None:
        """After the workers finished (and the sender stopped): one more try for every pending game,
        now, unless Ctrl-C comes again."""

        def interrupted() -> bool:
            return self.control.stopping.is_set()

        def deliver_all() -> Outcome | None:
            outbox.refresh()
            for entry in outbox.pending():
                entry.due = 0.0
            return outbox.deliver_due(server.upload, stop=interrupted)

        outcome = deliver_all()
        while (
            outcome is not None
            and outcome.retry_after is not None
            and not outcome.unreachable
            and outcome.retry_after <= FINAL_PATIENCE
            and not interrupted()
        ):
            time.sleep(outcome.retry_after)  # the server asked for a short wait: the last games still go out
            outcome = deliver_all()
        if outcome is not None and outcome.kind == FATAL:
            self._fail(_exit_of_refusal(outcome), f"uploading games stopped: {outcome.message}")

    def _goodbye(self, outbox: Outbox) -> int:
        status = self.status
        t = status.totals()
        outbox.refresh()  # what the workers put after the sender's last look
        c = outbox.counts
        print(
            f"played {t['selfplay_games']:.0f} self-play games ({t['rows']:.0f} training rows) and "
            f"{t['rating_games']:.0f} rating games; uploads: {c.delivered} sent, {c.rejected} rejected, "
            f"{c.pending} waiting in {outbox.pending_dir} for the next start; log: {self.log_path}",
            flush=True,
        )
        if self.control.budget_spent():
            print(f"the {self.config.games} games asked for (--games) are played", flush=True)
        held = outbox.count_held()
        if held:
            print(f"{held} games wait in {outbox.held_dir} for a canary check at the next start", flush=True)
        if self.fatal is not None:
            raise Stop(*self.fatal)
        return EXIT_OK

    # --- control ----------------------------------------------------------------------------------
    def _signals(self) -> None:
        """Act on signals as they arrive, from a thread of their own (:mod:`client.contribute.signals`):
        a game that ends just after Ctrl-C is not replaced (only in the main thread, where signals
        can be taken)."""
        wanted: dict[int, Callable[[], None]] = {signal.SIGINT: self.interrupt, signal.SIGTERM: self.interrupt}
        # Where they exist: the terminal closed (unless started under nohup), Ctrl-Break on Windows,
        # and pause and resume (typing them works everywhere).
        optional: tuple[tuple[str, Callable[[], None]], ...] = (
            ("SIGHUP", self.interrupt),
            ("SIGBREAK", self.interrupt),
            ("SIGUSR1", lambda: self.pause(True)),
            ("SIGUSR2", lambda: self.pause(False)),
        )
        for name, action in optional:
            sig = getattr(signal, name, None)
            if sig is not None and signal.getsignal(sig) is not signal.SIG_IGN:
                wanted[sig] = action
        actions = SignalActions(wanted)
        if actions.start():
            self._signal_actions = actions

    def interrupt(self) -> None:
        """Ctrl-C, SIGTERM, SIGHUP or stop typed: the first time, no game starts any more (the games
        in play finish and are sent, then the client ends); again, the client stops at once."""
        with self._interrupts_lock:
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
        self._wake.set()

    def pause(self, on: bool) -> None:
        self.pauses.hand(on)
        self._wake.set()

    def _keep_hours(self) -> None:
        self.pauses.clock(datetime.datetime.now())

    def _commands(self) -> None:
        """pause / resume / stop typed on stdin (a line each)."""

        def read() -> None:
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

        if sys.stdin is not None and not sys.stdin.closed:
            threading.Thread(target=read, name="commands", daemon=True).start()


def _not_taken(current: dict) -> str | None:
    """Why the server's current run does not take this client (None: it does), in the words of the
    server's own refusal of a task request."""
    run, least, most = current.get("run"), current.get("min_client_version"), current.get("max_client_version")
    builds = current.get("client_builds") or []
    mine = parse_version(CLIENT_VERSION)
    if least and mine < parse_version(least):
        return (
            f"this client is version {CLIENT_VERSION}, and the server's run {run} needs {least} or newer: "
            "please upgrade the client"
        )
    if most and mine > parse_version(most):
        return (
            f"this client is version {CLIENT_VERSION}, newer than the server's run {run} takes (versions "
            f"{least} to {most}): please install one of those"
        )
    if builds and BUILD not in builds:
        return (
            f"this client is version {CLIENT_VERSION}, build {BUILD}, which the server's run {run} does not take "
            f"(builds {', '.join(builds)}): please upgrade the client to the release the project names"
        )
    return None


def _exit_of_refusal(outcome) -> int:
    return EXIT_UPGRADE if outcome.status == 426 else EXIT_AUTH


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
