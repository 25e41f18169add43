"""The batched search: tree invariants, root noise, forced playouts and target pruning, the score
utility, tree reuse, the cache, and the post-processing it shares with the evaluator."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
import torch

from client.search.engine import BatchedSearch, NullEvaluator, move_positions
from client.search.noise import add_noise, apply_temperature, dirichlet_alphas, rand_gamma
from client.search.targets import choose_move, pruned_visits
from client.search.utility import expected_score_value, score_table
from common.encoding.features import Encoder
from common.encoding.readout import (
    R_LEAD,
    R_LEN,
    R_LOSS,
    R_NO_RESULT,
    R_SCORE_MEAN,
    R_SCORE_MEAN_SQ,
    R_SCORE_STDEV,
    R_WIN,
    interpret_values,
    policy_softmax,
)
from common.go.game import Game
from common.go.geometry import PASS, loc_of
from common.go.playout import new_rng
from common.go.rules import Rules
from common.nn.interpret import interpret
from common.nn.outputs import ModelOutput
from common.settings import SearchSettings
from tests.client.results import root_result
from tests.client.trees import VaryingEvaluator, check_tree, mid_game

pytestmark = pytest.mark.kernels  # plays with the search: after the tests that need no kernel


class PeakedEvaluator:
    """A stand-in network: nearly all policy on one point (the centre of the crop), a fixed value."""

    def __init__(self, favourite: int = 40, value=(0.3, 0.0, -5.0)) -> None:
        self.favourite = favourite
        self.value = np.array(value, np.float32)

    def forward_raw(self, spatial, glob, width):
        n = spatial.shape[0]
        policy = np.full((n, width * width + 1), -6.0, np.float32)
        policy[:, self.favourite] = 6.0
        return policy, np.tile(self.value, (n, 1)), np.zeros((n, 4), np.float32)


@pytest.mark.parametrize("leaves", [1, 4])
def test_visits_add_up_after_backup(leaves):
    search = BatchedSearch(NullEvaluator(), 3, 300, leaves_per_game=leaves, seed=2)
    games = [mid_game(9, 20 + 5 * i, i) for i in range(3)]
    for i, game in enumerate(games):
        search.start(i, game, 100 + 100 * i, SearchSettings())
    assert search.n_searching == 3
    while search.n_searching:
        search.step()
        assert search.n_searching == search.searching().sum()  # the count follows the searches ending
    for i in range(3):
        result = search.result(i)
        assert result.root_visits == 100 + 100 * i
        assert result.visits.sum() == result.root_visits - 1
        check_tree(search, i)


def test_root_noise_mixes_in_the_set_weight():
    rng = new_rng(7)
    n = 50
    probs = np.random.default_rng(0).dirichlet(np.full(n, 0.3))
    before = probs.copy()
    alphas = np.zeros(n)
    dirichlet_alphas(before, n, 10.83, True, alphas)
    assert alphas.sum() == pytest.approx(10.83)
    # Half of the concentration is uniform, the other half on the moves that stand out.
    assert alphas.min() == pytest.approx(0.5 * 10.83 / n)
    noised = probs.copy()
    add_noise(noised, n, 0.25, 10.83, True, rng, np.zeros(n))
    noise = (noised - 0.75 * before) / 0.25
    assert noise.sum() == pytest.approx(1.0)
    assert noise.min() >= 0.0
    assert (noised - 0.75 * before).sum() == pytest.approx(0.25)
    assert noised.sum() == pytest.approx(1.0)


def test_root_priors_carry_temperature_and_noise():
    game = mid_game(9, 10, 3)
    search = BatchedSearch(PeakedEvaluator(), 1, 50, seed=4)
    search.start(0, game, 50, SearchSettings(root_policy_temperature_early=1.0, root_policy_temperature=1.0))
    search.run()
    r = search.result(0)
    assert r.priors.sum() == pytest.approx(1.0, abs=1e-5)
    assert r.raw_priors.sum() == pytest.approx(1.0, abs=1e-5)
    # The noise part: priors = 0.75 raw + 0.25 noise, noise >= 0 summing to 1.
    noise = (r.priors - 0.75 * r.raw_priors) / 0.25
    assert noise.sum() == pytest.approx(1.0, abs=1e-4)
    assert noise.min() >= -1e-5
    probs = r.raw_priors.astype(np.float64)
    apply_temperature(probs, probs.size, 2.0)
    assert probs.sum() == pytest.approx(1.0)
    assert probs.max() < r.raw_priors.max()


def test_gamma_draws_have_the_right_mean():
    rng = new_rng(11)
    for alpha in (0.05, 0.5, 3.0):
        draws = np.array([rand_gamma(rng, alpha) for _ in range(20000)])
        assert draws.mean() == pytest.approx(alpha, rel=0.06)
        assert draws.var() == pytest.approx(alpha, rel=0.12)


def forced_deficit(r) -> tuple[float, int]:
    """Playouts missing from the visited children (the best excepted) to reach their forced share
    sqrt(2 P(c) sum N), and how many such children there are."""
    total = r.visits.sum()
    need = np.floor(np.sqrt(2.0 * r.priors * total))
    visited = r.visits > 0
    visited[r.best_index()] = False
    return float(np.maximum(0, need[visited] - r.visits[visited]).sum()), int(visited.sum())


def test_forced_playouts_happen_and_pruning_takes_them_out():
    game = mid_game(9, 6, 5)
    results = {}
    for enabled in (True, False):
        search = BatchedSearch(PeakedEvaluator(), 1, 600, seed=9)
        search.start(0, game, 600, SearchSettings(forced_playouts=enabled))
        search.run()
        check_tree(search, 0)
        results[enabled] = search.result(0)
    deficit, children = forced_deficit(results[True])
    assert children >= 5
    assert deficit <= 1
    deficit, _ = forced_deficit(results[False])
    assert deficit >= 3  # without forcing, the noised moves are left short of that share

    r = results[True]
    best = r.best_index()
    pruned = pruned_visits(r, SearchSettings())
    assert pruned[best] == r.visits[best]
    assert np.all(pruned <= r.visits)
    assert np.all((pruned == 0) | (pruned > 1))
    removed = r.visits - pruned
    assert removed.sum() >= 10
    # No child loses more than its forced playouts, but for the last one of a child pruned away.
    n_forced = np.sqrt(2.0 * r.priors * r.visits.sum())
    assert np.all((removed <= n_forced + 1e-9) | ((pruned == 0) & (removed <= n_forced + 1 + 1e-9)))


def test_pruning_keeps_children_puct_would_have_chosen():
    def result(visits, priors, utility):
        return root_result(visits, utility, priors=priors)

    # A child as good as the best keeps everything; a bad one with only forced playouts is pruned away.
    r = result([300, 100, 3], [0.5, 0.2, 0.02], [0.1, 0.1, -0.6])
    p = pruned_visits(r, SearchSettings())
    assert p[0] == 300
    assert p[1] == 100
    assert p[2] == 0
    # Arithmetic: PUCT(c*) = 0.1 + 1.1 * 0.5 * sqrt(440.01) / 301; child 2 keeps the playouts that hold
    # its PUCT below that, and loses at most sqrt(2 * 0.3 * 440) of them.
    total = 440
    best = 0.1 + 1.1 * 0.5 * math.sqrt(total + 0.01) / 301
    n_forced = math.sqrt(2 * 0.3 * total)
    for utility in (-0.2, -0.05):
        p = pruned_visits(result([300, 100, 40], [0.5, 0.2, 0.3], [0.1, 0.1, utility]), SearchSettings())
        n_min = 1.1 * 0.3 * math.sqrt(total + 0.01) / (best - utility) - 1
        assert p[2] == pytest.approx(max(40 - n_forced, n_min))
        assert p[2] < 40


def test_choose_move_temperature():
    rng = np.random.default_rng(0)
    visits = np.array([0, 10, 30, 60], float)
    assert choose_move(visits, 0.0, rng) == 3
    counts = np.bincount([choose_move(visits, 1.0, rng) for _ in range(6000)], minlength=4)
    assert counts[0] == 0
    assert counts[1:] / 6000 == pytest.approx([0.1, 0.3, 0.6], abs=0.03)
    counts = np.bincount([choose_move(visits, 0.5, rng) for _ in range(6000)], minlength=4)
    w = visits[1:] ** 2 / (visits[1:] ** 2).sum()
    assert counts[1:] / 6000 == pytest.approx(w, abs=0.03)


def test_score_utility_table_matches_the_integral():
    table = score_table()
    rng = np.random.default_rng(1)
    z = rng.standard_normal(400_000)
    for mean, sd, centre, length in (
        (3, 5, 0, 9),
        (-10, 2, 1, 19),
        (50, 30, 0, 9),
        (5, 100, 0, 9),
        (0, 0, 0, 9),
        (400, 3, 0, 9),
        (2, 19, -1, 13),
    ):
        expected = np.mean(2 / math.pi * np.arctan((mean + sd * z - centre) / length))
        assert expected_score_value(table, mean, sd, centre, length) == pytest.approx(expected, abs=2e-3)
    # Symmetric and monotone in the mean.
    assert expected_score_value(table, 3.0, 4.0, 0.0, 9.0) == pytest.approx(
        -expected_score_value(table, -3.0, 4.0, 0.0, 9.0)
    )
    values = [expected_score_value(table, m, 6.0, 0.0, 9.0) for m in np.linspace(-30, 30, 61)]
    assert np.all(np.diff(values) > 0)


def test_row_post_processing_matches_the_evaluators():
    torch.manual_seed(0)
    n = 16
    value = torch.randn(n, 3) * 3
    misc = torch.randn(n, 4) * 2
    policy = torch.randn(n, 1, 362) * 4
    legal = torch.rand(n, 362) < 0.7
    legal[:, 361] = True
    nr_allowed = torch.arange(n) % 2 == 0
    out = ModelOutput(policy, value, misc, torch.zeros(n, 19, 19), torch.zeros(n, 842), torch.zeros(n, 1))
    ref = interpret(out, legal, False, nr_allowed)
    vals = np.zeros(R_LEN)
    probs = np.zeros(362, np.float32)
    index = np.arange(362, dtype=np.int32)
    for i in range(n):
        interpret_values(value[i].numpy(), misc[i].numpy(), bool(nr_allowed[i]), vals)
        assert vals[R_WIN] == pytest.approx(float(ref.win[i]), abs=1e-6)
        assert vals[R_LOSS] == pytest.approx(float(ref.loss[i]), abs=1e-6)
        assert vals[R_NO_RESULT] == pytest.approx(float(ref.no_result[i]), abs=1e-6)
        assert vals[R_SCORE_MEAN] == pytest.approx(float(ref.score_mean[i]), abs=1e-4)
        assert vals[R_SCORE_MEAN_SQ] == pytest.approx(float(ref.score_mean_sq[i]), rel=1e-5)
        assert vals[R_SCORE_STDEV] == pytest.approx(float(ref.score_stdev[i]), abs=1e-4)
        assert vals[R_LEAD] == pytest.approx(float(ref.lead[i]), abs=1e-4)
        policy_softmax(policy[i, 0].numpy(), index, legal[i].numpy().astype(np.uint8), 19, 19, probs)
        np.testing.assert_allclose(probs, ref.policy_full[i].numpy(), atol=1e-6)


def test_tree_reuse_keeps_the_subtree_and_its_invariants():
    game = mid_game(9, 12, 8)
    search = BatchedSearch(NullEvaluator(), 1, 400, seed=3)
    search.start(0, game, 400, SearchSettings(root_noise=False))
    search.run()
    r = search.result(0)
    move = int(r.moves[r.best_index()])
    child_visits = int(r.visits[r.best_index()])
    game.play(move)
    assert search.advance(0, move, keep=True)
    assert search.trees.n_visits[0, 0] == child_visits
    check_tree(search, 0)
    # A visit cap already reached: nothing more to do.
    search.start(0, game, min(child_visits, 10), SearchSettings(), full=False, reuse=True)
    assert not search.searching()[0]
    search.start(0, game, child_visits + 100, SearchSettings(), full=False, reuse=True)
    search.run()
    assert search.result(0).root_visits == child_visits + 100
    check_tree(search, 0)
    # Without keep, or for a move the tree never tried, the next search starts afresh.
    assert not search.advance(0, PASS, keep=False)
    assert search.trees.status[0]["nodes"] == 1


def test_cache_serves_transpositions_and_repeated_searches():
    game = mid_game(9, 15, 4)
    search = BatchedSearch(NullEvaluator(), 1, 300, seed=1)
    search.start(0, game, 300, SearchSettings(root_noise=False))
    search.run()
    first = search.result(0)
    search.start(0, game, 300, SearchSettings(root_noise=False))
    search.run()
    again = search.result(0)
    assert first.nn_evals > 250
    assert again.cache_hits > 250
    assert again.nn_evals < 20
    uncached = BatchedSearch(NullEvaluator(), 1, 300, seed=1, cache_entries=0)
    uncached.start(0, game, 300, SearchSettings(root_noise=False))
    uncached.run()
    assert uncached.result(0).cache_hits == 0


def test_the_cache_keeps_evaluations_of_other_network_inputs_apart():
    """The draws' value and the playout doubling advantage are inputs of the network: a search
    under another of them finds nothing of the first in the cache, one under the same finds it."""
    game = mid_game(9, 15, 4)
    search = BatchedSearch(NullEvaluator(), 1, 200, seed=1)
    settings = SearchSettings(root_noise=False)

    def cache_hits(**kwargs) -> int:
        search.start(0, game, 200, settings, **kwargs)
        search.run()
        return search.result(0).cache_hits

    cache_hits()
    assert cache_hits(draw_equivalent_wins=0.75) == 0
    assert cache_hits(draw_equivalent_wins=0.75) > 150
    assert cache_hits(pda_black=0.5) == 0
    assert cache_hits() > 150


def test_finished_games_are_scored_exactly_in_the_tree():
    # Two passes end the game: after black's pass, white passing wins by komi on an empty board.
    game = Game(5, rules=Rules(ko="POSITIONAL", suicide=False), komi=7.5)
    game.play(PASS)
    search = BatchedSearch(NullEvaluator(), 1, 200, seed=1)
    search.start(0, game, 200, SearchSettings(root_noise=False))
    search.run()
    r = search.result(0)
    assert r.terminal_visits > 0
    k = int(np.flatnonzero(r.moves == PASS)[0])
    assert r.winloss[k] == pytest.approx(1.0)  # white, to move, wins by passing
    assert r.score[k] == pytest.approx(7.5)
    check_tree(search, 0)


def test_moves_map_to_network_positions():
    moves = np.array([PASS, loc_of(0, 0), loc_of(3, 2), loc_of(18, 18)])
    assert list(move_positions(moves)) == [361, 0, 2 * 19 + 3, 360]


def test_bad_requests_are_refused_with_reasons():
    search = BatchedSearch(NullEvaluator(), 1, 50)
    game = Game(9)
    with pytest.raises(ValueError, match="visits 51"):
        search.start(0, game, 51, SearchSettings())
    game.play(PASS)
    game.play(PASS)
    with pytest.raises(ValueError, match="over"):
        search.start(0, game, 10, SearchSettings())


def test_a_tree_is_only_reused_on_the_game_it_was_searched_on():
    search = BatchedSearch(NullEvaluator(), 1, 200, seed=1)
    first = mid_game(9, 10, 1)
    search.start(0, first, 150, SearchSettings(root_noise=False))
    search.run()
    move = int(search.result(0).moves[search.result(0).best_index()])
    first.play(move)
    assert search.advance(0, move, keep=True)
    kept = int(search.trees.n_visits[0, 0])
    assert kept > 1
    # Another game in the same slot, with the same side to move: its first search starts afresh.
    other = mid_game(9, 11, 2)
    search.start(0, other, 20, SearchSettings(), full=False, reuse=True)
    assert search.trees.n_visits[0, 0] == 0
    search.run()
    check_tree(search, 0)
    # The game the tree belongs to keeps it, as long as every move went through advance().
    search.start(0, first, 20, SearchSettings(), full=False, reuse=True)
    assert search.trees.n_visits[0, 0] == 0  # the slot's tree is now the other game's
    search.run()
    move = int(search.result(0).moves[search.result(0).best_index()])
    first.play(move)
    search.advance(0, move, keep=True)
    visits = int(search.trees.n_visits[0, 0])
    search.start(0, first, visits + 10, SearchSettings(), full=False, reuse=True)
    assert search.trees.n_visits[0, 0] == visits
    # A move played without advance() breaks the chain.
    search.run()
    first.play(int(search.result(0).moves[search.result(0).best_index()]))
    search.start(0, first, 10, SearchSettings(), full=False, reuse=True)
    assert search.trees.n_visits[0, 0] == 0


@pytest.mark.parametrize("ko", ["SIMPLE", "POSITIONAL", "SITUATIONAL"])
def test_root_inputs_match_the_encoder(ko):
    """The search's encoding of its roots (with the history's ladder planes it remembers from earlier
    roots) is the encoder's, move after move, across games sharing a slot."""
    rules = Rules(ko=ko, suicide=True, has_button=ko == "SIMPLE", tax="SEKI" if ko == "SITUATIONAL" else "NONE")
    search = BatchedSearch(NullEvaluator(), 1, 40, seed=4)
    encoder = Encoder()
    spatial = np.zeros((1, 22, 361), np.float32)
    glob = np.zeros((1, 19), np.float32)
    rng = np.random.default_rng(9)
    for size in (7, 9, 7):
        game = Game(size, rules=rules, komi=6.5)
        while not game.is_over and game.num_moves < 60:
            search.start(0, game, 30, SearchSettings(), full=False, reuse=True)
            search.run()
            result = search.result(0, inputs=True)
            encoder.encode([game], spatial, glob)
            np.testing.assert_array_equal(result.inputs[0], spatial[0])
            np.testing.assert_array_equal(result.inputs[1], glob[0])
            visited = np.flatnonzero(result.visits)
            move = int(result.moves[rng.choice(visited)])
            game.play(move)
            search.advance(0, move, keep=True)


