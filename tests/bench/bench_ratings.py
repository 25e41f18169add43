"""Benchmark of the ratings fit: a full refit of a run of 1,000 networks and 1,000,000 rating games.

The run is a lineage (each network's parent one or two generations back, each a little stronger);
every network plays its parent and the few networks after it, with a small share of draws. The fit
ties each network to its parent with the default prior (4 virtual draws) and anchors the first. The
refit's time includes everything the server's refit does with the games once read: summing them per
pair, Newton's method to convergence, and the full covariance. The fitted ratings are checked
against the true ones (the share within 1.96 standard errors).

Run from the project root: .venv/bin/python tests/bench/bench_ratings.py [--networks 1000] [--games 1000000]
The last line is one JSON object with the figures (``refit_s`` among them).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from common.elo import ELO_PER_NAT  # noqa: E402
from server.ratings.fit import fit_ratings  # noqa: E402


def synthetic_run(networks: int, games: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    parents = np.array([-1] + [max(0, i - 1 - int(rng.integers(0, 2))) for i in range(1, networks)])
    true = np.zeros(networks)
    for i in range(1, networks):
        true[i] = true[parents[i]] + rng.normal(20.0, 25.0)
    # Each network against its parent and the next four networks.
    pairs = {(i, int(parents[i])) for i in range(1, networks)}
    pairs |= {(i, j) for i in range(networks) for j in range(i + 1, min(networks, i + 5))}
    pairs = np.array(sorted(pairs))
    which = rng.integers(0, len(pairs), games)
    first = pairs[which, 0]
    second = pairs[which, 1]
    swap = rng.random(games) < 0.5  # colours, or who is named first, do not matter
    first, second = np.where(swap, second, first), np.where(swap, first, second)
    p = 1.0 / (1.0 + np.exp((true[second] - true[first]) / ELO_PER_NAT))
    u = rng.random(games)
    score = np.where(u < p - 0.01, 1.0, np.where(u < p + 0.01, 0.5, 0.0))
    return parents, true, first, second, score


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--networks", type=int, default=1000)
    parser.add_argument("--games", type=int, default=1_000_000)
    args = parser.parse_args()
    parents, true, first, second, score = synthetic_run(args.networks, args.games)
    fit_ratings(args.networks, first[:1000], second[:1000], score[:1000], parents=parents, virtual_draws=4.0)  # warm
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        fit = fit_ratings(args.networks, first, second, score, parents=parents, virtual_draws=4.0)
        times.append(time.perf_counter() - t0)
    inside = float(np.mean(np.abs(fit.elo - (true - true[0])) <= 1.96 * np.maximum(fit.se, 1e-9)))
    refit = min(times)
    print(
        f"{args.networks} networks, {args.games} games: full refit in {refit:.2f} s "
        f"(rounds {', '.join(f'{t:.2f}' for t in times)}), {fit.iterations} Newton steps; "
        f"{100 * inside:.0f}% of networks within 1.96 standard errors of their true rating; "
        f"last network {fit.elo[-1]:.0f} +- {fit.se[-1]:.0f} Elo (true {true[-1] - true[0]:.0f})"
    )
    print(
        json.dumps(
            {
                "networks": args.networks,
                "games": args.games,
                "refit_s": round(refit, 3),
                "refit_s_rounds": [round(t, 3) for t in times],
                "newton_steps": fit.iterations,
                "within_1_96_se": round(inside, 3),
                "last_elo": round(float(fit.elo[-1]), 1),
                "last_se": round(float(fit.se[-1]), 1),
                "last_true_elo": round(float(true[-1] - true[0]), 1),
                "anchor_is_zero": bool(math.isclose(fit.elo[0], 0.0)),
            }
        )
    )


if __name__ == "__main__":
    main()
