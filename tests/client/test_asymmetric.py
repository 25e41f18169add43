"""Asymmetric playouts (KataGo's): the draw, each side's share of the visits, the network told its
playout doubling advantage in the search and in the rows, and a fresh tree for every search."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

import numpy as np
import pytest

from client.search.engine import BatchedSearch, NullEvaluator
from client.selfplay.init import draw_start
from client.selfplay.run import run_selfplay
from common.data.schema import GAME_MODE_ASYM, GT_GAME_MODE, GT_TURN_INDEX
from common.data.selfplay_sgf import read_search_note
from common.encoding.features import PDA_STEPS, Encoder
from common.go.game import Game
from common.go.geometry import BLACK, WHITE
from common.go.sgf import read_sgf
from common.settings import SearchSettings, SelfPlaySettings

pytestmark = pytest.mark.kernels  # plays with the search: after the tests that need no kernel

BASE = SelfPlaySettings(
    board_sizes=(7,),
    board_size_weights=(1.0,),
    visits=40,
    cheap_visits=10,
    full_search_prob=0.5,
    max_moves=30,
    end_when_all_pass_alive=False,
)


class RecordingEvaluator(NullEvaluator):
    """The null network, keeping the global inputs of every evaluation."""

    def __init__(self) -> None:
        super().__init__()
        self.globs: list[np.ndarray] = []

    def forward_raw(self, spatial, glob, width):
        self.globs.append(glob.copy())
        return super().forward_raw(spatial, glob, width)


def test_the_draw_gives_white_the_advantage_in_handicap_games_and_either_side_else():
    rng = np.random.default_rng(2)
    handicap = dataclasses.replace(BASE, board_sizes=(13,), handicap_prob=1.0, handicap_asymmetric_playout_prob=1.0)
    starts = [draw_start(handicap, rng) for _ in range(400)]
    assert all(s.playouts is not None and s.playouts.player == WHITE for s in starts)
    doublings = np.array([s.playouts.doublings for s in starts if s.playouts])
    assert doublings.min() > 0 and doublings.max() < 3.0  # log2(8)
    assert np.all(doublings * PDA_STEPS == np.floor(doublings * PDA_STEPS))
    assert abs(doublings.mean() - 1.5) < 0.15  # uniform below log2(8)
    even = dataclasses.replace(BASE, normal_asymmetric_playout_prob=0.25)
    players = Counter(s.playouts.player if s.playouts else 0 for s in (draw_start(even, rng) for _ in range(2000)))
    assert 400 < players[BLACK] + players[WHITE] < 600
    assert abs(players[BLACK] - players[WHITE]) < 90


def test_without_asymmetric_playouts_the_draws_are_as_before():
    """A probability of 0 draws nothing: the rest of the start is drawn the same whatever the ratio."""
    a = [draw_start(BASE, np.random.default_rng(5)) for _ in range(3)]
    b = [draw_start(dataclasses.replace(BASE, max_asymmetric_ratio=2.0), np.random.default_rng(5)) for _ in range(3)]
    assert a == b and all(s.playouts is None for s in a)


@pytest.mark.parametrize("doublings", [0.5, 1.0, 2.999])
def test_the_sides_share_the_visits_in_the_ratio_and_keep_the_total(doublings):
    more = SelfPlaySettings.asymmetric_visits(600, doublings, True)
    fewer = SelfPlaySettings.asymmetric_visits(600, doublings, False)
    assert abs(more + fewer - 1200) <= 1
    assert more / fewer == pytest.approx(2.0**doublings, rel=0.01)
    assert SelfPlaySettings.asymmetric_visits(4, 2.999, False) == 2  # a child's visit for the policy target
    assert SelfPlaySettings.asymmetric_visits(1, 2.999, False) == 1


def test_the_search_tells_every_evaluation_its_players_advantage_and_caches_them_apart():
    evaluator = RecordingEvaluator()
    search = BatchedSearch(evaluator, 1, 80, seed=3)
    game = Game(7, komi=7.0)
    search.start(0, game, 60, SearchSettings(root_noise=False), pda_black=1.5)
    search.run()
    seen = np.concatenate(evaluator.globs)
    assert np.all(seen[:, 15] == 1.0)
    assert set(np.unique(seen[:, 16])) == {-0.75, 0.75}  # black's nodes +1.5 / 2, white's the opposite
    inputs = search.result(0, inputs=True).inputs
    assert inputs is not None and inputs[1][16] == 0.75
    spatial, glob = np.zeros((1, 22, 361), np.float32), np.zeros((1, 19), np.float32)
    Encoder().encode([game], spatial, glob, pda=1.5)
    np.testing.assert_array_equal(inputs[1], glob[0])
    # the same position without the advantage is another input: not served from the cache
    evaluator.globs.clear()
    search.start(0, game, 60, SearchSettings(root_noise=False), full=False, reuse=True)
    search.run()
    assert search.result(0).nn_evals > 30
    assert np.all(np.concatenate(evaluator.globs)[:, 15:17] == 0.0)


def test_asymmetric_games_search_each_side_its_share_and_their_rows_say_so(tmp_path):
    settings = dataclasses.replace(BASE, normal_asymmetric_playout_prob=1.0)
    run_selfplay(NullEvaluator(), settings, games=4, parallel=2, out_dir=tmp_path, seed=6, progress=False)
    sgfs = sorted(tmp_path.glob("*.sgf"))
    rows = 0
    for path in sgfs:
        record = read_sgf(path.read_text())
        advantage = json.loads(record.comment)["start"]["playout_advantage"]
        player = BLACK if advantage["player"] == "B" else WHITE
        d = advantage["doublings"]
        for node in record.nodes[1:]:
            note = read_search_note(node.comment)
            if note is None:
                continue
            visits = settings.visits if note.full else settings.cheap_visits
            assert note.visits == settings.asymmetric_visits(visits, d, node.move[0] == player)
        npz = path.with_suffix(".npz")
        if not npz.exists():
            continue
        with np.load(npz) as z:
            glob, gt = z["globalInputNC"], z["globalTargetsNC"]
        assert np.all(gt[:, GT_GAME_MODE] == GAME_MODE_ASYM)
        rows += len(gt)
        for row, turn in enumerate(gt[:, GT_TURN_INDEX].astype(int)):
            mover = record.moves[turn][0]
            assert glob[row, 15] == 1.0
            assert glob[row, 16] == pytest.approx(0.5 * (d if mover == player else -d))
    assert len(sgfs) == 4 and rows > 20
