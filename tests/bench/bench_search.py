"""Benchmark of the batched search in self-play, on the CPU.

(a) Everything but the forward pass: self-play with the null evaluator (uniform policy, even value,
    no network; every leaf's inputs are still encoded into the batch buffer), 64 games in parallel
    in two groups of 32 (as with a network on a GPU, where one group's search overlaps the other's
    forward pass), the paper's settings (full searches of 600 visits with probability 0.25, cheap
    ones of 100), on 9x9 and on 19x19: microseconds per visit. Targets: 10 on 9x9, 25 on 19x19. On
    a GPU this overhead, not the network, decides the speed. Three rounds per size; the fastest is
    the figure (all three are printed).
(b) With KataGo's g170 b6c96 network (compiled) on 9x9, 64 games: visits/s of self-play against the
    evaluator's raw evaluations/s on batches of the same size (64 rows: with the network on the
    CPU, self-play keeps the games in one group), measured before and after the self-play run.
    Target: 90%. Cache hits and finished games make some visits without a network evaluation, so
    the ratio of network evaluations alone is printed too.
(c) visits/s against KataGo's own CPU build on this kind of machine: 300 visits/s with 2 threads,
    g170, 9x9.

Run from the project root: .venv/bin/python tests/bench/bench_search.py [--seconds 40]
The last line is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from client.evaluator import Evaluator  # noqa: E402
from client.search.engine import NullEvaluator  # noqa: E402
from client.selfplay.run import default_groups, run_selfplay  # noqa: E402
from common.go.game import Game  # noqa: E402
from common.go.playout import new_rng, random_move  # noqa: E402
from common.go.rules import Rules  # noqa: E402
from common.nn.features import Encoder, new_batch  # noqa: E402
from common.settings import SelfPlaySettings  # noqa: E402

MODEL = ROOT.parent / "shared" / "models" / "g170-b6c96-s175395328-d26788732.bin.gz"
KATAGO_CPU_VISITS_PER_S_9 = 300
GAMES = 64
ROUNDS = 3


def selfplay(evaluator, size: int, seconds: float, seed: int) -> dict:
    settings = SelfPlaySettings(board_sizes=(size,), board_size_weights=(1.0,))
    with tempfile.TemporaryDirectory() as out:
        s = run_selfplay(
            evaluator, settings, games=10**6, parallel=GAMES, out_dir=out, seed=seed, progress=False, time_limit=seconds
        )
    return {
        "seconds": s.seconds,
        "visits": s.search_visits,
        "nn_evals": s.nn_evals,
        "steps": s.steps,
        "games_finished": s.games,
        "moves": s.moves,
    }


def encoded_batch(size: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n positions from random play, encoded and cropped to size x size as the search sends them."""
    rng = np.random.RandomState(size)
    kernel_rng = new_rng(size)
    games = []
    for _ in range(n):
        game = Game(size, rules=Rules(ko="POSITIONAL", suicide=False))
        for _ in range(rng.randint(size * size // 8, size * size // 2)):
            game.play(int(random_move(game.g, game.b, game.table, game.to_move, kernel_rng)))
        games.append(game)
    spatial, glob, _ = new_batch(n)
    Encoder().encode(games, spatial, glob)
    crop = spatial.reshape(n, 22, 19, 19)[:, :, :size, :size].reshape(n, 22, size * size)
    return np.ascontiguousarray(crop), glob


def raw_evals_per_s(evaluator: Evaluator, spatial: np.ndarray, glob: np.ndarray, size: int, seconds: float) -> float:
    evaluator.forward_raw(spatial, glob, size)  # compile / warm up
    calls = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds or calls < 3:
        evaluator.forward_raw(spatial, glob, size)
        calls += 1
    return calls * spatial.shape[0] / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seconds",
        type=float,
        default=40.0,
        help="seconds of each self-play measurement ((a): the three rounds together)",
    )
    args = parser.parse_args()
    figures: dict = {"games_in_parallel": GAMES, "torch_threads": torch.get_num_threads()}

    # (a) the null evaluator; a short run first compiles everything. Each size runs three rounds of
    # a third of the time each and reports the fastest: the others differ from it by what the
    # machine's other tenants took (up to a fifth on a shared virtual machine), not by the search.
    selfplay(NullEvaluator(), 9, 5.0, seed=100)
    for size in (9, 19):
        rounds = [selfplay(NullEvaluator(), size, args.seconds / ROUNDS, seed=size + k) for k in range(ROUNDS)]
        per_visit = [r["seconds"] / r["visits"] * 1e6 for r in rounds]
        r = rounds[int(np.argmin(per_visit))]
        us = min(per_visit)
        figures[f"null_us_per_visit_{size}"] = round(us, 2)
        figures[f"null_us_per_visit_{size}_rounds"] = [round(x, 2) for x in per_visit]
        figures[f"null_visits_per_s_{size}"] = round(r["visits"] / r["seconds"])
        figures[f"null_cache_or_terminal_share_{size}"] = round(1 - r["nn_evals"] / r["visits"], 3)
        print(
            f"(a) null evaluator, {size}x{size}: {us:.2f} us per visit ({r['visits'] / r['seconds']:.0f} visits/s, "
            f"{r['nn_evals']} encoded leaves of {r['visits']} visits, {r['games_finished']} games finished); "
            f"rounds: {', '.join(f'{x:.2f}' for x in per_visit)}"
        )

    # (b) and (c): the network.
    evaluator = Evaluator.from_file(MODEL, device="cpu", compile=True, cache_size=0)
    batch = GAMES // default_groups(evaluator)
    figures["batch_rows"] = batch
    spatial, glob = encoded_batch(9, batch)
    before = raw_evals_per_s(evaluator, spatial, glob, 9, 10.0)
    selfplay(evaluator, 9, 10.0, seed=200)  # warm-up: compiles the shapes self-play meets
    r = selfplay(evaluator, 9, args.seconds, seed=9)
    after = raw_evals_per_s(evaluator, spatial, glob, 9, 10.0)
    raw = 0.5 * (before + after)
    visits_per_s = r["visits"] / r["seconds"]
    nn_per_s = r["nn_evals"] / r["seconds"]
    figures["visits_per_s_9"] = round(visits_per_s, 1)
    figures["selfplay_nn_evals_per_s_9"] = round(nn_per_s, 1)
    figures["evaluator_evals_per_s_9"] = round(raw, 1)
    figures["evaluator_evals_per_s_9_before_after"] = [round(before, 1), round(after, 1)]
    figures["efficiency_9"] = round(visits_per_s / raw, 3)
    figures["nn_efficiency_9"] = round(nn_per_s / raw, 3)
    figures["katago_cpu_visits_per_s_9"] = KATAGO_CPU_VISITS_PER_S_9
    figures["vs_katago_9"] = round(visits_per_s / KATAGO_CPU_VISITS_PER_S_9, 2)
    print(
        f"(b) g170, 9x9, {GAMES} games: {visits_per_s:.0f} visits/s ({nn_per_s:.0f} network evaluations/s) "
        f"against {raw:.0f} raw evaluations/s at batch {batch} (before {before:.0f}, after {after:.0f}): "
        f"efficiency {visits_per_s / raw:.1%} (network evaluations alone {nn_per_s / raw:.1%})"
    )
    print(
        f"(c) {visits_per_s:.0f} visits/s against KataGo's {KATAGO_CPU_VISITS_PER_S_9} on this kind of machine: "
        f"{visits_per_s / KATAGO_CPU_VISITS_PER_S_9:.2f}x"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
