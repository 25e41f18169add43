"""Elo on the logistic curve, shared by the client's match play and the server's ratings, gating and
pages: the expected score at an Elo difference, its inverse, the 95% interval's width, and the
Wilson interval of a win rate."""

from __future__ import annotations

import math
from typing import TypeVar

import numpy as np

Z95 = 1.96  # the half-width of a 95% interval, in standard errors
ELO_PER_NAT = 400.0 / math.log(10.0)  # Elo per unit of the Bradley-Terry fit's natural-log strength

EloDifference = TypeVar("EloDifference", float, np.ndarray)


def expected_score(elo_difference: EloDifference) -> EloDifference:
    """The expected score (wins plus half the draws) of the side that much stronger; works on numpy
    arrays too."""
    return 1.0 / (1.0 + 10.0 ** (-elo_difference / 400.0))


def elo_of_score(score: float) -> float:
    """The Elo difference at which this score is expected (infinite at 0 and 1)."""
    if score <= 0.0 or score >= 1.0:
        return math.copysign(math.inf, score - 0.5)
    return -400.0 * math.log10(1.0 / score - 1.0)


def score_elo(score: float, games: int) -> tuple[float, float]:
    """A match's Elo difference from its score over that many games, and the half-width of its 95%
    interval (the normal approximation of the score, through the curve's slope; infinite when one
    side won everything; 0 and infinite without games)."""
    if games == 0:
        return 0.0, math.inf
    if score <= 0.0 or score >= 1.0:
        return elo_of_score(score), math.inf
    se = math.sqrt(score * (1.0 - score) / games)
    slope = ELO_PER_NAT / (score * (1.0 - score))
    return elo_of_score(score), Z95 * se * slope


def wilson_interval(wins: int, games: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a win rate of ``wins`` in ``games`` (95% by default): unlike the
    normal approximation it stays within 0 and 1 and is not empty at 0 or all wins. (0, 1) without
    games."""
    if not 0 <= wins <= games:
        raise ValueError(f"wins {wins} of {games} games: expected 0 to {games}")
    if games == 0:
        return 0.0, 1.0
    p = wins / games
    z2 = z * z
    centre = (p + z2 / (2 * games)) / (1 + z2 / games)
    half = z * math.sqrt(p * (1 - p) / games + z2 / (4 * games * games)) / (1 + z2 / games)
    return max(0.0, centre - half), min(1.0, centre + half)
