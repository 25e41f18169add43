"""Board geometry shared by every Go kernel: colours, locations and coordinate formats.

Every board, whatever its size, lives in the same padded array of a 19x19 board: point (x, y),
with x the column from the left and y the row from the top, is location ``(y + 1) * STRIDE + x + 1``.
Locations outside the board are walls. One geometry for all sizes means boards of mixed sizes
share array shapes, neighbour offsets are constants, and a location maps to the same cell of a
19x19 network input whatever the board size.
"""

from __future__ import annotations

import functools

import numpy as np

MAX_SIZE = 19
MIN_SIZE = 2
STRIDE = MAX_SIZE + 1
ARR = (MAX_SIZE + 2) * STRIDE + 1
MAX_POINTS = MAX_SIZE * MAX_SIZE

EMPTY = 0
BLACK = 1
WHITE = 2
WALL = 3

PASS = 0  # location 0 is a wall corner on every board, so it can never be a stone
NO_LOC = -1

ADJ = np.array([-STRIDE, -1, 1, STRIDE], dtype=np.int64)
DIAG = np.array([-STRIDE - 1, -STRIDE + 1, STRIDE - 1, STRIDE + 1], dtype=np.int64)

GTP_COLUMNS = "ABCDEFGHJKLMNOPQRST"
SGF_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def loc_of(x: int, y: int) -> int:
    """Location of column x (from the left) and row y (from the top)."""
    return (y + 1) * STRIDE + x + 1


def xy_of(loc: int) -> tuple[int, int]:
    """(x, y) of an on-board location; x from the left, y from the top."""
    return loc % STRIDE - 1, loc // STRIDE - 1


def opponent(color: int) -> int:
    return 3 - color


def check_size(x_size: int, y_size: int) -> None:
    for name, value in (("width", x_size), ("height", y_size)):
        if not MIN_SIZE <= value <= MAX_SIZE:
            raise ValueError(f"board {name} {value} is outside the supported range {MIN_SIZE}..{MAX_SIZE}")


def on_board(x: int, y: int, x_size: int, y_size: int) -> bool:
    return 0 <= x < x_size and 0 <= y < y_size


def board_locs(x_size: int, y_size: int) -> list[int]:
    """All locations of a board in reading order (top row first, left to right)."""
    return [loc_of(x, y) for y in range(y_size) for x in range(x_size)]


@functools.cache
def grid_index(x_size: int, y_size: int) -> np.ndarray:
    """The location of every point as a y_size x x_size array (row 0 is the top); read-only."""
    index = np.array(board_locs(x_size, y_size), dtype=np.int64).reshape(y_size, x_size)
    index.flags.writeable = False
    return index


def parse_color(text: str) -> int:
    """'b', 'black', 'w', 'white' (any case) to BLACK or WHITE."""
    t = text.strip().lower()
    if t in ("b", "black"):
        return BLACK
    if t in ("w", "white"):
        return WHITE
    raise ValueError(f"invalid color {text!r}: expected black, white, b or w")


def color_name(color: int) -> str:
    return {BLACK: "black", WHITE: "white"}[color]


def color_letter(color: int) -> str:
    return {BLACK: "B", WHITE: "W"}[color]


def gtp_vertex(loc: int, x_size: int, y_size: int) -> str:
    """GTP vertex of a location: 'D4', 'pass'. Row 1 is the bottom row."""
    if loc == PASS:
        return "pass"
    x, y = xy_of(loc)
    if not on_board(x, y, x_size, y_size):
        raise ValueError(f"location {loc} is not on a {x_size}x{y_size} board")
    return f"{GTP_COLUMNS[x]}{y_size - y}"


def parse_gtp_vertex(text: str, x_size: int, y_size: int) -> int:
    """Location of a GTP vertex ('D4', 'd4', 'pass'); ValueError naming the vertex otherwise."""
    t = text.strip().upper()
    if t == "PASS":
        return PASS
    if len(t) < 2 or t[0] not in GTP_COLUMNS or not t[1:].isdigit():
        raise ValueError(f"invalid vertex {text!r}")
    x = GTP_COLUMNS.index(t[0])
    y = y_size - int(t[1:])
    if not on_board(x, y, x_size, y_size):
        raise ValueError(f"vertex {text!r} is outside the {x_size}x{y_size} board")
    return loc_of(x, y)


def sgf_point(loc: int) -> str:
    x, y = xy_of(loc)
    return SGF_LETTERS[x] + SGF_LETTERS[y]
