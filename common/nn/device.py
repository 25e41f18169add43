"""Where the network runs: a CUDA GPU when there is one, else an Apple GPU (torch's ``mps``), else
the CPU."""

from __future__ import annotations

import logging

import torch

from common.nn.precision import GPU_TYPES

logger = logging.getLogger(__name__)

__all__ = ["GPU_TYPES", "default_device", "mps_available", "resolve_device"]


def mps_available() -> bool:
    """Whether torch can run on this Mac's GPU (Metal Performance Shaders)."""
    mps = getattr(torch.backends, "mps", None)
    return mps is not None and bool(mps.is_available())


def default_device() -> torch.device:
    """``cuda`` (the current CUDA device) when torch sees a CUDA GPU, else ``mps`` on a Mac with
    Apple's GPU, else ``cpu``."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    if mps_available():
        return torch.device("mps")
    return torch.device("cpu")


def resolve_device(device: torch.device | str | None) -> torch.device:
    """``device`` as a torch.device; None means :func:`default_device`.

    Asking for a GPU the machine does not have is an error naming the request, not a silent fallback.
    """
    if device is None:
        return default_device()
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {str(device)!r} requested but CUDA is not available on this machine")
    if dev.type == "mps" and not mps_available():
        raise RuntimeError(f"device {str(device)!r} requested but this machine has no Apple GPU torch can use (mps)")
    return dev
