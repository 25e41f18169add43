"""What a self-play record drew, against what its settings can draw (server.games.drawn): each draw the
settings cannot make is refused naming it; the share of full searches is judged by its odds."""

from __future__ import annotations

import dataclasses
import json

import pytest

from common.data.selfplay_sgf import PlayoutAdvantage, RootInfo, StartNote
from common.encoding.features import PDA_STEPS
from common.go.geometry import BLACK, WHITE
from common.go.sgf import read_sgf
from common.settings import SelfPlaySettings
from server.games import drawn
from server.refusals import Refused
from tests.server import helpers


def record_with(game, settings: SelfPlaySettings, **start):
    """The game's record, its root comment saying it played with settings and started as given."""
    rec = read_sgf(game.sgf)
    info = json.loads(rec.nodes[0].comment)
    info["settings"] = settings.to_dict()
    info["start"].update(start)
    rec.nodes[0].comment = json.dumps(info)
    return rec


def check(rec, settings: SelfPlaySettings) -> None:
    drawn.check_selfplay(drawn.selfplay_draws(rec), rec, settings, rec.result)


def refusal(rec, settings: SelfPlaySettings) -> str:
    with pytest.raises(Refused) as e:
        check(rec, settings)
    assert (e.value.field, e.value.code) == ("sgf", "not_in_settings")
    return e.value.message


def test_the_games_own_draws_pass(selfplay_games):
    for game in selfplay_games:
        check(read_sgf(game.sgf), helpers.SELFPLAY)


def test_a_size_of_weight_zero_is_not_drawn(selfplay_games):
    settings = dataclasses.replace(helpers.SELFPLAY, board_sizes=(7, 9), board_size_weights=(0.0, 1.0))
    assert "7x7 board is not drawn" in refusal(record_with(selfplay_games[0], settings), settings)


def test_a_handicap_the_settings_cannot_draw_is_refused(selfplay_games):
    rec = record_with(selfplay_games[0], helpers.SELFPLAY, extra_black=1)
    rec.handicap = 2
    assert "handicap of 2 stones on 7x7" in refusal(rec, helpers.SELFPLAY)  # 7x7 takes none


def test_komi_compensated_without_handicap_is_refused(selfplay_games):
    rec = record_with(selfplay_games[0], helpers.SELFPLAY, komi_compensated=True)
    assert "compensated" in refusal(rec, helpers.SELFPLAY)


def test_komi_other_than_drawn_without_compensation_is_refused(selfplay_games):
    rec = record_with(selfplay_games[0], helpers.SELFPLAY)
    rec.komi += 1.0
    assert "is not the" in refusal(rec, helpers.SELFPLAY)


AUTO = dataclasses.replace(helpers.SELFPLAY, komi_auto=True)


def fair_record(game, settings: SelfPlaySettings = AUTO, fair: float = 9.5, **start):
    """The game's record as komi_auto would have made it: fair komi found, its komi that plus the offset."""
    rec = record_with(game, settings, komi_fair=fair, **start)
    rec.komi = AUTO.auto_komi(fair, json.loads(rec.nodes[0].comment)["start"]["komi_drawn"])
    return rec


def test_a_komi_made_fair_for_the_empty_board_passes_with_komi_auto(selfplay_games):
    check(fair_record(selfplay_games[0]), AUTO)
    check(fair_record(selfplay_games[0], fair=-49.0), AUTO)  # whatever the network says, within the board


def test_komi_auto_refuses_a_game_whose_komi_was_not_made_fair(selfplay_games):
    assert "was not made fair" in refusal(record_with(selfplay_games[0], AUTO), AUTO)


def test_komi_auto_refuses_a_komi_other_than_the_fair_plus_the_offset(selfplay_games):
    rec = fair_record(selfplay_games[0])
    rec.komi += 0.5
    assert "is not the fair 9.5 plus its draw's offset" in refusal(rec, AUTO)


