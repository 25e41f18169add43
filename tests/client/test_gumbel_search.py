"""The batched search with the Gumbel setting: the root's visits follow sequential halving over the
Gumbel-top-k moves (one leaf at a time and several in flight), the draws are the root noise, the
rule below the root is the improved policy's deterministic choice, the finished search gives the
improved policy as its target and the best of the most visited as its move, and self-play with it
writes valid rows."""

from __future__ import annotations

import numpy as np
import pytest

from client.gtp.search_player import SearchPlayer
from client.match.run import run_match
from client.search.engine import BatchedSearch
from client.search.gumbel import considered_visit, improved_policy, interior_choice, transformed_q
from client.search.selection import gumbel_edge
from client.search.targets import gumbel_move, gumbel_policy
from client.search.tree import SEARCH_PARAMS, GameRows
from client.selfplay.run import run_selfplay
from common.data.schema import POLICY_TARGET_MAX
from common.data.validate import validate_rows
from common.go.geometry import BLACK, WHITE
from common.go.sgf import read_sgf
from common.settings import MatchSettings, SearchSettings, SelfPlaySettings
from tests.client.trees import VaryingEvaluator, check_tree, mid_game

pytestmark = pytest.mark.kernels  # plays with the search: after the tests that need no kernel

GUMBEL = SearchSettings(gumbel=True, gumbel_considered=8)


