"""Benchmark of network evaluation on this machine: the g170 b6c96 network (KataGo's own, imported).

For 9x9 and 19x19 positions taken from random play, batches of 1, 8, 32 and 128 positions go
through the whole evaluator (encoding, one forward pass, post-processing), on the CPU unless CUDA
is present, with the network compiled by torch.compile (what a long-running client uses) and
eager. Printed per size and batch: evaluations/s end to end and for the network alone, and the
encoding time per position. Compilation happens in a warm-up call per shape, outside the timing.
KataGo's own CPU build (Eigen, AVX2) does 287 evaluations/s on 9x9 and 126 on 19x19 with this
network and 2 threads on this kind of machine; the ratios against those figures are printed too.

Run from the project root: .venv/bin/python tests/bench/bench_nn.py
The last line is one JSON object with the figures.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from client.evaluator import Evaluator  # noqa: E402
from common.encoding.features import Encoder, new_batch  # noqa: E402
from common.go.game import Game  # noqa: E402
from common.go.playout import new_rng, random_move  # noqa: E402
from common.go.rules import Rules  # noqa: E402

MODEL = ROOT.parent / "shared" / "models" / "g170-b6c96-s175395328-d26788732.bin.gz"
KATAGO_CPU = {9: 287, 19: 126}
BATCHES = (1, 8, 32, 128)
MIN_SECONDS = 3.0


def positions(size: int, count: int, seed: int) -> list[Game]:
    """Positions from random play, 10 to 60% of the board filled."""
    rng = np.random.RandomState(seed)
    kernel_rng = new_rng(seed)
    games = []
    while len(games) < count:
        game = Game(size, rules=Rules(ko="SIMPLE", suicide=False))
        for _ in range(rng.randint(size * size // 10, size * size * 6 // 10)):
            if game.is_over:
                break
            game.play(int(random_move(game.g, game.b, game.table, game.to_move, kernel_rng)))
        if not game.is_over:
            games.append(game)
    return games


def timed(fn, min_seconds: float = MIN_SECONDS) -> float:
    """Seconds per call, over at least min_seconds (after one warm-up call)."""
    fn()
    calls = 0
    start = time.perf_counter()
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds and calls >= 2:
            return elapsed / calls


def main() -> None:
    figures: dict = {"encode_us_per_position": {}, "katago_cpu_reference": {str(k): v for k, v in KATAGO_CPU.items()}}
    games_by_size = {size: positions(size, max(BATCHES), seed=size) for size in (9, 19)}
    inputs = {}
    for size, games in games_by_size.items():
        encoder = Encoder()
        spatial, glob, legal = new_batch(len(games))
        t_encode = timed(lambda e=encoder, g=games, s=spatial, gl=glob, lg=legal: e.encode(g, s, gl, lg), 1.0)
        figures["encode_us_per_position"][str(size)] = round(t_encode / len(games) * 1e6, 1)
        print(f"{size}x{size}: encoding {figures['encode_us_per_position'][str(size)]:.1f} us per position")
        inputs[size] = (
            torch.from_numpy(spatial).view(len(games), 22, 19, 19)[:, :, :size, :size],
            torch.from_numpy(glob),
        )
    for mode in ("compiled", "eager"):
        evaluator = Evaluator.from_file(MODEL, cache_size=0, compile=mode == "compiled")
        figures["device"] = str(evaluator.device)
        suffix = "" if mode == "compiled" else "_eager"
        all_key, net_key = f"evals_per_s{suffix}", f"nn_only_evals_per_s{suffix}"
        figures[all_key], figures[net_key] = {}, {}
        print(f"network {MODEL.name}, {mode}, device {evaluator.device}, torch threads {torch.get_num_threads()}")
        print(f"{'size':>4} {'batch':>5} {'evals/s':>10} {'net only/s':>11} {'vs KataGo':>9}")
        for size, games in games_by_size.items():
            x, g = inputs[size]
            figures[all_key][str(size)], figures[net_key][str(size)] = {}, {}
            for batch in BATCHES:
                chunk = games[:batch]
                t_all = timed(lambda ev=evaluator, c=chunk: ev.evaluate(c, use_cache=False))
                xb, gb = x[:batch].contiguous(), g[:batch].contiguous()
                t_net = timed(lambda ev=evaluator, a=xb, b=gb: ev._forward(a, b))
                eps = batch / t_all
                figures[all_key][str(size)][str(batch)] = round(eps, 1)
                figures[net_key][str(size)][str(batch)] = round(batch / t_net, 1)
                print(f"{size:>4} {batch:>5} {eps:>10.1f} {batch / t_net:>11.1f} {eps / KATAGO_CPU[size]:>8.2f}x")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
