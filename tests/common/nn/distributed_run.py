"""Run by tests/common/nn/test_training.py under torchrun: trains the tiny network for four steps
in each process on its own batches of KataGo's golden rows and writes what it ends with to
``<out>.<rank>``."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np
import torch

from common.data.loader import decode_rows, make_batch
from common.nn.training import Distributed, Trainer, to_tensors
from common.settings import TrainingSettings


def main() -> None:
    out = Path(sys.argv[1])
    dist = Distributed.from_environment()
    torch.set_num_threads(1)
    shared = Path(os.environ["SENTE_SHARED"])
    rows = decode_rows((shared / "golden" / "katago_selfplay_9x9.npz").read_bytes())
    settings = TrainingSettings(architecture="tiny", batch_size=32, learning_rate=1e-3)
    trainer = Trainer("tiny", settings, device=dist.device("cpu"), distributed=dist, seed=dist.rank)
    losses = []
    for step in range(4):
        start = (2 * step + dist.rank) * 32  # the batches of a pass taken with stride 2
        batch = to_tensors(make_batch(rows.take(np.arange(start, start + 32)), np.random.default_rng(step)))
        losses.append(trainer.step(batch)["loss"])
    checkpoint = out.with_suffix(".ckpt")
    trainer.save_checkpoint(checkpoint)
    dist.barrier()
    digest = hashlib.sha256()
    for value in trainer.model.parameters():  # buffers (batch-norm statistics) are per process
        digest.update(value.detach().numpy().tobytes())
    Path(f"{out}.{dist.rank}").write_text(json.dumps({
        "weights": digest.hexdigest(), "samples": trainer.samples, "first_loss": losses[0],
        "checkpoint": dist.main and checkpoint.exists()}))
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
