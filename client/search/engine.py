"""Batched MCTS over many games at once: the Python side of the lock-step search.

:class:`BatchedSearch` holds G search trees, the games' root positions, one batch buffer and the
position cache. A caller sets a game's position and starts a search on it (:meth:`start`), then
calls :meth:`step` until the searches it waits for are done; each step is one numba pass selecting
and encoding leaves in every searching game, one forward pass of the network, and one numba pass
expanding and backing up. Nothing in a step loops in Python over games or visits. Games whose search
is done sit out until they are started again, so a self-play driver can start the next search of
one game while the others go on.

The evaluator is anything with ``forward_raw(spatial, glob, width)`` returning the network's raw
policy logits [n, W * W + 1], value logits [n, 3] and misc outputs [n, >= 3] as numpy arrays
(:class:`client.evaluator.Evaluator`, or :class:`NullEvaluator` to measure the search alone).
"""

from __future__ import annotations

import math
import os
import weakref
from dataclasses import dataclass
from typing import cast

import numba
import numpy as np

from client.search import tree as tr
from client.search.batch import (
    Selection,
    apply_pass,
    apply_pass_ranges,
    finish_step,
    new_batch,
    new_roots,
    new_step_state,
    new_work,
    select_pass,
    select_pass_ranges,
    spatial_view,
)
from client.search.cache import new_cache
from client.search.utility import score_table
from common.encoding.features import (
    NN_AREA,
    NN_LEN,
    NUM_GLOBAL,
    NUM_SPATIAL,
    InputRow,
    fill_row_at,
    ladder_plane,
    new_scratch,
    player_pda,
    symmetry_index,
)
from common.go import gamestate as gs
from common.go.board import BOARD_LEN, M_HASH_HI, M_HASH_LO, M_KO, M_XSIZE, M_YSIZE
from common.go.game import Game
from common.go.geometry import PASS, STRIDE, WHITE
from common.go.playout import new_rng
from common.settings import SearchSettings
from common.settings.framework import kernel_fields


class NullEvaluator:
    """No network: every policy logit, value logit and score output is zero (a uniform policy over
    the legal moves, equal win and loss). The search still encodes every leaf's inputs."""

    def __init__(self) -> None:
        self._outputs: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def forward_raw(self, spatial: np.ndarray, glob: np.ndarray, width: int):
        key = (spatial.shape[0], width)
        out = self._outputs.get(key)
        if out is None:
            n = spatial.shape[0]
            out = (
                np.zeros((n, width * width + 1), np.float32),
                np.zeros((n, 3), np.float32),
                np.zeros((n, 4), np.float32),
            )
            # The same zeros for every call of this shape; writable as a network's outputs are, so that
            # the search's kernels compile for the types they will meet with a network.
            self._outputs[key] = out
        return out


@dataclass
class SearchResult:
    """A finished search, from the root player's point of view (score and lead: white's).

    Per root edge (pass included): ``moves`` (board locations, PASS = 0), ``visits``, ``weights``
    and ``weights_sq`` (the sums of the child's visits' weights and of their squares: the visits
    again unless playouts are weighted, :mod:`client.search.tree`), ``priors`` (after temperature
    and noise), ``raw_priors`` (the network's), and the children's weighted mean ``utility``,
    ``winloss``, ``score``, ``lead``, ``score_sq`` and ``utility_sq`` (0 where unvisited).
    ``root_*``: the root's averages over the whole search; ``raw_*``: the network at the root.
    The move to play and the policy target go by the weights, as KataGo's; a Gumbel search's by its
    draws (``gumbel``) and completed Q (with ``raw_utility``), :mod:`client.search.targets`.
    """

    pla: int
    moves: np.ndarray
    visits: np.ndarray
    weights: np.ndarray
    weights_sq: np.ndarray
    priors: np.ndarray
    raw_priors: np.ndarray
    utility: np.ndarray
    winloss: np.ndarray
    score: np.ndarray
    lead: np.ndarray
    score_sq: np.ndarray
    utility_sq: np.ndarray
    root_visits: int
    root_weight: float
    root_utility: float
    root_utility_sq: float
    root_winloss: float
    root_score: float
    root_score_sq: float
    root_lead: float
    raw_winloss: float
    raw_score: float
    raw_score_stdev: float
    raw_lead: float
    nn_evals: int
    cache_hits: int
    terminal_visits: int
    collisions: int
    inputs: tuple[np.ndarray, np.ndarray] | None = None  # the root's network inputs, when asked for
    gumbel: np.ndarray | None = None  # per root edge, its Gumbel draw (a Gumbel search: 0 without noise)
    raw_utility: float = 0.0  # a Gumbel search: the network's utility of the root, the root player's

    @property
    def root_score_stdev(self) -> float:
        return math.sqrt(max(0.0, self.root_score_sq - self.root_score**2))

    def best_index(self) -> int:
        """The edge of most weight, the most visited unless playouts are weighted (ties: higher
        prior)."""
        order = np.lexsort((-self.priors, -self.weights))
        return int(order[0])

    def policy_target(self, visits: np.ndarray | None = None) -> np.ndarray:
        """Visits (by default the children's weights) on the 19x19 grid plus pass: float32[362]."""
        v = self.weights if visits is None else visits
        out = np.zeros(NN_AREA + 1, np.float32)
        out[move_positions(self.moves)] = v
        return out

    def prior_grid(self, raw: bool = True) -> np.ndarray:
        out = np.zeros(NN_AREA + 1, np.float32)
        out[move_positions(self.moves)] = self.raw_priors if raw else self.priors
        return out


