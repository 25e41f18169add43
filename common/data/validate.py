"""The training-row validator used by the client before an upload and by the server on receipt.

``validate_rows`` takes a file (path, bytes or binary file object) or a mapping of arrays and returns
a :class:`ValidationReport`; every error names the array and says what is wrong with it. Nothing here
trusts the input: the archive is opened with :mod:`zipfile`, each array's npy header is read and
checked against the schema before its data is read (so a header announcing a huge array allocates
nothing), pickled objects are refused, and any failure to read becomes an error in the report rather
than an exception.

What is checked (schema and channel meanings in :mod:`common.data.schema`):

- the archive: a readable zip of npy arrays, no duplicate names;
- names: every required array present; no array outside the schema (KataGo's shuffler refuses extra
  arrays);
- each array: dtype (little-endian, as KataGo writes), shape, and the same row count N everywhere,
  with ``0 < N <= max_rows``;
- contents: packed padding bits zero, a non-empty board in input plane 0, nothing off the board;
  global inputs finite and within their ranges; policy targets >= 0, and positive on the board where
  their weight (globalTargetsNC 26, 28) is positive; globalTargetsNC finite, each win/loss/no-result
  triple in [0, 1] summing to 1 where the value weight (1 - channel 35) is positive, scores within
  KataGo's cap, weights >= 0, history masks 0/1, hash chunks 22-bit integers, format version
  (channel 63) = 3, Sente version (channel 79) known; scoreDistrN entries in [0, 100] summing to 100;
  valueTargetsNCHW ownership, seki and future boards in {-1, 0, 1}, scoring in [-120, 120];
  qValueTargetsNCMove within +/-32000 and visits >= 0.
"""

from __future__ import annotations

import io
import logging
import math
import os
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, BinaryIO, TypeVar

import numpy as np
import numpy.typing as npt

from common.data.schema import (
    ARRAY_NAMES,
    DATA_AREA,
    DATA_LEN,
    GT_FORMAT_VERSION,
    GT_GAME_HASH_FIRST,
    GT_GAME_MODE,
    GT_HISTORY_MASK_FIRST,
    GT_NEXT_POLICY_WEIGHT,
    GT_ONE_MINUS_TD_WEIGHT,
    GT_ONE_MINUS_VALUE_WEIGHT,
    GT_POLICY_WEIGHT,
    GT_SENTE_VERSION,
    GT_SIDE_POSITION,
    GT_TURN_INDEX,
    GT_VARIANCE_TIME,
    KATAGO_FORMAT_VERSION,
    MAX_ROWS_PER_FILE,
    NUM_GAME_MODES,
    POLICY_LEN,
    QVALUE_MAX,
    REQUIRED_ARRAYS,
    SCHEMA_BY_NAME,
    SCORE_TARGET_CAP,
    SCORING_SCALE,
    SENTE_ROWS_VERSION,
    ArraySpec,
)

log = logging.getLogger(__name__)

MAX_ARCHIVE_MEMBERS = 16  # the schema has 7 arrays; anything far beyond is not a row file
NPY_HEADER_ALLOWANCE = 4096  # bytes beyond the data an npy member may hold (magic + header)
MAX_ERRORS = 50
UNPACK_CHUNK_ROWS = 1024
VALUE_SUM_TOLERANCE = 1e-3
PROBABILITY_TOLERANCE = 1e-4

# globalInputNC: channels holding 0/1 flags, and ranges for the others (fillRowV7).
GLOBAL_INPUT_FLAGS = (0, 1, 2, 3, 4, 6, 8, 9, 10, 11, 12, 13, 14, 15, 17)
GLOBAL_INPUT_RANGES = {
    5: (-(DATA_AREA + 20) / 20.0, (DATA_AREA + 20) / 20.0),  # self komi / 20, clipped to +-(area+20)
    7: (-0.5, 0.5),  # ko rule: 0, 0.5 positional, -0.5 situational
    16: (-3.0, 3.0),  # playout doubling advantage / 2
    18: (-1.0, 1.0),  # komi parity wave
}
# globalTargetsNC groups.
VALUE_TRIPLES = (0, 4, 8, 12, 16)  # win, loss, no result; the score follows each
SCORE_CHANNELS = (3, 7, 11, 15, 19, 20, 21)
NONNEGATIVE_CHANNELS = (GT_VARIANCE_TIME, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 60)
UNIT_CHANNELS = (GT_ONE_MINUS_TD_WEIGHT, GT_ONE_MINUS_VALUE_WEIGHT)


