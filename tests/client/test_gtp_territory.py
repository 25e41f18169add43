"""The GTP engine under territory scoring: KataGo's own territory games replayed through GTP with its
legal moves before every turn and its final score, passes through the encore, passes for ko, and
the final status of stones and points by territory counting."""

import json

from client.gtp.engine import GtpEngine
from client.gtp.players import RandomPlayer


def ok(engine: GtpEngine, line: str) -> str:
    response = engine.handle(line)
    assert response is not None and response.startswith("=") and response.endswith("\n\n"), (line, response)
    return response[1:].strip()


def score_value(text: str) -> float:
    """'W+2', 'W+2.0' -> 2.0; 'B+3.5' -> -3.5; '0' -> 0.0 (white minus black)."""
    if text == "0":
        return 0.0
    sign = 1.0 if text.startswith("W+") else -1.0
    assert text[:2] in ("W+", "B+"), text
    return sign * float(text[2:])


def test_katagos_territory_games_through_gtp_with_its_legal_moves_and_final_scores(shared):
    path = shared / "golden" / "katago_territory_games_sample.jsonl"
    games = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    turns = 0
    for r in games:
        e = GtpEngine(RandomPlayer(1))
        ok(e, f"boardsize {r['size']}")
        ok(e, "clear_board")
        ok(e, f"kata-set-rules {json.dumps(r['rules'])}")
        ok(e, f"komi {r['komi']:g}")
        if r["setup_black"]:
            # White has the move after the handicap; KataGo's self-play, as these games, starts with
            # Black: the first `play B` restarts the history with Black to move, in both engines.
            ok(e, "set_free_handicap " + " ".join(r["setup_black"]))
        for i, (color, vertex) in enumerate(r["moves"]):
            where = (r["sgf_rules"], i, color, vertex)
            assert sorted(ok(e, f"all_legal {color}").split()) == sorted(r["legal_before_each_move"][i]), where
            phase = r["encore_phase_before_each_move"][i]
            assert ok(e, "showboard").endswith(f"encore phase {phase}" if phase else f"komi {r['komi']:g}"), where
            ok(e, f"play {color} {vertex}")
            turns += 1
        for color, vertex in r["score_extra_passes"]:
            ok(e, f"play {color} {vertex}")
        assert e.game.is_over, r["sgf_rules"]
        assert score_value(ok(e, "final_score")) == score_value(r["katago_gtp_final_score"]), r["sgf_rules"]
    assert (len(games), turns) == (19, 1338)


def test_a_pass_for_ko_is_played_at_its_vertex_and_leaves_the_board():
    e = GtpEngine(RandomPlayer(1))
    ok(e, "boardsize 5")
    ok(e, "kata-set-rules japanese")
    ok(e, "komi 0.5")
    for move in ("b B5", "w C5", "b A4", "w B4", "b B3", "w D4", "b E1", "w C3", "b pass", "w pass"):
        ok(e, f"play {move}")
    assert ok(e, "showboard").endswith("encore phase 1")
    ok(e, "play b C4")  # captures the ko stone at B4: C4 is blocked from recapture
    assert "B4" not in ok(e, "list_stones white").split()
    assert ok(e, "is_legal w C4") == "1"  # on the blocked stone: a pass for ko
    assert "C4" in ok(e, "all_legal w").split()
    ok(e, "play w B4")  # at the recapture point: a pass for ko too
    assert "B4" not in ok(e, "list_stones white").split() and "C4" in ok(e, "list_stones black").split()
    assert e.game.pass_for_ko_turns() == [11]
    ok(e, "play b pass")
    ok(e, "play w B4")  # the block is gone: now White retakes
    assert "C4" not in ok(e, "list_stones black").split() and "B4" in ok(e, "list_stones white").split()


def test_final_score_and_status_count_territory_and_captures():
    e = GtpEngine(RandomPlayer(1))
    ok(e, "boardsize 5")
    ok(e, "kata-set-rules japanese")
    ok(e, "komi 0.5")
    # Black's wall on row 4 with the eyes A5 and C5-E5; White's stone D5 inside is dead, and
    # White's C2 is captured.
    for move in ("b B5", "w D5", "b A4", "w C2", "b B4", "w pass", "b C4", "w pass", "b D4", "w pass", "b E4"):
        ok(e, f"play {move}")
    for move in ("w pass", "b B2", "w pass", "b D2", "w pass", "b C1", "w pass", "b C3"):
        ok(e, f"play {move}")
    assert ok(e, "captures black") == "1"
    # Before the end the position is counted as it stands, by territory: Black's territory is the
    # 15 points without a black stone (D5's included), with two prisoners (C2, and D5 dead); komi 0.5.
    expected = -(25 - 10 + 2) + 0.5
    assert score_value(ok(e, "final_score")) == expected
    assert ok(e, "final_status_list dead") == "D5"
    assert "D5" in ok(e, "final_status_list black_territory").split()
    assert len(ok(e, "final_status_list black_territory").split()) == 25 - 10
    assert ok(e, "final_status_list white_territory") == "" and ok(e, "final_status_list dame") == ""
    assert len(ok(e, "final_status_list alive").split()) == 10
    for move in ("w pass", "b pass", "w pass", "b pass", "w pass", "b pass"):
        ok(e, f"play {move}")
    assert e.game.is_over and e.game.result.sgf() == f"B+{-expected:g}"
    assert score_value(ok(e, "final_score")) == expected
    # The same game under area scoring counts stones, not prisoners.
    ok(e, "kata-set-rules chinese")
    ok(e, "komi 0.5")
    assert score_value(ok(e, "final_score")) == -25 + 0.5


def test_genmove_plays_through_both_encore_phases_to_the_end():
    e = GtpEngine(RandomPlayer(5))
    ok(e, "boardsize 7")
    ok(e, "kata-set-rules korean")
    phases = set()
    for turn in range(1000):
        if e.game.is_over:
            break
        phases.add(e.game.encore_phase)
        ok(e, f"genmove {'b' if turn % 2 == 0 else 'w'}")
    assert e.game.is_over and phases == {0, 1, 2}
    assert score_value(ok(e, "final_score")) == e.game.result.score
