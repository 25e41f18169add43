"""SGF reading and writing: fixtures from other programs, round trips, golden games, errors."""

import json
import re
from pathlib import Path

import pytest

from common.go.game import Game
from common.go.geometry import BLACK, PASS, WHITE, loc_of, parse_color, parse_gtp_vertex
from common.go.rules import Rules
from common.go.sgf import (
    MAX_VARIATION_DEPTH,
    GameRecord,
    SGFError,
    parse_collection,
    read_sgf,
    read_sgf_collection,
    write_sgf,
)

FIXTURES = Path(__file__).parent / "fixtures"


def pt(text: str) -> int:
    return loc_of("abcdefghijklmnopqrs".index(text[0]), "abcdefghijklmnopqrs".index(text[1]))


def test_main_line_of_a_tree_with_variations():
    rec = read_sgf((FIXTURES / "variations.sgf").read_bytes())
    assert (rec.x_size, rec.y_size, rec.komi) == (9, 9, 6.5)
    assert rec.moves == [
        (BLACK, pt("ee")),
        (WHITE, pt("cc")),
        (BLACK, pt("gg")),
        (WHITE, pt("cg")),
        (BLACK, pt("gc")),
        (WHITE, PASS),
        (BLACK, PASS),
    ]
    assert rec.black_player == "Black Player" and rec.date == "2024-05-01"
    assert rec.comment.startswith("A game with variations")
    assert rec.nodes[2].comment == "main line"
    assert rec.rules.scoring == "TERRITORY"
    assert rec.to_game().rules.scoring == "TERRITORY"
    game = rec.to_game(rules=Rules.from_text("chinese"))
    assert game.is_over and game.num_moves == 7
    # The other branches stay on the main-line node they stand in for, each its own first line.
    assert [len(n.variations) for n in rec.nodes] == [0, 0, 1, 0, 1, 0, 0, 0]
    assert [n.move for n in rec.nodes[2].variations[0]] == [(WHITE, pt("gg")), (BLACK, pt("cc"))]
    assert rec.nodes[4].variations[0][0].comment == "second variation of move 4"
    side = rec.variation_game(2, 0)
    assert side.move_list == [(BLACK, pt("ee")), (WHITE, pt("gg")), (BLACK, pt("cc"))]
    assert rec.variation_game(4, 0, upto=0).move_list == rec.moves[:3]


def test_variations_written_and_read_back():
    rec = read_sgf((FIXTURES / "variations.sgf").read_bytes())
    again = read_sgf(rec.to_sgf())
    assert again.moves == rec.moves
    for a, b in zip(rec.nodes, again.nodes):
        assert [[(n.move, n.comment) for n in line] for line in a.variations] == [
            [(n.move, n.comment) for n in line] for line in b.variations
        ]
    # Many branch points nest the main line once each; a viewer reads the same tree.
    game = Game(9)
    for x in range(9):
        game.play(loc_of(x, x % 2))
    many = GameRecord.from_game(game)
    for node in many.nodes[1:]:
        node.variations.append([type(node)(move=(node.move[0], loc_of(node.move[1] % 20 - 1, 6)))])
    back = read_sgf(many.to_sgf())
    assert back.moves == many.moves
    assert [n.variations[0][0].move for n in back.nodes[1:]] == [n.variations[0][0].move for n in many.nodes[1:]]


def test_an_illegal_variation_move_is_named():
    rec = read_sgf((FIXTURES / "variations.sgf").read_bytes())
    rec.nodes[2].variations[0][1].move = (BLACK, pt("ee"))  # occupied
    with pytest.raises(ValueError, match="variation 1 before move 2, its move 2"):
        rec.variation_game(2, 0)


def test_setup_handicap_and_both_pass_forms():
    rec = read_sgf((FIXTURES / "setup_and_passes.sgf").read_text())
    assert rec.x_size == 13 and rec.handicap == 2 and rec.komi == 0.5
    assert rec.setup.black == [pt("dj"), pt("jd")]
    assert rec.nodes[0].to_move == WHITE
    assert rec.moves[2] == (WHITE, PASS)  # W[tt]
    assert rec.moves[4] == (WHITE, PASS)  # W[]
    assert rec.nodes[4].comment == "White passed with tt, an FF[3] pass"
    assert rec.result == "W+R"
    game = rec.to_game()
    assert game.handicap == 2
    assert game.color_at(pt("gf")) == WHITE and game.color_at(pt("gg")) == 0  # mid-game setup
    assert game.color_at(pt("cc")) == WHITE


def test_rectangular_ff3_with_header_lowercase_names_and_point_lists():
    rec = read_sgf((FIXTURES / "rectangular_ff3.sgf").read_text())
    assert (rec.x_size, rec.y_size) == (7, 5)
    assert rec.komi == 7 and rec.rules == Rules.from_text("aga")
    assert sorted(rec.setup.black) == sorted([pt("aa"), pt("ba"), pt("ab"), pt("bb")])
    game = rec.to_game()
    assert game.x_size == 7 and game.y_size == 5 and game.num_moves == 4


def test_collections():
    recs = read_sgf_collection((FIXTURES / "collection.sgf").read_text())
    assert [r.x_size for r in recs] == [5, 19]
    assert recs[1].rules == Rules() and len(recs[1].moves) == 4


@pytest.mark.parametrize("name", ["variations.sgf", "setup_and_passes.sgf", "rectangular_ff3.sgf", "collection.sgf"])
def test_round_trip_of_fixtures(name):
    for rec in read_sgf_collection((FIXTURES / name).read_text()):
        again = read_sgf(rec.to_sgf())
        assert again.moves == rec.moves
        assert again.setup == rec.setup
        assert again.rules == rec.rules
        assert (again.x_size, again.y_size, again.komi, again.handicap, again.result) == (
            rec.x_size,
            rec.y_size,
            rec.komi,
            rec.handicap,
            rec.result,
        )
        assert [n.comment for n in again.nodes] == [n.comment for n in rec.nodes]


