"""Benchmark of training on the CPU: the b6c96 network trained with the real loader against the same
network trained on batches already in memory, measured side by side in one run.

The data is real self-play: games of the random network (9x9, the null evaluator, few visits: their
content does not change the cost) written as the client writes them, one compressed npz per game.
The loader reads the files through a function as the trainer reads storage, shuffles them in blocks,
unpacks, crops, turns each row by a random symmetry and makes the loss's targets in its background
thread (``common.data.loader``), while the main thread trains (``common.nn.training``). The in-memory
figure trains on the same batches decoded beforehand. Rounds alternate the two (the machine's speed
drifts); each figure is its best round. The loader alone (no training) is measured too, on 9x9 and on
19x19 rows: the rows per second its one thread makes, which is what has to keep a GPU fed.

Run from the project root: .venv/bin/python tests/bench/bench_train.py [--seconds 40] [--games 300]
The last line is one JSON object with ``samples_per_s``, ``in_memory_samples_per_s`` and
``loader_overhead`` (1 - the ratio of the two) among the figures.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from client.search.engine import NullEvaluator  # noqa: E402
from client.selfplay.run import run_selfplay  # noqa: E402
from common.data.loader import RowFile, ShuffledPass, decode_rows  # noqa: E402
from common.nn.speed import training_samples_per_second  # noqa: E402
from common.nn.training import Trainer, to_tensors  # noqa: E402
from common.settings import SelfPlaySettings, TrainingSettings  # noqa: E402

ROUNDS = 3
BATCH = 256  # the paper's batch


def make_games(out: Path, games: int, size: int = 9) -> list[RowFile]:
    settings = SelfPlaySettings(
        board_sizes=(size,),
        board_size_weights=(1.0,),
        visits=32,
        cheap_visits=8,
        full_search_prob=0.5,
        max_moves=2 * size * size,
    )
    run_selfplay(NullEvaluator(), settings, games=games, parallel=64, out_dir=out, seed=1, progress=False)
    return [RowFile(str(p), len(decode_rows(p.read_bytes(), p.name))) for p in sorted(out.glob("*.npz"))]


def read(name: str) -> bytes:
    return Path(name).read_bytes()


def loader_batches(files: list[RowFile], seed: int):
    """Endless batches from the real loader (a new shuffled pass each time one ends)."""
    for k in itertools.count():
        yield from ShuffledPass(
            files, read, BATCH, seed=seed + k, block_rows=20_000, drop_last=True, transform=to_tensors
        ).batches()


def loader_alone(files: list[RowFile], seconds: float) -> float:
    rows = 0
    start = time.perf_counter()
    for batch in loader_batches(files, seed=1000):
        rows += batch.size
        if time.perf_counter() - start >= seconds:
            break
    return rows / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=40.0, help="seconds of each figure, over its rounds")
    parser.add_argument("--games", type=int, default=300, help="self-play games to train on")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        files = make_games(Path(tmp), args.games)
        rows = sum(f.rows for f in files)
        print(f"{len(files)} games, {rows} rows of 9x9 self-play in {time.perf_counter() - start:.0f} s")

        settings = TrainingSettings(architecture="b6c96", batch_size=BATCH)
        trainer = Trainer("b6c96", settings, device="cpu")
        stream = loader_batches(files, seed=0)
        memory = list(itertools.islice(loader_batches(files, seed=500), 8))
        cycle = itertools.cycle(memory)
        per_round = args.seconds / ROUNDS
        loader_rounds, memory_rounds = [], []
        for k in range(ROUNDS):
            for which in ((memory_rounds, cycle), (loader_rounds, stream))[:: 1 if k % 2 == 0 else -1]:
                which[0].append(training_samples_per_second(trainer, which[1], per_round))
            print(f"round: in memory {memory_rounds[-1]:.1f}, with the loader {loader_rounds[-1]:.1f} samples/s")
        alone = loader_alone(files, min(10.0, per_round))
        files_19 = make_games(Path(tmp) / "19", max(8, args.games // 8), size=19)
        alone_19 = loader_alone(files_19, min(10.0, per_round))

    with_loader, in_memory = max(loader_rounds), max(memory_rounds)
    overhead = 1.0 - with_loader / in_memory
    figures = {
        "architecture": "b6c96",
        "board": 9,
        "batch": BATCH,
        "torch_threads": torch.get_num_threads(),
        "samples_per_s": round(with_loader, 2),
        "in_memory_samples_per_s": round(in_memory, 2),
        "loader_overhead": round(overhead, 4),
        "samples_per_s_rounds": [round(x, 2) for x in loader_rounds],
        "in_memory_samples_per_s_rounds": [round(x, 2) for x in memory_rounds],
        "loader_alone_rows_per_s": round(alone, 1),
        "loader_alone_rows_per_s_19": round(alone_19, 1),
    }
    print(
        f"b6c96 on 9x9, batch {BATCH}, CPU: {with_loader:.1f} samples/s with the loader, {in_memory:.1f} on "
        f"batches in memory: the loader costs {overhead:.1%}; the loader alone makes {alone:.0f} rows/s of "
        f"9x9 and {alone_19:.0f} of 19x19"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
