"""Named arrays out of an npz file's bytes, each member inflated in one call.

``numpy.load`` reads an npz member through :mod:`zipfile`'s streaming reader, which inflates it in
small pieces; for the small files of one self-play game (some 200 kB of arrays, seven members) that
costs about three times the inflation itself, and the training loader decodes thousands of such
files per block. Here :mod:`zipfile` still reads the archive's directory, but each wanted member is
inflated whole by one ``zlib.decompress`` (which releases the GIL, so reader threads decode in
parallel), its CRC checked, and its npy header read by numpy's own :mod:`numpy.lib.format`. Members
not asked for are never inflated. Object arrays are refused (no pickles), as ``allow_pickle=False``
does.
"""

from __future__ import annotations

import functools
import io
import math
import struct
import zipfile
import zlib
from collections.abc import Iterable

import numpy as np
from numpy.lib import format as npy_format

_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, then the name's and the extra field's lengths


def read_arrays(data: bytes, names: Iterable[str]) -> dict[str, np.ndarray]:
    """The arrays ``names`` of the npz file ``data`` that it holds (those it lacks are left out),
    read-only views of the inflated members. ValueError (or zipfile.BadZipFile) when the file or a
    member is broken."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        # An array's member is its name, with ".npy" (numpy's savez) or without (KataGo's files).
        members = {info.filename.removesuffix(".npy"): info for info in archive.infolist()}
    out: dict[str, np.ndarray] = {}
    view = memoryview(data)
    for name in names:
        info = members.get(name)
        if info is not None:
            out[name] = _array(view, info)
    return out


def _array(data: memoryview, info: zipfile.ZipInfo) -> np.ndarray:
    start = info.header_offset
    signature, name_length, extra_length = _LOCAL_HEADER.unpack_from(data, start)
    if signature != b"PK\x03\x04":
        raise ValueError(f"{info.filename}: no zip member header at offset {start}")
    start += _LOCAL_HEADER.size + name_length + extra_length
    raw = data[start : start + info.compress_size]
    if info.compress_type == zipfile.ZIP_DEFLATED:
        body = zlib.decompress(raw, -zlib.MAX_WBITS, info.file_size)
    elif info.compress_type == zipfile.ZIP_STORED:
        body = bytes(raw)
    else:
        raise ValueError(f"{info.filename}: compression method {info.compress_type} is not deflate or none")
    if len(body) != info.file_size or zlib.crc32(body) != info.CRC:
        raise ValueError(f"{info.filename}: its content does not match its size and CRC")
    shape, fortran_order, dtype, start = _header(body[: _header_end(body, info.filename)])
    if dtype.hasobject:
        raise ValueError(f"{info.filename}: an object array (pickled), which is not read")
    array = np.frombuffer(body, dtype=dtype, count=math.prod(shape), offset=start)
    return array.reshape(shape, order="F" if fortran_order else "C")


def _header_end(body: bytes, name: str) -> int:
    """Where an npy member's header ends: the magic string, the version, the header's length
    (two bytes in version 1, four after), the header."""
    if body[:6] != b"\x93NUMPY":
        raise ValueError(f"{name}: not an npy array")
    if body[6] == 1:
        return 10 + int.from_bytes(body[8:10], "little")
    return 12 + int.from_bytes(body[8:12], "little")


@functools.lru_cache(maxsize=4096)
def _header(header: bytes) -> tuple[tuple[int, ...], bool, np.dtype, int]:
    """An npy header parsed by numpy (a Python literal, costly to parse: the files of a run repeat a
    few hundred of them, so each is parsed once), with the array's offset."""
    stream = io.BytesIO(header)
    version = npy_format.read_magic(stream)
    read_header = npy_format.read_array_header_1_0 if version == (1, 0) else npy_format.read_array_header_2_0
    shape, fortran_order, dtype = read_header(stream)
    return shape, fortran_order, dtype, stream.tell()
