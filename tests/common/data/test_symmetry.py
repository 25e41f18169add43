import numpy as np
import torch

from common.data.symmetry import NUM_SYMMETRIES, turn, unturn


def test_numpy_and_torch_turn_alike_and_unturn_inverts():
    grid = np.arange(2 * 5 * 5).reshape(2, 5, 5)
    seen = set()
    for s in range(NUM_SYMMETRIES):
        turned = turn(grid, s)
        np.testing.assert_array_equal(turn(torch.from_numpy(grid), s).numpy(), turned)
        np.testing.assert_array_equal(unturn(turned, s), grid)
        np.testing.assert_array_equal(unturn(torch.from_numpy(np.ascontiguousarray(turned)), s).numpy(), grid)
        seen.add(turned.tobytes())
    assert len(seen) == NUM_SYMMETRIES


def test_bits_name_the_flips_and_the_transpose():
    grid = np.array([[1, 2], [3, 4]])
    np.testing.assert_array_equal(turn(grid, 1), [[3, 4], [1, 2]])
    np.testing.assert_array_equal(turn(grid, 2), [[2, 1], [4, 3]])
    np.testing.assert_array_equal(turn(grid, 4), [[1, 3], [2, 4]])
    np.testing.assert_array_equal(turn(grid, 5), [[3, 1], [4, 2]])
