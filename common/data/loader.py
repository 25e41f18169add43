"""Shuffled batches of training rows, streamed from npz files without holding the window in memory.

A pass over a window (files with their row counts) goes like this: the window is cut into reads,
a file alone, or a run of neighbouring files of one shard fetched in one ranged read (at most an
eighth of a block's rows, so that a block mixes rows of at least eight places in the window); the
reads are put in a random order, cut in that order into blocks of at least ``block_rows`` rows, and
each block's rows are shuffled; the pass is the shuffled blocks one after the other, cut into
batches. Every row comes exactly once per pass, and a batch mixes rows of the many games of its
block (a block of 100,000 rows holds well over a thousand games). This is a shuffle buffer with a
fixed schedule: where batch ``k`` of a pass starts follows from the row counts alone, so a trainer
resumed at batch ``k`` reads only the block it resumes in, and the same seed gives the same batches.

A background thread assembles the next batches while the caller trains on the current one, and
``readers`` threads read and decode the next block's files meanwhile (decompression and numpy's
copies release the GIL; ``common.data.npz`` inflates each array in one call): on object storage each
read is a request that waits a round trip, and one file after another a block of thousands of games
waited thousands of them. The memory held is two blocks' rows, whatever the window's size.

Each batch is cropped to the largest board in it: rows sit in the top-left corner of the 19x19 data
grid, and a 9x9 batch computed on a 9x9 tensor costs a fifth of one on 19x19. Board masks are input
channel 0; everything off the board is zero in the inputs and the targets. With ``symmetries``,
each row is turned by one of the 8 symmetries of the square (inputs, policy targets and ownership
together); a board smaller than the crop may then sit in another corner, which the masked network
does not tell apart.

Only numpy here: the trainer turns batches into tensors through the ``transform`` it passes.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from common.data.npz import read_arrays
from common.data.schema import (
    DATA_AREA,
    DATA_LEN,
    NUM_GLOBAL_INPUTS,
    NUM_GLOBAL_TARGETS,
    NUM_SPATIAL_INPUTS,
    PACKED_LEN,
    POLICY_LEN,
    SCORE_DISTR_LEN,
    VT_OWNERSHIP,
)
from common.data.symmetry import NUM_SYMMETRIES, turn

log = logging.getLogger(__name__)

READERS = 16  # reads of a block made at once: a round trip each on object storage
DECODERS = max(1, min(4, os.cpu_count() or 1))  # of them, decoding their files at once
UNITS_PER_BLOCK = 8  # a block mixes rows of at least this many places of the window (a shard's run each)
GAP_BYTES = 1 << 20  # bytes not in the window a ranged read of a shard reads through rather than cut

_NPZ_ARRAYS = (
    "binaryInputNCHWPacked",
    "globalInputNC",
    "policyTargetsNCMove",
    "globalTargetsNC",
    "scoreDistrN",
    "valueTargetsNCHW",
)


@dataclass(frozen=True)
class RowFile:
    """One npz file of a window: the name ``open_file`` reads it by, and the rows it holds; for a
    file packed into a shard, also the shard's name and where the file lies in it, so that it is
    read with its neighbours in one ranged read of the shard."""

    name: str
    rows: int
    shard: str = ""  # "": read by its name alone
    offset: int = 0
    length: int = 0


@dataclass(frozen=True)
class _Unit:
    """What one read fetches: a file alone, or a run of one shard's files in their order there
    (one ranged read of the shard, from the first's start to the last's end)."""

    files: tuple[RowFile, ...]

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)

    @property
    def span(self) -> tuple[int, int]:
        return self.files[0].offset, self.files[-1].offset + self.files[-1].length


def units(files: Sequence[RowFile], unit_rows: int, gap_bytes: int = GAP_BYTES) -> list[_Unit]:
    """The reads that fetch ``files``: each file by its name alone, and the files packed into a shard
    in runs of at most ``unit_rows`` rows (never less than one file) of neighbours in the shard, a
    run cut where more than ``gap_bytes`` not in the window lie between two of its files. Unpacked
    files first, in the order given, then the shards' runs, by shard name and offset."""
    out = [_Unit((f,)) for f in files if not f.shard]
    by_shard: dict[str, list[RowFile]] = {}
    for f in files:
        if f.shard:
            by_shard.setdefault(f.shard, []).append(f)
    for shard in sorted(by_shard):
        run: list[RowFile] = []
        held = 0
        for f in sorted(by_shard[shard], key=lambda f: f.offset):
            gap = f.offset - (run[-1].offset + run[-1].length) if run else 0
            if run and (held + f.rows > unit_rows or gap > gap_bytes):
                out.append(_Unit(tuple(run)))
                run, held = [], 0
            run.append(f)
            held += f.rows
        if run:
            out.append(_Unit(tuple(run)))
    return out


