"""An uploaded game's training rows held against the game, and what the game drew against its task's
settings: honest games of every kind the settings can draw go in; rows repeated, rows of another
game, rows whose position, move or targets contradict the game, and draws the settings cannot make
are refused with a 400, and nothing is stored."""

from __future__ import annotations

import dataclasses
import io
import json

import numpy as np
import pytest

from common.data.rows import rows_npz
from common.data.schema import (
    DATA_LEN,
    GT_LOSS,
    GT_SIDE_POSITION,
    GT_TURN_INDEX,
    GT_UNREDUCED_VISITS,
    GT_WIN,
    PASS_POS,
    VT_OWNERSHIP,
    unpack_spatial,
)
from common.data.selfplay_sgf import read_search_note
from common.go.game import Game
from common.go.geometry import PASS, xy_of
from common.go.sgf import read_sgf
from common.settings import RulesChoice, SelfPlaySettings
from tests.client.evaluators import KomiAwareEvaluator
from tests.server import helpers
from tests.server.conftest import new_task
from tests.server.helpers import PlayedGame, upload_fields
from tests.server.test_games import TRAINING, assert_nothing_stored, assert_refused, post


def arrays_of(npz: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(npz)) as z:
        return {name: z[name].copy() for name in z.files}


def with_rows(game: PlayedGame, arrays: dict[str, np.ndarray]) -> PlayedGame:
    rows = int(arrays["globalTargetsNC"].shape[0])
    return PlayedGame(game.sgf, rows_npz(arrays), dict(game.metadata, rows=rows))


def with_record(game: PlayedGame, change) -> PlayedGame:
    """The game with its SGF record changed by change(record) (and the metadata made to agree)."""
    rec = read_sgf(game.sgf)
    change(rec)
    sgf = rec.to_sgf().encode()
    return PlayedGame(sgf, game.npz, dict(game.metadata, komi=rec.komi, result=rec.result, moves=len(rec.moves)))


def notes(rec) -> list:
    return [(node, read_search_note(node.comment)) for node in rec.nodes if node.move is not None]


@pytest.fixture
def task(run, alice):
    return new_task(alice[1], games=3)


@pytest.fixture(scope="module")
def long_game(selfplay_games) -> PlayedGame:
    """The game with the most rows (enough full searches for the count and share checks to bite)."""
    return max(selfplay_games, key=lambda g: g.metadata["rows"])


def refused(alice, task, game: PlayedGame, field: str, code: str) -> str:
    response = post(alice[1], TRAINING, upload_fields(task["id"], game))
    assert_refused(response, field, code)
    assert_nothing_stored(task["id"])
    return response.json()["error"]["message"]


# --- honest games -----------------------------------------------------------------------------------
HONEST = {
    "handicap": SelfPlaySettings(
        board_sizes=(11,),
        board_size_weights=(1.0,),
        visits=12,
        cheap_visits=4,
        full_search_prob=0.5,
        handicap_prob=1.0,
        komi_big_stdev_prob=0.5,
        max_moves=160,
        reduced_visits_min=6,
        rules=RulesChoice(
            ko=("SIMPLE", "POSITIONAL", "SITUATIONAL"),
            suicide=(False, True),
            tax=("NONE", "SEKI", "ALL"),
            button=(False, True),
            white_handicap_bonus=("0", "N", "N-1"),
        ),
    ),
    "territory": SelfPlaySettings(
        board_sizes=(6,),
        board_size_weights=(1.0,),
        visits=8,
        cheap_visits=3,
        full_search_prob=0.5,
        max_moves=300,
        reduced_visits_min=4,
        end_when_all_pass_alive=False,  # so that the games are played through the encore
        rules=RulesChoice(scoring=("TERRITORY",)),
    ),
    "rectangle": SelfPlaySettings(
        board_sizes=(7, 9),
        board_size_weights=(1.0, 1.0),
        rectangle_prob=1.0,
        visits=8,
        cheap_visits=3,
        full_search_prob=0.5,
        max_moves=200,
        reduced_visits_min=4,
    ),
    "move limit": SelfPlaySettings(
        board_sizes=(5,),
        board_size_weights=(1.0,),
        visits=6,
        cheap_visits=2,
        full_search_prob=1.0,
        max_moves=18,
        end_when_all_pass_alive=False,
    ),
    "asymmetric": SelfPlaySettings(
        board_sizes=(7, 13),
        board_size_weights=(1.0, 1.0),
        visits=8,
        cheap_visits=3,
        full_search_prob=0.5,
        max_moves=60,
        reduced_visits_min=4,
        handicap_prob=0.5,
        handicap_asymmetric_playout_prob=1.0,
        normal_asymmetric_playout_prob=0.5,
        side_position_prob=0.1,
    ),
    "branching": SelfPlaySettings(
        board_sizes=(7,),
        board_size_weights=(1.0,),
        visits=8,
        cheap_visits=3,
        full_search_prob=0.5,
        max_moves=120,
        reduced_visits_min=4,
        side_position_prob=0.2,
        side_position_continue_prob=0.5,
        early_fork_prob=1.0,
    ),
}


