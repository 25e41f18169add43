"""Benchmark of ``--parallel auto`` on this machine's CPU: the games at once the client's measurement
chooses for the g170 b6c96 network on 9x9 self-play (the run's default settings for 9x9), then
self-play at that count, at 64 (the fixed default on a GPU) and at 16 (the fixed default on the
CPU), interleaved over several rounds in this one run, evaluations per second each (the median of
the rounds).

Run from the project root: .venv/bin/python tests/bench/bench_parallel.py [--rounds 3] [--seconds 20]
The last line is one JSON object with the figures: parallel_chosen, evals_per_second_chosen,
evals_per_second_64, evals_per_second_16, ratio_64 and ratio_16 (chosen against each), the
measurement's rates and time, the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from client.contribute.autoparallel import CANDIDATES, SECONDS_EACH, measure, selfplay_rate  # noqa: E402
from client.evaluator import Evaluator  # noqa: E402
from common.settings import SelfPlaySettings  # noqa: E402

SHARED = Path(os.environ.get("SENTE_SHARED", ROOT.parent / "shared"))
MODEL = SHARED / "models" / "g170-b6c96-s175395328-d26788732.bin.gz"
FIXED = (64, 16)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds of self-play per count and round")
    args = parser.parse_args()
    evaluator = Evaluator.from_file(MODEL, device="cpu")
    settings = SelfPlaySettings(board_sizes=(9,), board_size_weights=(1.0,))
    rate_at = selfplay_rate(evaluator, settings)
    started = time.monotonic()
    chosen, rates = measure(rate_at, CANDIDATES["cpu"], SECONDS_EACH["cpu"])
    measuring = time.monotonic() - started
    print(f"chosen: {chosen} games at once, measured in {measuring:.0f} s: {rates}", flush=True)
    counts = list(dict.fromkeys((chosen, *FIXED)))  # each once, should the chosen be a fixed one
    runs: dict[int, list[float]] = {count: [] for count in counts}
    for r in range(args.rounds):
        for count in counts if r % 2 == 0 else reversed(counts):
            runs[count].append(rate_at(count, args.seconds))
            print(f"round {r + 1}: {count} games at once, {runs[count][-1]:.0f} evaluations/s", flush=True)
    median = {count: round(statistics.median(values), 1) for count, values in runs.items()}
    figures = {
        "parallel_chosen": chosen,
        "evals_per_second_chosen": median[chosen],
        **{f"evals_per_second_{count}": median[count] for count in FIXED},
        **{f"ratio_{count}": round(median[chosen] / median[count], 3) for count in FIXED},
        "rounds": {str(k): [round(v, 1) for v in vs] for k, vs in runs.items()},
        "measurement": {str(k): round(v, 1) for k, v in rates.items()},
        "measurement_seconds": round(measuring, 1),
        "load_average": os.getloadavg()[0],
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
