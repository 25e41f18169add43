"""Benchmark of the network's precisions in self-play, side by side with KataGo's self-play.

For each precision (fp32, and every reduced one this device runs fast: bf16 on a CPU with bf16
instructions, fp16 and bf16 on a GPU; ``--precisions`` names others):

(a) What each reduced precision the device has (bf16 on a CPU, even where it is slow; fp16 and bf16
    on a GPU) changes in the outputs, against fp32 on the same device: the largest
    differences on the canary positions (winrate, lead, top policy move, policy KL, ownership) and on
    KataGo's golden positions (policy, winrate, lead, ownership), with whether the canary's
    reduced-precision tolerance holds and what ``--precision auto`` picks here.
(b) Self-play network evaluations per second: 9x9, g170 b6c96 compiled, 64 games at once, full
    searches of 600 visits with probability 0.25 and cheap ones of 100 (bench_search's settings),
    and, when SENTE_KATAGO names a KataGo binary, KataGo's own self-play on the same network and
    settings (network rows per second, from its log): each precision then KataGo in every round,
    for --rounds rounds of --seconds each; the median of each side's rounds, and the median of the
    rounds' ratios.
(c) With --games N (at least 200 for the claim): N games at equal visits (--visits) of each reduced
    precision against fp32: its Elo difference and the 95% interval.

Run from the project root: .venv/bin/python tests/bench/bench_precision.py [--rounds 3]
[--seconds 300] [--precisions fp32,bf16] [--games 200 --visits 100]
The last line is one JSON object: selfplay_evals_per_s, katago_rows_per_s, ratio_vs_katago (each per
precision where it applies), the output differences, the Elo figures, the precision auto picks and
the machine's load.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from client.evaluator import Evaluator  # noqa: E402
from client.match.run import run_match  # noqa: E402
from common import canary  # noqa: E402
from common.nn import precision as precisions  # noqa: E402
from common.nn.runner import DTYPES  # noqa: E402
from tests.bench.bench_methods import match_settings  # noqa: E402
from tests.bench.bench_search import MODEL, katago_selfplay, selfplay  # noqa: E402
from tests.golden import golden_positions  # noqa: E402

GOLDEN = ("katago_rawnn_sample.jsonl", "katago_territory_rawnn_sample.jsonl")


def evaluator(precision: str, device: str, compile: bool = True) -> Evaluator:
    """The network in ``precision``, forced: the canary check is this benchmark's to report, so a
    reduced precision that fails it still runs here (the client would fall back to fp32)."""
    ev = Evaluator.from_file(MODEL, device=device, compile=compile, cache_size=0, precision="fp32")
    ev.set_dtype(DTYPES[precision])
    return ev


def differences(precision: str, device: str, fp32: Evaluator) -> dict:
    """The largest differences of ``precision``'s outputs from fp32's on the canary and golden positions."""
    ev = evaluator(precision, device, compile=False)
    result = canary.compare(fp32.canary_outputs(None), ev.canary_outputs(ev.dtype), canary.REDUCED_TOLERANCE)
    out: dict = {
        "canary": {m: float(f"{e[1]:.3g}") for m, e in result.errors.items()},
        "canary_passes": result.passed,
        "canary_worst": {m: e[2] for m, e in result.errors.items()},
    }
    worst = {"policy": 0.0, "winrate": 0.0, "lead": 0.0, "ownership": 0.0}
    for name in GOLDEN:
        games = [g for g, _ in golden_positions(ROOT.parent / "shared", name)]
        for a, b in zip(ev.evaluate(games, perspective="white"), fp32.evaluate(games, perspective="white")):
            worst["policy"] = max(worst["policy"], float(np.abs(a.policy - b.policy).max()))
            worst["winrate"] = max(worst["winrate"], abs(0.5 * ((a.win - a.loss) - (b.win - b.loss))))
            worst["lead"] = max(worst["lead"], abs(a.lead - b.lead))
            worst["ownership"] = max(worst["ownership"], float(np.abs(a.ownership - b.ownership).max()))
    out["golden"] = {k: float(f"{v:.3g}") for k, v in worst.items()}
    return out


def elo(precision: str, device: str, games: int, visits: int, seed: int) -> dict:
    """``games`` games at ``visits`` of ``precision`` against fp32, colours alternating."""
    settings = match_settings(visits)
    summary = run_match(
        [evaluator(precision, device), evaluator("fp32", device)],
        (precision, "fp32"),
        settings,
        games=games,
        parallel=min(games, 64),
        out_dir=None,
        seed=seed,
    )
    diff, half = summary.elo()
    finite = math.isfinite(diff) and math.isfinite(half)
    return {
        "games": summary.games,
        "score": round(summary.score, 4),
        "elo": round(diff + 0.0, 1) if finite else None,
        "ci95": round(half, 1) if finite else None,
        "upper": round(diff + half, 1) if finite else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="cpu or cuda:N (default: cuda if present)")
    parser.add_argument("--precisions", help="comma-separated, e.g. fp32,bf16 (default: fp32 and the fast ones)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (3)")
    parser.add_argument("--seconds", type=float, default=300.0, help="seconds of each side's self-play per round")
    parser.add_argument("--games", type=int, default=0, help="games of each reduced precision against fp32 (0)")
    parser.add_argument("--visits", type=int, default=100, help="visits per move in those games (100)")
    args = parser.parse_args()
    ev32 = Evaluator.from_file(MODEL, device=args.device, cache_size=0, precision="fp32")
    device = str(ev32.device)
    fast = precisions.candidates("auto", ev32.device.type)
    names = args.precisions.split(",") if args.precisions else ["fp32", *fast]
    for name in names:
        if name not in DTYPES:
            raise SystemExit(f"--precisions: {name!r} is not one of {', '.join(DTYPES)}")
    picked = Evaluator.from_file(MODEL, device=args.device, cache_size=0).precision
    figures: dict = {
        "device": device,
        "torch_threads": torch.get_num_threads(),
        "cpu_bf16": precisions.cpu_bf16() if ev32.device.type == "cpu" else None,
        "auto_picks": picked,
        "load_before": os.getloadavg(),
    }
    print(f"device {device}; auto picks {picked}; precisions measured: {', '.join(names)}")

    # (a) the outputs, of every reduced precision the device has (cheap even where it is slow)
    reduced = ["bf16"] if ev32.device.type == "cpu" else ["fp16", "bf16"]
    figures["differences"] = {n: differences(n, device, ev32) for n in dict.fromkeys(reduced + names) if n != "fp32"}
    for n, d in figures["differences"].items():
        print(f"(a) {n} against fp32: canary {d['canary']} (passes: {d['canary_passes']}); golden {d['golden']}")

    # (b) self-play, interleaved with KataGo's
    binary = os.environ.get("SENTE_KATAGO")
    if binary and not os.access(binary, os.X_OK):
        raise SystemExit(f"SENTE_KATAGO={binary}: not an executable file")
    evaluators = {n: evaluator(n, device) for n in names}
    for ev in evaluators.values():
        selfplay(ev, 9, 10.0, seed=200)  # compiles the shapes self-play meets
    ours: dict[str, list[float]] = {n: [] for n in names}
    theirs: list[float] = []
    ratios: dict[str, list[float]] = {n: [] for n in names}
    for k in range(args.rounds):
        for n, ev in evaluators.items():
            r = selfplay(ev, 9, args.seconds, seed=300 + k)
            ours[n].append(r["nn_evals"] / r["seconds"])
        line = {n: round(v[-1], 1) for n, v in ours.items()}
        if binary:
            kg = katago_selfplay(binary, args.seconds)
            theirs.append(kg["nn_evals"] / kg["seconds"])
            for n in names:
                ratios[n].append(ours[n][-1] / theirs[-1])
            line["katago"] = round(theirs[-1], 1)
        print(f"(b) round {k + 1}, network evaluations/s: {json.dumps(line)}", flush=True)
    figures["selfplay_evals_per_s"] = {n: round(statistics.median(v), 1) for n, v in ours.items()}
    figures["selfplay_evals_per_s_rounds"] = {n: [round(x, 1) for x in v] for n, v in ours.items()}
    figures["katago"] = binary or None
    figures["katago_rows_per_s"] = round(statistics.median(theirs), 1) if theirs else None
    figures["katago_rows_per_s_rounds"] = [round(x, 1) for x in theirs] if theirs else None
    figures["ratio_vs_katago"] = {n: round(statistics.median(v), 3) if v else None for n, v in ratios.items()}
    figures["ratio_vs_katago_rounds"] = {n: [round(x, 3) for x in v] for n, v in ratios.items()} if theirs else None
    print(
        f"(b) medians: ours {figures['selfplay_evals_per_s']}, KataGo {figures['katago_rows_per_s']}, "
        f"ratios {figures['ratio_vs_katago']}"
    )

    # (c) strength at equal visits
    figures["elo_vs_fp32"] = {}
    if args.games:
        for k, n in enumerate(n for n in names if n != "fp32"):
            figures["elo_vs_fp32"][n] = e = elo(n, device, args.games, args.visits, seed=500 + k)
            print(f"(c) {n} against fp32, {e['games']} games at {args.visits} visits: {e['elo']} +- {e['ci95']} Elo")
    figures["load_after"] = os.getloadavg()
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
