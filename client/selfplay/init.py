"""How a self-play game starts (paper Appendix C): board size, komi, rules, handicap and the number
of opening moves, all drawn from the settings with the game's own generator.

The draws that need the network (where the handicap stones go, the komi compensation, the opening
moves) happen during the game, through the search engine with one visit; this module only decides
how many of each there will be.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from common.go.rules import Rules, round_komi
from common.settings import SelfPlaySettings


@dataclass(frozen=True)
class GameStart:
    x_size: int
    y_size: int
    komi: float
    rules: Rules
    extra_black: int  # free black moves before white's first (a handicap of extra_black + 1 stones)
    compensate_komi: bool  # move komi by the network's predicted score once the handicap is placed
    opening_moves: int  # moves played straight from the raw policy, before any search


def draw_komi(settings: SelfPlaySettings, rng: np.random.Generator) -> float:
    """N(mean, sd) truncated at komi_truncation sd, sd = komi_big_stdev with komi_big_stdev_prob;
    rounded to the nearest integer or half-integer (within ``settings.komi_bounds()``)."""
    big = rng.random() < settings.komi_big_stdev_prob
    sd = settings.komi_big_stdev if big else settings.komi_stdev
    z = float(rng.standard_normal())
    limit = settings.komi_truncation
    while abs(z) > limit:
        z = float(rng.standard_normal())
    return round_komi(settings.komi_mean + sd * z)


def draw_start(settings: SelfPlaySettings, rng: np.random.Generator) -> GameStart:
    weights = np.asarray(settings.board_size_weights, dtype=np.float64)
    size = int(settings.board_sizes[int(rng.choice(len(weights), p=weights / weights.sum()))])
    komi = draw_komi(settings, rng)
    rules = settings.rules.draw(rng)
    extra_black = 0
    compensate = False
    most = settings.max_handicap(size)
    if most > 0 and rng.random() < settings.handicap_prob:
        extra_black = int(rng.integers(1, most + 1))
        compensate = bool(rng.random() < settings.handicap_compensate_komi_prob)
    mean = settings.opening_area_prop * size * size
    opening = math.floor(rng.exponential(mean)) if mean > 0 else 0
    return GameStart(size, size, komi, rules, extra_black, compensate, opening)
