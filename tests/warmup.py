"""Compile the search's and self-play's numba kernels into numba's cache: two tiny self-play games
and a tiny match with the null network. The test run starts this in a second process, so that on
a clean checkout (an empty cache) the minutes of compiling use the core the first tests leave free.

Run from the project root: .venv/bin/python -m tests.warmup
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    from client.match.run import run_match
    from client.search.engine import NullEvaluator
    from client.selfplay.run import run_selfplay
    from common.settings import MatchSettings, SelfPlaySettings

    selfplay = SelfPlaySettings(board_sizes=(7,), board_size_weights=(1.0,), visits=8, cheap_visits=2, max_moves=60)
    match = MatchSettings(board_sizes=(7,), board_size_weights=(1.0,), visits=4, max_moves=40)
    with tempfile.TemporaryDirectory() as out:
        run_selfplay(NullEvaluator(), selfplay, games=2, parallel=2, out_dir=out, progress=False)
        run_match([NullEvaluator(), NullEvaluator()], ("a", "b"), match, games=2, parallel=2, out_dir=None)


if __name__ == "__main__":
    main()