class RowValidationError(ValueError):
    """Training rows that failed validation; ``report`` holds every error."""

    def __init__(self, report: ValidationReport) -> None:
        self.report = report
        shown = "; ".join(report.errors[:10])
        more = f" (and {len(report.errors) - 10} more)" if len(report.errors) > 10 else ""
        super().__init__(f"{report.source}: invalid training rows: {shown}{more}")


@dataclass
class ValidationReport:
    """The outcome of :func:`validate_rows`. ``arrays`` maps each array read to its dtype and shape;
    ``sente_version`` is globalTargetsNC channel 79 (0 for rows KataGo wrote), None when unknown."""

    source: str
    num_rows: int = 0
    arrays: dict[str, tuple[str, tuple[int, ...]]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    sente_version: int | None = None
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return not self.errors

    def error(self, array: str, problem: str) -> None:
        if len(self.errors) >= MAX_ERRORS:
            self.truncated = True
            return
        self.errors.append(f"{array}: {problem}")

    def raise_for_errors(self) -> None:
        if self.errors:
            raise RowValidationError(self)


ArchiveSource = str | os.PathLike[str] | bytes | bytearray | memoryview | BinaryIO  # an npz file or its bytes
Source = ArchiveSource | Mapping[str, np.ndarray]


def validate_rows(source: Source, max_rows: int = MAX_ROWS_PER_FILE) -> ValidationReport:
    """Check training rows (a file or a mapping of arrays) against the schema; never raises on bad
    input. See the module docstring for what is checked."""
    return _validate(source, max_rows)[0]


def load_rows(source: Source, max_rows: int = MAX_ROWS_PER_FILE) -> dict[str, np.ndarray]:
    """The arrays of a row file after validation; raises :class:`RowValidationError` if invalid."""
    report, arrays = _validate(source, max_rows)
    report.raise_for_errors()
    return arrays


# --- Reading --------------------------------------------------------------------------------------------
def _describe(source: Source) -> str:
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    if isinstance(source, Mapping):
        return "<arrays>"
    if isinstance(source, (bytes, bytearray, memoryview)):
        return f"<{len(source)} bytes>"
    return str(getattr(source, "name", "<stream>"))


def _validate(source: Source, max_rows: int) -> tuple[ValidationReport, dict[str, np.ndarray]]:
    report = ValidationReport(source=_describe(source))
    arrays: dict[str, np.ndarray] = {}
    try:
        if isinstance(source, Mapping):
            arrays = _arrays_from_mapping(source, report, max_rows)
        else:
            arrays = _read_archive(source, report, max_rows)
        _check_names(arrays, report)
        _check_rows(arrays, report, max_rows)
    except Exception as e:  # the validator reports; a crash here would be a bug, so say where
        log.exception("validating %s failed unexpectedly", report.source)
        report.error("file", f"could not be validated ({type(e).__name__}: {e})")
    return report, arrays


def _arrays_from_mapping(
    source: Mapping[str, np.ndarray], report: ValidationReport, max_rows: int
) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {}
    for name, value in source.items():
        arr = np.asarray(value)
        report.arrays[name] = (arr.dtype.str, tuple(arr.shape))
        spec = SCHEMA_BY_NAME.get(name)
        if spec is None:
            continue
        if arr.dtype.hasobject:
            report.error(name, "holds Python objects; only numeric arrays are allowed")
            continue
        if _check_header(spec, arr.dtype, tuple(arr.shape), False, report, max_rows):
            arrays[name] = arr
    return arrays


def _open_zip(source: ArchiveSource) -> zipfile.ZipFile:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return zipfile.ZipFile(io.BytesIO(bytes(source)))
    if isinstance(source, (str, os.PathLike)):
        return zipfile.ZipFile(Path(source))
    return zipfile.ZipFile(source)  # a binary file object


def _read_archive(source: ArchiveSource, report: ValidationReport, max_rows: int) -> dict[str, np.ndarray]:
    try:
        archive = _open_zip(source)
    except FileNotFoundError:
        report.error("file", "not found")
        return {}
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError, NotImplementedError) as e:
        # (NotImplementedError: a member needing a newer zip version than zipfile reads)
        report.error("file", f"not a readable npz (zip) archive: {type(e).__name__}: {e}")
        return {}
    arrays: dict[str, np.ndarray] = {}
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_ARCHIVE_MEMBERS:
            report.error("file", f"holds {len(infos)} members; a row file has at most {len(SCHEMA_BY_NAME)}")
            return {}
        seen: set[str] = set()
        for info in infos:
            name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            if name in seen:
                report.error(name, "appears twice in the archive")
                continue
            seen.add(name)
            report.arrays[name] = ("?", ())  # present, whatever its header turns out to be
            spec = SCHEMA_BY_NAME.get(name)
            if spec is None:
                continue  # reported as an extra array; never read
            limit = NPY_HEADER_ALLOWANCE + spec.dtype.itemsize * max_rows * math.prod(spec.row_shape)
            if info.file_size > limit:
                report.error(name, f"is {info.file_size} bytes uncompressed, more than {max_rows} rows can take")
                continue
            try:
                with archive.open(info) as f:
                    arr = _read_npy(f, spec, report, max_rows)
            except Exception as e:  # corrupt deflate stream, bad CRC, truncated member, encryption, ...
                report.error(name, f"could not be read ({type(e).__name__}: {e})")
                continue
            if arr is not None:
                arrays[name] = arr
    return arrays


