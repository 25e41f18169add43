"""The client's numba kernels, compiled ahead of their first use.

The rules, the features and the search are ``@njit(cache=True)`` kernels: the first call of each
compiles it, and all of them together take about two minutes of one core, after which every process
loads them from numba's cache in seconds. A volunteer should not wait those minutes at the first
start, so the wheel's build runs :func:`compile_all` in the source tree (``buildtools/sente_wheel.py``)
and ships the cache it fills, ``__pycache__/*.nbi`` and ``*.nbc`` beside the modules, where numba
looks first when ``NUMBA_CACHE_DIR`` is unset. numba keys that cache by each source file's content
(not its path or time), by the bytecode of the function and by the processor it compiled for, which
``common`` sets to numba's generic one for the architecture: the files built on one machine are
found on any other with the same Python, numba and architecture (docs/contribute.md has the figures).

Nothing here needs torch, which a wheel's build environment does not have: the search runs with the
null network, whose outputs have the types and layouts of a network's, and the evaluator's kernels
are called on arrays of the types torch hands them.

Run from the project root: ``python -m client.kernels``.
"""

from __future__ import annotations

import tempfile

import numpy as np

from client.gtp.engine import GtpEngine
from client.gtp.search_player import SearchPlayer
from client.match.run import run_match
from client.search.batch import finish_step
from client.search.engine import BatchedSearch, NullEvaluator
from client.selfplay.run import run_selfplay
from common import canary
from common.encoding.features import NN_AREA, Encoder, new_batch, position_key, symmetry_map, unapply_symmetry
from common.go.game import PASS, Game
from common.go.geometry import BLACK
from common.go.rules import Rules
from common.settings import MatchSettings, SelfPlaySettings


def rules() -> None:
    """What the rules engine, the features and the evaluator run outside a search: a game played,
    undone, scored and asked about its stones (area and territory rules, the encore), the canary's
    positions (set up with stones) encoded, and a network's outputs mapped back from a symmetry."""
    canary.encode(canary.games())
    game = Game(7)
    for _ in range(12):
        moves = game.legal_moves()
        game.play(moves[len(moves) // 2])
    stone = moves[len(moves) // 2]
    game.illegal_reason(game.legal_moves()[0], game.to_move)
    game.chain_liberties(stone)
    game.hash, game.situation_hash  # noqa: B018
    game.play(game.legal_moves()[0])
    game.undo()
    game.is_all_pass_alive()
    game.end_if_all_pass_alive()
    for method in ("katago", "tromp-taylor", "pass-alive", "scoring"):
        game.ownership(method)
    game.seki_stones()
    territory = Game(7, rules=Rules.from_text("japanese"))
    territory.play(stone)
    territory.play(PASS)
    territory.play(PASS)  # the encore
    territory.illegal_reason(territory.legal_moves()[0], territory.to_move)
    territory.is_pass_for_ko(stone)
    symmetry_map(7, 7, 5, np.empty(NN_AREA, dtype=np.int64))
    # The evaluator's own calls (client.evaluator): its cache's key, the inputs with a symmetry and a
    # player, and the policy and ownership (torch's float32 rows) mapped back.
    position_key(game.g, game.b, game.hist, game.moves, BLACK, 5, 1)
    spatial, glob, legal = new_batch(1)
    Encoder().encode([game], spatial, glob, legal, symmetries=[5], players=[BLACK])
    unapply_symmetry(np.zeros((2, NN_AREA + 1), np.float32)[0], 7, 7, 5)
    unapply_symmetry(np.zeros((2, NN_AREA), np.float32)[0], 7, 7, 5)


def search() -> None:
    """The search's kernels, with the null network: a tiny GTP game, two tiny self-play games and a
    tiny match (7x7: the kernels take any board)."""
    selfplay = SelfPlaySettings(board_sizes=(7,), board_size_weights=(1.0,), visits=8, cheap_visits=2, max_moves=60)
    match = MatchSettings(board_sizes=(7,), board_size_weights=(1.0,), visits=4, max_moves=40)
    gtp = GtpEngine(SearchPlayer(NullEvaluator(), 8))
    for command in ("boardsize 7", "komi 7", *(f"genmove {'bw'[k % 2]}" for k in range(12)), "final_score"):
        gtp.handle(command)
    with tempfile.TemporaryDirectory() as out:
        run_selfplay(NullEvaluator(), selfplay, games=2, parallel=2, out_dir=out, progress=False)
        run_match([NullEvaluator(), NullEvaluator()], ("a", "b"), match, games=2, parallel=2, out_dir=None)


def rare() -> None:
    """What games this short never reach: a step that selects no leaf (every visit a cache hit or a
    game's end) closes with ``finish_step`` alone, which a first self-play game compiled for half a
    minute."""
    finish_step(BatchedSearch(NullEvaluator(), 1, 8).state)


def compile_all() -> None:
    rules()
    search()
    rare()


if __name__ == "__main__":
    compile_all()
