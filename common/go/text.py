"""A position as text, as GNU Go's ``showboard`` draws it: GTP's showboard and the contributing
client's watch file."""

from __future__ import annotations

from common.go.game import Game
from common.go.geometry import BLACK, GTP_COLUMNS, WHITE, color_name, loc_of


def board_text(game: Game) -> str:
    """The board with coordinates, the captures beside it, and who is to move under which rules."""
    cols = " ".join(GTP_COLUMNS[: game.x_size])
    lines = ["", f"   {cols}"]
    # GNU Go's layout: the capture counts beside two rows just below the middle.
    mid = min(game.y_size // 2 + 1, game.y_size - 2) if game.y_size > 2 else 0
    side = {
        mid: f"WHITE (O) has captured {game.captures(WHITE)} stones",
        mid + 1: f"BLACK (X) has captured {game.captures(BLACK)} stones",
    }
    for y in range(game.y_size):
        row = game.y_size - y
        text = " ".join(".XO"[game.color_at(loc_of(x, y))] for x in range(game.x_size))
        line = f"{row:2d} {text} {row:d}"
        if y in side:
            line += "     " + side[y]
        lines.append(line)
    lines.append(f"   {cols}")
    phase = f"; encore phase {game.encore_phase}" if game.encore_phase else ""
    lines.append(
        f"{color_name(game.to_move).capitalize()} to move; rules {game.rules.name()}, komi {game.komi:g}{phase}"
    )
    return "\n".join(lines)
