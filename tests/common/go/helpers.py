from common.go.game import Game
from common.go.geometry import parse_gtp_vertex

# A ko on a 5x5 board: Black at C4 captures White's B4 stone, the simplest encore ko.
ENCORE_KO = """
    .XO..
    XO.O.
    .XO..
    .....
    .....
"""

# A 5x5 board split by a black wall and a white wall, black owning column A, white columns D and E:
# the tests begin games on it in an encore phase (as KataGo's cleanup training begins games).
SPLIT_BOARD = """
    .XO..
    .XO..
    .XO..
    .XO..
    .XO..
"""


def v(game: Game, vertex: str) -> int:
    """Location of a GTP vertex on the game's board."""
    return parse_gtp_vertex(vertex, game.x_size, game.y_size)


def play_all(game: Game, *moves: str) -> None:
    """Play 'B C3', 'W pass', ... in order."""
    from common.go.geometry import parse_color

    for m in moves:
        c, vertex = m.split()
        game.play(v(game, vertex), parse_color(c))
