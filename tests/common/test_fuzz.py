"""The parsers of what clients upload, fuzzed: SGF text, the metadata's JSON and the training rows'
npz archives, random and mutated from real ones, raise nothing but their own error (SGFError,
MetadataError, RowValidationError). The row validator reports rather than raises, so its fuzzing
also watches its log for checks that failed unexpectedly, and a tiny archive that declares huge
arrays is shown to allocate next to nothing."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import tracemalloc
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.data.schema import ARRAY_NAMES, SCHEMA_BY_NAME
from common.data.validate import RowValidationError, load_rows, validate_rows
from common.go.sgf import SGFError, parse_collection, read_sgf, record_from_tree
from common.protocol import MetadataError, RatingGameMetadata, TrainingGameMetadata, parse_metadata, read_metadata

FIXTURES = Path(__file__).parent / "go" / "fixtures"
SGFS = [p.read_text() for p in sorted(FIXTURES.glob("*.sgf"))]
# SENTE_FUZZ_EXAMPLES=5000 (say) fuzzes longer than the test run's few seconds.
FUZZ = settings(
    max_examples=int(os.environ.get("SENTE_FUZZ_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@st.composite
def mutated(draw, texts: list, alphabet: str) -> str | bytes:
    """One of texts with a few characters (or bytes) inserted, deleted or replaced, or cut short."""
    text = draw(st.sampled_from(texts))
    empty = text[:0]
    pieces = st.text(alphabet, max_size=4) if isinstance(text, str) else st.binary(max_size=4)
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 4)))
        text = text[:i] + draw(pieces) + text[j:]
    if draw(st.booleans()):
        text = text[: draw(st.integers(0, len(text)))]
    return text or empty


# --- SGF -----------------------------------------------------------------------------------------
SGF_CHARS = "();[]\\:\n ABWCPLSZKMHAERUGTFDOXabcst019+.-\x00é"


def _read_sgf_text(data: str | bytes) -> None:
    with contextlib.suppress(SGFError):
        for tree in parse_collection(data):
            record = record_from_tree(tree)
            read_sgf(record.to_sgf())  # what the writer writes reads back


@FUZZ
@given(
    st.one_of(
        mutated(SGFS, SGF_CHARS),
        st.text(SGF_CHARS, max_size=300),
        st.binary(max_size=300),
        mutated([s.encode() for s in SGFS], SGF_CHARS),
    )
)
def test_sgf_fuzz_raises_only_sgferror(data):
    _read_sgf_text(data)


# --- metadata ------------------------------------------------------------------------------------
TRAINING = {
    "game_id": "g-1",
    "network": "net-1",
    "board_x_size": 9,
    "board_y_size": 9,
    "komi": 7.5,
    "rules": "tromp-taylor",
    "result": "B+3.5",
    "moves": 100,
    "rows": 90,
    "settings_version": 1,
    "handicap": 0,
}
RATING = {
    "game_id": "g-2",
    "black_network": "a",
    "white_network": "b",
    "board_x_size": 9,
    "board_y_size": 9,
    "komi": 7.5,
    "rules": '{"ko": "SIMPLE", "komi": 7.5}',
    "result": "W+R",
    "moves": 60,
    "settings_version": 1,
}
KEYS = [*sorted(set(TRAINING) | set(RATING)), "extra"]
JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["chinese", "japanese", "{", '{"ko": 1}', '{"komi": 1e999}', "[" * 50]),
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=5), inner, max_size=5)
    ),
    max_leaves=20,
)


def _documents(base: dict) -> st.SearchStrategy:
    """The valid document with some values replaced, removed or added."""
    return st.builds(
        lambda changes, removed: {**{k: v for k, v in base.items() if k not in removed}, **changes},
        st.dictionaries(st.sampled_from(KEYS), JSON_VALUES, max_size=3),
        st.sets(st.sampled_from(sorted(base)), max_size=2),
    )


@FUZZ
@given(
    st.sampled_from([TrainingGameMetadata, RatingGameMetadata]),
    st.one_of(
        _documents(TRAINING).map(json.dumps),
        _documents(RATING).map(json.dumps),
        JSON_VALUES.map(json.dumps),
        st.text(max_size=200),
        mutated([json.dumps(TRAINING), json.dumps(RATING)], '{}[]":,0123456789.eE-+ntfaNI\\u'),
    ),
)
def test_metadata_fuzz_raises_only_metadataerror(cls, text):
    with contextlib.suppress(MetadataError):
        read_metadata(cls, text)


HUGE = st.sampled_from([10**400, -(2**1100), 10**5000, 2**1023, [[[[[[[[[[[[1]]]]]]]]]]]], "x" * 100_000])


@FUZZ
@given(
    st.sampled_from([TrainingGameMetadata, RatingGameMetadata]),
    st.dictionaries(st.sampled_from(KEYS), st.one_of(JSON_VALUES, HUGE), max_size=12),
)
def test_decoded_metadata_fuzz_raises_only_metadataerror(cls, document):
    """parse_metadata on values no JSON text gives (the client passes its own): integers beyond any
    float, values nested deep."""
    with contextlib.suppress(MetadataError):
        parse_metadata(cls, document)


# --- training rows -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def rows(shared) -> dict[str, np.ndarray]:
    """Three rows of KataGo's 9x9 self-play file: a small, valid row file to mutate."""
    with np.load(shared / "golden/katago_selfplay_9x9.npz") as npz:
        return {name: npz[name][:3] for name in npz.files}