def _read_npy(f: IO[bytes], spec: ArraySpec, report: ValidationReport, max_rows: int) -> np.ndarray | None:
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        shape, fortran_order, dtype = np.lib.format.read_array_header_1_0(f)
    elif version == (2, 0):
        shape, fortran_order, dtype = np.lib.format.read_array_header_2_0(f)
    else:
        report.error(spec.name, f"uses npy format version {version}; expected 1.0 or 2.0")
        return None
    report.arrays[spec.name] = (dtype.str, tuple(shape))
    if dtype.hasobject:
        report.error(spec.name, "holds Python objects (pickled data is refused)")
        return None
    if not _check_header(spec, dtype, tuple(shape), fortran_order, report, max_rows):
        return None
    count = math.prod(shape)
    nbytes = count * dtype.itemsize
    data = f.read(nbytes)
    if len(data) != nbytes:
        report.error(spec.name, f"is truncated: {len(data)} of {nbytes} data bytes")
        return None
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy()


def _check_header(
    spec: ArraySpec,
    dtype: np.dtype,
    shape: tuple[int, ...],
    fortran_order: bool,
    report: ValidationReport,
    max_rows: int,
) -> bool:
    """dtype and per-row shape as the schema says, and a row count the limit allows."""
    ok = True
    if dtype != spec.dtype:
        report.error(spec.name, f"has dtype {dtype.str}; expected {spec.dtype.str} ({spec.dtype.name})")
        ok = False
    if len(shape) != len(spec.row_shape) + 1 or tuple(shape[1:]) != spec.row_shape:
        expected = "[N, " + ", ".join(str(d) for d in spec.row_shape) + "]"
        report.error(spec.name, f"has shape {list(shape)}; expected {expected}")
        ok = False
    elif shape[0] > max_rows:
        report.error(spec.name, f"has {shape[0]} rows, above the limit of {max_rows}")
        ok = False
    if fortran_order:
        report.error(spec.name, "is stored in Fortran order; rows are C-ordered")
        ok = False
    return ok


def _check_names(arrays: dict[str, np.ndarray], report: ValidationReport) -> None:
    present = set(report.arrays)
    for name in REQUIRED_ARRAYS:
        if name not in present:
            report.error(name, "is missing")
    extras = sorted(present - set(ARRAY_NAMES))
    if extras:
        report.error(
            "file",
            f"has array(s) outside the schema: {', '.join(extras)} (KataGo's shuffler accepts only "
            f"{', '.join(ARRAY_NAMES)})",
        )


# --- Contents -------------------------------------------------------------------------------------------
def _rows_text(bad: npt.ArrayLike) -> str:
    idx = np.flatnonzero(bad)
    return f"{idx.size} row(s), first row {int(idx[0])}"