class PolicyEvaluator(VaryingEvaluator):
    """VaryingEvaluator's swinging value under a fixed uneven policy."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed)
        self.logits = np.random.default_rng(seed + 1).normal(scale=1.5, size=362).astype(np.float32)

    def forward_raw(self, spatial, glob, width):
        _, value, misc = super().forward_raw(spatial, glob, width)
        policy = np.tile(self.logits[: width * width + 1], (spatial.shape[0], 1))
        return policy, value, misc


def schedule_counts(m: int, simulations: int) -> list[int]:
    """The visit counts sequential halving leaves its m moves with, most first."""
    visits = [0] * m
    for k in range(simulations):
        wanted = considered_visit(m, simulations, k)
        visits[next(a for a in range(m) if visits[a] == wanted)] += 1
    return sorted(visits, reverse=True)


@pytest.mark.parametrize("leaves", [1, 4])
def test_the_roots_visits_follow_sequential_halving_over_the_gumbel_top_moves(leaves):
    search = BatchedSearch(PolicyEvaluator(), 2, 400, leaves_per_game=leaves, seed=5)
    games = [mid_game(9, 20, 0), mid_game(9, 31, 1)]
    for i, game in enumerate(games):
        search.start(i, game, 65, GUMBEL)
    while search.n_searching:
        search.step()
    for i in range(2):
        result = search.result(i)
        check_tree(search, i)
        assert result.root_visits == 65 and result.gumbel is not None
        visited = np.flatnonzero(result.visits > 0)
        top = np.argsort(-(result.gumbel + np.log(result.priors)))[:8]
        assert set(visited) == set(top)
        assert sorted(result.visits[visited], reverse=True) == schedule_counts(8, 64) == [21, 21, 7, 7, 2, 2, 2, 2]
        # Visits in flight count: the leaves of one step spread over the moves rather than collide.
        assert result.collisions <= 2
        # The draws are the root's noise: a fresh draw per search, none on a cheap search.
        assert np.abs(result.gumbel).max() > 0 and np.unique(result.gumbel).size == result.gumbel.size
    cheap = BatchedSearch(PolicyEvaluator(), 1, 400, seed=5)
    cheap.start(0, games[0], 33, GUMBEL, full=False)
    while cheap.n_searching:
        cheap.step()
    assert not cheap.result(0).gumbel.any()


def test_the_target_is_the_improved_policy_and_the_move_the_best_of_the_most_visited():
    search = BatchedSearch(PolicyEvaluator(3), 1, 400, seed=9)
    search.start(0, mid_game(9, 24, 2), 101, GUMBEL)
    while search.n_searching:
        search.step()
    result = search.result(0)
    target = gumbel_policy(result, GUMBEL)
    assert target.sum() == pytest.approx(1.0) and (target > 0).sum() == (result.priors > 0).sum()
    # Without the search's values it would be the prior; the visited moves' Q tilt it.
    assert not np.allclose(target, result.priors / result.priors.sum(), atol=1e-3)
    move = gumbel_move(result, GUMBEL)
    most = np.flatnonzero(result.visits == result.visits.max())
    assert move in most
    finished = np.where(result.weights > 0, result.visits, 0).astype(np.float64)
    sigma = np.empty(result.visits.size)
    transformed_q(result.raw_utility, result.utility, finished, result.priors, result.visits.size, 50.0, 0.1, sigma)
    assert move == most[np.argmax((result.gumbel + np.log(result.priors) + sigma)[most])]


def test_the_rule_below_the_root_takes_the_improved_policys_deterministic_choice():
    """Random nodes of up to eight moves, some touched (with finished visits, or only in flight) and
    the rest not, the next untouched of the highest prior among them, for either player and a range
    of c_visit and c_scale: the rule's edge is the one argmax pi'(a) - N(a) / (1 + N) picks over all
    the node's moves, pi' from their completed Q."""
    rng = np.random.default_rng(11)
    picked = set()
    for case in range(400):
        count = int(rng.integers(1, 9))  # one move: a node with a single legal move, the pass
        touched = int(rng.integers(1, count + 1))
        prior = rng.dirichlet(np.ones(count))
        prior[touched:] = np.sort(prior[touched:])[::-1]  # the next untouched edge has the most prior
        w = np.where(rng.random(count) < 0.8, rng.integers(1, 12, count), 0).astype(np.float64)
        w[touched:] = 0.0
        inflight = np.where(rng.random(count) < 0.3, rng.integers(1, 3, count), 0)
        inflight[touched:] = 0
        inflight[:touched][w[:touched] == 0] = np.maximum(inflight[:touched][w[:touched] == 0], 1)
        mean = np.where(w > 0, rng.uniform(-1.5, 1.5, count), 0.0)  # the node's player's
        value = float(rng.uniform(-1.5, 1.5))
        player = BLACK if case % 2 else WHITE
        sign = 1.0 if player == WHITE else -1.0
        c_visit, c_scale = float(rng.choice([0.0, 5.0, 50.0])), float(rng.choice([0.02, 0.1, 1.0]))
        nodes = touched + 1
        w_sums = np.zeros(nodes)
        utils = np.zeros(nodes)
        inflights = np.zeros(nodes, np.int32)
        w_sums[1:] = w[:touched]
        utils[1:] = sign * mean[:touched] * w[:touched]  # white's sums
        inflights[1:] = inflight[:touched]
        w_sums[0] = 1.0 + w.sum()
        inflights[0] = inflight.sum()
        e_child = np.full(count, -1, np.int32)
        e_child[:touched] = np.arange(1, touched + 1)
        rows = GameRows(
            state=np.ones(nodes, np.int8),
            weights=np.ones(nodes),
            w_sums=w_sums,
            inflights=inflights,
            utils=utils,
            util_sqs=np.zeros(nodes),
            players=np.array([player] + [3 - player] * touched, np.int8),
            edge_start=np.zeros(nodes, np.int32),
            edge_count=np.array([count] + [0] * touched, np.int32),
            n_touched=np.array([touched] + [0] * touched, np.int32),
            e_child=e_child,
            e_move=np.arange(count, dtype=np.int16),
            e_prior=prior.astype(np.float32),
            root_prior=prior.astype(np.float32),
        )
        params = np.zeros(1, SEARCH_PARAMS)[0]
        params["gumbel_c_visit"], params["gumbel_c_scale"] = c_visit, c_scale
        sigma, policy = np.empty(count), np.empty(count)
        exact = prior.astype(np.float32).astype(np.float64)
        transformed_q(value, mean, w, exact, count, c_visit, c_scale, sigma)
        improved_policy(exact, sigma, count, policy)
        expected = interior_choice(policy, w + inflight, count)
        assert gumbel_edge(rows, params, 0, sign * value) == expected, (case, policy, w + inflight)
        picked.add((expected < touched, expected == touched))
    assert picked == {(True, False), (False, True)}  # touched and untouched moves were both chosen


def test_gumbel_self_play_writes_valid_rows_with_the_improved_policy_as_target(tmp_path):
    settings = SelfPlaySettings(
        board_sizes=(7,),
        board_size_weights=(1.0,),
        visits=24,
        cheap_visits=6,
        full_search_prob=0.5,
        max_moves=120,
        search=SearchSettings(gumbel=True, gumbel_considered=4),
    )
    summary = run_selfplay(PolicyEvaluator(), settings, games=3, parallel=3, out_dir=tmp_path, seed=4, progress=False)
    assert summary.games == 3 and summary.rows > 0
    for sgf in sorted(tmp_path.glob("*.sgf")):
        record = read_sgf(sgf.read_text())
        record.to_game()  # every move replays legally
        npz = sgf.with_suffix(".npz")
        if not npz.exists():
            continue
        report = validate_rows(npz)
        assert report.ok, report.errors
        with np.load(npz) as rows:
            targets = rows["policyTargetsNCMove"][:, 0]
        # The improved policy at the rows' resolution: its largest share at their largest count, and
        # on more moves than the four the search considers and visits (where the position has them).
        assert (targets.max(axis=1) == POLICY_TARGET_MAX).all()
        assert (targets > 0).sum(axis=1)[0] > 4


def test_matches_and_the_gtp_player_play_the_gumbel_searchs_move():
    search = SearchSettings(gumbel=True, gumbel_considered=4, root_noise=False)
    settings = MatchSettings(board_sizes=(7,), board_size_weights=(1.0,), visits=16, max_moves=60, search=search)
    summary = run_match(
        [PolicyEvaluator(), PolicyEvaluator(2)], ("a", "b"), settings, games=2, parallel=2, out_dir=None
    )
    assert summary.games == 2
    # The GTP player's move is its search's: the best of the most visited by g + logit + sigma.
    player = SearchPlayer(PolicyEvaluator(), 33, search)
    game = mid_game(7, 6, 4)
    move = player.choose_move(game, game.to_move)
    result = player.search.result(0)
    assert result.root_visits >= 33 and not result.gumbel.any()  # no noise asked for: no draws
    assert move == int(result.moves[gumbel_move(result, search)])
