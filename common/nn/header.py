"""The header of a network file, read and checked without torch (the server checks uploads with it).

A network file is one ``.safetensors`` file (see :mod:`common.nn.modelfile`): an 8-byte length, a
JSON header naming every tensor's dtype, shape and byte range, then the tensor data. Our header
metadata carries ``format`` = "sente-model", ``format_version`` = "1", the network's ``name`` and
its ``config`` (:class:`common.architecture.ModelConfig` as JSON).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from common import boundedjson
from common.architecture import ModelConfig, ModelConfigError

FORMAT = "sente-model"
FORMAT_VERSION = "1"
SUFFIX = ".safetensors"
MAX_HEADER_BYTES = 100 * 1024 * 1024
DTYPE_BYTES = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


class ModelFileError(ValueError):
    """A network file that cannot be loaded or written; the message names the file and the problem."""


@dataclass
class TensorInfo:
    dtype: str
    shape: tuple[int, ...]
    start: int  # byte range in the data section
    end: int


@dataclass
class ModelHeader:
    name: str
    config: ModelConfig
    tensors: dict[str, TensorInfo]
    header_bytes: int  # 8 + the JSON header's length: where the data section starts


def header_length(prefix: bytes, path: str | Path = "<bytes>", size: int | None = None) -> int:
    """The JSON header's length from the file's first 8 bytes (checked against the file's size)."""
    if len(prefix) < 8:
        raise ModelFileError(f"network file {path}: not a safetensors file ({len(prefix)} bytes, too short)")
    (n,) = struct.unpack("<Q", prefix[:8])
    if n == 0 or n > MAX_HEADER_BYTES or (size is not None and 8 + n > size):
        raise ModelFileError(f"network file {path}: not a safetensors file (bad header length {n}) or truncated")
    return n


def parse_header(header_json: bytes, size: int, path: str | Path = "<bytes>") -> ModelHeader:
    """Check the JSON header of a file of ``size`` bytes: safetensors structure (every tensor's
    byte range fits its dtype and shape, the ranges cover the data section exactly) and our
    metadata (format, version, name, config)."""
    n = len(header_json)
    try:
        header = boundedjson.loads(header_json)
    except boundedjson.JSONError as e:
        raise ModelFileError(f"network file {path}: not a safetensors file (header is not JSON: {e})") from e
    if not isinstance(header, dict):
        raise ModelFileError(f"network file {path}: not a safetensors file (header is not a JSON object)")
    tensors: dict[str, TensorInfo] = {}
    covered = 0
    end = 0
    for key, info in header.items():
        if key == "__metadata__":
            continue
        try:
            start, stop = (int(v) for v in info["data_offsets"])
            shape = tuple(int(d) for d in info["shape"])
            dtype = str(info["dtype"])
        except (TypeError, KeyError, IndexError, ValueError):
            raise ModelFileError(f"network file {path}: malformed safetensors entry for tensor {key!r}") from None
        count = 1
        for d in shape:
            count *= d
        if (
            dtype not in DTYPE_BYTES
            or min(shape, default=0) < 0
            or not 0 <= start <= stop
            or stop - start != count * DTYPE_BYTES[dtype]
        ):
            raise ModelFileError(
                f"network file {path}: tensor {key!r} has an inconsistent entry "
                f"(dtype {dtype}, shape {list(shape)}, bytes {start}..{stop})"
            )
        tensors[key] = TensorInfo(dtype, shape, start, stop)
        covered += stop - start
        end = max(end, stop)
    if 8 + n + end != size:
        raise ModelFileError(
            f"network file {path}: size {size} bytes does not match its header ({8 + n + end} bytes); "
            "the file is truncated or has extra data"
        )
    if covered != end:
        raise ModelFileError(f"network file {path}: the tensors' byte ranges overlap or leave gaps")
    meta = header.get("__metadata__")
    if not isinstance(meta, dict):
        raise ModelFileError(f"network file {path}: no metadata; not a {FORMAT} file")
    if meta.get("format") != FORMAT:
        raise ModelFileError(f"network file {path}: format is {meta.get('format')!r}, expected {FORMAT!r}")
    if meta.get("format_version") != FORMAT_VERSION:
        raise ModelFileError(
            f"network file {path}: format_version {meta.get('format_version')!r} is not supported "
            f"(this program reads {FORMAT_VERSION!r})"
        )
    name = meta.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ModelFileError(f"network file {path}: metadata has no network name")
    raw_config = meta.get("config")
    if not isinstance(raw_config, str):
        raise ModelFileError(f"network file {path}: metadata has no config")
    try:
        config = ModelConfig.from_dict(boundedjson.loads(raw_config))
    except boundedjson.JSONError as e:
        raise ModelFileError(f"network file {path}: config is not valid JSON: {e}") from e
    except ModelConfigError as e:
        raise ModelFileError(f"network file {path}: bad config: {e}") from e
    return ModelHeader(name, config, tensors, 8 + n)


def read_header(data: bytes, path: str | Path = "<bytes>") -> ModelHeader:
    """Check a whole network file's bytes as far as that can be done without torch."""
    n = header_length(data[:8], path, len(data))
    return parse_header(data[8 : 8 + n], len(data), path)
