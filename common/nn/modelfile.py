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
from dataclasses import dataclass
from pathlib import Path

import safetensors.torch
import torch

from common.files import atomic_write
from common.nn.device import resolve_device
from common.nn.header import FORMAT, FORMAT_VERSION, SUFFIX, ModelFileError, read_header  # noqa: F401
from common.nn.model import Model, ModelConfig

logger = logging.getLogger(__name__)


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


def decode_model(data: bytes, path: str | Path = "<bytes>") -> ModelFile:
    """Parse and check the bytes of a network file."""
    path = Path(path)
    header = read_header(data, path)
    name, config = header.name, header.config
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


def model_of(mf: ModelFile, device: torch.device | str | None = None) -> Model:
    """The network of a read network file, in eval mode on ``device`` (default: CUDA when available,
    else CPU)."""
    model = Model(mf.config, initialize=False)
    model.load_state_dict(mf.state_dict, strict=True)
    return model.to(resolve_device(device)).eval()


def load_model(path: str | Path, device: torch.device | str | None = None) -> tuple[Model, ModelFile]:
    """The network in ``path`` in eval mode on ``device`` (default: CUDA when available, else CPU)."""
    mf = read_model_file(path)
    return model_of(mf, device), mf
