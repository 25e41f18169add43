"""What a self-play game draws at its start and what the server accepts are one model: every start
the draws give passes every check, under the default settings and under settings that draw every
kind of start (rectangles, handicaps, big komi spreads, asymmetric playouts); and a value the
settings cannot draw fails its check, naming the settings."""

from __future__ import annotations

import numpy as np
import pytest

from common.data.selfplay_sgf import PlayoutAdvantage
from common.draws import (
    asymmetry_problem,
    board_problem,
    draw_asymmetry,
    draw_board,
    draw_handicap,
    draw_komi,
    draw_opening_moves,
    handicap_problem,
    komi_problem,
)
from common.go.geometry import BLACK, WHITE
from common.settings import SelfPlaySettings

EVERY_KIND = SelfPlaySettings().replace(
    rectangle_prob=0.3,
    handicap_prob=0.5,
    komi_big_stdev_prob=0.3,
    handicap_asymmetric_playout_prob=0.7,
    normal_asymmetric_playout_prob=0.4,
    max_asymmetric_ratio=16.0,
)


@pytest.mark.parametrize("settings", [SelfPlaySettings(), EVERY_KIND], ids=["defaults", "every kind"])
def test_every_drawn_start_is_accepted(settings):
    rng = np.random.default_rng(5)
    seen = {"rectangle": 0, "handicap": 0, "asymmetric": 0, "opening": 0}
    for _ in range(3000):
        x_size, y_size = draw_board(settings, rng)
        komi = draw_komi(settings, rng)
        extra_black, _ = draw_handicap(settings, x_size, y_size, rng)
        opening = draw_opening_moves(settings, x_size, y_size, rng)
        playouts = draw_asymmetry(settings, extra_black, rng)
        assert board_problem(settings, x_size, y_size) is None
        assert komi_problem(settings, komi) is None
        assert handicap_problem(settings, x_size, y_size, extra_black) is None
        assert asymmetry_problem(settings, extra_black, playouts) is None
        assert opening >= 0
        seen["rectangle"] += x_size != y_size
        seen["handicap"] += extra_black > 0
        seen["asymmetric"] += playouts is not None
        seen["opening"] += opening > 0
    if settings is EVERY_KIND:
        assert all(n > 50 for n in seen.values()), seen  # every kind of start was drawn and accepted


def test_what_the_settings_cannot_draw_is_named():
    settings = SelfPlaySettings().replace(board_sizes=(9, 13), board_size_weights=(1.0, 1.0), rectangle_prob=0.0)
    assert board_problem(settings, 9, 13) == (
        "a 9x13 board is not drawn by the task's settings (sizes [9, 13], rectangles with probability 0)"
    )
    assert board_problem(settings, 19, 19) is not None
    low, high = settings.komi_bounds()
    assert komi_problem(settings, high) is None and komi_problem(settings, high + 0.5) is not None
    assert komi_problem(settings, low - 0.5) is not None
    assert handicap_problem(settings, 13, 13, 1) is None  # 13x13 takes one extra black move
    assert "at most 2 stones" in (handicap_problem(settings, 13, 13, 2) or "")
    assert "at most 1 stones" in (handicap_problem(settings, 9, 9, 1) or "")  # none on 9x9
    even = settings.replace(handicap_prob=0.0)
    assert "probability 0" in (handicap_problem(even, 13, 13, 1) or "")


def test_asymmetric_playouts_only_where_the_settings_give_them():
    settings = EVERY_KIND
    assert asymmetry_problem(settings, 0, PlayoutAdvantage(BLACK, 1.5)) is None
    assert asymmetry_problem(settings, 0, None) is None
    assert "forks are played evenly" in (asymmetry_problem(settings, 0, PlayoutAdvantage(BLACK, 1.5), True) or "")
    assert "not one the task's settings draw" in (asymmetry_problem(settings, 0, PlayoutAdvantage(BLACK, 4.0)) or "")
    assert "white has the advantage" in (asymmetry_problem(settings, 1, PlayoutAdvantage(BLACK, 1.0)) or "")
    assert asymmetry_problem(settings, 1, PlayoutAdvantage(WHITE, 1.0)) is None
    none = SelfPlaySettings()
    assert "normal_asymmetric_playout_prob 0" in (asymmetry_problem(none, 0, PlayoutAdvantage(WHITE, 1.0)) or "")
