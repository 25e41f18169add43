"""How many positions a network evaluates per second on this machine: forward passes of a batch of
positions (stones scattered at random on an otherwise empty board), fp32, no gradients, on the
threads torch has. A figure to take only from a quiet machine, and to compare only with one taken
in the same run: other processes and the machine's own drift change it many times over."""

from __future__ import annotations

import time

import torch

from common.nn.config import ModelConfig
from common.nn.features import NUM_GLOBAL, NUM_SPATIAL
from common.nn.model import Model


def evals_per_second(config: ModelConfig, board: int = 9, batch: int = 64, seconds: float = 3.0) -> float:
    """Positions per second of ``config``'s network on ``board`` x ``board``, ``batch`` at a time,
    for at least ``seconds`` (and three passes) after one pass to warm up."""
    model = Model(config).eval()
    spatial = torch.zeros(batch, NUM_SPATIAL, board, board)
    spatial[:, 0] = 1.0
    spatial[:, 1:3] = (torch.rand(batch, 2, board, board) < 0.3).float()
    global_inputs = torch.zeros(batch, NUM_GLOBAL)
    with torch.inference_mode():
        model(spatial, global_inputs, with_score_belief=False)
        start, done = time.perf_counter(), 0
        while time.perf_counter() - start < seconds or done < 3:
            model(spatial, global_inputs, with_score_belief=False)
            done += 1
    return batch * done / (time.perf_counter() - start)
