"""Elo on the logistic curve, shared by the client's match play and the server's ratings, gating and
pages: the expected score at an Elo difference, its inverse, and the 95% interval's width."""

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
