"""Our network file: one ``.safetensors`` file; the sha256 of the file is the network's identity.

Header metadata (all strings): ``format`` = "sente-model", ``format_version`` = "1", ``name``
(the network's name) and ``config`` (:class:`ModelConfig` as JSON). The tensors are the model's
state dict (parameters and batch-norm running statistics), float32, under their module names.

Files are written atomically (temporary file in the same folder, fsync, rename) and loading
refuses, naming the file and the problem, anything that is not such a file or whose tensor names,
shapes or dtypes do not match its config. A save/load round trip is bit-exact.
"""

from __future__ import annotations

import hashlib
import json
import logging
import struct
from dataclasses import dataclass
from pathlib import Path

import safetensors.torch
import torch

from common.files import atomic_write
from common.nn.device import resolve_device
from common.nn.model import Model, ModelConfig, ModelConfigError

logger = logging.getLogger(__name__)

FORMAT = "sente-model"
FORMAT_VERSION = "1"
SUFFIX = ".safetensors"
MAX_HEADER_BYTES = 100 * 1024 * 1024


class ModelFileError(ValueError):
    """A network file that cannot be loaded or written; the message names the file and the problem."""


@dataclass
class ModelFile:
    """The contents of a network file."""

    name: str
    config: ModelConfig
    state_dict: dict[str, torch.Tensor]
    sha256: str


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file's bytes: the identity of a network file."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError as e:
        raise ModelFileError(f"network file {path}: cannot read it: {e}") from e
    return h.hexdigest()


def _expected_state(config: ModelConfig) -> dict[str, torch.Tensor]:
    return Model(config, initialize=False).state_dict()


def _check_tensors(path: Path, config: ModelConfig, tensors: dict[str, torch.Tensor]) -> None:
    expected = _expected_state(config)
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(set(tensors) - set(expected))
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"missing tensors {missing[:8]}{' ...' if len(missing) > 8 else ''}")
        if unexpected:
            parts.append(f"unexpected tensors {unexpected[:8]}{' ...' if len(unexpected) > 8 else ''}")
        raise ModelFileError(f"network file {path}: tensors do not match its config: {'; '.join(parts)}")
    for key, ref in expected.items():
        t = tensors[key]
        if tuple(t.shape) != tuple(ref.shape):
            raise ModelFileError(
                f"network file {path}: tensor {key} has shape {list(t.shape)}, its config needs {list(ref.shape)}"
            )
        if t.dtype != torch.float32:
            raise ModelFileError(f"network file {path}: tensor {key} is {t.dtype}, expected float32")
        if not bool(torch.isfinite(t).all()):
            raise ModelFileError(f"network file {path}: tensor {key} contains NaN or infinite values")


def encode_model(config: ModelConfig, state_dict: dict[str, torch.Tensor], name: str) -> bytes:
    """The bytes of a network file for ``config`` and ``state_dict``."""
    if not name or not name.strip():
        raise ModelFileError("network name must not be empty")
    tensors = {k: v.detach().to("cpu", torch.float32).contiguous() for k, v in state_dict.items()}
    _check_tensors(Path(f"<{name}>"), config, tensors)
    metadata = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "name": name,
        "config": json.dumps(config.to_dict(), sort_keys=True),
    }
    return safetensors.torch.save(tensors, metadata=metadata)


def save_model_file(path: str | Path, config: ModelConfig, state_dict: dict[str, torch.Tensor], name: str) -> str:
    """Write a network file atomically; returns its sha256."""
    path = Path(path)
    data = encode_model(config, state_dict, name)
    atomic_write(path, data)
    digest = hashlib.sha256(data).hexdigest()
    logger.info("saved network %s to %s (sha256 %s)", name, path, digest)
    return digest


def save_model(model: Model, path: str | Path, name: str) -> str:
    """Write ``model`` (its config and state dict) to ``path`` atomically; returns the file's sha256."""
    return save_model_file(path, model.config, model.state_dict(), name)


def _read_header(path: Path, data: bytes) -> dict:
    if len(data) < 8:
        raise ModelFileError(f"network file {path}: not a safetensors file ({len(data)} bytes, too short)")
    (n,) = struct.unpack("<Q", data[:8])
    if n == 0 or n > MAX_HEADER_BYTES or 8 + n > len(data):
        raise ModelFileError(f"network file {path}: not a safetensors file (bad header length {n}) or truncated")
    try:
        header = json.loads(data[8 : 8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ModelFileError(f"network file {path}: not a safetensors file (header is not JSON: {e})") from e
    if not isinstance(header, dict):
        raise ModelFileError(f"network file {path}: not a safetensors file (header is not a JSON object)")
    end = 0
    for key, info in header.items():
        if key == "__metadata__":
            continue
        try:
            end = max(end, int(info["data_offsets"][1]))
        except (TypeError, KeyError, IndexError, ValueError):
            raise ModelFileError(f"network file {path}: malformed safetensors entry for tensor {key!r}") from None
    if 8 + n + end != len(data):
        raise ModelFileError(
            f"network file {path}: size {len(data)} bytes does not match its header ({8 + n + end} bytes); "
            "the file is truncated or has extra data"
        )
    return header


def decode_model(data: bytes, path: str | Path = "<bytes>") -> ModelFile:
    """Parse and check the bytes of a network file."""
    path = Path(path)
    header = _read_header(path, data)
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
        config = ModelConfig.from_dict(json.loads(raw_config))
    except json.JSONDecodeError as e:
        raise ModelFileError(f"network file {path}: config is not valid JSON: {e}") from e
    except ModelConfigError as e:
        raise ModelFileError(f"network file {path}: bad config: {e}") from e
    try:
        tensors = safetensors.torch.load(data)
    except Exception as e:  # the library raises its own error types for malformed buffers
        raise ModelFileError(f"network file {path}: cannot read the tensors: {e}") from e
    _check_tensors(path, config, tensors)
    return ModelFile(name=name, config=config, state_dict=tensors, sha256=hashlib.sha256(data).hexdigest())


def read_model_file(path: str | Path) -> ModelFile:
    """Read and check a network file (name, config, state dict, sha256)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ModelFileError(f"network file {path}: cannot read it: {e}") from e
    return decode_model(data, path)


def load_model(path: str | Path, device: torch.device | str | None = None) -> tuple[Model, ModelFile]:
    """The network in ``path`` in eval mode on ``device`` (default: CUDA when available, else CPU)."""
    mf = read_model_file(path)
    model = Model(mf.config, initialize=False)
    model.load_state_dict(mf.state_dict, strict=True)
    return model.to(resolve_device(device)).eval(), mf
