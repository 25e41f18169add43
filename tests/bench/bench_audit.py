"""The audit's figures: honest and dishonest rows, and the cost of auditing a contributor.

Honest rows are played by the client's own self-play code with a network: the tiny sharp network
of the tests on 7x7 (12 and 32 visits) and KataGo's g170 b6c96 on 9x9 (SENTE_SHARED/models).
Dishonest variants of the same games: policy targets shuffled over the legal points, policy targets
drawn at random, and rows another network played (claimed as this network's). For each, the
contributor-level means of ``ROW_STATISTICS`` over samples of ``--rows`` rows (bootstrap over the
pooled rows) are summarised by their 0.1%, 50% and 99.9% points; the cost is the audit of one
contributor's sample (``--rows`` rows, 8 symmetries each) on one CPU thread, on 9x9 and 19x19 rows.

Run from the repository root: ``.venv/bin/python tests/bench/bench_audit.py``; the last line is JSON.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from common.settings import SelfPlaySettings  # noqa: E402
from server.audit.evaluate import ROW_STATISTICS, RowFigures, evaluate_rows  # noqa: E402
from tests.server import audit_data, helpers  # noqa: E402

SHARED = Path(os.environ.get("SENTE_SHARED", ROOT.parent / "shared"))
B6C96 = SHARED / "models" / "g170-b6c96-s175395328-d26788732.bin.gz"


def pooled(model, games) -> RowFigures:
    return RowFigures.concat([evaluate_rows(model, g.npz) for g in games])


def summary(rows: RowFigures, sample: int, draws: int, rng: np.random.Generator) -> dict:
    """Per statistic: the 0.1%, 50% and 99.9% points of a contributor's mean over ``sample`` rows."""
    out = {"rows": len(rows)}
    for s in ROW_STATISTICS:
        values = getattr(rows, s)
        values = values[~np.isnan(values)]
        if values.size == 0:
            continue
        means = rng.choice(values, size=(draws, sample), replace=True).mean(axis=1)
        out[s] = [round(float(q), 3) for q in np.quantile(means, [0.001, 0.5, 0.999])]
    return out


def variants(model, honest, other) -> dict:
    return {
        "honest": pooled(model, honest),
        "shuffled": pooled(model, [audit_data.shuffled_targets(g, 100 + i) for i, g in enumerate(honest)]),
        "random": pooled(model, [audit_data.random_targets(g, 200 + i) for i, g in enumerate(honest)]),
        "other_network": pooled(model, other),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=128, help="rows per contributor (SENTE_AUDIT_ROWS)")
    parser.add_argument("--games", type=int, default=12, help="games per honest set")
    parser.add_argument("--no-katago", action="store_true", help="skip the b6c96 figures")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    figures: dict = {"rows_per_contributor": args.rows}
    tmp = Path(tempfile.mkdtemp(prefix="bench-audit-"))
    a, b = audit_data.sharp_network(1), audit_data.sharp_network(2)
    for visits in (12, 32):
        settings = dataclasses.replace(helpers.SELFPLAY, visits=visits, full_search_prob=1.0)
        honest = audit_data.honest_games(a, "a", tmp / f"a{visits}", args.games, 1, settings)
        other = audit_data.honest_games(b, "b", tmp / f"b{visits}", args.games, 2, settings)
        for name, rows in variants(a, honest, other).items():
            figures[f"tiny_7x7_v{visits}_{name}"] = summary(rows, args.rows, 4000, rng)

    if not args.no_katago and B6C96.exists():
        from client.evaluator import load_network

        katago = load_network(B6C96, "cpu")
        settings = SelfPlaySettings(
            board_sizes=(9,), board_size_weights=(1.0,), visits=48, cheap_visits=8, full_search_prob=1.0, max_moves=120
        )
        games = max(4, args.games // 3)
        start = time.perf_counter()
        honest = audit_data.honest_games(katago, "b6c96", tmp / "k", games, 3, settings)
        figures["b6c96_selfplay_s"] = round(time.perf_counter() - start, 1)
        other = audit_data.honest_games(a, "tiny", tmp / "kt", games, 4, settings)
        for name, rows in variants(katago, honest, other).items():
            figures[f"b6c96_9x9_v48_{name}"] = summary(rows, args.rows, 4000, rng)
        # the cost of one contributor's sample, 9x9 and 19x19 rows
        npz = honest[0].npz
        n = len(RowFigures.concat([evaluate_rows(katago, g.npz) for g in honest[:1]]))
        idx = np.resize(np.arange(n), args.rows)
        start = time.perf_counter()
        evaluate_rows(katago, npz, idx)
        figures["b6c96_9x9_ms_per_contributor"] = round((time.perf_counter() - start) * 1000, 1)
        big = dataclasses.replace(
            helpers.SELFPLAY,
            board_sizes=(19,),
            board_size_weights=(1.0,),
            visits=4,
            cheap_visits=2,
            full_search_prob=1.0,
            max_moves=40,
        )
        from client.search.engine import NullEvaluator
        from client.selfplay.run import run_selfplay

        run_selfplay(NullEvaluator(), big, games=1, parallel=1, out_dir=tmp / "big", seed=5, progress=False)
        npz19 = next((tmp / "big").glob("*.npz")).read_bytes()
        n19 = len(evaluate_rows(katago, npz19))
        start = time.perf_counter()
        evaluate_rows(katago, npz19, np.resize(np.arange(n19), args.rows))
        figures["b6c96_19x19_ms_per_contributor"] = round((time.perf_counter() - start) * 1000, 1)
        figures["b6c96_19x19_ms_per_row"] = round(figures["b6c96_19x19_ms_per_contributor"] / args.rows, 2)
    npz = audit_data.honest_games(a, "a", tmp / "t", 1, 9)[0].npz
    n = len(evaluate_rows(a, npz))
    start = time.perf_counter()
    evaluate_rows(a, npz, np.resize(np.arange(n), args.rows))
    figures["tiny_7x7_ms_per_contributor"] = round((time.perf_counter() - start) * 1000, 1)
    for key, value in figures.items():
        print(f"{key}: {value}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
