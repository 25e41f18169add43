"""Where the network runs: CUDA when a GPU is available, otherwise the CPU."""

from __future__ import annotations

import logging

import torch

logger = logging.getLogger(__name__)


def default_device() -> torch.device:
    """``cuda`` (the current CUDA device) when torch sees a GPU, else ``cpu``."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    return torch.device("cpu")


def resolve_device(device: torch.device | str | None) -> torch.device:
    """``device`` as a torch.device; None means :func:`default_device`.

    Asking for CUDA on a machine without it is an error naming the request, not a silent fallback.
    """
    if device is None:
        return default_device()
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {str(device)!r} requested but CUDA is not available on this machine")
    return dev