@dataclass
class Batch:
    """Rows cropped to a ``side`` x ``side`` grid (the largest board among them), side to move."""

    spatial: np.ndarray  # float32 [B, 22, side, side]; channel 0 is the board mask
    global_inputs: np.ndarray  # float32 [B, 19]
    policy: np.ndarray  # int16 [B, 2, side*side+1]: this turn's and the next turn's targets; pass last
    global_targets: np.ndarray  # float32 [B, 80]
    score_distribution: np.ndarray  # int8 [B, 842]
    ownership: np.ndarray  # int8 [B, side, side] (valueTargetsNCHW channel 0)

    @property
    def size(self) -> int:
        return int(self.spatial.shape[0])

    @property
    def side(self) -> int:
        return int(self.spatial.shape[-1])

    def rows(self) -> dict[str, np.ndarray]:
        """The targets under KataGo's array names (``common.nn.loss.targets_from_rows`` reads them)."""
        return {
            "policyTargetsNCMove": self.policy,
            "globalTargetsNC": self.global_targets,
            "scoreDistrN": self.score_distribution,
            "valueTargetsNCHW": self.ownership[:, None],
        }


@dataclass
class _Rows:
    """Decoded rows as the loader keeps them (packed inputs, ownership only) with each row's board side."""

    packed: np.ndarray
    global_inputs: np.ndarray
    policy: np.ndarray
    global_targets: np.ndarray
    score_distribution: np.ndarray
    ownership: np.ndarray
    sides: np.ndarray

    def __len__(self) -> int:
        return int(self.packed.shape[0])

    @classmethod
    def concat(cls, parts: Sequence[_Rows]) -> _Rows:
        if len(parts) == 1:
            return parts[0]
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in cls.__dataclass_fields__))

    def take(self, idx: np.ndarray) -> _Rows:
        return _Rows(*(getattr(self, f)[idx] for f in self.__dataclass_fields__))


def decode_rows(data: bytes, name: str = "<bytes>") -> _Rows:
    """The arrays of one npz file that training needs; ValueError names the file and the problem."""
    if not data.startswith(b"PK"):
        raise ValueError(f"training rows {name}: cannot be read: not an npz (zip) file")
    try:
        arrays = read_arrays(data, _NPZ_ARRAYS)
    except Exception as e:  # a broken zip or npy header
        raise ValueError(f"training rows {name}: cannot be read ({type(e).__name__}: {e})") from None
    missing = [a for a in _NPZ_ARRAYS if a not in arrays]
    if missing:
        raise ValueError(f"training rows {name}: lacks array(s) {', '.join(missing)}")
    n = arrays["globalTargetsNC"].shape[0]
    shapes = {
        "binaryInputNCHWPacked": (n, NUM_SPATIAL_INPUTS, PACKED_LEN),
        "globalInputNC": (n, NUM_GLOBAL_INPUTS),
        "policyTargetsNCMove": (n, 2, POLICY_LEN),
        "scoreDistrN": (n, SCORE_DISTR_LEN),
    }
    for a, shape in shapes.items():
        if arrays[a].shape != shape:
            raise ValueError(f"training rows {name}: {a} has shape {arrays[a].shape}, expected {shape}")
    targets = arrays["globalTargetsNC"]
    if targets.ndim != 2 or targets.shape[1] > NUM_GLOBAL_TARGETS:
        raise ValueError(f"training rows {name}: globalTargetsNC has shape {targets.shape}")
    if targets.shape[1] < NUM_GLOBAL_TARGETS:  # KataGo's format before v1.17 has 64 channels
        targets = np.pad(targets, ((0, 0), (0, NUM_GLOBAL_TARGETS - targets.shape[1])))
    value = arrays["valueTargetsNCHW"]
    if value.ndim != 4 or value.shape[0] != n or value.shape[2:] != (DATA_LEN, DATA_LEN):
        raise ValueError(f"training rows {name}: valueTargetsNCHW has shape {value.shape}")
    packed = arrays["binaryInputNCHWPacked"]
    return _Rows(
        packed=packed,
        global_inputs=arrays["globalInputNC"].astype(np.float32, copy=False),
        policy=arrays["policyTargetsNCMove"].astype(np.int16, copy=False),
        global_targets=targets.astype(np.float32, copy=False),
        score_distribution=arrays["scoreDistrN"].astype(np.int8, copy=False),
        ownership=np.ascontiguousarray(value[:, VT_OWNERSHIP]).astype(np.int8, copy=False),
        sides=_board_sides(packed, name),
    )


