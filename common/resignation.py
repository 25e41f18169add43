"""When a match game ends by resignation: both searches agree that one side is lost.

A match records each move's search note (its win rate for the player who moved, to three decimals,
:class:`common.data.selfplay_sgf.SearchNote`). A side resigns once its win rate stayed below the
threshold in each of the last few notes, whichever side's search wrote them. The client decides on
the notes it writes and the server checks a resignation on the notes it reads, with this one
function, so the two agree to the last bit.
"""

from __future__ import annotations

from collections.abc import Sequence

from common.go.geometry import BLACK, WHITE


def winrate_of(color: int, mover: int, winrate: float) -> float:
    """``color``'s win rate from a note whose ``winrate`` is that of the player who moved."""
    return winrate if mover == color else 1.0 - winrate


def resigning(notes: Sequence[tuple[int, float]], threshold: float, turns: int) -> int | None:
    """The side that resigns after these notes ((the player who moved, its win rate), oldest first),
    or None: BLACK or WHITE when its win rate was below ``threshold`` in each of the last ``turns``."""
    last = notes[-turns:] if turns > 0 else []
    if len(last) < turns or not last:
        return None
    for color in (BLACK, WHITE):
        if all(winrate_of(color, mover, winrate) < threshold for mover, winrate in last):
            return color
    return None
