"""The upload's result check on territory games: KataGo's own territory games (passes for ko and a
game begun in an encore phase among them) replay through the encore to the result they declare, and
a wrong declared result is refused naming the game and both results."""

from __future__ import annotations

import pytest

from common.go.sgf import read_sgf
from server.games.ingest import _check_result
from server.refusals import Refused


def _katago_territory_games(shared) -> list[str]:
    text = (shared / "golden" / "katago_territory_selfplay_sample.sgfs").read_text()
    return [line for line in text.splitlines() if line.strip()]


def _flipped(result: str) -> str:
    return {"B": "W", "W": "B"}[result[0]] + result[1:]


def test_katagos_territory_games_pass_the_result_check(shared):
    for i, line in enumerate(_katago_territory_games(shared)):
        rec = read_sgf(line)
        # KataGo's self-play ends a game once every point is pass-alive: so does ours.
        _check_result(rec.to_game(), rec.result, True, 1000, resign_allowed=False, game_id=f"katago-{i}")


@pytest.mark.parametrize("which", ["a pass for ko", "begun in the encore", "the first"])
def test_a_wrong_result_of_a_territory_game_is_refused_naming_the_game_and_both_results(shared, which):
    lines = _katago_territory_games(shared)
    line = {
        "a pass for ko": next(x for x in lines if "Pass for ko" in x),
        "begun in the encore": next(x for x in lines if "beganInEncorePhase=1" in x),
        "the first": lines[0],
    }[which]
    rec = read_sgf(line)
    wrong = _flipped(rec.result)
    with pytest.raises(Refused) as refusal:
        _check_result(rec.to_game(), wrong, True, 1000, resign_allowed=False, game_id="g-17")
    error = refusal.value
    assert (error.field, error.code) == ("sgf", "wrong_result")
    assert f"game 'g-17' ended (two passes) with {rec.result} by territory scoring, but declares {wrong}" in str(
        error.message
    )


def test_a_territory_game_stopped_before_its_encore_ends_has_no_result_to_declare(shared):
    rec = read_sgf(_katago_territory_games(shared)[0])
    game = rec.to_game(upto=len(rec.moves) - 1)  # the last pass, which would end the game, not played
    with pytest.raises(Refused, match="no two passes ended its second encore phase"):
        _check_result(game, rec.result, True, 1000, resign_allowed=False, game_id="g-1")
