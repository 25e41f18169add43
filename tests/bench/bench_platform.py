"""How the one-machine platform uses the machine: ``manage.py platform`` (what ``make run`` starts) on
9x9 from the random network for ``--minutes``, its client's self-play on one worker process (as it
was) and on one worker per core (the default now), interleaved ``--rounds`` times, each sitting in
a fresh data folder on the embedded default, on the CPU.

For each sitting: the client's evaluations per second (the mean of its status lines after the first
minute: self-play and rating together), self-play games and rows per minute (from its database), the
trainer's idle share (the share of looks, every 5 s once it has trained, that find its line not
training), and the cores the platform's processes kept busy (their CPU seconds over the wall
seconds), and the share of self-play games that ended at the move limit without a result. The
machine's load average is read before and after each sitting.

Run from the project root: .venv/bin/python tests/bench/bench_platform.py [--minutes 8] [--rounds 2]
The last line is one JSON object with the figures (``_before``: one worker, ``_after``: one per core).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from server.platform.ablation import CpuMeter, arm_env  # noqa: E402
from tests.server.live import free_port, read_sqlite  # noqa: E402

LOOK_SECONDS = 5.0
EVALS = re.compile(r"(\d+) evals/s")


def _query(db: Path, sql: str) -> list[tuple]:
    try:
        return read_sqlite(db, sql)
    except sqlite3.Error:  # not made yet, or busy
        return []


def sitting(minutes: float, workers: int, board: int, folder: Path) -> dict:
    """One sitting of the platform with ``workers`` self-play workers; its figures."""
    data = folder / "data"
    port = free_port()
    command = [
        sys.executable,
        "manage.py",
        "platform",
        "--port",
        str(port),
        "--board",
        str(board),
        "--device",
        "cpu",
        "--selfplay-workers",
        str(workers),
        "--status-seconds",
        "60",
    ]
    load_before = os.getloadavg()[0]
    with open(folder / "platform.log", "wb") as log:
        platform = subprocess.Popen(command, cwd=ROOT, env=arm_env(data), stdout=log, stderr=subprocess.STDOUT)
    meter = CpuMeter(platform.pid)
    db = data / "sente.sqlite3"
    looks: list[str] = []
    started = time.monotonic()
    try:
        while time.monotonic() - started < 60 * minutes:
            if platform.poll() is not None:
                raise RuntimeError(f"the platform ended early; see {folder / 'platform.log'}")
            time.sleep(LOOK_SECONDS)
            meter.seconds()
            status = _query(db, "SELECT status, samples FROM training_trainingline")
            if status and status[0][1] > 0:
                looks.append(status[0][0])
        cpu = meter.seconds()
        wall = time.monotonic() - started
    finally:
        platform.send_signal(signal.SIGINT)
        try:
            platform.wait(timeout=600)
        except subprocess.TimeoutExpired:
            for child in psutil.Process(platform.pid).children(recursive=True):
                child.kill()
            platform.kill()
    games, rows = _query(db, "SELECT COUNT(*), COALESCE(SUM(rows), 0) FROM games_traininggame")[0]
    rating = _query(db, "SELECT COUNT(*) FROM games_ratinggame")[0][0]
    unscored = _query(db, "SELECT COUNT(*) FROM games_traininggame WHERE winner = '-'")[0][0]
    client_log = (data / "logs" / "client.log").read_text(errors="replace")
    evals = [int(m) for m in EVALS.findall(client_log)][1:]  # the first line covers the start-up
    return {
        "workers": workers,
        "minutes": wall / 60,
        "evals_per_s": statistics.mean(evals) if evals else 0.0,
        "games_per_min": games / (wall / 60),
        "rows_per_min": rows / (wall / 60),
        "rating_games": rating,
        "no_result_share": unscored / games if games else 0.0,
        "trainer_idle": sum(s != "training" for s in looks) / len(looks) if looks else 1.0,
        "cores_busy": cpu / wall,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=8.0, help="each sitting's wall minutes (default 8)")
    parser.add_argument("--rounds", type=int, default=2, help="sittings of each kind, interleaved (default 2)")
    parser.add_argument("--board", type=int, default=9)
    parser.add_argument("--keep", type=Path, help="keep the sittings' folders here (default: a temporary folder)")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    results: dict[str, list[dict]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        for round_ in range(args.rounds):
            for kind, workers in (
                (("before", 1), ("after", cores)) if round_ % 2 == 0 else (("after", cores), ("before", 1))
            ):
                folder = base / f"{kind}-{round_}"
                folder.mkdir(parents=True, exist_ok=True)
                figures = sitting(args.minutes, workers, args.board, folder)
                results[kind].append(figures)
                print(f"{kind} (round {round_ + 1}, {workers} worker(s)): {json.dumps(figures)}", flush=True)
    summary: dict[str, float | int] = {
        "board": args.board,
        "minutes": args.minutes,
        "rounds": args.rounds,
        "cores": cores,
    }
    for kind, sittings in results.items():
        for key in ("evals_per_s", "games_per_min", "rows_per_min", "trainer_idle", "cores_busy", "no_result_share"):
            summary[f"{key}_{kind}"] = round(statistics.mean(s[key] for s in sittings), 3)
    summary["load_before"] = round(min(s["load_before"] for v in results.values() for s in v), 2)
    summary["load_max_after"] = round(max(s["load_after"] for v in results.values() for s in v), 2)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