def test_katago_selfplay_sgfs_load_and_round_trip(shared):
    lines = [x for x in (shared / "golden" / "katago_selfplay_9x9.sgfs").read_text().splitlines() if x.strip()]
    assert len(lines) == 16
    for line in lines:
        rec = read_sgf(line)
        assert rec.x_size == 9 and rec.rules is not None and rec.result
        again = read_sgf(rec.to_sgf())
        assert (again.moves, again.rules, again.result, again.komi, again.setup) == (
            rec.moves,
            rec.rules,
            rec.result,
            rec.komi,
            rec.setup,
        )
        assert again.nodes[1].comment == rec.nodes[1].comment


def test_golden_games_written_as_sgf_load_back(shared):
    for line in (shared / "golden" / "katago_rules_sample.jsonl").read_text().splitlines():
        d = json.loads(line)
        rules = Rules.from_text(json.dumps(d["rules"]))
        size = d["size"]
        game = Game(size, rules=rules, komi=7.5)
        for c, vertex in d["moves"]:
            game.play(parse_gtp_vertex(vertex, size, size), parse_color(c))
        text = write_sgf(game, black_player="KataGo", white_player="KataGo")
        rec = read_sgf(text)
        assert rec.rules == rules
        assert rec.moves == game.move_list
        assert rec.result == (game.result.sgf() if game.result else None)
        again = rec.to_game()
        assert again.hash == game.hash and again.is_over == game.is_over
        if game.result:
            assert again.result == game.result


def test_writer_records_handicap_and_side_to_move():
    game = Game(9, rules=Rules.from_text("aga"), komi=0.5)
    game.place_fixed_handicap(3)
    game.play(loc_of(4, 4), WHITE)
    rec = read_sgf(write_sgf(game))
    assert rec.handicap == 3 and len(rec.setup.black) == 3 and rec.moves == [(WHITE, loc_of(4, 4))]
    assert rec.nodes[0].to_move is None  # implied by the handicap
    g2 = Game(9)
    g2.set_to_move(WHITE)
    assert read_sgf(write_sgf(g2)).nodes[0].to_move == WHITE


@pytest.mark.parametrize(
    "text,where,message",
    [
        ("(;FF[4]SZ[9];B[aa];W[bb", (1, 21), "no closing ']'"),
        ("(;FF[4]SZ[9];B[aa]W", (1, 20), "expected '[' after property W"),
        ("(;SZ[9]\n;B[aa];W[bbx])", (2, 7), "W[bbx] is not a point"),
        ("(;SZ[9];B[zz])", (1, 8), "outside the 9x9 board"),
        ("(;SZ[25])", (1, 2), "outside the supported range"),
        ("(;SZ[9];B[aa]\n\n", (1, 1), "not closed"),
        ("(;SZ[9];B[aa]W[bb])", (1, 8), "both a black and a white move"),
        ("(;GM[2]SZ[9])", (1, 2), "not a game of Go"),
        ("(;SZ[9]KM[abc])", (1, 2), "KM[abc]"),
        ("(B[aa])", (1, 2), "expected ';'"),
        ("(;SZ[9]\n" + "(;" * MAX_VARIATION_DEPTH, (2, 2 * MAX_VARIATION_DEPTH - 1), "nested more than 1000 deep"),
        ("(;SZ[3]AB[aa:cc][bb])", (1, 2), "AB lists more points than the 3x3 board has"),
        ("(;SZ[3]AW" + "[aa]" * 10 + ")", (1, 2), "AW lists more points than the 3x3 board has"),
    ],
)
def test_broken_files_name_where_they_break(text, where, message):
    with pytest.raises(SGFError, match=re.escape(message)) as info:
        read_sgf(text)
    assert (info.value.line, info.value.column) == where
    assert f"line {where[0]}, column {where[1]}" in str(info.value)


def test_nesting_is_read_without_recursion_up_to_the_bound():
    deepest = "(;SZ[9]" + "(;B[aa]" * (MAX_VARIATION_DEPTH - 1) + ")" * MAX_VARIATION_DEPTH
    assert len(read_sgf(deepest).moves) == MAX_VARIATION_DEPTH - 1
    # A main line far longer than the recursion limit is a chain of nodes that prints and compares
    # without following it.
    root = parse_collection("(;SZ[9]" + ";B[aa];W[]" * 5000 + ")")[0]
    assert "children" not in repr(root) and root != parse_collection("(;SZ[9];B[aa])")[0]


def test_no_game_and_unknown_rules():
    with pytest.raises(SGFError, match="no game found"):
        read_sgf("just text")
    rec = read_sgf("(;SZ[9]RU[Fischer];B[aa])")
    assert rec.rules is None and rec.rules_text == "Fischer"
    assert "RU[Fischer]" in rec.to_sgf()


def test_encodings():
    text = "(;FF[4]CA[GB2312]SZ[9]PB[黑棋]C[中文];B[ee])"
    rec = read_sgf(text.encode("gb2312"))
    assert rec.black_player == "黑棋" and rec.comment == "中文"
    assert read_sgf(text.replace("GB2312", "UTF-8").encode()).black_player == "黑棋"


def test_escapes_and_soft_line_breaks():
    trees = parse_collection("(;C[a \\] b \\\\ c\\\nd])")
    assert trees[0].get("C") == "a ] b \\ cd"
    rec = GameRecord(nodes=[read_sgf("(;SZ[9])").nodes[0]])
    rec.nodes[0].comment = "x]y\\z"
    assert read_sgf(rec.to_sgf()).comment == "x]y\\z"
