"""A stored game's record replayed for the game page: the stones after every move, the phase each
move was played in (territory scoring's encore), the passes for ko, and the result by the rules.

The SGF is read with ``common.go.sgf`` and played move by move in ``common.go.game`` (so captures,
phases and passes for ko are the rules engine's); the page's script only draws what this gives it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from common.go.game import Game
from common.go.geometry import BLACK, PASS, WHITE, gtp_vertex, xy_of
from common.go.rules import Rules, RulesError
from common.go.sgf import GameRecord, SGFError, read_sgf

_POINTS = np.frombuffer(b".bw", dtype=np.uint8)  # empty, black, white, as colours index them


@dataclass
class Replay:
    x_size: int
    y_size: int
    positions: list[str]  # after each move (0: the start); rows top first, '.', 'b' or 'w' per point
    moves: list[dict]  # {"c": "B"/"W", "v": GTP vertex or "pass", "x", "y" (None for a pass)}
    captures: list[list[int]] = field(default_factory=list)  # stones captured [by black, by white] after each move
    phases: list[int] = field(default_factory=list)  # the phase each move was played in: 0 main, 1 or 2 encore
    ko_passes: list[int] = field(default_factory=list)  # the moves (numbered from 1) that were passes for ko
    result: str | None = None  # the result by the rules when the moves end the game ("B+3.5"), else None
    record: GameRecord | None = None
    rules: Rules | None = None  # the rules the moves were played by (the record's, else the row's)
    komi: float | None = None  # likewise

    def data(self) -> dict:
        """What the page's board script reads."""
        return {
            "x": self.x_size,
            "y": self.y_size,
            "positions": self.positions,
            "moves": self.moves,
            "captures": self.captures,
            "phases": self.phases,
            "ko_passes": self.ko_passes,
            "scoring": (self.rules.scoring if self.rules is not None else "AREA").lower(),
            "result": self.result,
        }

    def json(self) -> str:
        return json.dumps(self.data(), separators=(",", ":"))


class ReplayError(ValueError):
    """A record that cannot be replayed; the message says why."""


def _position(game: Game) -> str:
    return _POINTS[game.colors().astype(np.intp)].tobytes().decode("ascii")


def replay_sgf(data: bytes, rules: Rules | None = None, komi: float | None = None) -> Replay:
    """Every position of the record's main line. ``rules`` and ``komi`` (the game row's) are used
    when the record does not name its own. ReplayError names the move that fails."""
    try:
        record = read_sgf(data)
    except SGFError as e:
        raise ReplayError(str(e)) from None
    try:
        game = record.to_game(
            rules=record.rules or rules, komi=record.komi if record.komi is not None else komi, upto=0
        )
    except (ValueError, RulesError) as e:
        raise ReplayError(f"the start of the game: {e}") from None
    positions = [_position(game)]
    captures = [[0, 0]]
    moves: list[dict[str, str | int | None]] = []
    phases: list[int] = []
    ko_passes: list[int] = []
    for number, (color, loc) in enumerate(record.moves, start=1):
        phases.append(game.encore_phase)
        if game.is_pass_for_ko(loc, color):
            ko_passes.append(number)
        try:
            game.play(loc, color)
        except ValueError as e:
            raise ReplayError(f"move {number}: {e}") from None
        letter = "B" if color == BLACK else "W"
        if loc == PASS:
            moves.append({"c": letter, "v": "pass", "x": None, "y": None})
        else:
            x, y = xy_of(loc)
            moves.append({"c": letter, "v": gtp_vertex(loc, game.x_size, game.y_size), "x": x, "y": y})
        positions.append(_position(game))
        captures.append([game.captures(BLACK), game.captures(WHITE)])
    result = game.result.sgf() if game.result is not None else None
    return Replay(
        game.x_size,
        game.y_size,
        positions,
        moves,
        captures,
        phases,
        ko_passes,
        result,
        record,
        game.rules,
        game.komi,
    )
