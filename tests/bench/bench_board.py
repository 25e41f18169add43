"""Benchmark of the rules engine: random games on 9x9 and 19x19.

For each size, the random player's policy (uniform among legal moves that fill no own eye) plays
whole games on our engine, one core. The same games are then replayed, move by move, on sgfmill's
Board (sgfmill 1.1, pure Python) and on our engine with full legality checks. Printed figures:
moves/s and games/s of each. The ratio against sgfmill compares our policy games (which also
choose moves and check legality and eyes) with sgfmill merely replaying them.

This machine's speed drifts by up to a quarter from one second to the next, so the three
measurements run in interleaved rounds and each keeps its fastest round.

Run from the project root: .venv/bin/python tests/bench/bench_board.py
The last line is one JSON object with the figures.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sgfmill.boards import Board as SgfmillBoard

from common.go import gamestate as gs
from common.go import playout
from common.go.game import Game
from common.go.geometry import BLACK, PASS, xy_of
from common.go.rules import Rules

RULES = Rules(ko="SIMPLE", suicide=False)  # GNU Go's rules; the random games end by passes
GAMES = {9: 3000, 19: 400}
ROUNDS = 3
MAX_MOVES = 4000


@njit(cache=True)
def _replay(g, b, hist, moves, table, recorded, n):
    """Replay recorded moves with full legality checks; returns the number of illegal moves."""
    bad = 0
    for i in range(n):
        loc = recorded[i, 0]
        pla = recorded[i, 1]
        if not gs.is_legal(g, b, table, loc, pla):
            bad += 1
        gs.game_play(g, b, hist, moves, table, loc, pla)
    return bad


def _fresh(size: int) -> Game:
    return Game(size, rules=RULES, capacity=MAX_MOVES + 1)


def play_random_games(size: int, count: int, seed: int) -> tuple[float, list[np.ndarray]]:
    rng = playout.new_rng(seed)
    records = []
    g = _fresh(size)  # one set of arrays, reset for every game, as self-play does
    start = time.perf_counter()
    for _ in range(count):
        gs.game_new(g.g, g.b, g.hist, g.table, size, size)
        n = playout.play_random_game(g.g, g.b, g.hist, g.moves, g.table, MAX_MOVES, rng)
        records.append(g.moves[:n].copy())
    return time.perf_counter() - start, records


def replay_ours(size: int, records: list[np.ndarray]) -> float:
    g = _fresh(size)
    start = time.perf_counter()
    for rec in records:
        gs.game_new(g.g, g.b, g.hist, g.table, size, size)
        if _replay(g.g, g.b, g.hist, g.moves, g.table, rec, len(rec)):
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


def main() -> None:
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    # Compile and warm up outside the timings.
    _, warm = play_random_games(9, 5, 1)
    replay_ours(9, warm)
    figures: dict[str, float] = {}
    print(f"{'size':>4} {'engine':<28} {'games':>6} {'moves':>9} {'moves/s':>12} {'games/s':>10}")
    for size, count in GAMES.items():
        t_ours = t_replay = t_sgfmill = float("inf")
        for _ in range(ROUNDS):
            t, records = play_random_games(size, count, seed=size)  # the same games every round
            t_ours = min(t_ours, t)
            t_replay = min(t_replay, replay_ours(size, records))
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
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
