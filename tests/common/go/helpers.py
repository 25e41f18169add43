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


def v(game: Game, vertex: str) -> int:
    """Location of a GTP vertex on the game's board."""
    return parse_gtp_vertex(vertex, game.x_size, game.y_size)


def play_all(game: Game, *moves: str) -> None:
    """Play 'B C3', 'W pass', ... in order."""
    from common.go.geometry import parse_color

    for m in moves:
        c, vertex = m.split()
        game.play(v(game, vertex), parse_color(c))
