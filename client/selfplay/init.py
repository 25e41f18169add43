"""How a self-play game starts (paper Appendix C): board size (square, or with ``rectangle_prob`` a
rectangle), komi, rules, handicap and the number of opening moves, all drawn from the settings with
the game's own generator.

The draws that need the network (the fair komi for the empty board, where the handicap stones go,
the komi compensation, the opening moves) happen during the game, through the search engine with one
visit; this module only decides how many of each there will be.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from common.data.selfplay_sgf import PlayoutAdvantage
from common.encoding.features import PDA_STEPS
from common.go.geometry import BLACK, WHITE
from common.go.rules import Rules, round_komi
from common.settings import SelfPlaySettings


@dataclass(frozen=True)
class Fork:
    """An early fork of a finished game (paper section 6.2.2): its first moves and the fork's move."""

    of: str  # the game forked from
    moves: tuple[tuple[int, int], ...]  # (colour, location): the game's first moves, then the fork's
    choices: int  # the candidate moves the fork's move was the best of


@dataclass(frozen=True)
class GameStart:
    x_size: int
    y_size: int
    komi: float
    rules: Rules
    extra_black: int  # free black moves before white's first (a handicap of extra_black + 1 stones)
    compensate_komi: bool  # move komi by the network's predicted score once the handicap (or fork) is placed
    opening_moves: int  # moves played before any search: from the raw policy, or a fork's
    fork: Fork | None = None  # a game that starts from another's early fork
    komi_auto: bool = False  # find the network's fair komi for the empty board first (KataGo's komiAuto)
    playouts: PlayoutAdvantage | None = None  # asymmetric playouts

    def pda_of(self, color: int) -> float:
        """The playout doubling advantage the network is told for `color`'s positions (0: even playouts)."""
        return 0.0 if self.playouts is None else self.playouts.of(color)


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


def draw_board(settings: SelfPlaySettings, rng: np.random.Generator) -> tuple[int, int]:
    """The board's sides (x, y): with ``rectangle_prob`` each drawn apart from the size weights (they
    may still agree), else one size for both, as KataGo's self-play draws them (allowRectangleProb)."""
    weights = np.asarray(settings.board_size_weights, dtype=np.float64)
    p = weights / weights.sum()

    def side() -> int:
        return int(settings.board_sizes[int(rng.choice(len(weights), p=p))])

    if settings.rectangle_prob > 0 and rng.random() < settings.rectangle_prob:
        x_size = side()
        return x_size, side()
    size = side()
    return size, size


def draw_start(settings: SelfPlaySettings, rng: np.random.Generator) -> GameStart:
    x_size, y_size = draw_board(settings, rng)
    komi = draw_komi(settings, rng)
    rules = settings.rules.draw(rng)
    extra_black = 0
    compensate = False
    most = settings.max_handicap(min(x_size, y_size))
    if most > 0 and rng.random() < settings.handicap_prob:
        extra_black = int(rng.integers(1, most + 1))
        compensate = bool(rng.random() < settings.handicap_compensate_komi_prob)
    mean = settings.opening_area_prop * x_size * y_size
    opening = math.floor(rng.exponential(mean)) if mean > 0 else 0
    auto = settings.komi_auto and not compensate
    playouts = draw_asymmetry(settings, extra_black, rng)
    return GameStart(x_size, y_size, komi, rules, extra_black, compensate, opening, None, auto, playouts)


def draw_asymmetry(settings: SelfPlaySettings, extra_black: int, rng: np.random.Generator) -> PlayoutAdvantage | None:
    """Asymmetric playouts (KataGo's): with the settings' probability for a handicap game or an even
    one, a playout doubling advantage uniform below log2(max_asymmetric_ratio), in steps of
    1/PDA_STEPS, for white in a handicap game, else for either side (None: even playouts)."""
    prob = settings.handicap_asymmetric_playout_prob if extra_black else settings.normal_asymmetric_playout_prob
    if prob <= 0 or rng.random() >= prob:
        return None
    doublings = math.floor(rng.random() * settings.max_doublings() * PDA_STEPS) / PDA_STEPS
    player = WHITE if extra_black or rng.random() < 0.5 else BLACK
    return PlayoutAdvantage(player, doublings) if doublings > 0 else None