def test_thread_count_does_not_change_the_search():
    """Searches and the cache come out the same in one thread and in several."""
    most = numba.config.NUMBA_NUM_THREADS
    if most < 2:
        pytest.skip("numba has one thread on this machine")
    games = [mid_game(9, 8 + 3 * i, 20 + i) for i in range(6)]
    outcomes = []
    default = numba.get_num_threads()
    numba.set_num_threads(most)  # (the tests' processes give the search one thread: tests/conftest.py)
    try:
        for threads in (1, 3):
            search = BatchedSearch(NullEvaluator(), 6, 300, seed=8, threads=threads)
            assert search.threads == min(threads, most)
            for round_ in range(2):
                for i, game in enumerate(games):
                    search.start(i, game, 120 + 20 * i, SearchSettings(), full=round_ == 0, reuse=False)
                search.run()
            outcomes.append(([search.result(i).visits.tolist() for i in range(6)], search.cache.keys.copy()))
    finally:
        numba.set_num_threads(default)
    assert outcomes[0][0] == outcomes[1][0]
    np.testing.assert_array_equal(outcomes[0][1], outcomes[1][1])


def test_variance_scaled_cpuct_keeps_the_tree_and_moves_the_visits():
    game = mid_game(9, 20, 1)
    visits = {}
    for scale in (0.0, 0.85):
        search = BatchedSearch(VaryingEvaluator(), 1, 400, seed=4)
        search.start(0, game, 400, SearchSettings(root_noise=False, cpuct_utility_stdev_scale=scale))
        search.run()
        check_tree(search, 0)
        r = search.result(0)
        assert r.root_visits == 400
        visits[scale] = r.visits
    assert not np.array_equal(visits[0.0], visits[0.85])
