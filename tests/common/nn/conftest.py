"""Fixtures of the network's tests."""

import numpy as np
import pytest


@pytest.fixture(scope="module")
def golden_rows(shared) -> dict[str, np.ndarray]:
    """KataGo's real 9x9 self-play rows (the golden npz), array by array."""
    with np.load(shared / "golden" / "katago_selfplay_9x9.npz") as npz:
        return {name: npz[name] for name in npz.files}
