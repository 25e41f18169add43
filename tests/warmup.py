"""Compile the search's numba kernels into numba's cache: a tiny GTP game, a tiny match and two tiny
self-play games with the null network. The test run starts this in a second process, so that on a
clean checkout (an empty cache) the minutes of compiling use the core the first tests leave free.
The GTP game comes first: the first tests play a match in a client process, which compiles the
match's kernels itself, and play over GTP after it.

Run from the project root: .venv/bin/python -m tests.warmup
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    from client.gtp.engine import GtpEngine
    from client.gtp.search_player import SearchPlayer
    from client.match.run import run_match
    from client.search.engine import NullEvaluator
    from client.selfplay.run import run_selfplay
    from common.settings import MatchSettings, SelfPlaySettings

    selfplay = SelfPlaySettings(board_sizes=(7,), board_size_weights=(1.0,), visits=8, cheap_visits=2, max_moves=60)
    match = MatchSettings(board_sizes=(7,), board_size_weights=(1.0,), visits=4, max_moves=40)
    gtp = GtpEngine(SearchPlayer(NullEvaluator(), 8))
    for command in ("boardsize 7", "komi 7", *(f"genmove {'bw'[k % 2]}" for k in range(12)), "final_score"):
        gtp.handle(command)
    with tempfile.TemporaryDirectory() as out:
        run_selfplay(NullEvaluator(), selfplay, games=2, parallel=2, out_dir=out, progress=False)
        run_match([NullEvaluator(), NullEvaluator()], ("a", "b"), match, games=2, parallel=2, out_dir=None)


if __name__ == "__main__":
    main()