def _check_rows(arrays: dict[str, np.ndarray], report: ValidationReport, max_rows: int) -> None:
    counts = {name: int(arr.shape[0]) for name, arr in arrays.items()}
    if not counts:
        return
    if len(set(counts.values())) > 1:
        detail = ", ".join(f"{name} {n}" for name, n in counts.items())
        report.error("file", f"arrays disagree on the number of rows: {detail}")
        return
    n = next(iter(counts.values()))
    report.num_rows = n
    if n == 0:
        report.error("file", "holds no rows")
        return
    if n > max_rows:  # already refused per array; kept for mappings of odd shapes
        report.error("file", f"holds {n} rows, above the limit of {max_rows}")
        return
    board = None
    if "binaryInputNCHWPacked" in arrays:
        board = _checked(
            "binaryInputNCHWPacked", report, lambda: _check_binary(arrays["binaryInputNCHWPacked"], report)
        )
    checks: list[tuple[str, Callable[[], object]]] = [
        ("globalInputNC", lambda: _check_global_inputs(arrays["globalInputNC"], report)),
        ("globalTargetsNC", lambda: _check_global_targets(arrays["globalTargetsNC"], report)),
        ("policyTargetsNCMove", lambda: _check_policy(arrays, board, report)),
        ("scoreDistrN", lambda: _check_score_distribution(arrays["scoreDistrN"], report)),
        ("valueTargetsNCHW", lambda: _check_value_spatial(arrays["valueTargetsNCHW"], board, report)),
        ("qValueTargetsNCMove", lambda: _check_qvalues(arrays["qValueTargetsNCMove"], report)),
    ]
    for name, check in checks:
        if name in arrays:
            _checked(name, report, check)


_T = TypeVar("_T")


def _checked(name: str, report: ValidationReport, check: Callable[[], _T]) -> _T | None:
    try:
        return check()
    except Exception as e:
        log.exception("checking %s of %s failed unexpectedly", name, report.source)
        report.error(name, f"could not be checked ({type(e).__name__}: {e})")
        return None


def _check_binary(packed: np.ndarray, report: ValidationReport) -> np.ndarray:
    """Returns the on-board mask [N, 361] (bool) from input plane 0. Unpacks in chunks of rows so a
    full file never needs all its planes unpacked at once."""
    name = "binaryInputNCHWPacked"
    n = packed.shape[0]
    board = np.zeros((n, DATA_AREA), dtype=bool)
    padding = np.zeros(n, dtype=bool)
    off_board = np.zeros(n, dtype=bool)
    both = np.zeros(n, dtype=bool)
    for start in range(0, n, UNPACK_CHUNK_ROWS):
        chunk = slice(start, min(n, start + UNPACK_CHUNK_ROWS))
        bits = np.unpackbits(packed[chunk], axis=2, bitorder="big")
        padding[chunk] = bits[:, :, DATA_AREA:].any(axis=(1, 2))
        planes = bits[:, :, :DATA_AREA].astype(bool)
        board[chunk] = planes[:, 0]
        off_board[chunk] = (planes & ~planes[:, :1]).any(axis=(1, 2))
        both[chunk] = (planes[:, 1] & planes[:, 2]).any(axis=1)
    if padding.any():
        report.error(name, f"has nonzero padding bits after bit {DATA_AREA} ({_rows_text(padding)})")
    empty = ~board.any(axis=1)
    if empty.any():
        report.error(name, f"input plane 0 (on board) is empty ({_rows_text(empty)})")
    if off_board.any():
        report.error(name, f"has features set off the board ({_rows_text(off_board)})")
    if both.any():
        report.error(name, f"has points that are both own and opponent stones ({_rows_text(both)})")
    return board


def _nonfinite(name: str, a: np.ndarray, report: ValidationReport) -> bool:
    bad = ~np.isfinite(a).reshape(a.shape[0], -1).all(axis=1)
    if bad.any():
        report.error(name, f"has NaN or infinite values ({_rows_text(bad)})")
        return True
    return False


