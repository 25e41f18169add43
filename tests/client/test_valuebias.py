"""Subtree value bias correction: the buckets' keys, their sums, the corrected utilities the tree
adds up, what a move keeps, and the search unchanged when it is off."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client.search import tree as tr
from client.search.engine import BatchedSearch
from client.search.valuebias import bucket_key, table_size
from common.go.game import Game
from common.go.geometry import PASS, loc_of
from common.settings import SearchSettings
from tests.client.trees import VaryingEvaluator, check_tree, mid_game

pytestmark = pytest.mark.kernels  # plays with the search: after the tests that need no kernel

BIAS = SearchSettings(root_noise=False, subtree_value_bias_factor=0.35)


def run(game: Game, visits: int, settings: SearchSettings, leaves: int = 1, seed: int = 4) -> BatchedSearch:
    search = BatchedSearch(VaryingEvaluator(), 1, visits, leaves_per_game=leaves, seed=seed)
    search.start(0, game, visits, settings)
    search.run()
    return search


def nodes_by_slot(search: BatchedSearch) -> dict[int, list[int]]:
    t = search.trees
    out: dict[int, list[int]] = {}
    for k in range(int(t.status[0]["nodes"])):
        s = int(t.bias_slot[0, k])
        if s >= 0:
            out.setdefault(s, []).append(k)
    return out


def key_of(b: np.ndarray, x: int, y: int, prev: int, pla: int = 1) -> int:
    return int(bucket_key(b, loc_of(x, y), prev, pla))


# --- keys ----------------------------------------------------------------------------------------------
def test_a_bucket_is_the_local_pattern_the_moves_and_the_ko_ban():
    game = Game(9)
    far = loc_of(8, 8)
    base = key_of(game.b, 4, 4, far)
    assert base != 0 and base == key_of(game.b, 4, 4, far)
    assert key_of(game.b, 4, 4, loc_of(8, 7)) != base  # the move before
    assert key_of(game.b, 4, 4, PASS) != base  # a pass before counts as a location
    assert key_of(game.b, 4, 4, far, pla=2) != base  # who moves
    assert key_of(game.b, 3, 4, far) != base  # where
    game.play(loc_of(0, 0))  # a stone outside the 5x5 changes nothing
    assert key_of(game.b, 4, 4, far) == base
    game.play(loc_of(6, 6))  # inside it does
    with_stone = key_of(game.b, 4, 4, far)
    assert with_stone != base


def test_atari_and_the_board_edge_are_part_of_the_pattern():
    # The same stones within two points of C5; the white stone on E5 has two liberties in the first
    # and one in the second (the black stone on F5 lies outside the pattern).
    free = Game.from_diagram(
        """
        .........
        .........
        .........
        ....X....
        ....O....
        ....X....
        .........
        .........
        .........
        """
    )
    atari = Game.from_diagram(
        """
        .........
        .........
        .........
        ....X....
        ....OX...
        ....X....
        .........
        .........
        .........
        """
    )
    prev = loc_of(8, 0)
    assert free.chain_liberties(loc_of(4, 4)) == 2 and atari.chain_liberties(loc_of(4, 4)) == 1
    assert key_of(free.b, 2, 4, prev) != key_of(atari.b, 2, 4, prev)
    assert key_of(free.b, 1, 4, prev) == key_of(atari.b, 1, 4, prev)  # E5 is outside the pattern of B5
    # In a corner the cells off the board are left out, not read as empty points.
    small = Game(5)
    assert key_of(small.b, 0, 0, prev) != key_of(small.b, 2, 2, prev)


def test_the_ko_ban_of_the_board_is_part_of_the_key():
    game = Game.from_diagram(
        """
        .........
        .........
        .........
        ...XO....
        ..XO.O...
        ...XO....
        .........
        .........
        .........
        """
    )
    game.play(loc_of(4, 4))  # black takes the white stone on D5: white may not retake at once
    assert game.ko_loc == loc_of(3, 4)
    with_ban = key_of(game.b, 7, 7, loc_of(4, 4), pla=2)
    game.play(loc_of(8, 8))
    game.play(loc_of(0, 0))
    assert game.ko_loc is None
    # The stones near H2 are the same, the moves given too: only the ban differs.
    assert key_of(game.b, 7, 7, loc_of(4, 4), pla=2) != with_ban


# --- the tree ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("leaves", [1, 4])
def test_corrected_utilities_add_up_and_buckets_hold_their_nodes_errors(leaves):
    game = mid_game(9, 12, 3)
    search = run(game, 400, BIAS, leaves=leaves)
    t = search.trees
    check_tree(search, 0)
    assert t.status[0]["buckets"] > 10
    alpha = BIAS.subtree_value_bias_exponent
    corrected = 0
    for slot, nodes in nodes_by_slot(search).items():
        delta = weight = 0.0
        for k in nodes:
            n = int(t.n_visits[0, k])
            if n > 1 and t.state[0, k] == tr.EXPANDED:
                nn = tr.node_own_utility(t, 0, k)
                children = (t.util_sum[0, k] - nn - t.bias[0, k]) / (n - 1)
                # each node's share is its subtree's error as it stands now
                assert t.bias_delta[0, k] == pytest.approx((children - nn) * (n - 1) ** alpha, abs=1e-9)
                assert t.bias_weight[0, k] == pytest.approx((n - 1) ** alpha)
            else:
                assert t.bias_delta[0, k] == t.bias_weight[0, k] == 0.0
            delta += t.bias_delta[0, k]
            weight += t.bias_weight[0, k]
            corrected += t.bias[0, k] != 0.0
        assert t.bucket_delta[0, slot] == pytest.approx(delta, abs=1e-9)
        assert t.bucket_weight[0, slot] == pytest.approx(weight, abs=1e-9)
        if weight > 0.001:
            # every bias in the bucket was read from it at some time: within its nodes' errors
            errors = [0.0] + [t.bias_delta[0, k] / t.bias_weight[0, k] for k in nodes if t.bias_weight[0, k] > 0]
            for k in nodes:
                assert min(errors) * 0.35 - 1e-9 <= t.bias[0, k] <= max(errors) * 0.35 + 1e-9
    assert corrected > 10
    # the root, passes and first moves have no bucket
    assert t.bias_slot[0, 0] == -1


def test_a_node_is_corrected_by_lambda_times_its_buckets_mean_when_last_walked():
    game = mid_game(9, 12, 3)
    search = run(game, 200, BIAS)
    t = search.trees
    # The nodes of the last backup's path were walked last: each holds its bucket's mean now.
    path = search.work.path[0, 0, : search.work.path_len[0, 0]]
    for k in path[1:]:
        s = int(t.bias_slot[0, k])
        if s >= 0 and t.bucket_weight[0, s] > 0.001:
            assert t.bias[0, k] == pytest.approx(0.35 * t.bucket_delta[0, s] / t.bucket_weight[0, s], abs=1e-12)


def test_the_correction_changes_the_search():
    game = mid_game(9, 12, 3)
    off = run(game, 300, SearchSettings(root_noise=False)).result(0)
    on = run(game, 300, BIAS).result(0)
    assert off.root_visits == on.root_visits == 300
    assert not np.array_equal(off.visits, on.visits) or off.root_utility != on.root_utility


def test_off_is_the_search_without_it():
    """With the factor 0 nothing of the correction is computed: no bucket, no node corrected, and
    the search is the one of the settings without the key."""
    game = mid_game(9, 16, 5)
    plain = run(game, 300, SearchSettings(root_noise=False))
    zero = run(
        game, 300, SearchSettings(root_noise=False, subtree_value_bias_factor=0.0, subtree_value_bias_exponent=0.3)
    )
    assert zero.trees.status[0]["buckets"] == 0
    assert not zero.trees.bias.any() and (zero.trees.bias_slot == -1).all()
    a, b = plain.result(0), zero.result(0)
    np.testing.assert_array_equal(a.visits, b.visits)
    np.testing.assert_array_equal(a.utility, b.utility)
    assert a.root_utility == b.root_utility and a.root_utility_sq == b.root_utility_sq


def test_a_move_keeps_the_buckets_of_the_kept_subtree_and_frees_the_rest():
    game = mid_game(9, 12, 3)
    search = run(game, 400, BIAS)
    t = search.trees
    r = search.result(0)
    move = int(r.moves[r.best_index()])
    child = next(
        int(t.e_child[0, e])
        for e in range(int(t.edge_start[0, 0]), int(t.edge_start[0, 0] + t.edge_count[0, 0]))
        if t.e_move[0, e] == move
    )
    n = int(t.status[0]["nodes"])
    kept = np.zeros(n, bool)
    kept[child] = True
    for k in range(child + 1, n):
        kept[k] = kept[t.parent[0, k]] if t.parent[0, k] >= 0 else False
    expected: dict[int, list[float]] = {}
    for k in range(n):
        s = int(t.bias_slot[0, k])
        if s >= 0:
            key = int(t.bucket_key[0, s])
            share = 1.0 if kept[k] else 1.0 - BIAS.subtree_value_bias_free_prop
            e = expected.setdefault(key, [0.0, 0.0, 0.0])
            e[0] += share * t.bias_delta[0, k]
            e[1] += share * t.bias_weight[0, k]
            e[2] += kept[k]
    assert search.advance(0, move, keep=True)
    game.play(move)
    check_tree(search, 0)
    live = {int(t.bucket_key[0, s]): s for s in range(t.bucket_key.shape[1]) if t.bucket_key[0, s] != 0}
    assert set(live) == {key for key, e in expected.items() if e[2] > 0}
    assert t.status[0]["buckets"] == len(live)
    for key, s in live.items():
        assert t.bucket_delta[0, s] == pytest.approx(expected[key][0], abs=1e-9)
        assert t.bucket_weight[0, s] == pytest.approx(expected[key][1], abs=1e-9)
    for k in range(int(t.status[0]["nodes"])):
        s = int(t.bias_slot[0, k])
        assert s == -1 or t.bucket_key[0, s] != 0
    # The next search goes on from the kept tree and its buckets.
    search.start(0, game, 400, BIAS, reuse=True)
    search.run()
    check_tree(search, 0)
    assert search.result(0).root_visits == 400


def test_a_fresh_tree_starts_with_no_bucket():
    game = mid_game(9, 12, 3)
    search = run(game, 200, BIAS)
    assert search.trees.status[0]["buckets"] > 0
    search.reset(0, game.to_move)
    assert search.trees.status[0]["buckets"] == 0 and not search.trees.bucket_key[0].any()


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 40), st.sampled_from([1, 3]), st.floats(0.05, 1.0), st.floats(0.0, 1.5))
def test_the_tree_keeps_its_invariants_through_moves(seed, moves, leaves, factor, exponent):
    game = mid_game(7, moves, seed)
    settings_ = SearchSettings(root_noise=False, subtree_value_bias_factor=factor, subtree_value_bias_exponent=exponent)
    search = BatchedSearch(VaryingEvaluator(seed), 1, 120, leaves_per_game=leaves, seed=seed)
    for _ in range(3):
        if game.is_over:
            break
        search.start(0, game, 120, settings_, reuse=True)
        search.run()
        check_tree(search, 0)
        t = search.trees
        for slot in nodes_by_slot(search):
            assert t.bucket_key[0, slot] != 0
        r = search.result(0)
        move = int(r.moves[r.best_index()])
        search.advance(0, move, keep=True)
        game.play(move)


def test_table_size_leaves_room_for_every_node():
    assert table_size(1) == 2
    assert table_size(603) == 2048
    assert all(table_size(n) >= 2 * n for n in range(1, 3000, 37))
