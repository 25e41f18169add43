"""Run by tests/common/nn/test_training.py under torchrun: trains the tiny network for four steps
in each process on its own batches of KataGo's golden rows (process 0 has two batches more, which
:class:`Lockstep` leaves out), then asks for a stop in process 1 only, and writes what it ends with
to ``<out>.<rank>``."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np
import torch

from common.data.loader import decode_rows, make_batch
from common.nn.training import Distributed, Lockstep, Trainer, to_tensors
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

    def batches():
        for step in range(6 if dist.main else 4):
            start = (2 * step + dist.rank) % 8 * 32  # the batches of a pass taken with stride 2
            yield to_tensors(make_batch(rows.take(np.arange(start, start + 32)), np.random.default_rng(step)))

    steps = Lockstep(dist, batches(), lambda: False)
    for batch in steps:
        losses.append(trainer.step(batch)["loss"])
    stopped = [steps.stopped]
    steps = Lockstep(dist, batches(), lambda: dist.rank == 1)
    for batch in steps:
        trainer.step(batch)
    stopped.append(steps.stopped)
    checkpoint = out.with_suffix(".ckpt")
    trainer.save_checkpoint(checkpoint)
    dist.barrier()
    digest = hashlib.sha256()
    for value in trainer.model.parameters():  # buffers (batch-norm statistics) are per process
        digest.update(value.detach().numpy().tobytes())
    Path(f"{out}.{dist.rank}").write_text(
        json.dumps(
            {
                "weights": digest.hexdigest(),
                "samples": trainer.samples,
                "first_loss": losses[0],
                "checkpoint": dist.main and checkpoint.exists(),
                "stopped": stopped,
            }
        )
    )
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
