"""The trainer (``manage.py train --run NAME``): trains the run's networks on its data as the data
arrives, and makes candidate networks of them.

It runs wherever there is a GPU with access to the database and the file storage. In a loop it:

1. reads the run's training settings and the rows the run counts (``server.training.window``);
2. for each line (``TrainingLine``: the current architecture, and a larger next one while it catches
   up) works out how many samples the data allows (``samples_per_row`` per row counted since the line
   began, the random network's rows too; nothing before ``window_c`` rows) and, when there is enough
   to do, trains a chunk: at most one pass over the newest window, in shuffled batches
   (``common.data.loader``), with the paper's optimiser and schedule (``common.nn.training``). A
   chunk keeps the batch layout it was planned with (batch size, shuffle size, symmetries) until it
   ends, even when the settings change;
3. every ``export_every`` samples exports the weight average: the current line's export becomes a
   candidate network (parent: the line's previous export, or the run's newest accepted network) and
   enters gating (under the rule ``none`` it is accepted at once); a next line's export is measured
   against the current line's last one on the held-out rows, and takes over (becoming a candidate)
   once its loss is lower;
4. sleeps until more data has arrived.

A chunk that cannot read most of its files (or trains nothing for want of readable files) stops
the trainer with an error that names them, rather than planning the same chunk again and again. A
database that cannot be reached (say, restarted) is waited for; connections that broke are
replaced before each look at the run.

Progress goes to the line's row (status, samples, window, losses per head), to the log, and with
``--tensorboard`` to TensorBoard. A checkpoint (weights, optimiser, average, where it was in the
chunk) is written every ``--checkpoint-minutes``, after every chunk and export, and on a clean stop
(Ctrl-C or SIGTERM finish the step at hand); a trainer started again continues from it at the exact
batch. Under ``torchrun`` every process reads its own share of the window (every byte of it once
between them) and trains on its batches with DistributedDataParallel; process 0 reads the database,
plans, reports, checkpoints and exports, and the checkpoint folder must be one that every process
can read. (A chunk checkpointed by a trainer from before the shares, with several processes, goes
on in the new schedule: some of its rows come twice in that chunk and others not at all.)
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import socket
import threading
import time
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from django.core.files.base import ContentFile
from django.db import (
    DatabaseError,
    IntegrityError,
    InterfaceError,
    OperationalError,
    close_old_connections,
    connection,
    transaction,
)
from django.utils import timezone

from common.data.loader import RowFile, ShuffledPass
from common.nn.model import Model
from common.nn.modelfile import decode_model, encode_model, model_of
from common.nn.training import (
    NORM_BATCHES,
    Distributed,
    Lockstep,
    Trainer,
    evaluate,
    read_checkpoint,
    to_tensors,
)
from common.settings import TrainingSettings
from server.files import read_file, read_range, stored_name
from server.networks.models import Network
from server.networks.services import store_network
from server.runs.models import Run
from server.training.models import TrainingLine
from server.training.plan import (
    Chunk,
    Fresh,
    FromCheckpoint,
    FromExport,
    LineStart,
    LineState,
    LineWork,
    Plan,
    needs_window,
    plan_training,
    seed_of,
)
from server.training.window import row_counts, training_window, validation_files

log = logging.getLogger(__name__)

PREDICTIVE_TERMS = ("policy", "value")  # the held-out loss by which a next line overtakes
VALIDATION_BATCH = 256
PLAN_ATTEMPTS = 3  # with --once, looks at the run that fail for want of the database before giving up


@dataclass
class TrainerOptions:
    run: str
    checkpoints: Path
    architecture: str | None = None  # only this line (one machine per line); None: every line
    device: str | None = None
    poll_seconds: float = 30.0
    once: bool = False  # train what the data allows now, then return
    checkpoint_seconds: float = 600.0
    report_seconds: float = 10.0
    tensorboard: Path | None = None


@dataclass
class Line:
    """A line as this process trains it."""

    architecture: str
    trainer: Trainer
    checkpoint: Path
    chunk: Chunk | None = None
    losses: dict[str, float] = field(default_factory=dict)
    loss_steps: int = 0


class TrainerError(Exception):
    """A trainer that cannot go on as configured; the message says why."""


class TrainingWorker:
    """See the module docstring; ``stop`` ends it after the step at hand."""

    def __init__(
        self, options: TrainerOptions, stop: threading.Event | None = None, distributed: Distributed | None = None
    ) -> None:
        self.options = options
        self.stop = stop or threading.Event()
        self.dist = distributed or Distributed()
        self.device = self.dist.device(options.device)
        self.host = socket.gethostname()[:100]
        self.lines: dict[str, Line] = {}
        self.seen: set[str] = set()  # the lines this trainer looked after
        self.starts: dict[str, LineStart] = {}  # how each line not trained yet will start
        self.states: dict[str, dict] = {}  # the checkpoints process 0 read to plan, until their lines start
        # set from each plan before any line trains; run_row by _plan, on process 0 only
        self.settings: TrainingSettings
        self.run_row: Run
        self.writer = None
        if options.tensorboard is not None and self.dist.main:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                raise TrainerError("--tensorboard needs the tensorboard package: pip install tensorboard") from None
            self.writer = SummaryWriter(str(options.tensorboard))

    # --- the loop --------------------------------------------------------------------------------------------
    def run(self) -> None:
        try:
            while True:
                plan = self.dist.broadcast(self._next_plan() if self.dist.main else None)
                if plan is None:  # stopped
                    break
                self.settings = plan.settings
                for item in plan.work:
                    line = self._line(item)
                    if self.dist.any(self.stop.is_set()):
                        break
                    self._train_chunk(line, replace(item.chunk))  # the plan's chunk stays as planned
                if self.dist.any(self.stop.is_set()):
                    break
                if not plan.work:
                    if self.options.once:
                        break
                    if self.dist.main:
                        self.stop.wait(self.options.poll_seconds)
        finally:
            if self.dist.main:
                self._stopped()
            if self.writer is not None:
                self.writer.close()

    def _next_plan(self) -> Plan | None:
        """:meth:`_plan`, waiting for the database while it cannot be reached (with ``--once`` for
        ``PLAN_ATTEMPTS`` looks); None when stopped meanwhile."""
        failures = 0
        while True:
            try:
                return self._plan()
            except (OperationalError, InterfaceError) as e:
                failures += 1
                reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                if self.options.once and failures >= PLAN_ATTEMPTS:
                    raise TrainerError(f"the database cannot be reached ({reason}); {failures} attempts") from None
                log.warning(
                    "the database cannot be reached (%s); trying again in %g s", reason, self.options.poll_seconds
                )
                if self.stop.wait(self.options.poll_seconds):
                    return None

    def _plan(self) -> Plan | None:
        """What to train now (process 0; None when stopped): the run's state read, planned
        (``server.training.plan``), and the lines that wait say so on their rows."""
        if self.stop.is_set():
            return None
        if not connection.in_atomic_block:  # (a test's transaction is left alone)
            close_old_connections()  # those that broke (a restarted database) or outlived CONN_MAX_AGE
        run = Run.objects.filter(name=self.options.run).first()
        if run is None:
            raise TrainerError(f"there is no run {self.options.run!r}")
        self.run_row = run
        version = run.current_settings()
        assert version is not None, "create_run gives a run its settings as it makes it"
        settings = version.settings.training
        counts = row_counts(run)
        total = counts.total
        rows = {row.architecture: row for row in self._sync_lines(run, settings, total)}
        lines = [self._line_state(run, row) for row in rows.values()]
        wanted = needs_window(settings, total, self.dist.world, lines)
        window = training_window(run, settings, counts) if wanted else None
        plan = plan_training(run.name, settings, total, self.dist.world, lines, window)
        for waiting in plan.waiting:
            self._update(
                rows[waiting.architecture],
                status=TrainingLine.Status.IDLE,
                status_note=waiting.note,
                rows_total=total,
                samples=waiting.samples,
            )
        return plan

    def _line_state(self, run: Run, row: TrainingLine) -> LineState:
        """A line as the plan needs it: from its trainer here, or (read once, as a checkpoint may be
        large, until the trainer exists) from how the trainer will start."""
        self.seen.add(row.architecture)
        line = self.lines.get(row.architecture)
        if line is not None:
            return LineState(row.architecture, row.rows_at_start, line.trainer.samples, line.chunk, None)
        start = self.starts.get(row.architecture) or self._start_of(run, row)
        self.starts[row.architecture] = start
        chunk = start.chunk if isinstance(start, FromCheckpoint) else None
        return LineState(row.architecture, row.rows_at_start, start.samples, chunk, start)

    def _sync_lines(self, run: Run, settings: TrainingSettings, total: int) -> list[TrainingLine]:
        """The run's lines named by its settings (made when new: the first is current, a later one
        next, beginning at the ``total`` rows counted now), retired ones left out, only
        ``--architecture``'s if given."""
        wanted = [settings.architecture] + ([settings.next_architecture] if settings.next_architecture else [])
        if self.options.architecture:
            if self.options.architecture not in wanted:
                raise TrainerError(
                    f"run {run.name}'s settings train {' and '.join(wanted)}, not {self.options.architecture}"
                )
            wanted = [self.options.architecture]
        rows = {row.architecture: row for row in TrainingLine.objects.filter(run=run)}
        for arch in wanted:
            if arch not in rows:
                has_current = any(r.role == TrainingLine.Role.CURRENT for r in rows.values())
                role = TrainingLine.Role.NEXT if has_current else TrainingLine.Role.CURRENT
                start = total if has_current else 0
                rows[arch], created = TrainingLine.objects.get_or_create(
                    run=run, architecture=arch, defaults={"role": role, "rows_at_start": start}
                )
                if created and start:
                    log.info(
                        "%s: a new line alongside; its budget counts the rows from the %d the run has now", arch, start
                    )
        return [rows[a] for a in wanted if rows[a].role != TrainingLine.Role.RETIRED]

    def _checkpoint_path(self, architecture: str) -> Path:
        return self.options.checkpoints / self.options.run / f"{architecture}.ckpt"

    def _start_of(self, run: Run, row: TrainingLine) -> LineStart:
        """How every process starts a line's trainer: from its checkpoint, from its last export when
        the checkpoint is gone, or afresh."""
        path = self._checkpoint_path(row.architecture)
        if path.exists():
            state = read_checkpoint(path)
            self.states[row.architecture] = state  # the line's trainer starts from it, without reading it again
            log.info(
                "%s: found its checkpoint at %d samples (%s); training goes on from it",
                row.architecture,
                state["samples"],
                path,
            )
            return FromCheckpoint(state["samples"], Chunk.from_dict(state.get("extra", {}).get("chunk")))
        export = row.last_export
        if export is not None and export.file:
            log.warning(
                "%s: no checkpoint at %s; continuing from the last export %s (%d samples) with a fresh optimiser",
                row.architecture,
                path,
                export.name,
                export.train_step,
            )
            return FromExport(export.train_step, stored_name(export.file))
        if row.samples:
            log.warning(
                "%s: no checkpoint at %s and no export: the %d samples trained are lost; starting afresh",
                row.architecture,
                path,
                row.samples,
            )
        else:
            log.info("%s: a new line; it starts training once the run has the rows it needs", row.architecture)
        return Fresh()

    def _line(self, item: LineWork) -> Line:
        arch = item.architecture
        line = self.lines.get(arch)
        if line is None:
            trainer = Trainer(
                arch, self.settings, device=self.device, distributed=self.dist, seed=seed_of(self.options.run, arch)
            )
            line = Line(arch, trainer, self._checkpoint_path(arch))
            start = item.start
            assert start is not None, "the plan says how a line's trainer starts where there is none"
            if isinstance(start, FromCheckpoint):
                extra = trainer.load_checkpoint(line.checkpoint, self.states.pop(arch, None))
                line.chunk = Chunk.from_dict(extra.get("chunk"))
            elif isinstance(start, FromExport):
                trainer.start_from(decode_model(read_file(start.file), start.file).state_dict, start.samples)
            log.info("%s: %s at %d samples on %s", arch, start.said, trainer.samples, self.device)
            self.lines[arch] = line
        line.trainer.use_settings(self.settings)
        return line

    # --- a chunk ---------------------------------------------------------------------------------------------
    def _transform(self):
        return partial(to_tensors, pin=self.device.type == "cuda")

    def _train_chunk(self, line: Line, chunk: Chunk) -> None:
        trainer, world, rank = line.trainer, self.dist.world, self.dist.rank
        line.chunk = chunk = chunk.with_layout(self.settings)
        batch_size, shuffle_rows, symmetries = chunk.layout()
        layout = dict(
            block_rows=shuffle_rows,
            symmetries=symmetries,
            drop_last=True,
            transform=self._transform(),
            open_range=read_range,
        )
        # Each process reads its own share of the window (every byte once between them) and trains
        # on its batches in step with the others, as far as the smallest share goes; a window too
        # small to give each a batch is read whole by each, which takes every world-th batch of it.
        passes = ShuffledPass(chunk.files, read_file, batch_size, chunk.seed, rank=rank, world=world, **layout)
        if min(passes.process_batches()) > 0:
            usable = world * min(passes.process_batches())
            schedule = partial(passes.batches, chunk.next_batch // world)
        else:
            passes = ShuffledPass(chunk.files, read_file, batch_size, chunk.seed, **layout)
            usable = passes.num_batches - passes.num_batches % world
            schedule = partial(passes.batches, chunk.next_batch + rank, stride=world)
        row = self._row(line) if self.dist.main else None
        if row is not None:
            self._update(
                row,
                status=TrainingLine.Status.TRAINING,
                rows_total=chunk.total_rows,
                window_rows=chunk.window_rows,
                host=self.host,
                started_at=row.started_at or timezone.now(),
                status_note=f"training to {chunk.end_samples:,} samples on {chunk.window_rows:,} rows",
            )
        last_report = last_checkpoint = time.monotonic()
        report_samples = trainer.samples
        due = chunk.next_batch < usable and trainer.samples < chunk.end_samples
        taken = 0
        steps = Lockstep(self.dist, schedule() if due else (), self.stop.is_set)
        batches = iter(steps)
        try:
            for batch in batches:
                result = trainer.step(batch)
                chunk.next_batch += world
                taken += 1
                if not result.pop("skipped"):
                    for name, value in result.items():
                        line.losses[name] = line.losses.get(name, 0.0) + value
                    line.loss_steps += 1
                if trainer.export_due:
                    self._export(line, chunk)
                if trainer.samples >= chunk.end_samples or chunk.next_batch >= usable:
                    break
                now = time.monotonic()
                if row is not None and now - last_report >= self.options.report_seconds:
                    self._report(line, row, (trainer.samples - report_samples) / (now - last_report))
                    last_report, report_samples = now, trainer.samples
                if now - last_checkpoint >= self.options.checkpoint_seconds:
                    self._save(line)
                    last_checkpoint = now
        finally:
            batches.close()  # ends the reader thread: the counts of files read are final
        log.info(
            "%s: process %d of %d read %d bytes of training rows (%d files, %d of them from shards) in %d steps",
            line.architecture,
            rank,
            world,
            passes.read_bytes,
            passes.read_files,
            passes.read_packed,
            taken,
        )
        read_too_little = self._read_too_little(line, passes, due, taken, steps.stopped)
        if not steps.stopped:
            line.chunk = None
        if row is not None:
            elapsed = max(time.monotonic() - last_report, 1e-9)
            self._report(line, row, (trainer.samples - report_samples) / elapsed)
        self._save(line)
        if not steps.stopped and read_too_little:
            raise TrainerError(self._unreadable(line, passes, taken))

    def _read_too_little(self, line: Line, passes: ShuffledPass, due: bool, taken: int, stopped: bool) -> bool:
        """Whether a chunk's pass read too few of its files, in any process: most of those it read
        failed, or it was due and took no batch without being stopped. The failed files are logged."""
        skipped = passes.skipped_files
        if skipped:
            log.error(
                "%s: %d of the %d file(s) of the window read could not be read: %s",
                line.architecture,
                len(skipped),
                passes.read_files,
                ", ".join(skipped[:5]),
            )
        mostly_unreadable = 2 * len(skipped) > passes.read_files
        starved = due and taken == 0 and not stopped
        if due:  # every process trained (or not) in the same loop: they all ask
            mostly_unreadable, starved = self.dist.flags(mostly_unreadable, starved)
        return mostly_unreadable or starved

    @staticmethod
    def _unreadable(line: Line, passes: ShuffledPass, taken: int) -> str:
        """What went wrong with a chunk that could read too few of its files, and what to do."""
        skipped = passes.skipped_files
        trained = f"the chunk trained {taken} batches" if taken else "the chunk trained nothing"
        if not skipped:
            return (
                f"{line.architecture}: {trained}: another process could not read most of the window's files, "
                "or they hold fewer rows than the database records; its log names them"
            )
        shown = ", ".join(skipped[:5]) + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else "")
        return (
            f"{line.architecture}: {len(skipped)} of the {passes.read_files} training-row files read for this "
            f"chunk could not be read ({shown}), so {trained} (the log says why each failed). Make the file "
            "storage reachable (STORAGE_URL, or SENTE_DATA_DIR on this machine) or, for files that are lost, "
            "disable their games; then start the trainer again"
        )

    def _save(self, line: Line) -> None:
        extra = {"chunk": line.chunk.to_dict() if line.chunk is not None else None}
        line.trainer.save_checkpoint(line.checkpoint, extra)

    def _report(self, line: Line, row: TrainingLine, samples_per_s: float) -> None:
        trainer = line.trainer
        if not line.loss_steps:
            return
        losses = {name: total / line.loss_steps for name, total in line.losses.items()}
        losses["samples_per_s"] = samples_per_s
        if trainer.skipped_steps:
            losses["skipped_steps"] = trainer.skipped_steps
        line.losses, line.loss_steps = {}, 0
        self._update(row, samples=trainer.samples, losses={k: round(v, 6) for k, v in losses.items()})
        main = ", ".join(f"{k} {losses[k]:.4g}" for k in ("policy", "value", "ownership", "score_pdf") if k in losses)
        log.info(
            "%s: %d samples, %.0f samples/s, learning rate %.3g per sample: loss %.4g (%s)",
            line.architecture,
            trainer.samples,
            samples_per_s,
            losses["learning_rate"],
            losses["loss"],
            main,
        )
        if self.writer is not None:
            for name, value in losses.items():
                self.writer.add_scalar(f"{line.architecture}/{name}", value, trainer.samples)

    # --- exports ---------------------------------------------------------------------------------------------
    def _batches(self, files: list[RowFile], seed: int, symmetries: bool):
        settings = self.settings
        return ShuffledPass(
            files,
            read_file,
            min(settings.batch_size, VALIDATION_BATCH),
            seed,
            block_rows=settings.shuffle_rows,
            symmetries=symmetries,
            transform=self._transform(),
            open_range=read_range,
        ).batches()

    def _export(self, line: Line, chunk: Chunk) -> None:
        """Export the line's weight average (process 0; the others wait)."""
        trainer = line.trainer
        if self.dist.main:
            row = self._row(line)
            self._update(
                row, status=TrainingLine.Status.EXPORTING, status_note=f"exporting at {trainer.samples:,} samples"
            )
            norm = itertools.islice(
                self._batches(chunk.files, chunk.seed ^ 0x5EED, bool(chunk.symmetries)), NORM_BATCHES
            )
            model = trainer.export_model(norm)
            held_out = validation_files(self.run_row, self.settings)
            validation = evaluate(model, self._batches(held_out, 0, False), self.device) if held_out else {}
            row.refresh_from_db()
            candidate = row.role == TrainingLine.Role.CURRENT
            if row.role == TrainingLine.Role.NEXT:
                candidate = self._overtakes(row, validation, held_out)
            fields: dict[str, Any] = {
                "validation": {k: round(v, 6) for k, v in validation.items()},
                "status": TrainingLine.Status.TRAINING,
                "status_note": "",
            }
            if candidate:
                network = self._register(row, model, chunk)
                fields["last_export"] = network
                if row.last_export_id != network.pk:  # not a re-export of the one counted already
                    fields["exports"] = row.exports + 1
            self._update(row, **fields)
        trainer.exported()
        self._save(line)
        self.dist.barrier()

    def _overtakes(self, row: TrainingLine, validation: dict, held_out: list[RowFile]) -> bool:
        """Whether the next line's export predicts the held-out rows better than the current line's
        last export; if so, the lines change roles."""
        current = (
            TrainingLine.objects.filter(run=row.run, role=TrainingLine.Role.CURRENT)
            .select_related("last_export")
            .first()
        )
        if current is None:
            takes_over = True
            reason = "the run has no current line"
        elif current.last_export is None or not current.last_export.file:
            log.info("%s: not compared yet: the current line %s has no export", row.architecture, current.architecture)
            return False
        elif not validation.get("rows"):
            log.info("%s: not compared: the run has no held-out rows yet", row.architecture)
            return False
        else:
            theirs = evaluate(self._stored_model(current.last_export), self._batches(held_out, 0, False), self.device)
            ours_loss = sum(validation[k] for k in PREDICTIVE_TERMS)
            theirs_loss = sum(theirs[k] for k in PREDICTIVE_TERMS)
            takes_over = ours_loss < theirs_loss
            reason = (
                f"held-out policy + value loss {ours_loss:.4f} against {theirs_loss:.4f} of {current.last_export.name}"
            )
        log.info("%s %s: %s", row.architecture, "takes over" if takes_over else "does not take over yet", reason)
        if takes_over:
            with transaction.atomic():
                TrainingLine.objects.filter(run=row.run, role=TrainingLine.Role.CURRENT).update(
                    role=TrainingLine.Role.RETIRED,
                    status=TrainingLine.Status.IDLE,
                    status_note=f"overtaken by {row.architecture}: {reason}",
                    updated_at=timezone.now(),
                )
                TrainingLine.objects.filter(pk=row.pk).update(role=TrainingLine.Role.CURRENT)
            row.role = TrainingLine.Role.CURRENT
        return takes_over

    def _stored_model(self, network: Network) -> Model:
        """A stored network, on this trainer's device (read through the file storage, which may be
        object storage: ``common.nn.modelfile.load_model`` reads only paths)."""
        name = stored_name(network.file)
        return model_of(decode_model(read_file(name), name), self.device)

    def _register(self, row: TrainingLine, model, chunk: Chunk) -> Network:
        """The export as a candidate network of the run."""
        trainer = self.lines[row.architecture].trainer
        run = self.run_row
        name = f"{run.name}-{row.architecture}-s{trainer.samples}-d{chunk.total_rows}"
        if len(name) > 64:
            name = f"{run.name}-{row.architecture}-s{trainer.samples}"
        existing = Network.objects.filter(name=name, run=run).first()
        if existing is not None:  # exported before a crash that came before the next checkpoint
            log.info("%s: %s was exported already", row.architecture, name)
            return existing
        data = encode_model(model.config, model.state_dict(), name)
        parent = row.last_export or run.selfplay_network()
        notes = (
            f"exported by the trainer on {self.host} after {trainer.samples:,} training samples; "
            f"weights averaged over {trainer.snapshots} snapshots"
        )
        try:
            network = store_network(
                run=run,
                name=name,
                content=ContentFile(data),
                size=len(data),
                sha256=hashlib.sha256(data).hexdigest(),
                config=model.config,
                parent=parent,
                train_step=trainer.samples,
                rows_seen=chunk.total_rows,
                notes=notes,
            )
        except IntegrityError:
            network = Network.objects.get(name=name)
        log.info(
            "%s: exported %s (parent %s) as a candidate",
            row.architecture,
            network.name,
            parent.name if parent else "none",
        )
        return network

    # --- the line's row ----------------------------------------------------------------------------------------
    def _row(self, line: Line) -> TrainingLine:
        return TrainingLine.objects.get(run__name=self.options.run, architecture=line.architecture)

    def _update(self, row: TrainingLine, **fields) -> None:
        fields["updated_at"] = timezone.now()
        for name, value in fields.items():
            setattr(row, name, value)
        TrainingLine.objects.filter(pk=row.pk).update(**fields)

    def _stopped(self) -> None:
        try:
            self._mark_stopped()
        except DatabaseError as e:  # (the reason the trainer stops, say)
            log.error("could not mark the lines stopped: %s", e)

    def _mark_stopped(self) -> None:
        for row in TrainingLine.objects.filter(run__name=self.options.run, architecture__in=self.seen):
            fields: dict[str, Any] = {
                "status": TrainingLine.Status.STOPPED,
                "status_note": "the trainer stopped; it continues from its checkpoint when started again",
            }
            if row.status == TrainingLine.Status.IDLE and row.status_note:
                fields["status_note"] = f"the trainer stopped, {row.status_note}"[:200]
            if row.architecture in self.lines:
                fields["samples"] = self.lines[row.architecture].trainer.samples
            self._update(row, **fields)
