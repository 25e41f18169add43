"""Gating rules: KataGo's fixed gatekeeper and Leela Zero's SPRT, on simulated games."""

from __future__ import annotations

import numpy as np
import pytest

from common.elo import expected_score
from common.settings import GatingSettings
from server.ratings.gating import (
    ACCEPT,
    CONTINUE,
    REJECT,
    decide,
    expected_sprt_games,
    fixed_rule,
)


def test_the_fixed_rule_decides_as_soon_as_the_rest_cannot_change_it():
    assert fixed_rule(100, 0, 0, 200, 100).decision == ACCEPT  # 100 of 200 already
    assert fixed_rule(99, 2, 30, 200, 100).decision == ACCEPT  # a draw is half a point
    assert fixed_rule(99, 0, 50, 200, 100).decision == CONTINUE
    verdict = fixed_rule(40, 0, 101, 200, 100)
    assert verdict.decision == REJECT and "cannot reach" in verdict.reason and verdict.games == 141
    assert fixed_rule(99, 1, 100, 200, 100).decision == REJECT  # 99.5 points after all 200


def _simulate(true_elo: float, settings: GatingSettings, runs: int, seed: int) -> tuple[float, float, float]:
    """(share accepted, mean games, share decided by the cap) over simulated gatings."""
    rng = np.random.default_rng(seed)
    p = expected_score(true_elo)
    accepted, games, capped = 0, 0, 0
    for _ in range(runs):
        wins = losses = 0
        while True:
            if rng.random() < p:
                wins += 1
            else:
                losses += 1
            verdict = decide(settings, wins, 0, losses)
            if verdict.decision != CONTINUE:
                break
        accepted += verdict.decision == ACCEPT
        games += verdict.games
        capped += "cap" in verdict.reason
    return accepted / runs, games / runs, capped / runs


@pytest.mark.parametrize("true_elo, expect", [(100.0, ACCEPT), (-60.0, REJECT)])
def test_the_sprt_accepts_a_strong_candidate_and_rejects_a_weak_one_in_the_expected_games(true_elo, expect):
    settings = GatingSettings(rule="sprt")  # H0 0 Elo, H1 +35, alpha = beta = 0.05, cap 400
    share, mean_games, capped = _simulate(true_elo, settings, runs=300, seed=11)
    right = share if expect == ACCEPT else 1.0 - share
    assert right >= 0.95
    wald = expected_sprt_games(
        true_elo, settings.sprt_elo0, settings.sprt_elo1, settings.sprt_alpha, settings.sprt_beta
    )
    assert 0.6 * wald <= mean_games <= 1.4 * wald, (mean_games, wald)
    assert capped < 0.05


def test_the_sprt_holds_its_error_rates_at_the_hypotheses():
    settings = GatingSettings(rule="sprt", sprt_max_games=100_000)
    at_h0, _, _ = _simulate(settings.sprt_elo0, settings, runs=400, seed=5)
    at_h1, _, _ = _simulate(settings.sprt_elo1, settings, runs=400, seed=6)
    assert at_h0 <= settings.sprt_alpha + 0.03  # accepted though no better
    assert 1.0 - at_h1 <= settings.sprt_beta + 0.03  # rejected though better


def test_an_undecided_sprt_is_rejected_at_its_cap():
    settings = GatingSettings(rule="sprt", sprt_max_games=40)
    verdict = decide(settings, 20, 0, 20)
    assert verdict.decision == REJECT and "cap of 40" in verdict.reason and verdict.lower < verdict.llr < verdict.upper
    assert decide(settings, 20, 0, 19).decision == CONTINUE
    # Draws count half each way: a drawn game moves the ratio toward H0 at +35 Elo.
    assert decide(settings, 5, 4, 5).llr < decide(settings, 5, 0, 5).llr
    record = decide(settings, 3, 1, 2).to_dict()
    assert record["rule"] == "sprt" and record["score"] == pytest.approx(3.5 / 6)


def test_counts_must_not_be_negative():
    with pytest.raises(ValueError, match="must not be negative"):
        decide(GatingSettings(), -1, 0, 0)


def test_the_rule_none_accepts_at_once_and_the_settings_name_it():
    from common.settings import SettingsError

    verdict = decide(GatingSettings(rule="none"), 0, 0, 0)
    assert verdict.decision == ACCEPT and verdict.rule == "none" and "gates no network" in verdict.reason
    assert decide(GatingSettings(rule="none"), 0, 0, 5).decision == ACCEPT  # whatever its games
    with pytest.raises(SettingsError, match="must be one of fixed, sprt, none, got 'coin'") as e:
        GatingSettings(rule="coin").validate("gating")
    assert e.value.path == "gating.rule"
