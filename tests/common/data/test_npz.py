"""Arrays read out of npz bytes by one inflate a member: the same arrays numpy reads, and broken
files refused with the member named."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

from common.data.npz import read_arrays


def npz(compressed: bool = True, **arrays) -> bytes:
    out = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(out, **arrays)
    return out.getvalue()


@pytest.mark.parametrize("compressed", [True, False])
def test_the_arrays_are_numpys_own_and_only_those_asked_for(compressed):
    rng = np.random.default_rng(0)
    arrays = {
        "a": rng.integers(0, 255, (5, 22, 46), dtype=np.uint8),
        "b": rng.standard_normal((5, 19)).astype(np.float32),
        "c": np.asfortranarray(rng.integers(-5, 5, (4, 3), dtype=np.int16)),
        "unused": np.arange(10),
    }
    data = npz(compressed, **arrays)
    got = read_arrays(data, ["a", "b", "c", "missing"])
    assert set(got) == {"a", "b", "c"}
    with np.load(io.BytesIO(data)) as z:
        for name, array in got.items():
            assert array.dtype == z[name].dtype and array.shape == z[name].shape
            assert np.array_equal(array, z[name])


def test_members_named_without_the_npy_suffix_are_read_as_katagos_files_name_them():
    """KataGo's npz files name their members ``binaryInputNCHWPacked``, not ``...npy``."""
    array = np.arange(12, dtype=np.int16).reshape(3, 4)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive, archive.open("a", "w") as member:
        np.lib.format.write_array(member, array)
    assert np.array_equal(read_arrays(out.getvalue(), ["a"])["a"], array)


def test_an_object_array_is_refused():
    data = npz(a=np.array([{"x": 1}], dtype=object))
    with pytest.raises(ValueError, match=r"a\.npy: an object array"):
        read_arrays(data, ["a"])


def test_a_damaged_member_is_refused_by_its_crc():
    data = bytearray(npz(compressed=False, a=np.arange(1000, dtype=np.int64)))
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        info = archive.getinfo("a.npy")
    data[info.header_offset + 200] ^= 0xFF  # a byte of the array itself
    with pytest.raises(ValueError, match=r"a\.npy: its content does not match its size and CRC"):
        read_arrays(bytes(data), ["a"])


def test_a_file_that_is_no_zip_is_refused():
    with pytest.raises(zipfile.BadZipFile):
        read_arrays(b"PK not really", ["a"])


def test_a_member_that_is_no_npy_array_is_refused():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("a.npy", b"not an array at all")
    with pytest.raises(ValueError, match=r"a\.npy: not an npy array"):
        read_arrays(out.getvalue(), ["a"])