@pytest.mark.kernels
@pytest.mark.parametrize("name", HONEST)
def test_honest_games_of_every_draw_pass_every_check(tmp_path, name):
    from common.data.validate import load_rows
    from server.games.ingest import check_selfplay_game

    settings = HONEST[name]
    games = helpers.selfplay_games(tmp_path, helpers.RANDOM_NET, count=8, settings=settings, parallel=4)
    assert games
    for game in games:
        rec = read_sgf(game.sgf)
        check_selfplay_game(rec, rec.rules, load_rows(game.npz), game.metadata["game_id"], rec.result, settings)
    records = [read_sgf(g.sgf) for g in games]
    if name == "handicap":
        assert any(rec.handicap for rec in records)
    elif name == "territory":
        ended = [rec.to_game() for rec in records]
        # played through the encore: ended by the second encore phase's passes
        assert any(game.encore_phase == 2 and game.is_over and game.result.reason == "two passes" for game in ended)
    elif name == "asymmetric":
        advantages = [json.loads(rec.comment)["start"].get("playout_advantage") for rec in records]
        assert any(a and a["player"] == "W" for a, rec in zip(advantages, records, strict=True) if rec.handicap)
        assert any(a for a, rec in zip(advantages, records, strict=True) if not rec.handicap)
    elif name == "rectangle":
        assert any(rec.x_size != rec.y_size for rec in records)
    elif name == "branching":
        assert sum(len(node.variations) for rec in records for node in rec.nodes) > 10
        assert any(json.loads(rec.comment)["start"]["fork"] for rec in records)
        assert any(len(line) > 2 for rec in records for node in rec.nodes for line in node.variations)
    else:
        assert any(g.metadata["result"] == "Void" for g in games)


@pytest.mark.kernels
def test_komi_auto_games_pass_every_check_with_the_komi_they_found(tmp_path):
    from common.data.validate import load_rows
    from server.games.ingest import check_selfplay_game

    settings = dataclasses.replace(helpers.SELFPLAY, komi_auto=True, max_moves=40)
    games = helpers.selfplay_games(
        tmp_path, helpers.RANDOM_NET, count=3, settings=settings, evaluator=KomiAwareEvaluator(9.5)
    )
    assert games
    for game in games:
        rec = read_sgf(game.sgf)
        assert rec.komi != json.loads(rec.comment)["start"]["komi_drawn"]
        check_selfplay_game(rec, rec.rules, load_rows(game.npz), game.metadata["game_id"], rec.result, settings)


# --- rows that are not the game's ---------------------------------------------------------------------
def test_repeated_rows_are_refused(run, alice, task, long_game):
    arrays = arrays_of(long_game.npz)
    doubled = {name: np.repeat(a, 2, axis=0) for name, a in arrays.items()}  # each row twice, in order
    message = refused(alice, task, with_rows(long_game, doubled), "npz", "rows_not_of_game")
    assert "full searches of the game can give" in message


def test_rows_of_another_game_are_refused(run, alice, task, selfplay_games):
    a, b = selfplay_games[0], selfplay_games[1]
    foreign = PlayedGame(a.sgf, b.npz, dict(a.metadata, rows=b.metadata["rows"]))
    refused(alice, task, foreign, "npz", "rows_not_of_game")


def test_rows_made_under_another_game_id_are_refused(run, alice, task, long_game):
    renamed = PlayedGame(long_game.sgf, long_game.npz, dict(long_game.metadata, game_id="another-game"))
    assert "game hash" in refused(alice, task, renamed, "npz", "rows_not_of_game")


