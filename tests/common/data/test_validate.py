"""The row validator: KataGo's own file passes, copies with one defect each fail with a message that
names the array, and garbage never raises."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable

import numpy as np
import pytest

from common.data.rows import save_rows
from common.data.schema import ARRAY_NAMES, MAX_ROWS_PER_FILE
from common.data.validate import RowValidationError, load_rows, validate_rows

GOLDEN = "golden/katago_selfplay_9x9.npz"


@pytest.fixture(scope="module")
def golden_path(shared):
    return shared / GOLDEN


@pytest.fixture(scope="module")
def golden(golden_path) -> dict[str, np.ndarray]:
    with np.load(golden_path) as npz:
        return {name: npz[name] for name in npz.files}


def npz_bytes(arrays: dict[str, np.ndarray], **kw) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays, **kw)
    return buf.getvalue()


def test_katagos_file_passes(golden_path, golden):
    report = validate_rows(golden_path)
    assert report.ok, report.errors
    assert report.num_rows == 273 and report.sente_version == 0
    assert set(report.arrays) == set(ARRAY_NAMES)
    loaded = load_rows(golden_path)
    for name, arr in golden.items():
        np.testing.assert_array_equal(loaded[name], arr)
    assert validate_rows(golden).ok  # as arrays
    assert validate_rows(golden_path.read_bytes()).ok  # as bytes
    with open(golden_path, "rb") as f:
        assert validate_rows(f).ok  # as a file object


def test_without_the_optional_qvalues_it_passes(golden, tmp_path):
    rows = {k: v for k, v in golden.items() if k != "qValueTargetsNCMove"}
    assert validate_rows(save_rows(rows, tmp_path / "noq.npz")).ok


def test_files_we_save_round_trip(golden, tmp_path):
    path = save_rows(golden, tmp_path / "copy.npz")
    report = validate_rows(path)
    assert report.ok, report.errors


def _set(name: str, index, value) -> Callable[[dict], None]:
    def mutate(rows: dict) -> None:
        a = rows[name].copy()
        a[index] = value
        rows[name] = a

    return mutate


def _replace(name: str, fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[dict], None]:
    def mutate(rows: dict) -> None:
        rows[name] = fn(rows[name])

    return mutate


def _drop(name: str) -> Callable[[dict], None]:
    return lambda rows: rows.pop(name)


def _all_rows(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[dict], None]:
    def mutate(rows: dict) -> None:
        for name in list(rows):
            rows[name] = fn(rows[name])

    return mutate


def _zero_policy_with_weight(rows: dict) -> None:
    p = rows["policyTargetsNCMove"].copy()
    p[3, 0] = 0
    rows["policyTargetsNCMove"] = p


def _policy_off_board(rows: dict) -> None:
    p = rows["policyTargetsNCMove"].copy()
    p[4, 0, 18 * 19 + 18] = 5  # (18, 18) is off a 9x9 board
    rows["policyTargetsNCMove"] = p


def _ownership_off_board(rows: dict) -> None:
    v = rows["valueTargetsNCHW"].copy()
    v[2, 0, 15, 15] = 1
    rows["valueTargetsNCHW"] = v


def _padding_bit(rows: dict) -> None:
    b = rows["binaryInputNCHWPacked"].copy()
    b[6, 3, 45] |= 0x01  # the last byte holds bit 360 (its top bit) and seven padding bits
    rows["binaryInputNCHWPacked"] = b


def _stone_off_board(rows: dict) -> None:
    b = rows["binaryInputNCHWPacked"].copy()
    b[1, 1, 44] |= 0x80  # bit 352: (10, 18), off a 9x9 board
    rows["binaryInputNCHWPacked"] = b


def _empty_board(rows: dict) -> None:
    b = rows["binaryInputNCHWPacked"].copy()
    b[7] = 0
    rows["binaryInputNCHWPacked"] = b


DEFECTS = {
    "missing array": (_drop("scoreDistrN"), r"scoreDistrN: is missing"),
    "extra array": (lambda rows: rows.update(selfBonusScoreN=np.zeros((273, 61), np.int8)), r"selfBonusScoreN"),
    "wrong dtype": (_replace("globalTargetsNC", lambda a: a.astype(np.float64)), r"globalTargetsNC: has dtype <f8"),
    "big-endian": (_replace("globalInputNC", lambda a: a.astype(">f4")), r"globalInputNC: has dtype >f4"),
    "wrong int dtype": (
        _replace("policyTargetsNCMove", lambda a: a.astype(np.int32)),
        r"policyTargetsNCMove: has dtype",
    ),
    "wrong shape": (
        _replace("valueTargetsNCHW", lambda a: a[:, :1]),
        r"valueTargetsNCHW: has shape \[273, 1, 19, 19\]; expected \[N, 5, 19, 19\]",
    ),
    "64 channels": (_replace("globalTargetsNC", lambda a: a[:, :64]), r"globalTargetsNC: has shape \[273, 64\]"),
    "no row axis": (_replace("scoreDistrN", lambda a: a[0]), r"scoreDistrN: has shape \[842\]"),
    "inconsistent N": (
        _replace("scoreDistrN", lambda a: a[:-1]),
        r"file: arrays disagree on the number of rows: .*scoreDistrN 272",
    ),
    "zero rows": (_all_rows(lambda a: a[:0]), r"file: holds no rows"),
    "NaN target": (
        _set("globalTargetsNC", (5, 22), np.nan),
        r"globalTargetsNC: has NaN or infinite values \(1 row\(s\), first row 5\)",
    ),
    "inf input": (_set("globalInputNC", (9, 5), np.inf), r"globalInputNC: has NaN or infinite values"),
    "komi input out of range": (_set("globalInputNC", (9, 5), 40.0), r"globalInputNC: channel 5 is outside"),
    "flag input not 0/1": (_set("globalInputNC", (9, 0), 0.5), r"globalInputNC: channel 0 is not 0 or 1"),
    "negative policy": (_set("policyTargetsNCMove", (3, 0, 40), -4), r"policyTargetsNCMove: has negative entries"),
    "empty policy with weight": (
        _zero_policy_with_weight,
        r"policyTargetsNCMove: channel 0 \(this turn\) has no positive mass",
    ),
    "policy off board": (_policy_off_board, r"policyTargetsNCMove: channel 0 \(this turn\) has mass off the board"),
    "value sum": (
        _set("globalTargetsNC", (8, 1), 0.2),
        r"globalTargetsNC: channels 0-2 \(win \+ loss \+ no result\) do not sum to 1",
    ),
    "TD value out of range": (_set("globalTargetsNC", (8, 12), 1.5), r"globalTargetsNC: channels 12-14"),
    "score beyond cap": (_set("globalTargetsNC", (8, 20), 9999.0), r"globalTargetsNC: channel 20 \(score\)"),
    "negative weight": (_set("globalTargetsNC", (10, 25), -1.0), r"globalTargetsNC: channel 25 .* is negative"),
    "value weight out of range": (_set("globalTargetsNC", (10, 35), 2.0), r"globalTargetsNC: channel 35"),
    "history mask": (_set("globalTargetsNC", (10, 38), 0.5), r"globalTargetsNC: channels 36-40"),
    "hash chunk": (_set("globalTargetsNC", (10, 41), 0.5), r"globalTargetsNC: channels 41-46"),
    "format version": (
        _set("globalTargetsNC", (11, 63), 2.0),
        r"globalTargetsNC: channel 63 \(format version\) is \[2.0\], not 3",
    ),
    "unknown sente version": (_set("globalTargetsNC", (slice(None), 79), 99.0), r"globalTargetsNC: channel 79"),
    "mixed sente versions": (_set("globalTargetsNC", (0, 79), 1.0), r"globalTargetsNC: channel 79 .* differs"),
    "game mode": (_set("globalTargetsNC", (0, 55), 9.0), r"globalTargetsNC: channel 55"),
    "ownership value": (_set("valueTargetsNCHW", (2, 0, 3, 3), 2), r"valueTargetsNCHW: channel 0 \(ownership\)"),
    "future board value": (_set("valueTargetsNCHW", (2, 3, 3, 3), -5), r"valueTargetsNCHW: channel 3"),
    "scoring value": (_set("valueTargetsNCHW", (2, 4, 3, 3), 127), r"valueTargetsNCHW: channel 4"),
    "ownership off board": (_ownership_off_board, r"valueTargetsNCHW: has nonzero targets off the board"),
    "score distribution entry": (_set("scoreDistrN", (4, 10), -3), r"scoreDistrN: has entries outside \[0, 100\]"),
    "score distribution sum": (_set("scoreDistrN", (4, 10), 7), r"scoreDistrN: rows do not sum to 100"),
    "q visits": (_set("qValueTargetsNCMove", (4, 2, 10), -1), r"qValueTargetsNCMove: channel 2 \(visits\) is negative"),
    "q value": (_set("qValueTargetsNCMove", (4, 0, 10), -32001), r"qValueTargetsNCMove: channels 0-1"),
    "padding bits": (_padding_bit, r"binaryInputNCHWPacked: has nonzero padding bits"),
    "feature off board": (_stone_off_board, r"binaryInputNCHWPacked: has features set off the board"),
    "empty board": (_empty_board, r"binaryInputNCHWPacked: input plane 0 \(on board\) is empty"),
}


@pytest.mark.parametrize("defect", list(DEFECTS))
def test_each_defect_fails_naming_the_array(golden, defect):
    mutate, pattern = DEFECTS[defect]
    rows = {k: v.copy() for k, v in golden.items()}
    mutate(rows)
    for source in (rows, npz_bytes(rows)):  # as arrays and as a file
        report = validate_rows(source)
        assert not report.ok
        assert any(re.search(pattern, e) for e in report.errors), report.errors
    with pytest.raises(RowValidationError):
        load_rows(npz_bytes(rows))


def test_row_limit(golden):
    report = validate_rows(golden, max_rows=100)
    assert not report.ok
    assert any(e.startswith("globalTargetsNC: has 273 rows, above the limit of 100") for e in report.errors)
    assert MAX_ROWS_PER_FILE == 10000
    assert validate_rows(golden, max_rows=273).ok


def _npy_member(header: str, data: bytes = b"") -> bytes:
    """A hand-made npy (format 1.0) with the given header dict text."""
    text = header + " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode() + data


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def test_garbage_never_raises(golden, golden_path):
    good = golden_path.read_bytes()
    flipped = bytearray(good)
    flipped[len(good) // 3 : len(good) // 3 + 64] = bytes(64)
    cases = {
        "empty": b"",
        "not a zip": b"this is not an npz file at all" * 10,
        "truncated": good[: len(good) // 2],
        "corrupt member": bytes(flipped),
        "random": np.random.default_rng(0).bytes(5000),
        "zip of text": _zip({"readme.txt": b"hello"}),
        "member not npy": _zip({"globalTargetsNC.npy": b"garbage"}),
        "huge header": _zip(
            {
                "globalTargetsNC.npy": _npy_member(
                    "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000, 80), }"
                )
            }
        ),
        "short data": _zip(
            {
                "globalTargetsNC.npy": _npy_member(
                    "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 80), }", b"\0" * 12
                )
            }
        ),
        "bad header": _zip({"globalTargetsNC.npy": _npy_member("{'descr': 'not a dtype', }")}),
        "too many members": _zip({f"m{i}": b"" for i in range(40)}),
    }
    for label, data in cases.items():
        report = validate_rows(data)
        assert not report.ok, label
        assert report.errors, label
    assert not validate_rows("/nonexistent/path/rows.npz").ok
    assert not validate_rows({"globalTargetsNC": np.array([object()] * 3)}).ok


def test_the_reasons_for_garbage_are_useful(golden_path):
    good = golden_path.read_bytes()
    assert validate_rows(b"nope").errors[0].startswith("file: not a readable npz (zip) archive")
    report = validate_rows(good[: len(good) // 2])
    assert report.errors[0].startswith("file: not a readable npz")
    huge = _zip(
        {"globalTargetsNC.npy": _npy_member("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000, 80), }")}
    )
    assert "globalTargetsNC: has 1000000000 rows, above the limit of 10000" in validate_rows(huge).errors
    short = _zip(
        {"globalTargetsNC.npy": _npy_member("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 80), }", b"\0" * 12)}
    )
    assert "globalTargetsNC: is truncated: 12 of 960 data bytes" in validate_rows(short).errors


def test_pickled_objects_are_refused(golden):
    rows = dict(golden)
    rows["scoreDistrN"] = np.array([{"evil": 1}] * 273, dtype=object)
    report = validate_rows(npz_bytes(rows))
    assert any(e.startswith("scoreDistrN: holds Python objects") for e in report.errors), report.errors


def test_duplicate_members_are_refused(golden):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, arr in golden.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, arr)
            z.writestr(name, member.getvalue())  # KataGo's names: no .npy suffix
        member = io.BytesIO()
        np.lib.format.write_array(member, golden["scoreDistrN"])
        z.writestr("scoreDistrN.npy", member.getvalue())  # the same array under numpy's name
    report = validate_rows(buf.getvalue())
    assert "scoreDistrN: appears twice in the archive" in report.errors


def test_a_member_larger_than_the_limit_is_not_read(golden):
    data = npz_bytes(golden)
    report = validate_rows(data, max_rows=10)
    assert any("valueTargetsNCHW: is" in e and "uncompressed, more than 10 rows can take" in e for e in report.errors)
