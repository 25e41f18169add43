"""What the trainer trains next: per line, a chunk of samples on the run's window, or a note saying
what it waits for. Plain values in, a plain plan out: the trainer (``server.training.worker``) reads
the database and the checkpoints, and acts on the plan."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, ClassVar, TypeAlias

from common.data.loader import RowFile
from common.settings import TrainingSettings

if TYPE_CHECKING:
    from server.training.window import Window

MIN_CHUNK_STEPS = 10  # a chunk waits until the data allows this many steps


@dataclass
class Chunk:
    """At most one pass over a window, as planned when it started (so a resumed trainer goes on
    with the same batches: the layout settings are the chunk's, not the run's newest; a chunk of an
    older trainer that did not record them takes the run's)."""

    seed: int
    files: list[RowFile]
    end_samples: int
    total_rows: int  # the rows the run counted when it was planned (every row)
    window_rows: int
    next_batch: int = 0
    batch_size: int | None = None
    shuffle_rows: int | None = None
    symmetries: bool | None = None

    def with_layout(self, settings: TrainingSettings) -> Chunk:
        """The chunk with its batch layout filled in from ``settings`` where it has none."""
        for name in ("batch_size", "shuffle_rows", "symmetries"):
            if getattr(self, name) is None:
                setattr(self, name, getattr(settings, name))
        return self

    def layout(self) -> tuple[int, int, bool]:
        """(batch_size, shuffle_rows, symmetries), once :meth:`with_layout` has filled them in."""
        batch_size, shuffle_rows, symmetries = self.batch_size, self.shuffle_rows, self.symmetries
        assert batch_size is not None and shuffle_rows is not None and symmetries is not None, "call with_layout first"
        return batch_size, shuffle_rows, symmetries

    def to_dict(self) -> dict:
        d = asdict(self)
        d["files"] = [
            [f.name, f.rows, f.shard, f.offset, f.length] if f.shard else [f.name, f.rows] for f in self.files
        ]
        return d

    @classmethod
    def from_dict(cls, d: dict | None) -> Chunk | None:
        if not d:
            return None
        return cls(**{**d, "files": [RowFile(*f) for f in d["files"]]})  # [name, rows] or with its shard's place


@dataclass(frozen=True)
class FromCheckpoint:
    """A line's trainer starts from its checkpoint, in the chunk it was in."""

    samples: int
    chunk: Chunk | None
    said: ClassVar[str] = "resumed from its checkpoint"


@dataclass(frozen=True)
class FromExport:
    """A line's trainer starts from the line's last export (its checkpoint is gone), in no chunk."""

    samples: int
    file: str  # the stored network
    said: ClassVar[str] = "continued from its last export"


@dataclass(frozen=True)
class Fresh:
    """A line's trainer starts afresh."""

    samples: int = 0
    said: ClassVar[str] = "started afresh"


# How every process starts the trainer of a line that has none.
LineStart: TypeAlias = FromCheckpoint | FromExport | Fresh


@dataclass(frozen=True)
class LineState:
    """A line as the plan sees it."""

    architecture: str
    rows_at_start: int  # the rows the run counted when the line began (every row)
    samples: int  # trained so far
    chunk: Chunk | None  # the chunk it is in, if any
    start: LineStart | None  # how its trainer starts (None: it has one)


@dataclass(frozen=True)
class LineWork:
    """A line with a chunk to train."""

    architecture: str
    start: LineStart | None  # as in its LineState
    chunk: Chunk


@dataclass(frozen=True)
class LineWait:
    """A line with nothing to train yet, and why."""

    architecture: str
    samples: int
    note: str


@dataclass(frozen=True)
class Plan:
    """What to train now with these settings."""

    settings: TrainingSettings
    work: tuple[LineWork, ...]
    waiting: tuple[LineWait, ...]


def budget(settings: TrainingSettings, total: int, rows_at_start: int) -> int:
    """The training samples a line may have seen: ``samples_per_row`` for each row the run counted
    since the line began. Every row counts, those of the random network too: the cap on them shapes
    only the window (``server.training.window``), so a line goes on training while the random network
    plays on, say while the first candidate waits for its gating."""
    return int(settings.samples_per_row * max(0, total - rows_at_start))


def chunk_samples(samples: int, budget: int, step: int, export_every: int) -> int:
    """How many samples to train now, in whole steps (0: wait for data): what the budget allows,
    rounded up to a step; fewer than ``MIN_CHUNK_STEPS`` steps only when they reach the next export
    (which a budget of exactly one export interval must reach)."""
    remaining = budget - samples
    if remaining <= 0:
        return 0
    steps = -(-remaining // step)
    next_export = (samples // export_every + 1) * export_every
    if steps < MIN_CHUNK_STEPS and samples + steps * step < next_export:
        return 0
    return steps * step


def seed_of(*parts: object) -> int:
    """A seed that follows from the parts (the same on every machine and in every process)."""
    return zlib.crc32("/".join(str(p) for p in parts).encode())


def _due(settings: TrainingSettings, total: int, world: int, line: LineState) -> int:
    """The samples a line without a chunk may train now (0: none)."""
    allowed = budget(settings, total, line.rows_at_start)
    return chunk_samples(line.samples, allowed, settings.batch_size * world, settings.export_every)


def needs_window(settings: TrainingSettings, total: int, world: int, lines: Sequence[LineState]) -> bool:
    """Whether :func:`plan_training` needs the run's window: a line may start a chunk."""
    return total >= settings.window_c and any(
        line.chunk is None and _due(settings, total, world, line) for line in lines
    )


def plan_training(
    run: str,
    settings: TrainingSettings,
    total: int,
    world: int,
    lines: Sequence[LineState],
    window: Window | None,
) -> Plan:
    """What the lines of run ``run`` train now, with ``total`` rows counted (every row:
    ``RowCounts.total``) and ``world`` processes sharing each step: a line in a chunk goes on with
    it, any other starts one or waits (see :func:`_new_chunk`). ``window`` is the run's training
    window, None only when :func:`needs_window` says it is not needed."""
    work: list[LineWork] = []
    waiting: list[LineWait] = []
    for line in lines:
        chunk = line.chunk if line.chunk is not None else _new_chunk(run, settings, total, world, line, window)
        if isinstance(chunk, Chunk):
            work.append(LineWork(line.architecture, line.start, chunk))
        else:
            waiting.append(LineWait(line.architecture, line.samples, chunk))
    return Plan(settings, tuple(work), tuple(waiting))


def _new_chunk(
    run: str, settings: TrainingSettings, total: int, world: int, line: LineState, window: Window | None
) -> Chunk | str:
    """A line's next chunk, or what it waits for (as a note for its row): the first window, samples
    that its budget allows, or a window that holds a step."""
    if total < settings.window_c:
        return f"waiting for data: {total:,} of the {settings.window_c:,} rows training starts with"
    now = _due(settings, total, world, line)
    if not now:
        allowed = budget(settings, total, line.rows_at_start)
        since = f" since the line began at {line.rows_at_start:,}" if line.rows_at_start else ""
        return (
            f"waiting for data: {line.samples:,} samples trained, {allowed:,} allowed by "
            f"{total - line.rows_at_start:,} rows{since} at {settings.samples_per_row:g} per row"
        )
    if window is None:
        raise ValueError(f"{line.architecture} may train {now:,} samples: planning it needs the window")
    step = settings.batch_size * world
    if window.rows < step:
        return f"waiting for data: the window holds {window.rows:,} rows, less than a step's {step:,}"
    return Chunk(
        seed=seed_of(run, line.architecture, line.samples),
        files=window.files,
        end_samples=line.samples + min(now, window.rows),
        total_rows=total,
        window_rows=window.rows,
        batch_size=settings.batch_size,
        shuffle_rows=settings.shuffle_rows,
        symmetries=settings.symmetries,
    )
