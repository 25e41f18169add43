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
import logging
import multiprocessing
import os
import sys
import threading
import time
from pathlib import Path

from client.contribute import config as client_config
from client.contribute import inplay
from client.contribute.console import LOG_NAME, Console, start_logging
from client.contribute.delivery import Delivery
from client.contribute.exits import EXIT_AUTH, EXIT_OK, EXIT_USAGE, Stop
from client.contribute.gpuwatch import GpuWatch
from client.contribute.inplay import DEFAULT_CHECKPOINT_SECONDS
from client.contribute.netcache import NetworkCache
from client.contribute.nvml import GpuReader, NvmlReader
from client.contribute.options import default_parallel
from client.contribute.outbox import Outbox
from client.contribute.priority import set_priority
from client.contribute.server import ServerClient
from client.contribute.session import Session
from client.contribute.status import Display, Status
from client.contribute.supervision import Pauses, StopDeadline, Workers
from client.contribute.worker import MAX_WORKERS, Control, WorkerSpec, cpu_share

log = logging.getLogger("client.contribute")

PRUNE_SECONDS = 86400.0


def run(args) -> int:
    try:
        return _Contributor(args).run()
    except Stop as e:
        print(f"error: {e.message}" if e.status else e.message, file=sys.stderr)
        return e.status


