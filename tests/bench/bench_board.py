"""Benchmark of the rules engine: random games on 9x9 and 19x19.

For each size, the random player's policy (uniform among legal moves that fill no own eye) plays
whole games on our engine, one core; the copies of the games' moves kept for the replays are not
timed (their cost is the benchmark's, not the engine's). The same games are then replayed, move by
move, on sgfmill's Board (sgfmill 1.1, pure Python) and on our engine with full legality checks.
Printed figures: moves/s and games/s of each. The ratio against sgfmill compares our policy games
(which also choose moves and check legality and eyes) with sgfmill merely replaying them.

This machine's speed drifts by up to a quarter from one second to the next, so the three
measurements run in interleaved rounds and each keeps its fastest round.

``--against REV`` compares the engine with the one at git revision REV instead: REV's
``common/go`` is loaded beside today's in the same process, and the two play and replay the same
games in alternating rounds (separate processes are no fair comparison: the same code runs up to a
tenth faster or slower from one process to the next, as its compiled code lands elsewhere in
memory). Printed: each side's median and best figures and the median of the per-round ratios.

Run from the project root: .venv/bin/python tests/bench/bench_board.py [--against REV]
The last line is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sgfmill.boards import Board as SgfmillBoard

from common.go.geometry import BLACK, PASS, xy_of

ROOT = Path(__file__).resolve().parents[2]
GAMES = {9: 3000, 19: 400}
ROUNDS = 3
MAX_MOVES = 4000


class Engine(NamedTuple):
    """One version of the rules engine: its modules, and a replay kernel compiled over them."""

    name: str
    gamestate: ModuleType
    playout: ModuleType
    game: ModuleType
    rules: ModuleType
    replay: Callable[..., int]


def _engine(name: str, package: str) -> Engine:
    gs = importlib.import_module(f"{package}.gamestate")
    is_legal, game_play = gs.is_legal, gs.game_play

    @njit
    def replay(g, b, hist, moves, table, recorded, n):
        """Replay recorded moves with full legality checks; returns the number of illegal moves."""
        bad = 0
        for i in range(n):
            loc = recorded[i, 0]
            pla = recorded[i, 1]
            if not is_legal(g, b, table, loc, pla):
                bad += 1
            game_play(g, b, hist, moves, table, loc, pla)
        return bad

    return Engine(
        name,
        gs,
        importlib.import_module(f"{package}.playout"),
        importlib.import_module(f"{package}.game"),
        importlib.import_module(f"{package}.rules"),
        replay,
    )


def current_engine() -> Engine:
    return _engine("today", "common.go")


def engine_copy(name: str, sources: dict[str, str], folder: Path) -> Engine:
    """An engine from the sources of common/go's modules (file name: text), as a package of its own
    in folder."""
    package = f"engine_{name}"
    (folder / package).mkdir()
    for file, text in sources.items():
        (folder / package / file).write_text(re.sub(r"\bcommon\.go\b", package, text))
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    return _engine(name, package)


def sources_at(rev: str) -> tuple[str, dict[str, str]]:
    """The short commit of git revision rev and the sources of its common/go."""

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout

    try:
        commit = git("rev-parse", "--verify", "--short", f"{rev}^{{commit}}").strip()
    except subprocess.CalledProcessError as e:
        raise SystemExit(f"--against {rev}: not a revision of this repository ({e.stderr.strip()})") from None
    paths = [p for p in git("ls-tree", "--name-only", commit, "common/go/").split() if p.endswith(".py")]
    return commit, {Path(p).name: git("show", f"{commit}:{p}") for p in paths}


def sources_today() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((ROOT / "common" / "go").glob("*.py"))}


def _fresh(engine: Engine, size: int):
    rules = engine.rules.Rules(ko="SIMPLE", suicide=False)  # GNU Go's rules; the games end by passes
    return engine.game.Game(size, rules=rules, capacity=MAX_MOVES + 1)


def play_random_games(engine: Engine, size: int, count: int, seed: int) -> tuple[float, list[np.ndarray]]:
    gs, po = engine.gamestate, engine.playout
    rng = po.new_rng(seed)
    records = []
    g = _fresh(engine, size)  # one set of arrays, reset for every game, as self-play does
    elapsed = 0.0
    for _ in range(count):
        start = time.perf_counter()
        gs.game_new(g.g, g.b, g.hist, g.table, size, size)
        n = po.play_random_game(g.g, g.b, g.hist, g.moves, g.table, MAX_MOVES, rng)
        elapsed += time.perf_counter() - start
        records.append(g.moves[:n, :2].copy())  # location and colour
    return elapsed, records


def replay_ours(engine: Engine, size: int, records: list[np.ndarray]) -> float:
    gs = engine.gamestate
    g = _fresh(engine, size)
    start = time.perf_counter()
    for rec in records:
        gs.game_new(g.g, g.b, g.hist, g.table, size, size)
        if engine.replay(g.g, g.b, g.hist, g.moves, g.table, rec, len(rec)):
            raise AssertionError("a recorded random move was illegal on replay")
    return time.perf_counter() - start


def replay_sgfmill(size: int, records: list[np.ndarray]) -> float:
    converted = []
    for rec in records:
        moves = []
        for loc, color in rec[:, :2]:
            if loc == PASS:
                continue
            x, y = xy_of(int(loc))
            moves.append((size - 1 - y, x, "b" if color == BLACK else "w"))
        converted.append(moves)
    start = time.perf_counter()
    for moves in converted:
        board = SgfmillBoard(size)
        for row, col, colour in moves:
            board.play(row, col, colour)
    return time.perf_counter() - start


def measure(engine: Engine) -> dict[str, float]:
    """This engine's figures, and sgfmill's on the same games."""
    figures: dict[str, float] = {}
    print(f"{'size':>4} {'engine':<28} {'games':>6} {'moves':>9} {'moves/s':>12} {'games/s':>10}")
    for size, count in GAMES.items():
        t_ours = t_replay = t_sgfmill = float("inf")
        for _ in range(ROUNDS):
            t, records = play_random_games(engine, size, count, seed=size)  # the same games every round
            t_ours = min(t_ours, t)
            t_replay = min(t_replay, replay_ours(engine, size, records))
            t_sgfmill = min(t_sgfmill, replay_sgfmill(size, records))
        n_moves = sum(len(r) for r in records)
        rows = [
            ("ours, random policy games", t_ours),
            ("ours, replay with legality", t_replay),
            ("sgfmill Board, replay", t_sgfmill),
        ]
        for name, t in rows:
            print(f"{size:>4} {name:<28} {count:>6} {n_moves:>9} {n_moves / t:>12,.0f} {count / t:>10,.1f}")
        figures[f"moves_per_s_{size}"] = round(n_moves / t_ours)
        figures[f"games_per_s_{size}"] = round(count / t_ours, 1)
        figures[f"replay_moves_per_s_{size}"] = round(n_moves / t_replay)
        figures[f"sgfmill_moves_per_s_{size}"] = round(n_moves / t_sgfmill)
        figures[f"sgfmill_ratio_{size}"] = round(t_sgfmill / t_ours, 1)
        figures[f"mean_game_length_{size}"] = round(n_moves / count, 1)
    return figures


FIGURES = ("moves_per_s", "replay_moves_per_s")


def alternate(today: Engine, other: Engine, rounds: int) -> dict[str, list[list[float]]]:
    """Both engines on the same games in alternating rounds: per figure and size, the speeds of
    each round, [today's, the other's]."""
    speeds: dict[str, list[list[float]]] = {}
    for size, count in GAMES.items():
        for r in range(rounds):
            recorded = []
            got: dict[str, list[float]] = {}
            for engine in (today, other) if r % 2 == 0 else (other, today):
                t, records = play_random_games(engine, size, count, seed=size)
                n_moves = sum(len(rec) for rec in records)
                got.setdefault(f"moves_per_s_{size}", []).append(n_moves / t)
                got.setdefault(f"replay_moves_per_s_{size}", []).append(n_moves / replay_ours(engine, size, records))
                recorded.append(records)
            if any(len(a) != len(b) or (a != b).any() for a, b in zip(*recorded)):
                raise SystemExit(f"the engines play different random games on {size}x{size}: no comparison")
            first_is_today = r % 2 == 0
            for key, (a, b) in got.items():
                speeds.setdefault(key, []).append([a, b] if first_is_today else [b, a])
    return speeds


def compare(rev: str, rounds: int) -> dict[str, float | str]:
    """Today's engine against rev's in two processes, each loading one side first (where compiled
    code lands in memory shifts a kernel's speed by a few hundredths), with alternating rounds in
    each: medians, bests and the median of the per-round ratios."""
    commit, _ = sources_at(rev)
    speeds: dict[str, list[list[float]]] = {}
    for order in ("today-first", "rev-first"):
        child = [sys.executable, __file__, "--against", commit, "--rounds", str(rounds), "--order", order]
        out = subprocess.run(child, capture_output=True, text=True, check=True).stdout
        for key, pairs in json.loads(out.splitlines()[-1]).items():
            speeds.setdefault(key, []).extend(pairs)
    figures: dict[str, float | str] = {"against": commit}
    header = f"{'today med':>11} {'best':>11} {commit + ' med':>13} {'best':>11} {'ratio':>7}"
    print(f"{'size':>4} {'figure':<22} {header}")
    for size in GAMES:
        for figure in FIGURES:
            pairs = speeds[f"{figure}_{size}"]
            ours, theirs = [a for a, _ in pairs], [b for _, b in pairs]
            ratio = statistics.median(a / b for a, b in pairs)
            print(
                f"{size:>4} {figure:<22} {statistics.median(ours):>11,.0f} {max(ours):>11,.0f}"
                f" {statistics.median(theirs):>13,.0f} {max(theirs):>11,.0f} {ratio:>7.3f}"
            )
            figures[f"{figure}_{size}"] = round(max(ours))
            figures[f"against_{figure}_{size}"] = round(max(theirs))
            figures[f"ratio_{figure}_{size}"] = round(ratio, 4)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", metavar="REV", help="compare with the engine at this git revision")
    parser.add_argument("--rounds", type=int, default=10, help="alternating rounds per process of --against (10)")
    parser.add_argument("--order", choices=("today-first", "rev-first"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    if args.against and not args.order:
        print(json.dumps(compare(args.against, args.rounds)))
        return
    with tempfile.TemporaryDirectory() as folder:
        if args.order:
            # One process of --against: both sides are copies of common/go, loaded in this order.
            commit, sources = sources_at(args.against)
            loads = [("today", sources_today()), (commit, sources)]
            if args.order == "rev-first":
                loads.reverse()
            copies = {name: engine_copy(name, text, Path(folder)) for name, text in loads}
            engines = [copies["today"], copies[commit]]
        else:
            engines = [current_engine()]
        for engine in engines:  # compile and warm up outside the timings
            _, warm = play_random_games(engine, 9, 5, 1)
            replay_ours(engine, 9, warm)
        if args.order:
            print(json.dumps(alternate(engines[0], engines[1], args.rounds)))
        else:
            print(json.dumps(measure(engines[0])))


if __name__ == "__main__":
    main()
