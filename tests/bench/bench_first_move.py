"""Benchmark of a volunteer's first start: the time from a fresh install to the first move.

1. A copy of this checkout's client without any compiled kernel (as a fresh clone is) is installed
   into a new virtual environment with pip, as ``pipx install`` does: its wheel's build compiles the
   kernels into the wheel (``buildtools/sente_wheel.py``). The install's time.
2. Then, over several rounds: ``sente gtp`` with the g170 b6c96 network started and asked for a move
   on 9x9 (the time from the start to the answer), with the kernels the wheel brought and, as before
   they came with it, with an empty numba cache of this processor's kernels; and ``sente selfplay``
   playing one 9x9 game from its start to its end. numba's cache log counts the kernels each start
   compiled.
3. The generic kernels (any processor of the architecture, which the wheel ships) against those
   compiled for this processor: the installed client's self-play evaluations per second at 64 games
   at once, each from its own warm cache, interleaved.

Run from the project root: .venv/bin/python tests/bench/bench_first_move.py [--rounds 2] [--seconds 20]
The last line is one JSON object with the figures: install_seconds, first_move_seconds (median, with
the kernels shipped), first_move_seconds_uncompiled (median, an empty cache), first_game_seconds,
kernels_compiled_at_first_start (in all the starts with the kernels shipped, and their names),
evals_per_second_generic,
evals_per_second_host, generic_vs_host, the rounds' figures and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.venvs import copy_package_sources, install_client  # noqa: E402

SHARED = Path(os.environ.get("SENTE_SHARED", ROOT.parent / "shared"))
MODEL = SHARED / "models" / "g170-b6c96-s175395328-d26788732.bin.gz"
VISITS = 16
MOVE = re.compile(r"^= ([A-HJ-T]\d+|pass|resign)\s*$", re.IGNORECASE)
# numba's cache log (NUMBA_DEBUG_CACHE): a line per kernel signature compiled and saved
COMPILED = re.compile(r"\[cache\] data saved to '[^']*[/\\]([^/\\']+)\.py\d+\.\d+\.nbc'")

RATE = """
import sys
from client.contribute.autoparallel import selfplay_rate
from client.evaluator import Evaluator
from common.settings import SelfPlaySettings
settings = SelfPlaySettings(board_sizes=(9,), board_size_weights=(1.0,))
rate_at = selfplay_rate(Evaluator.from_file(sys.argv[1], device="cpu"), settings)
print(rate_at(64, float(sys.argv[2])))
"""


def first_move(sente: Path, env: dict[str, str]) -> tuple[float, list[str]]:
    """Seconds from ``sente gtp``'s start to its first move on 9x9, and the kernels it compiled."""
    started = time.monotonic()
    gtp = subprocess.Popen(
        [sente, "gtp", "--model", MODEL, "--visits", str(VISITS), "--seed", "1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert gtp.stdin is not None and gtp.stdout is not None
    gtp.stdin.write("boardsize 9\nkomi 7\ngenmove b\n")
    gtp.stdin.flush()
    compiled: list[str] = []
    took = None
    for line in gtp.stdout:
        compiled += COMPILED.findall(line)
        if MOVE.match(line):
            took = time.monotonic() - started
            break
    gtp.stdin.write("quit\n")
    gtp.stdin.close()
    gtp.wait(timeout=60)
    if took is None:
        raise SystemExit(f"sente gtp gave no move (status {gtp.returncode})")
    return took, compiled


def first_game(sente: Path, env: dict[str, str], out: Path) -> tuple[float, list[str]]:
    """Seconds of ``sente selfplay`` playing one 9x9 game, start to end, and the kernels it compiled."""
    options = ["--size", "9", "--games", "1", "--parallel", "1", "--quiet", "--visits", f"{VISITS},{VISITS // 4}"]
    started = time.monotonic()
    done = subprocess.run(
        [sente, "selfplay", "--model", MODEL, *options, "--out", out],
        capture_output=True,
        text=True,
        env=env,
    )
    took = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"sente selfplay failed: {done.stderr[-2000:]}")
    return took, COMPILED.findall(done.stdout + done.stderr)


def selfplay_rate(python: Path, env: dict[str, str], seconds: float) -> float:
    """Self-play evaluations per second of the installed client, with these kernels."""
    done = subprocess.run(
        [python, "-c", RATE, MODEL, str(seconds)], capture_output=True, text=True, env=env, cwd=python.parents[2]
    )
    if done.returncode != 0:
        raise SystemExit(f"self-play failed: {done.stderr[-2000:]}")
    return float(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds of self-play per speed measurement")
    args = parser.parse_args()
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="sente-first-move-") as tmp:
        folder = Path(tmp)
        # This checkout's client as a fresh clone holds it: no compiled kernel, no byte code.
        installing = install_client(copy_package_sources(folder / "source", "__pycache__"), folder / "venv")
        print(f"installed in {installing:.0f} s", flush=True)
        sente = folder / "venv" / "bin" / "sente"
        base = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
        shipped = {**base, "NUMBA_DEBUG_CACHE": "1"}
        moves: list[float] = []
        uncompiled: list[float] = []
        games: list[float] = []
        compiled: list[str] = []  # the kernels a start with the kernels shipped compiled
        compiled_uncached: list[int] = []
        for r in range(args.rounds):
            took, names = first_move(sente, shipped)
            moves.append(took)
            compiled += names
            empty = {**shipped, "NUMBA_CACHE_DIR": str(folder / f"empty-{r}"), "NUMBA_CPU_NAME": "host"}
            took, names = first_move(sente, empty)
            uncompiled.append(took)
            compiled_uncached.append(len(names))
            took, game_names = first_game(sente, shipped, folder / f"games-{r}")
            games.append(took)
            compiled += game_names
            loads.append(os.getloadavg()[0])
            print(
                f"round {r + 1}: first move {moves[-1]:.1f} s with the kernels shipped, {uncompiled[-1]:.1f} s "
                f"with an empty cache ({compiled_uncached[-1]} kernels compiled); a first game {games[-1]:.1f} s; "
                f"compiled with the kernels shipped: {', '.join(compiled) or 'none'}",
                flush=True,
            )
        # The kernels shipped (generic), against this processor's in the first empty cache, where
        # numba's cache log of the GTP start above already holds some: the rest compiled first.
        python = folder / "venv" / "bin" / "python"
        kernels = {
            "generic": base,
            "host": {**base, "NUMBA_CACHE_DIR": str(folder / "empty-0"), "NUMBA_CPU_NAME": "host"},
        }
        subprocess.run([python, "-m", "client.kernels"], env=kernels["host"], cwd=folder, check=True)
        rates: dict[str, list[float]] = {"generic": [], "host": []}
        for env in kernels.values():  # untimed: the network's first passes
            selfplay_rate(python, env, 3.0)
        for r in range(args.rounds + 1):
            for cpu in ("generic", "host") if r % 2 == 0 else ("host", "generic"):
                rates[cpu].append(selfplay_rate(python, kernels[cpu], args.seconds))
                print(f"round {r + 1}: {cpu} kernels, {rates[cpu][-1]:.0f} evaluations/s", flush=True)
            loads.append(os.getloadavg()[0])
    generic, host = (statistics.median(rates[cpu]) for cpu in ("generic", "host"))
    figures = {
        "install_seconds": round(installing, 1),
        "first_move_seconds": round(statistics.median(moves), 2),
        "first_move_seconds_uncompiled": round(statistics.median(uncompiled), 1),
        "first_game_seconds": round(statistics.median(games), 2),
        "kernels_compiled_at_first_start": len(compiled),
        "kernels_compiled_names": sorted(set(compiled)),
        "kernels_compiled_uncached": max(compiled_uncached),
        "evals_per_second_generic": round(generic, 1),
        "evals_per_second_host": round(host, 1),
        "generic_vs_host": round(generic / host, 3),
        "rounds": {
            "first_move": [round(x, 2) for x in moves],
            "first_move_uncompiled": [round(x, 1) for x in uncompiled],
            "first_game": [round(x, 2) for x in games],
            "evals_per_second": {cpu: [round(x, 1) for x in values] for cpu, values in rates.items()},
        },
        "visits": VISITS,
        "load_average": [round(x, 2) for x in loads],
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
