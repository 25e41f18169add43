"""Game branching (paper section 6.2.2): side positions and early forks as self-play makes them, the
rows they give, and what they leave alone."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from client.search.engine import NullEvaluator
from client.selfplay.game import SelfPlayGame
from client.selfplay.init import draw_start
from client.selfplay.run import GameOrder, SelfPlayDriver
from common.data.rows import game_to_rows
from common.data.schema import (
    GAME_MODE_FORK,
    GAME_MODE_NORMAL,
    GT_FINAL_SCORE,
    GT_FUTURE_BOARD_WEIGHT,
    GT_GAME_FINISHED,
    GT_GAME_MODE,
    GT_NEXT_POLICY_WEIGHT,
    GT_OWNERSHIP_WEIGHT,
    GT_POLICY_WEIGHT,
    GT_SIDE_POSITION,
    GT_TURN_INDEX,
)
from common.data.selfplay_sgf import BRANCH_NOTE, read_search_note
from common.data.validate import validate_rows
from common.encoding.features import Encoder
from common.go.game import Game
from common.go.geometry import BLACK, WHITE, loc_of
from common.go.sgf import read_sgf
from common.settings import SelfPlaySettings

pytestmark = pytest.mark.kernels  # plays with the search: after the tests that need no kernel

BRANCHING = SelfPlaySettings(
    board_sizes=(7,),
    board_size_weights=(1.0,),
    visits=8,
    cheap_visits=4,
    full_search_prob=0.5,
    max_moves=100,
    side_position_prob=0.2,
    side_position_continue_prob=0.5,
    early_fork_prob=0.5,
)


def play_games(settings: SelfPlaySettings, games: int, parallel: int = 4, seed: int = 3) -> list[SelfPlayGame]:
    """Play `games` games with the driver (forks feed later games) and return them finished."""
    driver = SelfPlayDriver(NullEvaluator(), settings, parallel, seed=seed, groups=1)
    numbers = iter(range(games))
    done: list[SelfPlayGame] = []

    def next_game(group: int) -> GameOrder | None:
        n = next(numbers, None)
        return None if n is None else GameOrder(f"b{n:03d}", np.random.default_rng([seed, n]), n)

    def finished(game: SelfPlayGame, order: GameOrder) -> int:
        done.append(game)
        return 0

    driver.run(next_game, finished)
    return done


@pytest.fixture(scope="module")
def branched() -> list[SelfPlayGame]:
    return play_games(BRANCHING, 40)


def within(count: int, trials: int, p: float, sigmas: float = 4.0) -> bool:
    return abs(count - trials * p) <= sigmas * math.sqrt(trials * p * (1 - p)) + 1


def test_side_positions_and_forks_come_as_often_as_the_settings_say(branched):
    searched = sum(g.full_searches + g.cheap_searches for g in branched)
    lines = sum(len(g.side_lines) for g in branched)
    assert lines > 50
    # A branch whose move ended the game is dropped: within the error all the same.
    assert within(lines, searched, BRANCHING.side_position_prob)
    searches = sum(g.side_searches for g in branched)
    went_on = sum(sum(1 for n in line.nodes[2::2]) for g in branched for line in g.side_lines)
    assert within(went_on, searches, BRANCHING.side_position_continue_prob)
    even = [g for g in branched if g.start.fork is None]  # forks of forks are not made
    made = sum(g.fork is not None for g in even)
    assert within(made, len(even), BRANCHING.early_fork_prob)
    played = [g for g in branched if g.start.fork is not None]
    assert played and len(played) <= made


def test_side_rows_carry_the_searchs_values_and_no_outcome(branched):
    game = next(g for g in branched if len(g.side_lines) >= 2 and g.game.result is not None)
    record = game.training_record()
    n_side = len(record.side_turns)
    assert n_side == game.side_searches >= 2
    rows = game_to_rows(record, rng=1)
    gt = rows["globalTargetsNC"]
    side = gt[gt[:, GT_SIDE_POSITION] == 1]
    assert side.shape[0] == n_side and (gt[-n_side:, GT_SIDE_POSITION] == 1).all()  # last, one each
    for row, turn in zip(side, record.side_turns):
        s = turn.record.search
        for k in range(5):  # every horizon is the search's value
            np.testing.assert_allclose(row[4 * k : 4 * k + 3], [s.win, s.loss, s.no_result], atol=1e-6)
        assert row[GT_TURN_INDEX] == turn.turn
        assert row[GT_POLICY_WEIGHT] == 1 and row[GT_NEXT_POLICY_WEIGHT] == 0
        assert row[GT_OWNERSHIP_WEIGHT] == row[GT_FUTURE_BOARD_WEIGHT] == row[GT_FINAL_SCORE] == 0
        assert row[GT_GAME_FINISHED] == 0
    assert not rows["valueTargetsNCHW"][-n_side:].any()
    assert (rows["policyTargetsNCMove"][-n_side:, 1] == 1).all()


def test_a_branch_never_changes_the_games_own_rows(branched):
    for game in [g for g in branched if g.side_lines][:6]:
        record = game.training_record()
        alone = dataclasses.replace(record, side_turns=[])
        with_sides = game_to_rows(record, rng=7)
        without = game_to_rows(alone, rng=7)
        n = without["globalTargetsNC"].shape[0]
        assert with_sides["globalTargetsNC"].shape[0] == n + len(record.side_turns)
        for name, array in without.items():
            np.testing.assert_array_equal(with_sides[name][:n], array)


def test_the_record_shows_each_side_line_as_a_variation(branched):
    game = next(g for g in branched if any(len(line.nodes) > 2 for line in g.side_lines))
    rec = read_sgf(game.sgf("sente"))
    assert rec.moves == game.game.move_list  # the main line is the game
    lines = [(i, line) for i, node in enumerate(rec.nodes) for line in node.variations]
    assert len(lines) == len(game.side_lines)
    searched = 0
    for (i, nodes), line in zip(lines, game.side_lines):
        assert i == line.turn + 1
        assert [n.move for n in nodes] == [n.move for n in line.nodes]
        assert nodes[0].comment == BRANCH_NOTE and nodes[0].move[0] == rec.nodes[i].move[0]
        for k, node in enumerate(nodes):
            note = read_search_note(node.comment) if k % 2 else None
            if k % 2:
                assert note is not None and note.side and note.visits == BRANCHING.visits
                searched += 1
    assert searched == len(game.training_record().side_turns)


def test_a_fork_game_starts_from_its_fork_with_fair_komi_and_says_so(branched):
    played = [g for g in branched if g.start.fork is not None]
    by_id = {g.game_id: g for g in branched}
    for game in played:
        fork = game.start.fork
        source = by_id[fork.of]
        kept = len(fork.moves) - 1
        assert list(fork.moves[:kept]) == source.game.move_list[:kept]  # the source game's first moves
        assert BRANCHING.fork_min_choices <= fork.choices <= BRANCHING.fork_max_choices
        assert game.game.move_list[: kept + 1] == list(fork.moves)
        assert game.start_turn == kept + 1 and game.notes[: kept + 1] == [None] * (kept + 1)
        assert game.training_record().mode == GAME_MODE_FORK
        info = json.loads(read_sgf(game.sgf("sente")).comment)["start"]
        assert info["fork"] == {"of": fork.of, "turn": kept, "choices": fork.choices}
        assert info["opening_moves"] == kept + 1 and info["komi_compensated"] is True
    assert all(g.training_record().mode == GAME_MODE_NORMAL for g in branched if g.start.fork is None)


@pytest.mark.parametrize("to_move", [BLACK, WHITE])
def test_the_forks_move_is_the_networks_favourite_for_its_player(to_move):
    rng = np.random.default_rng(0)
    game = SelfPlayGame("g", BRANCHING, draw_start(BRANCHING, rng), rng, Encoder())
    base = Game(7)
    if to_move == WHITE:
        base.play(loc_of(3, 3))
    candidates = [loc_of(0, 0), loc_of(1, 5), loc_of(6, 2)]
    game.fork_base, game.fork_candidates, game.fork_scores = base, candidates, [-2.0, 5.0, 1.0]  # white's scores
    game._choose_fork()
    assert game.fork is not None and game.fork.fork is not None
    best = candidates[1] if to_move == WHITE else candidates[0]
    assert game.fork.fork.moves == (*base.move_list, (to_move, best))
    assert game.fork.fork.choices == 3 and game.fork.opening_moves == base.num_moves + 1
    assert game.fork.extra_black == 0 and game.fork.compensate_komi


def test_rows_of_a_branching_run_are_valid(tmp_path, branched):
    from common.data.rows import write_game_rows

    sides = 0
    for game in branched[:16]:
        path = write_game_rows(game.training_record(), tmp_path, rng=2)
        if path is None:
            continue
        report = validate_rows(path)
        assert report.ok, report.errors
        with np.load(path) as z:
            gt = z["globalTargetsNC"]
            sides += int(gt[:, GT_SIDE_POSITION].sum())
            assert set(gt[:, GT_GAME_MODE].tolist()) <= {GAME_MODE_NORMAL, GAME_MODE_FORK}
    assert sides > 0


def test_without_branching_no_game_branches():
    off = BRANCHING.replace(side_position_prob=0.0, early_fork_prob=0.0)
    games = play_games(off, 8)
    assert not any(g.side_lines or g.fork or g.start.fork for g in games)
    assert all(g.side_searches == 0 and not g.training_record().side_turns for g in games)
