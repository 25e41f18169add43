"""Benchmark of the canary check on this machine's CPU: one check of a loaded network (evaluating the
twenty canary positions in fp32 and comparing with the reference), for the tiny test network and the
g170 b6c96 network (KataGo's own, imported), and the b6c96 reference as the server computes it
(loading the network file, evaluating, writing the npz). Each figure is the median of several runs
after a warm-up; how often a client checks follows from it (docs/canary.md).

Run from the project root: .venv/bin/python tests/bench/bench_canary.py
The last line is one JSON object with the figures.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from client.contribute.canary import CanaryGuard  # noqa: E402
from client.evaluator import Evaluator, load_network  # noqa: E402
from common import canary  # noqa: E402
from common.nn.canary import evaluate_canary  # noqa: E402
from common.nn.model import Model, named_config  # noqa: E402
from common.nn.modelfile import save_model  # noqa: E402

SHARED = Path(os.environ.get("SENTE_SHARED", ROOT.parent / "shared"))
MODEL = SHARED / "models" / "g170-b6c96-s175395328-d26788732.bin.gz"
RUNS = 5


def median_ms(fn, runs: int = RUNS) -> float:
    fn()  # warm-up
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1000 * statistics.median(times)


def check_ms(path: Path) -> float:
    evaluator = Evaluator.from_file(path, device="cpu")
    reference = evaluate_canary(evaluator.model).to_npz()
    guard = CanaryGuard("cpu", lambda name: reference)
    return median_ms(lambda: guard.check("bench", evaluator, path))


def main() -> None:
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        tiny = Path(tmp) / "tiny.safetensors"
        save_model(Model(named_config("tiny")), tiny, "bench-tiny")
        figures = {
            "check_ms_tiny": check_ms(tiny),
            "check_ms_b6c96": check_ms(MODEL),
            "reference_ms_b6c96": median_ms(
                lambda: evaluate_canary(load_network(MODEL, "cpu").eval()).to_npz(), runs=3
            ),
            "positions": len(canary.positions()),
            "torch_threads": torch.get_num_threads(),
        }
    for k, v in figures.items():
        print(f"{k}: {v:.1f}" if isinstance(v, float) else f"{k}: {v}")
    print(json.dumps({k: round(v, 1) if isinstance(v, float) else v for k, v in figures.items()}))


if __name__ == "__main__":
    main()