@pytest.mark.parametrize("fair", [49.5, -50.0, 7.25])
def test_komi_auto_refuses_a_fair_komi_no_board_can_have(selfplay_games, fair):
    assert "within the board's area (±49)" in refusal(fair_record(selfplay_games[0], fair=fair), AUTO)


def test_a_fair_komi_is_refused_without_komi_auto_or_beside_a_compensation(selfplay_games):
    assert "do not do (komi_auto)" in refusal(fair_record(selfplay_games[0], helpers.SELFPLAY), helpers.SELFPLAY)
    rec = fair_record(selfplay_games[0], komi_compensated=True)
    assert "both compensated and made fair" in refusal(rec, AUTO)


ASYM = dataclasses.replace(helpers.SELFPLAY, normal_asymmetric_playout_prob=0.5)


def playouts_draws(settings: SelfPlaySettings, extra_black: int = 0, player: int = WHITE, doublings: float = 1.0):
    start = StartNote(7.0, extra_black, False, 0, playouts=PlayoutAdvantage(player, doublings))
    return drawn.SelfPlayDraws(RootInfo(settings.to_dict(), start, False), [], [], [])


def playouts_refusal(draws, settings: SelfPlaySettings) -> str:
    with pytest.raises(Refused) as e:
        drawn._check_playouts(draws, settings)
    return e.value.message


def test_asymmetric_playouts_are_refused_where_the_settings_give_none():
    drawn._check_playouts(playouts_draws(ASYM), ASYM)
    assert "do not give a normal game" in playouts_refusal(playouts_draws(helpers.SELFPLAY), helpers.SELFPLAY)
    assert "do not give a handicap game" in playouts_refusal(playouts_draws(ASYM, extra_black=1), ASYM)


@pytest.mark.parametrize("doublings", [3.0, 4.5, 0.3])
def test_a_playout_advantage_the_settings_cannot_draw_is_refused(doublings):
    assert "not one the task's settings draw" in playouts_refusal(playouts_draws(ASYM, doublings=doublings), ASYM)


def test_in_a_handicap_game_only_white_has_the_playout_advantage():
    settings = dataclasses.replace(ASYM, handicap_asymmetric_playout_prob=0.5)
    drawn._check_playouts(playouts_draws(settings, extra_black=1), settings)
    assert "white has the advantage" in playouts_refusal(playouts_draws(settings, 1, BLACK), settings)


def test_an_asymmetric_game_whose_searches_had_the_even_visits_is_refused(selfplay_games):
    rec = record_with(selfplay_games[0], ASYM, playout_advantage={"player": "W", "doublings": 2.0})
    assert "visits; the task's settings search" in refusal(rec, ASYM)


@pytest.mark.parametrize(
    ("k", "n", "p", "plausible"),
    [
        (25, 50, 0.5, True),
        (35, 50, 0.5, True),
        (50, 50, 0.5, False),
        (0, 40, 0.5, False),
        (1, 10, 0.0, False),
        (10, 10, 1.0, True),
        (9, 10, 1.0, False),
        (3, 3, 0.25, True),
    ],
)
def test_the_share_of_full_searches_is_judged_by_its_odds(k, n, p, plausible):
    assert (drawn._binomial_odds(k, n, p) >= drawn.FULL_SEARCH_ODDS) == plausible


@pytest.mark.parametrize("doublings", [1 / PDA_STEPS, 1.0, 2.999])
@pytest.mark.parametrize("player", [BLACK, WHITE])
def test_the_visits_before_a_sides_share_are_the_most_that_give_it(doublings, player):
    """The row weights are bounded by the visits a search was asked for before its side's share:
    the largest that give the share the record shows, whatever the rounding."""
    draws = playouts_draws(ASYM, player=player, doublings=doublings)
    for asked in (1, 2, 3, 5, 12, 100, 599, 600, 100_000):
        for color in (BLACK, WHITE):
            shown = draws.visits_for(ASYM, asked, color)
            base = draws.base_visits(ASYM, shown, color)
            assert base >= asked
            assert draws.visits_for(ASYM, base, color) <= shown < draws.visits_for(ASYM, base + 1, color)
