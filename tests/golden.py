"""KataGo's golden positions (``shared/golden``'s raw network outputs) as games, for the tests and the
benchmarks that hold the network's outputs against them."""

from __future__ import annotations

import json

from common.go.game import Game
from common.go.geometry import BLACK, parse_color, parse_gtp_vertex
from common.go.rules import Rules


def golden_positions(shared, name="katago_rawnn_sample.jsonl"):
    """Each position of the golden file ``name`` as a game replayed to it, with its record (KataGo's
    outputs under ``katago_raw_nn``)."""
    for line in (shared / "golden" / name).read_text().splitlines():
        d = json.loads(line)
        size = d["size"]
        game = Game(size, rules=Rules.from_text(json.dumps(d["rules"])), komi=d["komi"], capacity=512)
        if d.get("setup_black"):
            # Handicap stones, then Black moves first, as KataGo's self-play starts such games.
            game.setup(black=[parse_gtp_vertex(x, size, size) for x in d["setup_black"]], to_move=BLACK)
        for c, vertex in d["moves"]:
            game.play(parse_gtp_vertex(vertex, size, size), parse_color(c))
        assert game.to_move == parse_color(d["next_color"])
        assert game.encore_phase == d.get("encore_phase", 0)
        yield game, d
