"""How fast a network is on this machine: the positions it evaluates per second (forward passes of
a batch of positions, stones scattered at random on an otherwise empty board, fp32, no gradients),
and the samples per second a trainer's real step trains it on, both on the threads torch has.
Figures to take only from a quiet machine, and to compare only with ones taken in the same run:
other processes and the machine's own drift change them many times over."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import torch

from common.architecture import ModelConfig
from common.encoding.features import NUM_GLOBAL, NUM_SPATIAL
from common.nn.model import Model

if TYPE_CHECKING:
    from common.nn.training import TrainBatch, Trainer


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


def training_samples_per_second(trainer: Trainer, batches: Iterator[TrainBatch], seconds: float = 3.0) -> float:
    """Samples per second of ``trainer.step`` on ``batches`` for at least ``seconds`` (and two
    steps) after one step to warm up (the first of a round pays for allocations)."""
    trainer.step(next(batches))
    start, samples, steps = time.perf_counter(), 0, 0
    while time.perf_counter() - start < seconds or steps < 2:
        batch = next(batches)
        trainer.step(batch)
        samples += batch.size
        steps += 1
    return samples / (time.perf_counter() - start)
