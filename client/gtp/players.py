"""Players the GTP engine can ask for moves."""

from __future__ import annotations

import random
from typing import Protocol

import numpy as np

from common.encoding.features import NN_AREA
from common.go import playout
from common.go.game import Game
from common.go.geometry import EMPTY, PASS, loc_of


class Player(Protocol):
    def choose_move(self, game: Game, color: int) -> int:
        """A legal move (a location or PASS) for color."""

    def choose_handicap(self, game: Game, count: int, exclude: set[int]) -> list[int]:
        """count empty points for free handicap stones, none of them in exclude."""


class RandomPlayer:
    """Uniform among the legal moves that do not fill the player's own one-point eyes."""

    def __init__(self, seed: int | None = None) -> None:
        self.rng = random.Random(seed)
        self.kernel_rng = playout.new_rng(self.rng.randrange(2**63))

    def choose_move(self, game: Game, color: int) -> int:
        return int(playout.random_move(game.g, game.b, game.table, color, self.kernel_rng))

    def choose_handicap(self, game: Game, count: int, exclude: set[int]) -> list[int]:
        free = [loc for loc in game.locs() if game.color_at(loc) == EMPTY and loc not in exclude]
        return self.rng.sample(free, count)


class PolicyPlayer:
    """The network's most probable legal move (pass included), without search."""

    def __init__(self, evaluator) -> None:
        self.evaluator = evaluator
        self.rng = random.Random(0)

    def choose_move(self, game: Game, color: int) -> int:
        ev = self.evaluator.evaluate([game], players=[color])[0]
        pos = int(np.argmax(ev.policy))
        if pos == NN_AREA:
            return PASS
        return loc_of(pos % 19, pos // 19)

    def choose_handicap(self, game: Game, count: int, exclude: set[int]) -> list[int]:
        free = [loc for loc in game.locs() if game.color_at(loc) == EMPTY and loc not in exclude]
        return self.rng.sample(free, count)


PLAYERS = ("random", "policy")
