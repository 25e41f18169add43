"""Self-play's early end once every point is pass-alive, under territory scoring: the game counted
then has the score and the owners it would have if both sides passed on through the encore."""

import pytest

from common.go.game import Game
from common.go.geometry import PASS, parse_color
from common.go.playout import new_rng, random_move
from common.go.rules import Rules
from tests.common.go.helpers import v
from tests.common.go.test_territory import _golden_games, start_golden


def pass_alive_position(rules: Rules, size: int, seed: int) -> Game | None:
    """A random game (no own-eye filling) stopped at its first position where every point is
    pass-alive, or None when it ended first."""
    game = Game(size, rules=rules, komi=6.5, capacity=4 * size * size)
    rng = new_rng(seed)
    while not game.is_over and game.num_moves < 3 * size * size:
        game.play(int(random_move(game.g, game.b, game.table, game.to_move, rng)))
        if not game.is_over and game.is_all_pass_alive():
            return game
    return None


@pytest.mark.parametrize("tax", ["NONE", "SEKI", "ALL"])
@pytest.mark.parametrize("suicide", [False, True])
def test_ending_when_all_is_pass_alive_counts_as_the_encore_would(tax, suicide):
    rules = Rules(ko="SIMPLE", scoring="TERRITORY", tax=tax, suicide=suicide)
    compared = phases = 0
    for seed in range(40):
        game = pass_alive_position(rules, 5 + seed % 3, seed)
        if game is None:
            continue
        ended = game.copy()
        assert ended.end_if_all_pass_alive()
        played = game.copy()
        phases += played.encore_phase == 0
        while not played.is_over:
            played.play(PASS)
        assert played.encore_phase == 2 and played.result.reason == "two passes"
        assert ended.result.score == played.result.score, (seed, str(game))
        assert (ended.ownership("scoring") == played.ownership("scoring")).all(), (seed, str(game))
        assert ended.white_bonus == played.white_bonus
        compared += 1
    assert compared >= 20 and phases >= 10  # most of them reached in the main phase


def test_katagos_early_ended_game_scores_the_same_after_its_passes_through_the_encore(shared):
    games = [r for r in _golden_games(shared) if r["end_reason"] == "all_pass_alive_adjudicated"]
    assert games
    for r in games:
        game = start_golden(r)
        for color, vertex in r["moves"]:
            game.play(PASS if vertex == "pass" else v(game, vertex), parse_color(color))
        ended = game.copy()
        assert ended.end_if_all_pass_alive()
        for color, _ in r["score_extra_passes"]:
            game.play(PASS, parse_color(color))
        assert game.is_over and game.result.reason == "two passes"
        assert ended.result.score == game.result.score == r["white_minus_black"]
        assert (ended.ownership("scoring") == game.ownership("scoring")).all()
