"""How a self-play game starts (paper Appendix C): board size (square, or with ``rectangle_prob`` a
rectangle), komi, rules, handicap, the number of opening moves and asymmetric playouts, all drawn
from the settings with the game's own generator by ``common.draws``; or a fork of another game.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from common.data.selfplay_sgf import PlayoutAdvantage
from common.draws import draw_asymmetry, draw_board, draw_handicap, draw_komi, draw_opening_moves
from common.go.rules import Rules
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


def draw_start(settings: SelfPlaySettings, rng: np.random.Generator) -> GameStart:
    """The game's start, each part drawn as ``common.draws`` draws it (the server checks a record's
    start against the same module)."""
    x_size, y_size = draw_board(settings, rng)
    komi = draw_komi(settings, rng)
    rules = settings.rules.draw(rng)
    extra_black, compensate = draw_handicap(settings, x_size, y_size, rng)
    opening = draw_opening_moves(settings, x_size, y_size, rng)
    auto = settings.komi_auto and not compensate
    playouts = draw_asymmetry(settings, extra_black, rng)
    return GameStart(x_size, y_size, komi, rules, extra_black, compensate, opening, None, auto, playouts)