def _board_sides(packed: np.ndarray, name: str) -> np.ndarray:
    """Each row's board side: the larger of its mask's height and width (boards sit top-left)."""
    masks = packed[:, 0]
    if len(masks) > 1 and (masks == masks[0]).all():  # one game's rows: one board, measured once
        return np.repeat(_board_sides(packed[:1], name), len(masks))
    mask = np.unpackbits(masks, axis=-1, count=DATA_AREA).reshape(-1, DATA_LEN, DATA_LEN).astype(bool)
    rows_used = np.any(mask, axis=2)
    cols_used = np.any(mask, axis=1)
    if not rows_used.any(axis=1).all():
        raise ValueError(f"training rows {name}: a row has an empty board mask (input channel 0)")
    height = DATA_LEN - np.argmax(rows_used[:, ::-1], axis=1)
    width = DATA_LEN - np.argmax(cols_used[:, ::-1], axis=1)
    return np.maximum(height, width).astype(np.int8)


def make_batch(rows: _Rows, rng: np.random.Generator | None) -> Batch:
    """Unpack, crop to the largest board and (with ``rng``) turn each row by a random symmetry."""
    n = len(rows)
    side = int(rows.sides.max())
    planes = np.unpackbits(rows.packed, axis=-1, count=DATA_AREA).reshape(n, NUM_SPATIAL_INPUTS, DATA_LEN, DATA_LEN)
    planes = planes[:, :, :side, :side]
    policy_board = rows.policy[:, :, :DATA_AREA].reshape(n, 2, DATA_LEN, DATA_LEN)[:, :, :side, :side]
    ownership = rows.ownership[:, :side, :side]
    if rng is not None:
        planes, policy_board, ownership = planes.copy(), policy_board.copy(), ownership.copy()
        symmetries = rng.integers(0, NUM_SYMMETRIES, n)
        for s in range(1, NUM_SYMMETRIES):
            chosen = np.flatnonzero(symmetries == s)
            if chosen.size:
                planes[chosen] = turn(planes[chosen], s)
                policy_board[chosen] = turn(policy_board[chosen], s)
                ownership[chosen] = turn(ownership[chosen], s)
    policy = np.concatenate((policy_board.reshape(n, 2, side * side), rows.policy[:, :, DATA_AREA:]), axis=2)
    return Batch(
        spatial=planes.astype(np.float32),
        global_inputs=rows.global_inputs,
        policy=policy,
        global_targets=rows.global_targets,
        score_distribution=rows.score_distribution,
        ownership=np.ascontiguousarray(ownership),
    )