@pytest.mark.parametrize("change", ["stone", "outcome", "ownership", "move played", "visits"])
def test_a_row_that_contradicts_the_game_is_refused_naming_it(run, alice, task, long_game, change):
    arrays = arrays_of(long_game.npz)
    r = arrays["globalTargetsNC"].shape[0] // 2
    if change == "stone":
        planes = unpack_spatial(arrays["binaryInputNCHWPacked"][r])
        p = int(np.flatnonzero((planes[0] == 1) & (planes[1] == 0) & (planes[2] == 0))[0])  # an empty point
        arrays["binaryInputNCHWPacked"][r, 1, p // 8] ^= 0x80 >> (p % 8)  # an own stone there
    elif change == "outcome":
        gt = arrays["globalTargetsNC"]
        gt[r, [GT_WIN, GT_LOSS]] = gt[r, [GT_LOSS, GT_WIN]]  # the other side won
    elif change == "ownership":
        arrays["valueTargetsNCHW"][r, VT_OWNERSHIP] *= -1
        arrays["valueTargetsNCHW"][r, VT_OWNERSHIP, 0, 0] = 1 - abs(arrays["valueTargetsNCHW"][r, VT_OWNERSHIP, 0, 0])
    elif change == "move played":
        _, loc = read_sgf(long_game.sgf).moves[int(arrays["globalTargetsNC"][r, GT_TURN_INDEX])]
        x, y = xy_of(loc)
        arrays["policyTargetsNCMove"][r, 0, PASS_POS if loc == PASS else y * DATA_LEN + x] = 0
    elif change == "visits":
        arrays["globalTargetsNC"][r, GT_UNREDUCED_VISITS] += 1
    message = refused(alice, task, with_rows(long_game, arrays), "npz", "rows_not_of_game")
    assert f"row {r}" in message or "search had" in message


def test_a_row_of_a_cheap_search_is_refused(run, alice, task, long_game):
    arrays = arrays_of(long_game.npz)
    turn = int(arrays["globalTargetsNC"][0, GT_TURN_INDEX])

    def cheapen(rec):
        node, note = notes(rec)[turn]
        node.comment = dataclasses.replace(note, full=False).text()

    message = refused(alice, task, with_record(long_game, cheapen), "npz", "rows_not_of_game")
    assert "not a full search" in message


# --- draws the settings cannot make -------------------------------------------------------------------
def test_komi_outside_the_settings_is_refused_though_the_metadata_agrees(run, alice, task, long_game):
    def komi_40(rec):
        info = json.loads(rec.nodes[0].comment)
        info["start"]["komi_drawn"] = 40.0
        rec.nodes[0].comment = json.dumps(info, sort_keys=True)
        rec.komi = 40.0
        game: Game = rec.to_game()
        game.end_if_all_pass_alive()
        if game.result is not None:
            rec.result = game.result.sgf()

    message = refused(alice, task, with_record(long_game, komi_40), "sgf", "not_in_settings")
    assert "komi 40 was not drawn" in message


def test_other_settings_than_the_tasks_are_refused(run, alice, task, long_game):
    def more_visits(rec):
        info = json.loads(rec.nodes[0].comment)
        info["settings"]["visits"] += 100
        rec.nodes[0].comment = json.dumps(info, sort_keys=True)

    assert "differ in visits" in refused(alice, task, with_record(long_game, more_visits), "sgf", "not_in_settings")


def test_a_search_with_more_visits_than_the_settings_is_refused(run, alice, task, long_game):
    def bigger(rec):
        node, note = next((n, s) for n, s in notes(rec) if s is not None and s.full)
        node.comment = dataclasses.replace(note, visits=note.visits + 1).text()

    assert "full search of" in refused(alice, task, with_record(long_game, bigger), "sgf", "not_in_settings")


def test_a_share_of_full_searches_the_settings_do_not_give_is_refused(run, alice, task, long_game):
    def all_full(rec):
        for node, note in notes(rec):
            if note is not None:
                node.comment = dataclasses.replace(note, full=True, visits=helpers.SELFPLAY.visits).text()

    searched = sum(1 for _, note in notes(read_sgf(long_game.sgf)) if note is not None)
    assert searched >= 30  # 2^-30 is below the odds the check allows
    message = refused(alice, task, with_record(long_game, all_full), "sgf", "not_in_settings")
    assert f"{searched} of its {searched} searches were full" in message


def test_a_record_without_its_settings_is_refused(run, alice, task, long_game):
    def no_comment(rec):
        rec.nodes[0].comment = None

    refused(alice, task, with_record(long_game, no_comment), "sgf", "bad_record")


# --- side positions and forks -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def side_game(selfplay_games) -> PlayedGame:
    """A game of the run's settings with side positions (they branch at 2.5% of the searched turns)."""
    return max(selfplay_games, key=lambda g: sum(len(n.variations) for n in read_sgf(g.sgf).nodes))


def side_rows(arrays) -> np.ndarray:
    return np.flatnonzero(arrays["globalTargetsNC"][:, GT_SIDE_POSITION] == 1)


def test_a_game_with_side_positions_goes_in(run, alice, task, side_game):
    assert side_rows(arrays_of(side_game.npz)).size > 0
    response = post(alice[1], TRAINING, upload_fields(task["id"], side_game))
    assert response.status_code == 201, response.content


@pytest.mark.parametrize("change", ["dropped", "values", "position", "reply", "order"])
def test_a_side_row_that_contradicts_the_record_is_refused(run, alice, task, side_game, change):
    arrays = arrays_of(side_game.npz)
    sides = side_rows(arrays)
    r = int(sides[0])
    if change == "dropped":
        arrays = {name: np.delete(a, r, axis=0) for name, a in arrays.items()}
    elif change == "values":
        gt = arrays["globalTargetsNC"]
        gt[r, 4:7] = [1.0, 0.0, 0.0] if gt[r, 4] != 1 else [0.0, 1.0, 0.0]  # one horizon says otherwise
    elif change == "position":
        arrays["binaryInputNCHWPacked"][r] = arrays["binaryInputNCHWPacked"][0]
    elif change == "reply":
        arrays["policyTargetsNCMove"][r, 0] = 0
        arrays["policyTargetsNCMove"][r, 0, 0] = 1
    elif change == "order":  # the side row first: the game's rows come after it
        arrays = {name: a[np.r_[r, np.delete(np.arange(a.shape[0]), r)]] for name, a in arrays.items()}
    message = refused(alice, task, with_rows(side_game, arrays), "npz", "rows_not_of_game")
    assert "side position" in message or "row" in message


def test_side_positions_the_record_does_not_show_are_refused(run, alice, task, side_game):
    def no_variations(rec):
        for node in rec.nodes:
            node.variations = []

    message = refused(alice, task, with_record(side_game, no_variations), "npz", "rows_not_of_game")
    assert "side positions" in message


def test_a_side_search_of_other_visits_than_the_settings_is_refused(run, alice, task, side_game):
    def other_visits(rec):
        line = next(line for node in rec.nodes for line in node.variations)
        note = read_search_note(line[1].comment)
        line[1].comment = dataclasses.replace(note, visits=note.visits + 1).text()

    message = refused(alice, task, with_record(side_game, other_visits), "sgf", "not_in_settings")
    assert "side position" in message


def test_a_variation_that_is_no_side_position_is_refused(run, alice, task, side_game):
    def bare(rec):
        line = next(line for node in rec.nodes for line in node.variations)
        line[0].comment = None

    assert "branch" in refused(alice, task, with_record(side_game, bare), "sgf", "bad_record")


@pytest.mark.kernels
def test_branching_more_often_than_the_settings_say_is_refused(tmp_path):
    from common.data.validate import load_rows
    from server.games.ingest import check_selfplay_game
    from server.refusals import Refused

    settings = HONEST["branching"]
    games = helpers.selfplay_games(tmp_path, helpers.RANDOM_NET, count=4, settings=settings, parallel=2)
    game = max(games, key=lambda g: sum(len(n.variations) for n in read_sgf(g.sgf).nodes))
    rarely = settings.replace(side_position_prob=0.001)
    unforked = settings.replace(early_fork_prob=0.0)
    fork_game = next(g for g in games if json.loads(read_sgf(g.sgf).comment)["start"]["fork"])
    for played, claimed, words in ((game, rarely, "branched off"), (fork_game, unforked, "early fork")):
        rec = read_sgf(played.sgf)
        info = json.loads(rec.comment)
        info["settings"] = claimed.to_dict()
        rec.nodes[0].comment = json.dumps(info, sort_keys=True)
        with pytest.raises(Refused, match=words):
            check_selfplay_game(rec, rec.rules, load_rows(played.npz), played.metadata["game_id"], rec.result, claimed)