def _check_global_inputs(g: np.ndarray, report: ValidationReport) -> None:
    name = "globalInputNC"
    if _nonfinite(name, g, report):
        return
    for c in GLOBAL_INPUT_FLAGS:
        bad = (g[:, c] != 0) & (g[:, c] != 1)
        if bad.any():
            report.error(name, f"channel {c} is not 0 or 1 ({_rows_text(bad)})")
    for c, (low, high) in GLOBAL_INPUT_RANGES.items():
        bad = (g[:, c] < low) | (g[:, c] > high)
        if bad.any():
            report.error(name, f"channel {c} is outside [{low:g}, {high:g}] ({_rows_text(bad)})")


def _check_global_targets(t: np.ndarray, report: ValidationReport) -> None:
    name = "globalTargetsNC"
    if _nonfinite(name, t, report):
        return
    version = t[:, GT_FORMAT_VERSION]
    bad = version != KATAGO_FORMAT_VERSION
    if bad.any():
        found = sorted({float(v) for v in version[bad]})[:5]
        report.error(
            name,
            f"channel {GT_FORMAT_VERSION} (format version) is {found}, not {KATAGO_FORMAT_VERSION} ({_rows_text(bad)})",
        )
    sente = t[:, GT_SENTE_VERSION]
    known = (sente == np.round(sente)) & (sente >= 0) & (sente <= SENTE_ROWS_VERSION)
    if not known.all():
        report.error(
            name,
            f"channel {GT_SENTE_VERSION} (Sente rows version) is not 0..{SENTE_ROWS_VERSION} ({_rows_text(~known)})",
        )
    elif np.unique(sente).size > 1:
        report.error(name, f"channel {GT_SENTE_VERSION} (Sente rows version) differs between rows")
    else:
        report.sente_version = int(sente[0])

    side = t[:, GT_SIDE_POSITION]
    bad = (side != 0) & (side != 1)
    if bad.any():
        report.error(name, f"channel {GT_SIDE_POSITION} (side position) is not 0 or 1 ({_rows_text(bad)})")
    value_weight = 1.0 - t[:, GT_ONE_MINUS_VALUE_WEIGHT]
    for first in VALUE_TRIPLES:
        triple = t[:, first : first + 3]
        out = ((triple < -PROBABILITY_TOLERANCE) | (triple > 1 + PROBABILITY_TOLERANCE)).any(axis=1)
        if out.any():
            report.error(name, f"channels {first}-{first + 2} (win, loss, no result) leave [0, 1] ({_rows_text(out)})")
        off = (np.abs(triple.sum(axis=1) - 1.0) > VALUE_SUM_TOLERANCE) & (value_weight > 0)
        if off.any():
            report.error(
                name,
                f"channels {first}-{first + 2} (win + loss + no result) do not sum to 1 where the value "
                f"weight is positive ({_rows_text(off)})",
            )
    for c in SCORE_CHANNELS:
        bad = np.abs(t[:, c]) > SCORE_TARGET_CAP + 1e-3
        if bad.any():
            report.error(name, f"channel {c} (score) is beyond +-{SCORE_TARGET_CAP:g} ({_rows_text(bad)})")
    for c in NONNEGATIVE_CHANNELS:
        bad = t[:, c] < 0
        if bad.any():
            report.error(name, f"channel {c} (a weight or non-negative statistic) is negative ({_rows_text(bad)})")
    for c in UNIT_CHANNELS:
        bad = (t[:, c] < 0) | (t[:, c] > 1)
        if bad.any():
            report.error(name, f"channel {c} (one minus a weight) is outside [0, 1] ({_rows_text(bad)})")
    masks = t[:, GT_HISTORY_MASK_FIRST : GT_HISTORY_MASK_FIRST + 5]
    bad = ((masks != 0) & (masks != 1)).any(axis=1)
    if bad.any():
        report.error(name, f"channels 36-40 (history masks) are not 0 or 1 ({_rows_text(bad)})")
    chunks = t[:, GT_GAME_HASH_FIRST : GT_GAME_HASH_FIRST + 6]
    bad = ((chunks != np.round(chunks)) | (chunks < 0) | (chunks >= 1 << 22)).any(axis=1)
    if bad.any():
        report.error(name, f"channels 41-46 (game hash) are not 22-bit integers ({_rows_text(bad)})")
    turn = t[:, GT_TURN_INDEX]
    bad = (turn < 0) | (turn != np.round(turn))
    if bad.any():
        report.error(name, f"channel {GT_TURN_INDEX} (turn index) is not a non-negative integer ({_rows_text(bad)})")
    mode = t[:, GT_GAME_MODE]
    bad = (mode < 0) | (mode >= NUM_GAME_MODES) | (mode != np.round(mode))
    if bad.any():
        report.error(name, f"channel {GT_GAME_MODE} (game mode) is not 0..{NUM_GAME_MODES - 1} ({_rows_text(bad)})")