class _Contributor:
    """One run of the command: its settings and devices checked, the session signed in, then the
    workers (:class:`Workers`), the outbox's delivery (:class:`Delivery`) and the console
    (:class:`Console`) until the workers end."""

    def __init__(self, args) -> None:
        self.args = args
        config_path = args.config or client_config.default_config_path()
        flags = {key: getattr(args, key) for key in client_config.ENV if key != "token"}
        try:
            stored = client_config.read_file(config_path)
            config = client_config.load(config_path, flags=flags)
        except client_config.ConfigError as e:
            raise Stop(EXIT_USAGE, str(e)) from None
        for flag, value in (("--retry-seconds", args.retry_seconds), ("--look-seconds", args.look_seconds)):
            if not value > 0:  # NaN too
                raise Stop(EXIT_USAGE, f"{flag}: {value} must be positive")
        self.session = Session(config, stored, config_path, args.config, args.username, args.password_stdin)
        self.config_path = config_path
        self.data_dir = config.data_path()
        self.log_path = self.data_dir / LOG_NAME
        self.ctx = multiprocessing.get_context("spawn")
        self.control = Control(self.ctx, games=config.games)
        self.pauses = Pauses(self.control.paused, self.control.done, config.hours)
        self._check_folders()
        self.log_queue = self.ctx.Queue()
        self.fatal: tuple[int, str] | None = None
        self._wake = threading.Event()

    @property
    def config(self) -> client_config.ClientConfig:
        return self.session.config  # logging in updates it

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
        listener = start_logging(self.data_dir, self.log_queue, self.config_path)
        try:
            # Before any worker starts: they inherit it.
            log.info("process priority: %s", set_priority(self.config.priority or "low"))
            devices = self._devices()
            server = self.session.sign_in()
            if self.args.password_stdin and not self.session.password_read:
                sys.stdin.readline()  # the password line the kept token did not need: not a command
            return self._contribute(server, devices)
        finally:
            listener.stop()

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
            if len(devices) > MAX_WORKERS:
                raise Stop(EXIT_USAGE, f"--device: {len(devices)} devices; one client plays on {MAX_WORKERS} at most")
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
        status = Status(server=self.session.server_url, username=self.session.username, upgrade=self.session.upgrade)
        status.outbox = outbox.counts
        if outbox.counts.pending:
            log.warning(
                "%d finished games from an earlier run wait in the outbox; they go out first", outbox.counts.pending
            )
        workers = Workers(
            self.ctx,
            self._specs(devices),
            self.control,
            self.log_queue,
            status,
            self.data_dir,
            self.log_path,
            self._fail,
        )
        saved = inplay.gather(self.data_dir)  # the games in play when the client last ended
        if saved:
            log.warning("%d games in play when the client last ended are played on", saved)
        delivery = Delivery(server, outbox, status, self.args.retry_seconds, self._fail)
        delivery.start()  # the outbox left by earlier runs goes out first, while the workers start
        console = Console(self.control, self.pauses, self._wake)
        console.start()
        self._keep_hours()  # outside the hours to play, the workers start paused
        workers.start()
        gpus = self._gpu_watch(devices, status, workers)
        deadline = StopDeadline()
        try:
            with Display(status) as display:
                self._supervise(workers, status, cache, display, deadline, gpus)
                delivery.stop()
                if not self.control.stopping.is_set():
                    status.mode = "sending the last games"
                    display.refresh()
                    delivery.final(interrupted=self.control.stopping.is_set)
        finally:
            workers.shut_down(deadline)
            delivery.stop()
            console.close()
        return self._goodbye(status, outbox)

    def _specs(self, devices: list[str]) -> list[WorkerSpec]:
        """One worker per device."""
        cfg = self.config
        token, instance_id = cfg.token, cfg.instance_id
        assert token is not None and instance_id is not None, "the server has taken both (Session.sign_in)"
        kinds = (cfg.only,) if cfg.only else client_config.ONLY
        cores = cpu_share(devices)
        return [
            WorkerSpec(
                index=i,
                device=d,
                server=self.session.server_url,
                token=token,
                instance_id=instance_id,
                parallel=cfg.parallel if isinstance(cfg.parallel, int) else default_parallel(d, cfg.gpu_share),
                auto_parallel=not isinstance(cfg.parallel, int),
                gpu_share=cfg.gpu_share,
                precision=cfg.precision or "auto",
                data_dir=str(self.data_dir),
                retry_start=self.args.retry_seconds,
                look_seconds=self.args.look_seconds,
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

    def _gpu_watch(self, devices: list[str], status: Status, workers: Workers) -> GpuWatch | None:
        """The watch of the NVIDIA GPUs' heat, power and other programs (None without NVML: the
        limits asked for cannot act, which is said once)."""
        cfg = self.config
        asked = [
            flag
            for flag, value in (
                ("--max-temperature", cfg.max_temperature),
                ("--max-power", cfg.max_power),
                ("--pause-when-busy", cfg.pause_when_busy),
            )
            if value
        ]
        reader = self.gpu_reader(devices)
        if isinstance(reader, str):
            if asked:
                log.warning("%s cannot act: %s", " and ".join(asked), reader)
            return None
        if asked and any(not d.startswith("cuda") for d in devices):
            off = ", ".join(sorted({d for d in devices if not d.startswith("cuda")}))
            log.warning("%s act on NVIDIA GPUs only, not on %s", " and ".join(asked), off)
        return GpuWatch(
            reader,
            dict(enumerate(devices)),
            self.control,
            status,
            lambda: {os.getpid(), *workers.pids()},
            max_temperature=cfg.max_temperature,
            max_power=cfg.max_power,
            pause_when_busy=bool(cfg.pause_when_busy),
        )

    def gpu_reader(self, devices: list[str]) -> GpuReader | str:
        """NVML's reader, or why there is none (the tests give their own)."""
        return NvmlReader.open(devices)

    def _supervise(
        self,
        workers: Workers,
        status: Status,
        cache: NetworkCache,
        display: Display,
        deadline: StopDeadline,
        gpus: GpuWatch | None = None,
    ) -> None:
        """Look after the workers until every one has ended, or stopping has waited for them long
        enough: act on signals and messages, start crashed workers again, keep the GPUs within their
        limits, show the status."""
        last_prune = time.monotonic()
        while not workers.all_ended():
            self._wake.wait(0.5)
            self._wake.clear()
            self._keep_hours()
            if gpus is not None:
                gpus.look(time.monotonic())
            workers.look_after()
            if self.control.stopping.is_set():
                # Stopping means now: a worker stuck in a long step is not waited for long.
                deadline.start(time.monotonic())
                if deadline.passed(time.monotonic()):
                    return
            status.mode = self.control.mode()
            status.sample()
            display.refresh()
            if time.monotonic() - last_prune > PRUNE_SECONDS:
                cache.prune()
                last_prune = time.monotonic()

    def _fail(self, status: int, message: str) -> None:
        """Stop everything now and end with this status and message (the first failure counts)."""
        if self.fatal is None:
            if status == EXIT_AUTH:
                message += f". {self.session.login_again()}"
            self.fatal = (status, message)
            log.info("stopping: %s", message)  # said on the console once, as the command ends
        self.control.stopping.set()
        self._wake.set()

    def _keep_hours(self) -> None:
        self.pauses.clock(datetime.datetime.now())

    def _goodbye(self, status: Status, outbox: Outbox) -> int:
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
