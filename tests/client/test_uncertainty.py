"""The search's use of the networks' newer heads (methods page): uncertainty-weighted playouts from
the short-term error predictions, and the optimistic policy. Stand-in networks have the heads; a
network without them searches as before whatever the settings say."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from client.evaluator import Evaluator
from client.search import tree as tr
from client.search.engine import BatchedSearch, SearchResult
from client.search.targets import play_values, pruned_visits, utility_lcb
from common.architecture import (
    MISC_SHORTTERM_SCORE_ERROR,
    MISC_SHORTTERM_VALUE_ERROR,
    SHORTTERM_MISC_VALUES,
    SHORTTERM_SCORE_ERROR_MULTIPLIER,
    SHORTTERM_VALUE_ERROR_MULTIPLIER,
    named_config,
)
from common.encoding.readout import R_LEN, R_SHORTTERM_SCORE_ERROR, R_SHORTTERM_WL_ERROR, interpret_values
from common.settings import SearchSettings
from tests.client.results import root_result
from tests.client.trees import VaryingEvaluator, check_tree, mid_game
from tests.common.nn.nets import random_model

pytestmark = pytest.mark.kernels  # plays with the search: after the tests that need no kernel

WEIGHTED = SearchSettings(root_noise=False, uncertainty_weighted=True)


class UncertainEvaluator(VaryingEvaluator):
    """VaryingEvaluator with short-term error heads whose predictions swing from position to
    position too (or only the version 8 outputs, with heads=False), and optionally an optimistic
    policy channel that puts its mass on one point of the crop."""

    def __init__(self, seed: int = 0, heads: bool = True, optimistic_point: int | None = None) -> None:
        super().__init__(seed)
        self.heads = heads
        self.optimistic_point = optimistic_point
        self.optimistic_policy = optimistic_point is not None
        self.error_weights = np.random.default_rng(seed + 1).normal(size=22 * 361).astype(np.float32)
        self.optimistic_calls = 0

    def forward_raw(self, spatial, glob, width, optimistic=False):
        policy, value, misc = super().forward_raw(spatial, glob, width)
        n = spatial.shape[0]
        if self.heads:
            swing = 2.0 * np.sin(
                spatial.reshape(n, -1)[:, : self.error_weights.size] @ self.error_weights[: spatial[0].size]
            )
            misc = np.zeros((n, SHORTTERM_MISC_VALUES), np.float32)
            misc[:, MISC_SHORTTERM_VALUE_ERROR] = swing - 1.0
            misc[:, MISC_SHORTTERM_SCORE_ERROR] = -swing - 3.0
        if optimistic:
            self.optimistic_calls += 1
            opt = np.full_like(policy, -4.0)
            opt[:, self.optimistic_point] = 4.0
            policy = np.stack([policy, opt], axis=1)
        return policy, value, misc


def _search(evaluator, settings, game, visits=300, seed=5) -> tuple[BatchedSearch, SearchResult]:
    search = BatchedSearch(evaluator, 1, visits, seed=seed)
    search.start(0, game, visits, settings)
    search.run()
    return search, search.result(0)


def _softplus(x: float) -> float:
    return math.log1p(math.exp(x))


def test_the_short_term_errors_are_decoded_as_katagos_version_10():
    out = np.zeros(R_LEN)
    misc = np.zeros(SHORTTERM_MISC_VALUES, np.float32)
    misc[MISC_SHORTTERM_VALUE_ERROR] = 0.7
    misc[MISC_SHORTTERM_SCORE_ERROR] = -1.2
    interpret_values(np.zeros(3, np.float32), misc, False, out)
    assert out[R_SHORTTERM_WL_ERROR] == pytest.approx(math.sqrt(_softplus(0.7) * SHORTTERM_VALUE_ERROR_MULTIPLIER))
    assert out[R_SHORTTERM_SCORE_ERROR] == pytest.approx(
        math.sqrt(_softplus(np.float32(-1.2)) * SHORTTERM_SCORE_ERROR_MULTIPLIER)
    )
    interpret_values(np.zeros(3, np.float32), np.zeros(4, np.float32), False, out)
    assert out[R_SHORTTERM_WL_ERROR] == -1.0 and out[R_SHORTTERM_SCORE_ERROR] == -1.0


def test_an_evaluations_weight_is_katagos():
    search = BatchedSearch(UncertainEvaluator(), 1, 10)
    game = mid_game(9, 10, 1)
    search.start(0, game, 10, WEIGHTED)
    t = search.trees
    x0 = 2.0
    t.status[0]["x0"] = x0

    def katago(wl_error, score_error, score):
        # computeWeightFromNNOutput: the score utility's slope at the score times its error
        slope = 0.5 * (2 / math.pi) / 9.0 / (1.0 + ((score - x0) / 9.0) ** 2)
        return 0.25 / (wl_error + slope * score_error + 0.25 / 8.0)

    for wl_error, score_error, score in ((0.1, 2.0, 5.0), (0.5, 10.0, -30.0), (0.02, 0.3, 2.0)):
        assert tr.evaluation_weight(t, 0, score, wl_error, score_error) == pytest.approx(
            katago(wl_error, score_error, score)
        )
    assert tr.evaluation_weight(t, 0, 0.0, 0.0, 0.0) == pytest.approx(8.0)  # the cap: max weight
    assert tr.evaluation_weight(t, 0, 0.0, -1.0, -1.0) == 1.0  # a network without the heads
    t.params[0]["uncertainty_exponent"] = 0.5
    assert tr.evaluation_weight(t, 0, 5.0, 0.1, 2.0) == pytest.approx(
        0.25 / (math.sqrt(0.1 + 0.5 * (2 / math.pi) / 9.0 / (1.0 + (3.0 / 9.0) ** 2) * 2.0) + 0.25 / 8.0)
    )
    t.params[0]["uncertainty_weighted"] = False
    assert tr.evaluation_weight(t, 0, 5.0, 0.1, 2.0) == 1.0


def test_weighted_playouts_keep_the_trees_sums_and_weigh_by_the_errors():
    game = mid_game(9, 20, 3)
    search, r = _search(UncertainEvaluator(), WEIGHTED, game, visits=400)
    check_tree(search, 0)
    t = search.trees
    nodes = int(t.status[0]["nodes"])
    expanded = t.state[0, :nodes] == tr.EXPANDED
    weights = t.weight[0, :nodes][expanded]
    assert weights.min() < 1.0 < weights.max() <= 8.0  # the errors swing, so do the weights
    assert r.root_visits == 400
    assert r.root_weight == pytest.approx(float(t.w_sum[0, 0]))
    seen = r.visits > 0
    assert not np.allclose(r.weights[seen], r.visits[seen])
    # The root's means are weighted: its utility is its own weighted evaluation and its children's.
    own = tr.node_own_utility(t, 0, 0)
    sign = 1.0 if r.pla == 2 else -1.0
    expected = (t.weight[0, 0] * sign * own + np.sum(r.weights * r.utility)) / r.root_weight
    assert r.root_utility == pytest.approx(expected)
    # The move and the policy target go by the weights.
    assert r.best_index() == int(np.argmax(r.weights))
    np.testing.assert_array_equal(play_values(r, WEIGHTED), r.weights)
    assert r.policy_target().sum() == pytest.approx(r.weights.sum(), rel=1e-6)
    assert pruned_visits(r, WEIGHTED)[r.best_index()] == r.weights[r.best_index()]
    # The tree goes on weighted after a move kept its subtree.
    move = int(r.moves[r.best_index()])
    game.play(move)
    assert search.advance(0, move, keep=True)
    search.start(0, game, 300, WEIGHTED, reuse=True)
    search.run()
    check_tree(search, 0)


def test_without_the_heads_or_the_setting_every_visit_weighs_one():
    """Off, or a network without the heads: the search of today, visit for visit."""
    game = mid_game(9, 16, 4)
    _, base = _search(VaryingEvaluator(), dataclasses.replace(WEIGHTED, uncertainty_weighted=False), game)
    for evaluator, settings in (
        (UncertainEvaluator(), dataclasses.replace(WEIGHTED, uncertainty_weighted=False)),
        (UncertainEvaluator(heads=False), WEIGHTED),
    ):
        search, r = _search(evaluator, settings, game)
        t = search.trees
        nodes = int(t.status[0]["nodes"])
        assert np.all(t.weight[0, :nodes] == 1.0)
        np.testing.assert_array_equal(t.w_sum[0, :nodes], t.n_visits[0, :nodes])
        np.testing.assert_array_equal(r.visits, base.visits)
        np.testing.assert_array_equal(r.weights, base.visits)
        np.testing.assert_array_equal(r.utility, base.utility)
        assert r.root_utility == base.root_utility


def test_weighted_playouts_change_the_search():
    game = mid_game(9, 16, 4)
    _, off = _search(UncertainEvaluator(), dataclasses.replace(WEIGHTED, uncertainty_weighted=False), game, 400)
    _, on = _search(UncertainEvaluator(), WEIGHTED, game, 400)
    assert not np.array_equal(off.visits, on.visits)


def test_the_lower_confidence_bound_counts_the_effective_visits():
    """With weights, the bound's sample size is KataGo's effective one, (sum w)^2 / sum w^2: two
    children of the same weight sum and mean, one from many light visits and one from a few heavy
    ones, get bounds in that order."""
    r = root_result([40, 5], [0.2, 0.2], utility_sq=[0.2, 0.2])
    r.weights = np.array([10.0, 10.0])
    r.weights_sq = np.array([40 * 0.25**2, 5 * 2.0**2])  # 40 visits of 0.25, 5 of 2
    lcb, radius = utility_lcb(r, 0.5, 5.0)
    assert radius[0] < radius[1] and lcb[0] > lcb[1]
    # Unit weights: the bound of the visits, as before.
    unit = root_result([40, 5], [0.2, 0.2], utility_sq=[0.2, 0.2])
    lcb_unit, _ = utility_lcb(unit, 0.5, 5.0)
    r.weights, r.weights_sq = np.array([40.0, 5.0]), np.array([40.0, 5.0])
    np.testing.assert_array_equal(utility_lcb(r, 0.5, 5.0)[0], lcb_unit)


@pytest.mark.parametrize("root_share", [0.0, 0.5, 1.0])
def test_the_optimistic_policy_mixes_into_the_roots_priors(root_share):
    game = mid_game(9, 10, 6)
    point = 4 * 9 + 4  # the optimistic channel's favourite, in the 9 x 9 crop
    settings = dataclasses.replace(WEIGHTED, uncertainty_weighted=False, root_policy_optimism=root_share)
    evaluator = UncertainEvaluator(optimistic_point=point)
    search, r = _search(evaluator, settings, game, visits=50)
    assert (evaluator.optimistic_calls > 0) == (root_share > 0)  # nothing mixed: asked as before
    # The flat policy's logits are 0 and the optimistic channel's 4 on its point and -4 elsewhere:
    # the mixed logits are 4 * share and -4 * share.
    legal = r.moves.size
    favourite = np.exp(4.0 * root_share) / (np.exp(4.0 * root_share) + (legal - 1) * np.exp(-4.0 * root_share))
    k = int(np.argmax(r.raw_priors))
    assert r.raw_priors[k] == pytest.approx(favourite, rel=1e-5)
    if root_share == 0.0:
        assert np.ptp(r.raw_priors) == pytest.approx(0.0, abs=1e-6)
    check_tree(search, 0)


def test_optimism_below_the_root_is_its_own_and_keys_the_cache():
    game = mid_game(9, 10, 6)
    point = 40
    evaluator = UncertainEvaluator(optimistic_point=point)
    settings = dataclasses.replace(WEIGHTED, uncertainty_weighted=False, policy_optimism=1.0)
    search, r = _search(evaluator, settings, game, visits=80)
    t = search.trees
    # The root keeps the flat policy (root optimism 0); a child's priors lean to the point.
    assert np.ptp(r.raw_priors) == pytest.approx(0.0, abs=1e-6)
    root_start = int(t.edge_start[0, 0])
    root_edges = t.e_child[0, root_start : root_start + int(t.edge_count[0, 0])]
    child = next(int(c) for c in root_edges if c > 0 and t.state[0, c] == tr.EXPANDED)
    start, count = int(t.edge_start[0, child]), int(t.edge_count[0, child])
    assert t.e_prior[0, start : start + count].max() > 0.5
    # A root whose optimism differs from its tree's is not reused, and the cache keeps the position
    # as a root apart from the same position below a root: the new root has the flat priors.
    move = int(r.moves[r.best_index()])
    game.play(move)
    search.advance(0, move, keep=True)
    search.start(0, game, 20, settings, reuse=True)
    assert search.trees.status[0]["nodes"] == 1
    search.run()
    r2 = search.result(0)
    assert np.ptp(r2.raw_priors) == pytest.approx(0.0, abs=1e-6)


def test_a_network_without_the_optimistic_head_is_asked_as_before():
    game = mid_game(9, 10, 6)
    evaluator = UncertainEvaluator()
    settings = dataclasses.replace(WEIGHTED, policy_optimism=1.0, root_policy_optimism=0.2)
    search, _ = _search(evaluator, settings, game, visits=30)
    assert evaluator.optimistic_calls == 0
    assert search.trees.params[0]["policy_optimism"] == 0.0 and search.trees.params[0]["root_policy_optimism"] == 0.0


def test_a_methods_page_network_drives_both_methods_through_the_real_evaluator():
    """The nested bottleneck sizes have the heads: the search weighs by their errors and asks for
    the optimistic policy, and the tree's invariants hold."""
    evaluator = Evaluator(random_model(4, named_config("tinynbt")), device="cpu", cache_size=0)
    assert evaluator.optimistic_policy
    asked: list[bool] = []
    forward_raw = evaluator.forward_raw

    def counting(spatial, glob, width, optimistic=False):
        asked.append(optimistic)
        return forward_raw(spatial, glob, width, optimistic)

    evaluator.forward_raw = counting  # type: ignore[method-assign]
    game = mid_game(9, 10, 6)
    settings = dataclasses.replace(WEIGHTED, policy_optimism=1.0, root_policy_optimism=0.2)
    search, r = _search(evaluator, settings, game, visits=60)
    assert asked and all(asked)  # every evaluation reads the optimistic policy too
    check_tree(search, 0)
    t = search.trees
    assert t.params[0]["policy_optimism"] == 1.0 and t.params[0]["root_policy_optimism"] == 0.2
    nodes = int(t.status[0]["nodes"])
    weights = t.weight[0, :nodes][t.state[0, :nodes] == tr.EXPANDED]
    assert weights.min() > 0 and weights.std() > 0  # the playouts weigh by the network's errors
    _, plain = _search(evaluator, SearchSettings(root_noise=False), game, visits=60)
    assert not np.array_equal(r.weights, plain.weights)
