"""Compile numba's kernels into numba's cache, in two families one after the other:

- ``network``: the kernels a network's evaluation and a finished game use outside the search: a tiny
  network evaluates the canary's positions (set up with stones) and a game's, and the game is scored;
  and what the first Go and evaluator tests call from Python besides (hashes, undo, the ownership
  methods, an encore, a symmetry map). These come first: the rules engine and the features, which the
  Go and canary tests that come early in the run's order need, and find compiled rather than compile
  them themselves.
- ``search``: the search's kernels, with the null network: a tiny GTP game, two tiny self-play games
  and a tiny match (``client.kernels``, which the wheel's build runs too). The GTP game comes first:
  the first tests play a match in a client process, which compiles the match's kernels itself, and
  play over GTP after it.

The test run starts one process for both: on a clean checkout (an empty cache) compiling takes about
two minutes of one core, while the first test process runs the tests that need no kernel on the
other. The two families share many kernels (the rules, the features): compiled in two processes at
once, the shared ones were compiled twice, some 55 s of processor time more (the network's family
took 64 s alone and 9 s after the search's).

While it compiles a function, a file named after it lies in the folder that SENTE_WARMUP_COMPILING
names (when set): a test that misses that function in numba's cache waits for the warm-up to save
it, and compiles any other itself rather than wait for the whole warm-up (``tests/conftest.py``;
waiting for the whole warm-up, the first Go tests waited 70 s and 31 s, a core idle meanwhile).

Run from the project root: .venv/bin/python -m tests.warmup [network|search]
"""

from __future__ import annotations

import collections
import contextlib
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FAMILIES = ("network", "search")  # in this order (above)
COMPILING = "SENTE_WARMUP_COMPILING"


def marker(folder: Path, py_func) -> Path:
    """The file that says the warm-up is compiling ``py_func`` (a kernel's Python function)."""
    return folder / re.sub(r"[^\w.]", "_", f"{py_func.__module__}.{py_func.__qualname__}")


def mark_compiles(folder: Path) -> None:
    """Have every compile of a numba dispatcher in this process lay its function's marker for as long
    as it runs: through the cache lookup, the compile itself and the save to the cache, so that the
    marker goes only once a test process can load what was compiled. A kernel's compile nests its
    callees' compiles, each with its own marker; a count keeps a function's marker until its last
    compile (one per signature) ends."""
    from numba.core.dispatcher import Dispatcher

    compile_ = Dispatcher.compile
    running: collections.Counter[Path] = collections.Counter()

    def compile_marked(self, sig):
        path = marker(folder, self.py_func)
        running[path] += 1
        path.touch()
        try:
            return compile_(self, sig)
        finally:
            running[path] -= 1
            if not running[path]:
                with contextlib.suppress(FileNotFoundError):  # the test session ended and took the folder
                    path.unlink()

    Dispatcher.compile = compile_marked


def search() -> None:
    from client.kernels import search

    search()


def network() -> None:
    from client.evaluator import Evaluator
    from client.kernels import rules
    from common.go.game import Game
    from common.nn.canary import evaluate_canary
    from common.nn.model import Model, named_config

    model = Model(named_config("tiny")).eval()
    evaluate_canary(model)
    rules()  # the rules, the features and the evaluator's kernels, which need no network
    game = Game(7)
    for _ in range(6):
        moves = game.legal_moves()
        game.play(moves[len(moves) // 2])
    evaluator = Evaluator(model, device="cpu")
    evaluator.evaluate([game])
    evaluator.evaluate([game], symmetries=[5])


def main(families: list[str]) -> None:
    if os.environ.get(COMPILING):
        mark_compiles(Path(os.environ[COMPILING]))
    for family in families or FAMILIES:
        {"search": search, "network": network}[family]()


if __name__ == "__main__":
    main(sys.argv[1:])
