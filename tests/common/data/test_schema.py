"""The npz schema: bit-packing of the input planes against KataGo's rows, and a numpy-only package."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from common.data.schema import pack_spatial, unpack_spatial


def test_packing_matches_katagos_rows(shared):
    with np.load(shared / "golden" / "katago_selfplay_9x9.npz") as npz:
        packed = npz["binaryInputNCHWPacked"]
    for r in (0, 100, 272):
        np.testing.assert_array_equal(pack_spatial(unpack_spatial(packed[r])), packed[r])


def test_common_data_does_not_import_torch():
    """The client writes and checks rows without torch; common.nn.loss imports the channels from here."""
    code = "import sys, common.data, common.data.schema, common.data.weights; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