def _board_key(b: np.ndarray) -> tuple[int, int, int]:
    """A board's stones (by their hash) and ko point: what its ladder plane depends on."""
    return int(b[M_HASH_LO]), int(b[M_HASH_HI]), int(b[M_KO])


def move_positions(moves: np.ndarray) -> np.ndarray:
    """Board locations (PASS = 0) to network positions y * 19 + x (pass = 361)."""
    moves = np.asarray(moves, dtype=np.int64)
    pos = (moves // STRIDE - 1) * NN_LEN + (moves % STRIDE - 1)
    return np.where(moves == PASS, NN_AREA, pos)


_RECORDS: dict[type, tuple[np.dtype, tuple[str, ...]]] = {}


def _record_of(settings_class: type) -> tuple[np.dtype, tuple[str, ...]]:
    """The parameter record of searches with settings of ``settings_class``, and the names of the
    settings it holds (made once per class)."""
    record = _RECORDS.get(settings_class)
    if record is None:
        dtype = tr.SEARCH_PARAMS if settings_class is SearchSettings else tr.search_params_dtype(settings_class)
        record = _RECORDS[settings_class] = (dtype, tuple(f.name for f in kernel_fields(settings_class)))
    return record


def search_params(
    settings: SearchSettings, game: Game, visits: int, draw_equivalent_wins: float, pda_black: float = 0.0
) -> np.void:
    """The tree's SEARCH_PARAMS record of a search of game's position until its root has `visits`
    visits, with draws worth draw_equivalent_wins wins to white and black's playout doubling
    advantage pda_black told to the network."""
    board_len = math.sqrt(game.x_size * game.y_size)
    dtype, names = _record_of(type(settings))
    p = np.zeros((), dtype)
    for name in names:  # each setting the kernel reads, under its own name
        p[name] = getattr(settings, name)
    p["target"] = visits
    p["board_len"] = board_len
    p["root_temperature"] = settings.root_policy_temperature_at(game.num_moves, board_len)
    p["draw_wl"] = 2.0 * draw_equivalent_wins - 1.0
    p["pda_black"] = pda_black
    # the stubs type every index of an array as an array; () of a 0-d record array is its record
    return cast(np.void, p[()])


class BatchedSearch:
    """G searches advanced in lock step; see the module docstring.

    ``max_visits`` bounds any one search's visits (it sizes the trees); ``leaves_per_game`` is how
    many leaves one game puts into a batch (more fill larger batches, at the price of virtual loss);
    ``history`` bounds the moves of a game (plus the tree's depth).
    """

    def __init__(
        self,
        evaluator,
        games: int,
        max_visits: int,
        leaves_per_game: int = 1,
        cache_entries: int = 1 << 15,
        seed: int = 0,
        history: int = 2048,
        max_area: int = NN_AREA,
        threads: int | None = None,
    ) -> None:
        if games < 1 or max_visits < 1 or leaves_per_game < 1:
            raise ValueError("games, max_visits and leaves_per_game must be at least 1")
        self.evaluator = evaluator
        self.optimistic = bool(getattr(evaluator, "optimistic_policy", False))
        self.games = games
        self.leaves = leaves_per_game
        self.max_visits = max_visits
        nodes = max_visits + leaves_per_game + 2
        edges = nodes * (max_area + 1)
        self.trees = tr.new_trees(games, nodes, edges, score_table())
        self.depth = min(nodes + 1, 1024)
        self.history = history
        self.roots = new_roots(games, history + self.depth + 2, gs.new_table(history + self.depth + 2).shape[0])
        threads = max(
            1, min(threads if threads is not None else (os.cpu_count() or 1), games, numba.config.NUMBA_NUM_THREADS)
        )
        if threads > 1:  # (this starts numba's threads, and takes numba.set_num_threads into account)
            threads = max(1, min(threads, numba.get_num_threads()))
        self.threads = threads
        self.bounds = np.array([games * k // threads for k in range(threads + 1)], np.int64)
        self.work = new_work(games, leaves_per_game, self.depth, threads)
        self.batch = new_batch(games, leaves_per_game)
        # The leaves of a step where not every slot has one, gathered into rows next to each other.
        self._gathered = np.zeros_like(self.batch.spatial)
        self._gathered_glob = np.zeros_like(self.batch.glob)
        self.cache = new_cache(cache_entries)
        self.state = new_step_state(self.trees, self.roots, self.work, self.batch, self.cache)
        self.scratch = new_scratch()
        self.use_cache = cache_entries > 0
        self.sizes = np.zeros(games, np.int64)  # the larger side of each game's board
        # Ladder planes of the last positions each root went through, by board (stones and ko point):
        # a root's history planes are looked up here instead of read again.
        self._ladders: list[dict[tuple[int, int, int], np.ndarray]] = [{} for _ in range(games)]
        # The game object and move number each tree's root stands for (a tree is only reused on the
        # game it was searched on, brought along by advance()).
        self._tree_owner: list[tuple[weakref.ref, int] | None] = [None] * games
        self._identity = np.zeros(NN_AREA + 1, np.int32)
        self._legal = np.zeros(NN_AREA + 1, np.uint8)
        self._lad_now = np.zeros(NN_AREA, np.uint8)
        self.max_width = 0
        for i in range(games):
            self.trees.rng[i, 0] = new_rng(seed * 1_000_003 + i)[0]
        self.settings: list[SearchSettings | None] = [None] * games
        self.random_symmetries = np.ones(games, bool)
        self.all_random_symmetries = True
        self.n_searching = 0  # games whose search is on (kept with the trees' status "active")
        self.steps = 0
        self.visits_total = 0  # visits made by step() (cache hits and finished games included)
        self.batch_rows = 0  # network evaluations
        self.slots_offered = 0

    # --- positions -------------------------------------------------------------------------------
    def set_position(self, i: int, game: Game) -> None:
        """Make game i's root position a copy of game's position (its tree is not changed: call
        :meth:`advance` or :meth:`start` with reuse off to match it)."""
        n = game.num_moves
        if n > self.history:
            raise ValueError(f"game {i}: {n} moves exceed the search's history of {self.history}")
        r = self.roots
        r.boards[i, :] = game.b[:BOARD_LEN]
        r.states[i, :] = game.g
        r.hists[i, : n + 1] = game.hist[: n + 1]
        r.moves[i, :n] = game.moves[:n]
        gs.table_rebuild(r.states[i], r.hists[i], r.tables[i])
        prev = game.undo_boards(2)
        memo = self._ladders[i]
        for k in range(2):
            if k < len(prev):
                plane = memo.get(_board_key(prev[k]))
                if plane is None:
                    ladder_plane(prev[k], r.prev_ladder[i, k], self.scratch)
                else:
                    r.prev_ladder[i, k] = plane
            else:
                r.prev_ladder[i, k, :] = 0
        self.sizes[i] = max(game.x_size, game.y_size)
        self.max_width = int(self.sizes.max())

    def _remember_root_ladder(self, i: int) -> None:
        """Keep the evaluated root's ladder plane: it is a history plane of the next two positions."""
        t = self.trees
        if t.state[i, 0] == tr.EXPANDED:
            memo = self._ladders[i]
            if len(memo) >= 4:
                del memo[next(iter(memo))]
            memo[_board_key(self.roots.boards[i])] = t.ladder[i, 0].copy()

    def advance(self, i: int, move: int, keep: bool) -> bool:
        """Move game i's tree to the child reached by move (keeping its subtree if keep)."""
        self._remember_root_ladder(i)
        owner = self._tree_owner[i]
        if owner is not None:
            self._tree_owner[i] = (owner[0], owner[1] + 1)
        return bool(tr.advance_root(self.trees, i, move, keep))

    def follow(self, i: int, game: Game, previous: list[tuple[int, int]] | None) -> bool:
        """Bring game i's tree to game's position from the one it last searched, whose move list was
        `previous` (None: unknown): the moves played since are walked down the tree, keeping the
        subtree; if the tree does not lead there, it starts afresh. Returns whether a tree was kept."""
        moves = game.move_list
        kept = False
        if previous is not None and moves[: len(previous)] == previous:
            kept = True
            for _, loc in moves[len(previous) :]:
                kept = self.advance(i, loc, keep=True) and kept
        if not kept:
            self.reset(i, game.to_move)
        return kept

    def reset(self, i: int, to_move: int) -> None:
        tr.reset_tree(self.trees, i, to_move)
        self._tree_owner[i] = None

    def _tree_continues(self, i: int, game: Game) -> bool:
        """Is game i's tree rooted at game's position: searched on this very game object, and moved
        along by :meth:`advance` once for every move played since?"""
        owner = self._tree_owner[i]
        return owner is not None and owner[0]() is game and owner[1] == game.num_moves

    # --- searching -------------------------------------------------------------------------------
    def start(
        self,
        i: int,
        game: Game,
        visits: int,
        settings: SearchSettings,
        *,
        full: bool = True,
        reuse: bool = False,
        draw_equivalent_wins: float = 0.5,
        pda_black: float = 0.0,
    ) -> None:
        """Start searching game i's position (game) until its root has `visits` visits.

        full: noise and forced playouts as the settings say (a full search); otherwise neither, and
        the root's first-play urgency is the tree's (a cheap search, section 6.1). reuse: keep the
        tree if it was searched on this same game object and :meth:`advance` brought it along every
        move since; otherwise (or without reuse) a fresh tree. pda_black: black's playout doubling
        advantage (KataGo's asymmetric playouts), an input of every evaluation, white's the opposite;
        a tree searched under another is not reused.
        """
        if game.is_over:
            raise ValueError(f"game {i}: the game is over, there is nothing to search")
        if not 1 <= visits <= self.max_visits:
            raise ValueError(f"visits {visits}: must be between 1 and {self.max_visits}")
        self.set_position(i, game)
        t = self.trees
        if not full:
            settings = settings.for_cheap_search()
        params = search_params(settings, game, visits, draw_equivalent_wins, pda_black)
        if not self.optimistic:
            params["policy_optimism"] = params["root_policy_optimism"] = 0.0
        # A reused root was expanded as a child, with the priors of the optimism below the root; a
        # Gumbel search counts its root's visits from its first simulation (sequential halving).
        if (
            not reuse
            or settings.gumbel
            or t.state[i, 0] != tr.EXPANDED
            or t.pla[i, 0] != game.to_move
            or t.params[i]["pda_black"] != pda_black
            or t.params[i]["policy_optimism"] != params["policy_optimism"]
            or params["root_policy_optimism"] != params["policy_optimism"]
            or not self._tree_continues(i, game)
        ):
            tr.reset_tree(t, i, game.to_move)
        self._tree_owner[i] = (weakref.ref(game), game.num_moves)
        t.params[i] = params
        status = t.status[i]
        status["ready"] = False
        status["full"] = False
        for name in ("nn_evals", "cache_hits", "terminal_visits", "collisions"):
            status[name] = 0
        self.settings[i] = settings
        self.random_symmetries[i] = settings.symmetries == "random"
        self.all_random_symmetries = bool(self.random_symmetries.all())
        was = bool(status["active"])
        # (the kernels' own rule, run as Python: a compiled call would cost more than the test)
        status["active"] = not tr.search_done.py_func(t.n_visits[i, 0], t.n_inflight[i, 0], visits, status["full"])
        self.n_searching += int(status["active"]) - was

    def stop(self, i: int) -> None:
        """End game i's search where it is (between steps no leaf is in flight)."""
        self.n_searching -= int(self.trees.status[i]["active"])
        self.trees.status[i]["active"] = False

    def searching(self) -> np.ndarray:
        """Which games are searching (bool[G])."""
        return self.trees.status["active"].copy()

    def is_searching(self, i: int) -> bool:
        """Is game i searching?"""
        return bool(self.trees.status[i]["active"])

    def step(self) -> np.ndarray:
        """One lock-step round over every searching game. Returns the indices of the games whose
        search finished in this round."""
        t, b, w = self.trees, self.batch, self.work
        if self.n_searching == self.games:
            width = self.max_width
            random_sym = self.all_random_symmetries
        elif self.n_searching > 0:
            active = t.status["active"]
            width = int(self.sizes[active].max())
            random_sym = bool(self.random_symmetries[active].all())
        else:
            return np.zeros(0, np.int64)
        spatial = spatial_view(b, width)
        sel = Selection(spatial, self.leaves, width, self.use_cache, random_sym)
        if self.threads == 1:
            n, n_active = select_pass(self.state, sel)
        else:
            n, n_active = select_pass_ranges(self.state, sel, self.bounds)
        if n > 0:
            if n == spatial.shape[0]:
                x, g = spatial, b.glob
            else:
                order = b.order[:n]
                rows = self._gathered[: n * spatial[0].size].reshape(n, *spatial.shape[1:])
                x = np.take(spatial, order, axis=0, out=rows)
                g = np.take(b.glob, order, axis=0, out=self._gathered_glob[:n])
            if self.optimistic and (t.params["policy_optimism"].any() or t.params["root_policy_optimism"].any()):
                policy, value, misc = self.evaluator.forward_raw(x, g, width, optimistic=True)
                policy = self._mix_optimism(policy, n)
            else:
                policy, value, misc = self.evaluator.forward_raw(x, g, width)
            args = (
                self.state,
                np.ascontiguousarray(policy, dtype=np.float32),
                np.ascontiguousarray(value, dtype=np.float32),
                np.ascontiguousarray(misc, dtype=np.float32),
                self.leaves,
                self.use_cache,
            )
            if self.threads == 1:
                done, added = apply_pass(*args)
            else:
                done, added = apply_pass_ranges(*args, self.bounds)
            self.batch_rows += n
        else:
            done, added = finish_step(self.state)
        self.n_searching -= done
        self.slots_offered += n_active * self.leaves
        self.visits_total += added
        self.steps += 1
        return w.finished[:done].copy()

    def _mix_optimism(self, policy: np.ndarray, n: int) -> np.ndarray:
        """The priors' logits of the step's n rows from the move and optimistic policies [n, 2, L]:
        p + optimism * (p_optimistic - p), with each game's root optimism for a root and its
        optimism below."""
        slots = self.batch.order[:n]
        game, leaf = np.divmod(slots, self.leaves)
        params = self.trees.params[game]
        share = np.where(self.work.path_len[game, leaf] == 1, params["root_policy_optimism"], params["policy_optimism"])
        base = policy[:, 0, :]
        return base + share.astype(np.float32)[:, None] * (policy[:, 1, :] - base)

    def run(self) -> None:
        """Step until no game is searching."""
        while self.n_searching:
            self.step()

    # --- results ---------------------------------------------------------------------------------
    def result(self, i: int, inputs: bool = False) -> SearchResult:
        """Game i's search as it stands; with inputs, also the root position's network inputs
        (spatial [22, 361] and global [19] float32, no symmetry), as the evaluator would get them."""
        t = self.trees
        n = int(t.edge_count[i, 0]) if t.state[i, 0] == tr.EXPANDED else 0
        moves = np.zeros(n, np.int64)
        visits = np.zeros(n, np.int64)
        floats = np.zeros((10, n), np.float64)
        if n:
            tr.root_children(t, i, moves, visits, *floats)
        weights, weights_sq, prior, raw, util, wl, score, lead, sq, util_sq = floats
        root_n = float(t.w_sum[i, 0]) if t.n_visits[i, 0] > 0 else 1.0
        sign = 1.0 if t.pla[i, 0] == WHITE else -1.0
        own = t.own[i, 0]
        status = t.status[i]
        gumbel = bool(t.params[i]["gumbel"])
        return SearchResult(
            pla=int(t.pla[i, 0]),
            moves=moves,
            visits=visits,
            weights=weights,
            weights_sq=weights_sq,
            priors=prior,
            raw_priors=raw,
            utility=util,
            winloss=wl,
            score=score,
            lead=lead,
            score_sq=sq,
            utility_sq=util_sq,
            root_visits=int(t.n_visits[i, 0]),
            root_weight=float(t.w_sum[i, 0]),
            root_utility=sign * float(t.util_sum[i, 0]) / root_n,
            root_utility_sq=float(t.util_sq_sum[i, 0]) / root_n,
            root_winloss=sign * float(t.wl_sum[i, 0]) / root_n,
            root_score=float(t.score_sum[i, 0]) / root_n,
            root_score_sq=float(t.sq_sum[i, 0]) / root_n,
            root_lead=float(t.lead_sum[i, 0]) / root_n,
            raw_winloss=sign * float(own[tr.OWN_WL]),
            raw_score=float(own[tr.OWN_SCORE]),
            raw_score_stdev=float(own[tr.OWN_SD]),
            raw_lead=float(own[tr.OWN_LEAD]),
            nn_evals=int(status["nn_evals"]),
            cache_hits=int(status["cache_hits"]),
            terminal_visits=int(status["terminal_visits"]),
            collisions=int(status["collisions"]),
            inputs=self.root_inputs(i) if inputs else None,
            gumbel=t.root_gumbel[i, :n].copy() if gumbel else None,
            raw_utility=sign * float(tr.own_utility(t, i, 0)) if gumbel and n else 0.0,
        )

    def root_inputs(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Game i's root position encoded as the network's inputs: spatial [22, 361] and global [19]
        (float32, no symmetry), with the history's ladder planes the search keeps."""
        r = self.roots
        x_size, y_size = int(r.boards[i, M_XSIZE]), int(r.boards[i, M_YSIZE])
        symmetry_index(x_size, y_size, 0, NN_LEN, self._identity)
        spatial = np.zeros((NUM_SPATIAL, NN_AREA), np.float32)
        glob = np.zeros(NUM_GLOBAL, np.float32)
        state = r.states[i]
        params = self.trees.params[i]
        draw_equiv = 0.5 * (float(params["draw_wl"]) + 1.0)
        to_move = int(state[gs.G_TO_MOVE])
        fill_row_at(
            gs.Position(state, r.boards[i], r.hists[i], r.moves[i], r.tables[i]),
            to_move,
            draw_equiv,
            player_pda(float(params["pda_black"]), to_move),
            r.prev_ladder[i, 0],
            r.prev_ladder[i, 1],
            InputRow(self._identity, spatial, glob, self._legal, self._lad_now),
            self.scratch,
        )
        return spatial, glob

    def principal_variation(self, i: int, move: int | None = None, length: int = 30) -> list[int]:
        """The most visited line from the root (or from the root's child reached by move)."""
        t = self.trees
        out = np.zeros(length, np.int64)
        node = 0
        prefix: list[int] = []
        if move is not None:
            node = -1
            if t.state[i, 0] == tr.EXPANDED:
                start = int(t.edge_start[i, 0])
                for e in range(start, start + int(t.edge_count[i, 0])):
                    if t.e_move[i, e] == move:
                        node = int(t.e_child[i, e])
            prefix = [move]
            if node < 0:
                return prefix
        k = tr.principal_variation(t, i, node, out)
        return prefix + [int(m) for m in out[:k]]

    @property
    def average_batch_fill(self) -> float:
        return self.batch_rows / self.slots_offered if self.slots_offered else 0.0