def _npz(arrays: dict[str, np.ndarray], compressed: bool = True) -> bytes:
    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, **arrays)
    return buf.getvalue()


def _npy(header: str, data: bytes = b"", version: bytes = b"\x01\x00") -> bytes:
    text = header + " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    size = len(text).to_bytes(2 if version == b"\x01\x00" else 4, "little")
    return b"\x93NUMPY" + version + size + text.encode("latin-1") + data


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


DTYPES = ["<f4", ">f4", "<f8", "<i2", "<i8", "|u1", "|b1", "<c8", "<U4", "|V8", "|O", "<M8[s]"]
SHAPES = [
    "()",
    "(3,)",
    "(0, 80)",
    "(-1, 80)",
    "(3, 80, 1)",
    "(10**12, 80)",
    "(2**63, 2**63)",
    "(3, 'x')",
    "((3,),)",
    "(1e3, 80)",
    "[3, 80]",
    "(3, 361)",
    "(4294967296, 22, 46)",
]
_MUTATIONS = ("astype", "reshape", "swap", "drop", "extra", "rows", "values", "fortran", "object")


@st.composite
def mutated_rows(draw, rows: dict[str, np.ndarray]) -> bytes:
    """The valid rows with arrays changed (dtype, shape, names, row counts, values), archived."""
    arrays = dict(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the casts lose values on purpose
        for _ in range(draw(st.integers(1, 3))):
            _mutate(draw, arrays)
    return _npz(arrays, compressed=draw(st.booleans()))


def _mutate(draw, arrays: dict[str, np.ndarray]) -> None:
    """One change to one array (one that holds objects is left as it is)."""
    name = draw(st.sampled_from(sorted(arrays) or ARRAY_NAMES))
    kind = draw(st.sampled_from(_MUTATIONS))
    arr = arrays.get(name, np.zeros((3, 80), np.float32))
    if arr.dtype.hasobject:
        return
    if kind == "astype":
        arrays[name] = arr.astype(draw(st.sampled_from(["<f8", "<i2", "|u1", "|b1", "<c8", ">f4"])))
    elif kind == "reshape":
        shapes = [(-1,), (arr.shape[0], -1), (1, -1), (-1, 1)] if arr.size else [(-1,)]
        arrays[name] = arr.reshape(draw(st.sampled_from(shapes)))
    elif kind == "swap":
        other = draw(st.sampled_from(sorted(arrays)))
        arrays[name], arrays[other] = arrays[other], arr
    elif kind == "drop":
        arrays.pop(name, None)
    elif kind == "extra":
        arrays[draw(st.sampled_from(["extra", "x.npy", "../evil", ""]))] = arr
    elif kind == "rows":
        arrays[name] = arr[: draw(st.integers(0, 2))]
    elif kind == "values":
        flat = arr.astype(np.float64).ravel().copy()
        if flat.size:
            flat[draw(st.integers(0, flat.size - 1))] = draw(
                st.sampled_from([np.nan, np.inf, -1e30, 1e30, -1, 255, 0.5])
            )
        arrays[name] = flat.astype(arr.dtype).reshape(arr.shape)
    elif kind == "fortran":
        arrays[name] = np.asfortranarray(arr.T).T if arr.ndim > 1 else arr
    else:
        arrays[name] = np.array([None] * len(arr), dtype=object)


@st.composite
def forged_rows(draw, rows: dict[str, np.ndarray]) -> bytes:
    """The valid rows with one member's npy header forged: its dtype, its shape, its version."""
    members = {f"{name}.npy": _member(arr) for name, arr in rows.items()}
    name = draw(st.sampled_from(ARRAY_NAMES))
    descr = draw(st.sampled_from([SCHEMA_BY_NAME[name].dtype.str, *DTYPES]))
    order = draw(st.sampled_from(["False", "True"]))
    header = f"{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {draw(st.sampled_from(SHAPES))}, }}"
    version = draw(st.sampled_from([b"\x01\x00", b"\x02\x00", b"\x03\x00", b"\x09\x09"]))
    members[f"{name}.npy"] = _npy(header, draw(st.binary(max_size=64)), version)
    return _zip(members)


def _member(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr)
    return buf.getvalue()


class _Unexpected(logging.Handler):
    """Collects the validator's log records of checks that failed unexpectedly (its own bugs)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _check_rows_data(data: bytes) -> None:
    handler = _Unexpected()
    logger = logging.getLogger("common.data.validate")
    logger.addHandler(handler)
    try:
        report = validate_rows(data)
        try:
            load_rows(data)
        except RowValidationError:
            assert not report.ok
    finally:
        logger.removeHandler(handler)
    assert not handler.records, [r.getMessage() for r in handler.records] + [str(handler.records[0].exc_info)]


def test_the_rows_to_mutate_are_valid(rows):
    assert validate_rows(_npz(rows)).ok


@FUZZ
@given(data=st.data())
def test_rows_fuzz_raises_only_rowvalidationerror(rows, data):
    good = _npz(rows)
    strategy = st.one_of(
        mutated_rows(rows),
        forged_rows(rows),
        mutated([good], ""),
        st.binary(max_size=400),
        st.builds(
            lambda flips: bytes(b ^ 0xFF if i in flips else b for i, b in enumerate(good)),
            st.sets(st.integers(0, len(good) - 1), max_size=8),
        ),
    )
    _check_rows_data(data.draw(strategy))


def test_a_tiny_archive_declaring_huge_arrays_allocates_next_to_nothing(rows):
    """Every array declared with a trillion rows (or a huge row) in a file of a few kilobytes: the
    validator refuses them from their headers, allocating less than a megabyte."""
    members = {}
    for name, arr in rows.items():
        shape = arr.shape[1:]
        members[f"{name}.npy"] = _npy(
            f"{{'descr': '{arr.dtype.str}', 'fortran_order': False, "
            f"'shape': ({10**12}, {', '.join(map(str, shape))}), }}",
            b"\0" * 64,
        )
    members["globalInputNC.npy"] = _npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2**40), }")
    data = _zip(members)
    assert len(data) < 10_000
    tracemalloc.start()
    try:
        report = validate_rows(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not report.ok and len(report.errors) >= len(rows)
    assert peak < 1_000_000, peak