def _check_policy(arrays: dict[str, np.ndarray], board: np.ndarray | None, report: ValidationReport) -> None:
    name = "policyTargetsNCMove"
    p = arrays[name].astype(np.int32)
    negative = (p < 0).any(axis=(1, 2))
    if negative.any():
        report.error(name, f"has negative entries ({_rows_text(negative)})")
    targets = arrays.get("globalTargetsNC")
    if targets is None or not np.isfinite(targets).all():
        return
    legal = None
    if board is not None:
        legal = np.concatenate((board, np.ones((board.shape[0], 1), dtype=bool)), axis=1)
    for channel, weight_channel, label in ((0, GT_POLICY_WEIGHT, "this turn"), (1, GT_NEXT_POLICY_WEIGHT, "next turn")):
        used = targets[:, weight_channel] > 0
        plane = np.maximum(p[:, channel], 0)
        on_board = plane if legal is None else plane * legal
        empty = used & (on_board.sum(axis=1) <= 0)
        if empty.any():
            report.error(
                name,
                f"channel {channel} ({label}) has no positive mass on the board although its weight "
                f"(globalTargetsNC {weight_channel}) is positive ({_rows_text(empty)})",
            )
        if legal is not None:
            off = used & (plane * ~legal).any(axis=1)
            if off.any():
                report.error(name, f"channel {channel} ({label}) has mass off the board ({_rows_text(off)})")


def _check_score_distribution(s: np.ndarray, report: ValidationReport) -> None:
    name = "scoreDistrN"
    bad = ((s < 0) | (s > 100)).any(axis=1)
    if bad.any():
        report.error(name, f"has entries outside [0, 100] ({_rows_text(bad)})")
    off = s.astype(np.int64).sum(axis=1) != 100
    if off.any():
        report.error(name, f"rows do not sum to 100 ({_rows_text(off)})")


def _check_value_spatial(v: np.ndarray, board: np.ndarray | None, report: ValidationReport) -> None:
    name = "valueTargetsNCHW"
    for c, label in ((0, "ownership"), (1, "seki"), (2, "board 8 turns on"), (3, "board 32 turns on")):
        bad = ((v[:, c] < -1) | (v[:, c] > 1)).any(axis=(1, 2))
        if bad.any():
            report.error(name, f"channel {c} ({label}) holds values other than -1, 0, 1 ({_rows_text(bad)})")
    bad = ((v[:, 4] < -SCORING_SCALE) | (v[:, 4] > SCORING_SCALE)).any(axis=(1, 2))
    if bad.any():
        report.error(name, f"channel 4 (scoring x {SCORING_SCALE}) is outside +-{SCORING_SCALE} ({_rows_text(bad)})")
    if board is not None:
        off = (v.reshape(v.shape[0], v.shape[1], DATA_LEN * DATA_LEN) * ~board[:, None, :] != 0).any(axis=(1, 2))
        if off.any():
            report.error(name, f"has nonzero targets off the board ({_rows_text(off)})")


def _check_qvalues(q: np.ndarray, report: ValidationReport) -> None:
    name = "qValueTargetsNCMove"
    values = q.astype(np.int64)
    bad = (np.abs(values[:, :2]) > QVALUE_MAX).any(axis=(1, 2))
    if bad.any():
        report.error(name, f"channels 0-1 (win-loss, score) are beyond +-{QVALUE_MAX} ({_rows_text(bad)})")
    bad = (values[:, 2] < 0).any(axis=1)
    if bad.any():
        report.error(name, f"channel 2 (visits) is negative ({_rows_text(bad)})")
    if values.shape[2] != POLICY_LEN:  # shape is checked before; kept as a guard for mappings
        report.error(name, f"has {values.shape[2]} moves per row; expected {POLICY_LEN}")