class ShuffledPass:
    """One pass over ``files`` in shuffled batches of ``batch_size`` rows (see the module docstring).

    Of ``world`` processes training together, process ``rank`` reads and yields only its share of
    the pass: the reads go in the pass's order each to the process with the fewest rows so far, so
    that every byte of the window is read once by one process (``read_bytes`` counts this one's) and
    the shares differ by at most one read's rows (``process_batches``: every share's batches).

    ``open_file(name)`` returns a file's bytes, ``open_range(name, offset, length)`` that many bytes
    of a shard from ``offset`` (needed when files are in shards); both are called from up to
    ``readers`` threads at once. The pass reads in units (:func:`units`): a file alone, or a run of
    at most ``unit_rows`` rows (default: a ``UNITS_PER_BLOCK``-th of a block) of one shard's files in
    one ranged read, so that a block still mixes rows of many places in the window.
    A file that cannot be read or decoded is logged and skipped (its rows are missing from the pass;
    ``skipped_files`` names them, ``read_files`` counts the files the pass tried to read, and
    ``read_packed`` those of them in shards). The rows
    are the same, in the same order, whatever ``readers`` is. ``transform`` is
    applied to each :class:`Batch` in the background thread (e.g. to make tensors); ``prefetch``
    batches are made ahead. ``drop_last`` leaves out the last, smaller batch.
    """

    def __init__(
        self,
        files: Sequence[RowFile],
        open_file: Callable[[str], bytes],
        batch_size: int,
        seed: int,
        block_rows: int = 100_000,
        symmetries: bool = True,
        drop_last: bool = False,
        transform: Callable[[Batch], object] | None = None,
        prefetch: int = 4,
        readers: int = READERS,
        open_range: Callable[[str, int, int], bytes] | None = None,
        unit_rows: int | None = None,
        rank: int = 0,
        world: int = 1,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if block_rows < 1:
            raise ValueError(f"block_rows must be positive, got {block_rows}")
        if readers < 1:
            raise ValueError(f"readers must be positive, got {readers}")
        if not 0 <= rank < world:
            raise ValueError(f"rank {rank} of {world} processes: must be 0 to {world - 1}")
        self.readers = readers
        # Reads wait on storage, decoding on the CPU: more decoders than cores only fight over the GIL.
        self._decoding = threading.BoundedSemaphore(min(readers, DECODERS))
        self.files = list(files)
        self.open_file = open_file
        self.open_range = open_range
        if open_range is None and any(f.shard for f in self.files):
            raise ValueError("files in shards need open_range")
        self.batch_size = batch_size
        self.seed = seed
        self.symmetries = symmetries
        self.drop_last = drop_last
        self.transform = transform
        self.prefetch = max(1, prefetch)
        self.skipped_files: list[str] = []
        self.read_files = 0
        self.read_packed = 0  # of them, files read from their shard
        self.read_bytes = 0
        reads = units(self.files, unit_rows or max(1, block_rows // UNITS_PER_BLOCK))
        order = [int(i) for i in np.random.default_rng([seed, 0]).permutation(len(reads))]
        # Each read to the process with the fewest rows so far (the lowest rank among equals), in the
        # pass's order: each reads its share alone, and the shares differ by at most one read's rows.
        self.process_rows = [0] * world
        mine: list[int] = []
        for i in order:
            owner = self.process_rows.index(min(self.process_rows))
            self.process_rows[owner] += reads[i].rows
            if owner == rank:
                mine.append(i)
        self.blocks: list[list[_Unit]] = []
        block: list[_Unit] = []
        held = 0
        for i in mine:
            block.append(reads[i])
            held += reads[i].rows
            if held >= block_rows:
                self.blocks.append(block)
                block, held = [], 0
        if block:
            self.blocks.append(block)
        self.block_starts = np.concatenate(([0], np.cumsum([sum(u.rows for u in b) for b in self.blocks])))

    @property
    def num_rows(self) -> int:
        return int(self.block_starts[-1])

    @property
    def num_batches(self) -> int:
        """This process's batches: of its share of the pass (the whole pass in one process)."""
        return self._batches_of(self.num_rows)

    def process_batches(self) -> list[int]:
        """The batches of every process's share, by rank."""
        return [self._batches_of(rows) for rows in self.process_rows]

    def _batches_of(self, rows: int) -> int:
        full, rest = divmod(rows, self.batch_size)
        return full + (1 if rest and not self.drop_last else 0)

    def batches(self, start: int = 0, stride: int = 1) -> Iterator[object]:
        """The pass's batches ``start``, ``start + stride``, ... (transformed), made in a background
        thread (process r of n training together takes ``start + r`` with stride n)."""
        if stride < 1:
            raise ValueError(f"stride must be positive, got {stride}")
        items: queue.Queue = queue.Queue(maxsize=self.prefetch)
        stop = threading.Event()
        done = object()

        def put(item) -> bool:
            while not stop.is_set():
                try:
                    items.put(item, timeout=0.1)
                    return True
                except queue.Full:
                    continue
            return False

        def produce() -> None:
            try:
                for batch in self._batches(start, stride):
                    if not put(batch if self.transform is None else self.transform(batch)):
                        return
                put(done)
            except BaseException as e:  # handed to the consumer, which raises it
                put(e)

        thread = threading.Thread(target=produce, name="training-rows", daemon=True)
        thread.start()
        try:
            while True:
                item = items.get()
                if item is done:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()
            thread.join()

    # --- the schedule, in the calling thread's terms ---------------------------------------------------
    def _read(self, unit: _Unit) -> tuple[int, list[_Rows | Exception]]:
        """The bytes read for the unit, and each of its files decoded or the reason it could not be."""
        if not unit.files[0].shard:
            f = unit.files[0]
            try:
                data = self.open_file(f.name)
            except Exception as e:
                return 0, [e]
            try:
                with self._decoding:
                    return len(data), [decode_rows(data, f.name)]
            except Exception as e:
                return len(data), [e]
        assert self.open_range is not None
        start, end = unit.span
        try:
            data = self.open_range(unit.files[0].shard, start, end - start)
        except Exception as e:
            return 0, [e] * len(unit.files)
        if len(data) != end - start:
            problem = ValueError(f"{unit.files[0].shard}: {len(data)} bytes from {start}, {end - start} asked for")
            return len(data), [problem] * len(unit.files)
        out: list[_Rows | Exception] = []
        with self._decoding:
            for f in unit.files:
                try:
                    out.append(decode_rows(data[f.offset - start : f.offset - start + f.length], f.name))
                except Exception as e:
                    out.append(e)
        return len(data), out

    def _submit(self, pool: ThreadPoolExecutor, block: int) -> list[Future]:
        """Start the block's reads on the pool (each read's bytes and decoded files, in the block's order)."""
        return [pool.submit(self._read, unit) for unit in self.blocks[block]]

    def _collect(self, block: int, reads: list[Future]) -> _Rows | None:
        """The block's rows once its reads are done; None when none of its files could be read."""
        loaded = [read.result() for read in reads]
        files = [f for u in self.blocks[block] for f in u.files]
        self.read_bytes += sum(size for size, _ in loaded)
        parts = []
        for f, rows in zip(files, [r for _, part in loaded for r in part], strict=True):
            self.read_files += 1
            self.read_packed += bool(f.shard)
            if isinstance(rows, Exception):
                log.error("skipping training rows %s: %s", f.name, rows)
                self.skipped_files.append(f.name)
                continue
            if len(rows) != f.rows:
                log.warning("training rows %s hold %d rows, %d were recorded", f.name, len(rows), f.rows)
            parts.append(rows)
        return _Rows.concat(parts) if parts else None

    def _batches(self, start: int, stride: int) -> Iterator[Batch]:
        size = self.batch_size
        offset = start * size
        if offset >= self.num_rows:
            return
        first = int(np.searchsorted(self.block_starts, offset, side="right")) - 1
        skip = offset - int(self.block_starts[first])
        index = start
        pending: list[_Rows] = []
        held = 0
        # The next block is read while this one is cut into batches: two blocks' rows at most in memory.
        pool = ThreadPoolExecutor(max_workers=self.readers, thread_name_prefix="rows")
        try:
            reads = self._submit(pool, first)
            for block in range(first, len(self.blocks)):
                rows = self._collect(block, reads)
                if block + 1 < len(self.blocks):
                    reads = self._submit(pool, block + 1)
                if rows is None:  # (the rows to skip were in it: the next block starts at its beginning)
                    skip = 0
                    continue
                order = np.random.default_rng([self.seed, 1, block]).permutation(len(rows))[skip:]
                skip = 0
                pos = 0
                while pos < len(order):
                    take = order[pos : pos + size - held]
                    pos += len(take)
                    pending.append(rows.take(take))
                    held += len(take)
                    if held == size:
                        if (index - start) % stride == 0:
                            yield self._batch(pending, index)
                        index += 1
                        pending, held = [], 0
                del rows  # (before the next block's rows come)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        if held and not self.drop_last and (index - start) % stride == 0:
            yield self._batch(pending, index)

    def _batch(self, parts: list[_Rows], index: int) -> Batch:
        rng = np.random.default_rng([self.seed, 2, index]) if self.symmetries else None
        return make_batch(_Rows.concat(parts), rng)
