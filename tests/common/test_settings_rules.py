"""The rules self-play draws: KataGo's self-play lists by default, the button for area scoring only,
and choices that cannot be played refused naming the key."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from common.go.rules import Rules
from common.settings import RulesChoice, RunSettings, SelfPlaySettings, SettingsError


def test_the_default_draws_are_katagos_selfplay_lists():
    rng = np.random.default_rng(4)
    n = 30000
    drawn = [RulesChoice().draw(rng) for _ in range(n)]
    share = Counter[tuple[str, object]]()
    for rules in drawn:
        share.update([("ko", rules.ko), ("scoring", rules.scoring), ("tax", rules.tax), ("suicide", rules.suicide)])
    for key, expected in {
        ("ko", "SIMPLE"): 1 / 3,
        ("ko", "POSITIONAL"): 1 / 3,
        ("ko", "SITUATIONAL"): 1 / 3,
        ("scoring", "AREA"): 1 / 2,
        ("scoring", "TERRITORY"): 1 / 2,
        ("tax", "NONE"): 2 / 5,  # listed twice of five
        ("tax", "SEKI"): 2 / 5,
        ("tax", "ALL"): 1 / 5,
        ("suicide", False): 1 / 2,
        ("suicide", True): 1 / 2,
    }.items():
        assert share[key] / n == pytest.approx(expected, abs=0.015), key
    area = [r for r in drawn if r.scoring == "AREA"]
    assert np.mean([r.has_button for r in area]) == pytest.approx(1 / 3, abs=0.015)
    assert not any(r.has_button for r in drawn if r.scoring == "TERRITORY")
    assert {r.white_handicap_bonus for r in drawn} == {"0"} and not any(r.friendly_pass_ok for r in drawn)


def test_what_the_choices_can_draw_is_what_they_allow():
    choice = RulesChoice(ko=("POSITIONAL",), tax=("NONE",), suicide=(True,))
    rng = np.random.default_rng(1)
    for _ in range(200):
        assert choice.allows(choice.draw(rng)) is None
    assert "scoring 'TERRITORY'" in (RulesChoice(scoring=("AREA",)).allows(Rules(scoring="TERRITORY")) or "")
    assert "button" in (choice.allows(Rules(scoring="TERRITORY", has_button=True)) or "")
    assert "button True" in (RulesChoice(button=(False,)).allows(Rules(has_button=True)) or "")
    assert "ko 'SIMPLE'" in (choice.allows(Rules(ko="SIMPLE")) or "")


@pytest.mark.parametrize(
    ("rules", "path", "needle"),
    [
        ({"ko": ["SPIGHT"]}, "selfplay.rules.ko[0]", "SPIGHT is not played"),
        ({"scoring": ["AREA", "STONES"]}, "selfplay.rules.scoring[1]", "'STONES' is not one of AREA, TERRITORY"),
        ({"scoring": []}, "selfplay.rules.scoring", "must not be empty"),
        ({"scoring": ["TERRITORY"]}, "selfplay.rules.button", "only for area scoring"),
        ({"tax": ["SOME"]}, "selfplay.rules.tax[0]", "not one of NONE, SEKI, ALL"),
    ],
)
def test_choices_that_cannot_be_played_are_refused_naming_the_key(rules, path, needle):
    with pytest.raises(SettingsError) as e:
        RunSettings.from_dict({"selfplay": {"rules": rules}})
    assert e.value.path == path and needle in str(e.value)


def test_territory_without_a_button_and_the_rectangle_probability_are_checked():
    settings = RunSettings.from_dict({"selfplay": {"rules": {"scoring": ["TERRITORY"], "button": [False]}}})
    assert settings.selfplay.rules.scoring == ("TERRITORY",)
    with pytest.raises(SettingsError) as e:
        SelfPlaySettings.from_dict({"rectangle_prob": 1.5})
    assert e.value.path == "rectangle_prob" and "at most 1.0" in str(e.value)


def test_which_boards_the_settings_draw():
    settings = SelfPlaySettings(board_sizes=(7, 9, 11), board_size_weights=(1.0, 1.0, 0.0))
    assert settings.draws_board(7, 9) and settings.draws_board(9, 9)
    assert not settings.draws_board(7, 11) and not settings.draws_board(8, 8)
    assert not settings.replace(rectangle_prob=0.0).draws_board(7, 9)
    assert SelfPlaySettings().rectangle_prob == 0.1
