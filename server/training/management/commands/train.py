"""``manage.py train``: the trainer of a run (see ``server.training.worker``)."""

from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from common.interrupt import stop_on_signals
from common.nn.training import CheckpointError, Distributed
from server.runs.models import Run
from server.training.worker import TrainerError, TrainerOptions, TrainingWorker


class Command(BaseCommand):
    help = (
        "Train the run's networks on its self-play data as it arrives and export candidate networks "
        "(a long-running worker; Ctrl-C or SIGTERM stop it after a checkpoint). Under torchrun (torchrun "
        "--nproc_per_node N -- manage.py train ...) it trains "
        "on every process's GPU with DistributedDataParallel."
    )

    def add_arguments(self, parser):
        parser.add_argument("--run", help="the run's name (default: the current run)")
        parser.add_argument(
            "--architecture",
            help="train only this line of the run (e.g. one GPU machine per "
            "line); default: every line its settings name",
        )
        parser.add_argument(
            "--checkpoints",
            type=Path,
            help="folder of the checkpoints (default: SENTE_DATA_DIR/training); under torchrun on "
            "several machines, one they all read",
        )
        parser.add_argument("--device", help="cuda, cuda:N or cpu (default: the GPU when there is one)")
        parser.add_argument(
            "--once",
            action="store_true",
            help="train as much as the data allows now, then stop (default: keep waiting for data)",
        )
        parser.add_argument(
            "--poll-seconds", type=float, default=30.0, help="how often to look for new data when idle (default 30)"
        )
        parser.add_argument(
            "--checkpoint-minutes",
            type=float,
            default=10.0,
            help="checkpoint at least this often while training (default 10)",
        )
        parser.add_argument("--tensorboard", type=Path, metavar="DIR", help="also log the losses to TensorBoard")

    def handle(self, *args, **options):
        name = options["run"]
        run = Run.objects.filter(name=name).first() if name else Run.objects.current()
        if run is None:
            raise CommandError(f"there is no run {name!r}" if name else "no run is active; name one with --run")
        for key in ("poll_seconds", "checkpoint_minutes"):
            if options[key] <= 0:
                raise CommandError(f"--{key.replace('_', '-')}: {options[key]} must be a positive number")
        stop = threading.Event()
        with stop_on_signals(
            stop, lambda: self.stderr.write("stopping after the step at hand (again to stop at once)")
        ):
            self._train(run, options, stop)

    def _train(self, run: Run, options: dict, stop: threading.Event) -> None:
        trainer_options = TrainerOptions(
            run=run.name,
            checkpoints=options["checkpoints"] or Path(settings.DATA_DIR) / "training",
            architecture=options["architecture"],
            device=options["device"],
            poll_seconds=options["poll_seconds"],
            once=options["once"],
            checkpoint_seconds=60.0 * options["checkpoint_minutes"],
            tensorboard=options["tensorboard"],
        )
        distributed = Distributed.from_environment()
        try:
            worker = TrainingWorker(trainer_options, stop, distributed)
        except (RuntimeError, TrainerError) as e:  # a device this machine does not have, or TensorBoard missing
            raise CommandError(str(e)) from None
        try:
            worker.run()
        except (CheckpointError, TrainerError, FloatingPointError) as e:
            raise CommandError(str(e)) from None
        distributed.close()
        if distributed.world > 1:
            # One of torchrun's processes, done: end it here. Left to the interpreter's teardown, a
            # thread of the process group's library still alive aborted it now and then ("terminate
            # called without an active exception", exit -6), and torchrun failed the whole run.
            sys.stdout.flush()
            sys.stderr.flush()
            logging.shutdown()
            os._exit(0)
