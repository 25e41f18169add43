"""Search trees for the tests of the search: a network whose value swings, positions in mid-game,
and the invariants every tree keeps."""

from __future__ import annotations

import numpy as np
import pytest

from client.search import tree as tr
from client.search.engine import BatchedSearch
from common.go.game import Game
from common.go.rules import Rules


class VaryingEvaluator:
    """A stand-in network whose value swings from position to position (a fixed random linear map
    of the inputs) under a flat policy."""

    def __init__(self, seed: int = 0) -> None:
        self.weights = np.random.default_rng(seed).normal(size=22 * 361).astype(np.float32)

    def forward_raw(self, spatial, glob, width):
        n = spatial.shape[0]
        swing = 3.0 * np.sin(spatial.reshape(n, -1)[:, : self.weights.size] @ self.weights[: spatial[0].size])
        value = np.stack([swing, -swing, np.full(n, -5.0)], axis=1).astype(np.float32)
        return np.zeros((n, width * width + 1), np.float32), value, np.zeros((n, 4), np.float32)


def check_tree(search: BatchedSearch, i: int) -> None:
    """Every evaluated node has one visit of its own plus its children's, its own evaluation's
    weight plus its children's (and so for the squared weights), and its own weighted utility plus
    its children's utility and squared utility sums (its own utility: the network's, plus its bias
    correction); a finished game's visits weigh 1 each; nothing is in flight."""
    t = search.trees
    for k in range(int(t.status[i]["nodes"])):
        assert t.n_inflight[i, k] == 0
        own = tr.node_own_utility(t, i, k)
        n = int(t.n_visits[i, k])
        w = float(t.weight[i, k])
        assert w > 0
        if t.state[i, k] == tr.EXPANDED:
            own += t.bias[i, k]  # the subtree value bias correction (0 without it)
            start, count = int(t.edge_start[i, k]), int(t.edge_count[i, k])
            children = [int(c) for c in t.e_child[i, start : start + count] if c >= 0]
            assert len(children) == t.n_touched[i, k]
            assert n == 1 + sum(int(t.n_visits[i, c]) for c in children)
            assert t.w_sum[i, k] == pytest.approx(w + sum(t.w_sum[i, c] for c in children), abs=1e-9)
            assert t.w_sq_sum[i, k] == pytest.approx(w * w + sum(t.w_sq_sum[i, c] for c in children), abs=1e-9)
            assert t.util_sum[i, k] == pytest.approx(w * own + sum(t.util_sum[i, c] for c in children), abs=1e-9)
            assert t.util_sq_sum[i, k] == pytest.approx(
                w * own * own + sum(t.util_sq_sum[i, c] for c in children), abs=1e-9
            )
            for c in children:
                assert t.parent[i, c] == k
                assert t.pla[i, c] == 3 - t.pla[i, k]
        elif t.state[i, k] == tr.TERMINAL:
            assert w == 1.0 and t.w_sum[i, k] == n and t.w_sq_sum[i, k] == n
            assert t.util_sq_sum[i, k] == pytest.approx(own * own * n, abs=1e-9)
        if n:
            # a variance is never negative
            assert t.w_sum[i, k] * t.util_sq_sum[i, k] >= t.util_sum[i, k] ** 2 - 1e-9


def mid_game(size: int, moves: int, seed: int) -> Game:
    rng = np.random.default_rng(seed)
    game = Game(size, rules=Rules(ko="POSITIONAL", suicide=False))
    while game.num_moves < moves:
        legal = game.legal_moves()
        game.play(int(rng.choice(legal)))
    return game
