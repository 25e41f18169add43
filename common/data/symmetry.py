"""The eight symmetries of a square board, on the last two axes of a numpy array or a torch tensor.

Symmetry s: bit 0 flips rows, bit 1 flips columns, bit 2 transposes (after the flips). Training
rows are turned by these (``common.data.loader``) and the audit averages a network over them
(``server.audit.evaluate``); both must agree, so both use these two functions.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np

NUM_SYMMETRIES = 8

Grid = TypeVar("Grid")  # a numpy array or a torch tensor


def _flip(a: Grid, axis: int) -> Grid:
    # torch tensors have .flip (a copy); numpy arrays get a view
    return a.flip(axis) if hasattr(a, "flip") else np.flip(a, axis)  # type: ignore[call-overload]


def turn(a: Grid, symmetry: int) -> Grid:
    """``a`` seen under symmetry 0-7."""
    if symmetry & 1:
        a = _flip(a, -2)
    if symmetry & 2:
        a = _flip(a, -1)
    if symmetry & 4:
        a = a.swapaxes(-1, -2)  # type: ignore[attr-defined]
    return a


def unturn(a: Grid, symmetry: int) -> Grid:
    """The inverse of ``turn``: ``unturn(turn(a, s), s)`` is ``a``."""
    if symmetry & 4:
        a = a.swapaxes(-1, -2)  # type: ignore[attr-defined]
    if symmetry & 2:
        a = _flip(a, -1)
    if symmetry & 1:
        a = _flip(a, -2)
    return a
