"""Standard handicap placements, as the GTP specification defines them for fixed_handicap."""

from __future__ import annotations

from common.go.geometry import loc_of

# Stones by count, as (row, column) on a 3x3 grid of handicap lines: 0 low, 1 middle, 2 high;
# row 0 is the bottom. Two stones are D4 and Q16 on 19x19, three add D16, and so on.
_PATTERN = {
    2: ["00", "22"],
    3: ["00", "22", "20"],
    4: ["00", "22", "20", "02"],
    5: ["00", "22", "20", "02", "11"],
    6: ["00", "22", "20", "02", "10", "12"],
    7: ["00", "22", "20", "02", "10", "12", "11"],
    8: ["00", "22", "20", "02", "10", "12", "01", "21"],
    9: ["00", "22", "20", "02", "10", "12", "01", "21", "11"],
}


def max_fixed_handicap(size: int) -> int:
    """Most stones fixed_handicap may place on a size x size board."""
    if size < 7:
        return 0
    if size % 2 == 0 or size == 7:
        return 4
    return 9


def fixed_handicap_locs(count: int, x_size: int, y_size: int) -> list[int]:
    """Locations of the standard placement; ValueError when the board or the count has none."""
    if x_size != y_size:
        raise ValueError(f"fixed handicap placement is not defined on a {x_size}x{y_size} board")
    size = x_size
    most = max_fixed_handicap(size)
    if count < 2 or count > most:
        if most == 0:
            raise ValueError(f"fixed handicap placement is not defined on a {size}x{size} board")
        raise ValueError(f"invalid handicap {count}: a {size}x{size} board allows 2 to {most} stones")
    edge = 2 if size < 13 else 3
    lines = [edge, size // 2, size - 1 - edge]
    locs = []
    for rc in _PATTERN[count]:
        row, col = int(rc[0]), int(rc[1])
        x = lines[col]
        y = size - 1 - lines[row]  # rows count from the bottom, y from the top
        locs.append(loc_of(x, y))
    return locs
