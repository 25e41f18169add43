"""The final status of every stone and point as the game's rules count them, for GTP's
``final_status_list``.

The points come from ``Game.ownership("scoring")``: what the game's score counts for each player,
by area or by territory. A stone on a point counted for its opponent is dead, and territory is an
empty point, or a dead stone's point, counted for a colour.
"""

from __future__ import annotations

from dataclasses import dataclass

from common.go.game import Game
from common.go.geometry import BLACK, EMPTY, WHITE, opponent, xy_of


@dataclass(frozen=True)
class FinalStatus:
    """Board locations by status, each list in board order."""

    alive: list[int]
    dead: list[int]
    seki: list[int]  # alive, outside independent life (see Game.seki_stones)
    black_territory: list[int]
    white_territory: list[int]
    dame: list[int]  # empty points counted for nobody


def final_status(game: Game) -> FinalStatus:
    owners = game.ownership("scoring")
    seki = set(game.seki_stones())
    status = FinalStatus([], [], [], [], [], [])
    territory = {BLACK: status.black_territory, WHITE: status.white_territory}
    for loc in game.locs():
        x, y = xy_of(loc)
        color, owner = game.color_at(loc), int(owners[y, x])
        if color == EMPTY:
            (territory[owner] if owner != EMPTY else status.dame).append(loc)
        elif owner == opponent(color):
            status.dead.append(loc)
            territory[owner].append(loc)
        else:
            (status.seki if loc in seki else status.alive).append(loc)
    return status
