"""What a self-play game draws from its settings when it starts (paper Appendix C), and beside each
draw the check that a value is one the draw can give: the board, the komi, the handicap, the number
of opening moves and asymmetric playouts. The client draws with these functions; the server holds
an uploaded record's start against the same settings with the checks here, so what is drawn and
what is accepted are one model (``tests/common/test_draws.py`` draws thousands of starts and has
every check accept them). A check returns None, or what is wrong in words that name the settings.

The draws that need the network (the fair komi for the empty board, where the handicap stones go,
the komi compensation, the opening moves themselves) happen during the game, through the search
engine with one visit; here only how many of each there will be is drawn.
"""

from __future__ import annotations

import math

import numpy as np

from common.data.selfplay_sgf import PlayoutAdvantage
from common.encoding.features import PDA_STEPS
from common.go.geometry import BLACK, WHITE
from common.go.rules import round_komi
from common.settings import SelfPlaySettings


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


def board_problem(settings: SelfPlaySettings, x_size: int, y_size: int) -> str | None:
    if settings.draws_board(x_size, y_size):
        return None
    return (
        f"a {x_size}x{y_size} board is not drawn by the task's settings (sizes {list(settings.sizes_in_play())}, "
        f"rectangles with probability {settings.rectangle_prob:g})"
    )


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


def komi_problem(settings: SelfPlaySettings, komi: float) -> str | None:
    """The komi as drawn, before any compensation or fair komi moved it."""
    low, high = settings.komi_bounds()
    if low <= komi <= high:
        return None
    return f"komi {komi:g} was not drawn by the task's settings (they draw from {low:g} to {high:g})"


def draw_handicap(settings: SelfPlaySettings, x_size: int, y_size: int, rng: np.random.Generator) -> tuple[int, bool]:
    """The extra black moves before white's first (a handicap of that plus one stones; 0: an even
    game), at most ``max_handicap`` of the board's shorter side, with ``handicap_prob``; and whether
    the komi is then compensated by the network's predicted score."""
    most = settings.max_handicap(min(x_size, y_size))
    if most > 0 and rng.random() < settings.handicap_prob:
        extra_black = int(rng.integers(1, most + 1))
        return extra_black, bool(rng.random() < settings.handicap_compensate_komi_prob)
    return 0, False


def handicap_problem(settings: SelfPlaySettings, x_size: int, y_size: int, extra_black: int) -> str | None:
    most = settings.max_handicap(min(x_size, y_size))
    if not extra_black or (settings.handicap_prob > 0 and extra_black <= most):
        return None
    return (
        f"a handicap of {extra_black + 1} stones on {x_size}x{y_size} is not drawn by the task's settings "
        f"(probability {settings.handicap_prob:g}, at most {most + 1} stones)"
    )


def draw_opening_moves(settings: SelfPlaySettings, x_size: int, y_size: int, rng: np.random.Generator) -> int:
    """The moves played from the raw policy before any search: exponential with mean
    ``opening_area_prop`` times the board's area, rounded down."""
    mean = settings.opening_area_prop * x_size * y_size
    return math.floor(rng.exponential(mean)) if mean > 0 else 0


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


def asymmetry_problem(
    settings: SelfPlaySettings, extra_black: int, playouts: PlayoutAdvantage | None, forked: bool = False
) -> str | None:
    """Asymmetric playouts only where the settings give them (never in a game started from an early
    fork), of an advantage they draw, and in a handicap game white's."""
    if playouts is None:
        return None
    kind = "handicap" if extra_black else "normal"
    if getattr(settings, f"{kind}_asymmetric_playout_prob") <= 0:
        return (
            f"it has asymmetric playouts, which the task's settings do not give a {kind} game "
            f"({kind}_asymmetric_playout_prob 0)"
        )
    if forked:
        return "it starts from an early fork and has asymmetric playouts; forks are played evenly"
    d = playouts.doublings
    if not 0 < d < settings.max_doublings() or d * PDA_STEPS != int(d * PDA_STEPS):
        return (
            f"its playout doubling advantage {d:g} is not one the task's settings draw (a multiple of "
            f"1/{PDA_STEPS} below log2 of max_asymmetric_ratio {settings.max_asymmetric_ratio:g})"
        )
    if extra_black and playouts.player != WHITE:
        return "in a handicap game of asymmetric playouts white has the advantage, not black"
    return None
