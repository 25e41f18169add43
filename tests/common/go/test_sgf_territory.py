"""Territory games in SGF: KataGo's self-play files read and replay to their results, passes for ko
and games that begin in an encore phase are written as KataGo writes them, and round trips are exact."""

import re

import pytest

from common.data.selfplay_sgf import SearchNote, read_search_note
from common.go.game import Game, IllegalMoveError
from common.go.geometry import BLACK, PASS, WHITE
from common.go.rules import Rules
from common.go.sgf import GameRecord, SGFError, read_sgf, write_sgf
from tests.common.go.helpers import ENCORE_KO, SPLIT_BOARD, play_all


def _golden_territory_sgfs(shared) -> list[str]:
    """Every territory game KataGo's self-play wrote into the golden files."""
    lines = []
    for name in ("katago_territory_selfplay_sample.sgfs", "katago_selfplay_9x9.sgfs"):
        text = (shared / "golden" / name).read_text()
        lines += [line for line in text.splitlines() if "scoreTERRITORY" in line]
    return lines


def _replayed(rec: GameRecord) -> Game:
    game = rec.to_game()
    if not game.is_over:
        game.end_if_all_pass_alive()  # KataGo's self-play stops a game once every point is pass-alive
    return game


def test_katagos_territory_games_replay_to_katagos_results(shared):
    lines = _golden_territory_sgfs(shared)
    passes_for_ko = began_in_encore = 0
    for i, line in enumerate(lines):
        rec = read_sgf(line)
        game = _replayed(rec)
        assert game.is_over and game.result.sgf() == rec.result, (i, rec.result)
        # The moves KataGo marked are the engine's passes for ko, and no others.
        marked = [t for t, node in enumerate(n for n in rec.nodes if n.move is not None) if node.pass_for_ko]
        assert game.pass_for_ko_turns() == marked == sorted(set(marked)), i
        assert line.count("Pass for ko") == len(marked)
        passes_for_ko += len(marked)
        began_in_encore += rec.encore_phase > 0
    assert (len(lines), passes_for_ko, began_in_encore) == (32, 17, 3)
    assert {read_sgf(line).result for line in lines} >= {"0", "W+0.5", "B+0.5"}


def test_katagos_territory_games_round_trip_exactly(shared):
    for line in _golden_territory_sgfs(shared):
        rec = read_sgf(line)
        text = rec.to_sgf()
        again = read_sgf(text)
        assert again == rec
        assert again.to_sgf() == text
        # Passes for ko are written as KataGo wrote them, node for node.
        assert re.findall(r"[BW]\[\]TR\[..\]C\[Pass for ko[^\]]*\]", text) == re.findall(
            r"[BW]\[\]TR\[..\]C\[Pass for ko[^\]]*\]", line
        )
        game, game_again = _replayed(rec), _replayed(again)
        assert (game_again.hash, game_again.result) == (game.hash, game.result)


def test_a_pass_for_ko_read_as_a_plain_pass_is_another_game(shared):
    line = next(x for x in _golden_territory_sgfs(shared) if "Pass for ko" in x)
    plain = read_sgf(re.sub(r"TR\[..\]", "", line))
    assert not any(n.pass_for_ko for n in plain.nodes)
    with pytest.raises(IllegalMoveError):
        _replayed(plain)


def _game_with_a_pass_for_ko() -> Game:
    game = Game.from_diagram(ENCORE_KO, rules=Rules.from_text("japanese"), komi=0.5, to_move=BLACK)
    play_all(game, "B pass", "W pass", "B C4", "W B4", "B E1", "W pass", "B pass", "W pass", "B pass")
    assert game.pass_for_ko_turns() == [3] and game.is_over
    return game


def test_our_passes_for_ko_are_written_as_katago_writes_them():
    game = _game_with_a_pass_for_ko()
    text = write_sgf(game)
    assert ";W[]TR[bb]C[Pass for ko]" in text  # White's move at B4
    rec = read_sgf(text)
    assert rec.moves == game.move_list and rec.nodes[4].pass_for_ko and rec.nodes[4].comment is None
    again = rec.to_game()
    assert again.pass_for_ko_turns() == [3] and again.hash == game.hash and again.result == game.result
    assert rec.result == game.result.sgf()
    # A self-play search note follows KataGo's, and comes back alone, as the upload's checks read it.
    note = SearchNote(full=True, visits=12, winrate=0.25, score=-1.5)
    rec.nodes[4].comment = note.text()
    assert f"C[Pass for ko {note.text()}]" in rec.to_sgf()
    assert read_search_note(read_sgf(rec.to_sgf()).nodes[4].comment) == note


def test_a_move_marked_as_a_pass_for_ko_where_there_is_no_block_is_refused():
    text = write_sgf(_game_with_a_pass_for_ko()).replace("W[]TR[bb]", "W[]TR[ea]", 1)
    with pytest.raises(IllegalMoveError, match=r"move 4: W is written as a pass for ko at E5, but no ko-recapture"):
        read_sgf(text).to_game()


def test_a_triangle_without_the_note_is_markup_on_a_plain_pass():
    rec = read_sgf("(;SZ[5]RU[Japanese];B[cc];W[]TR[cc]C[look here])")
    assert rec.moves[1] == (WHITE, PASS) and not rec.nodes[2].pass_for_ko
    assert rec.nodes[2].comment == "look here"


def test_a_game_begun_in_an_encore_phase_round_trips_and_replays():
    for phase, result in ((1, "W+6.5"), (2, "W+5.5")):
        game = Game.from_diagram(SPLIT_BOARD, rules=Rules.from_text("japanese"), komi=0.5, to_move=WHITE)
        game.begin_in_encore(phase)
        assert game.encore_phase == phase and game.start_to_move == WHITE
        play_all(game, "W pass", "B A3", "W pass", "B pass")
        if phase == 1:
            assert not game.is_over and game.encore_phase == 2
            play_all(game, "W pass", "B pass")
        # White's 10 points against Black's 5 and komi; the stone Black played costs a point in the
        # first encore phase, not in the second.
        assert game.is_over and game.result.sgf() == result
        text = write_sgf(game)
        assert f"ENCORE[{phase}]" in text
        rec = read_sgf(text)
        assert rec.encore_phase == phase and read_sgf(rec.to_sgf()) == rec
        assert rec.to_game().result == game.result


def test_katagos_root_comment_says_the_encore_phase_a_game_begins_in():
    comment = "startTurnIdx=0,initTurnNum=0,gameHash=00,gtype=cleanuptraining,beganInEncorePhase=2"
    rec = read_sgf(f"(;SZ[5]RU[Japanese]AB[aa]C[{comment}];W[bb])")
    assert rec.encore_phase == 2 and rec.to_game().encore_phase == 2
    assert read_sgf("(;SZ[5]C[beganInEncorePhase=2 is only text here])").encore_phase == 0
    with pytest.raises(SGFError, match=r"ENCORE\[3\] is not an encore phase"):
        read_sgf("(;SZ[5]RU[Japanese]ENCORE[3])")


def test_an_encore_phase_to_begin_in_is_refused_for_area_scoring():
    with pytest.raises(ValueError, match="area scoring has no encore phase 1"):
        read_sgf("(;SZ[5]RU[Chinese]ENCORE[1];B[aa])").to_game()


@pytest.mark.parametrize("result", ["0", "Void", "B+R", "W+0.5"])
def test_results_round_trip(result):
    rec = read_sgf(f"(;SZ[9]RU[koSIMPLEscoreTERRITORYtaxSEKIsui0]RE[{result}];B[ee])")
    assert rec.result == result and read_sgf(rec.to_sgf()).result == result
    assert "RU[koSIMPLEscoreTERRITORYtaxSEKIsui0]" in rec.to_sgf()  # the rules text as it was read


@pytest.mark.parametrize("name", ["Japanese", "Korean", "japanese"])
def test_presets_in_ru_are_territory_rules_written_back_as_read(name):
    rec = read_sgf(f"(;SZ[5]RU[{name}];B[cc];W[];B[];W[];B[];W[];B[])")
    assert rec.rules == Rules.from_text("japanese") and rec.komi is None
    assert f"RU[{name}]" in rec.to_sgf()
    # No komi given: the preset's 6.5; Black's lone stone owns the board, 24 points of territory.
    assert rec.to_game().result.sgf() == "B+17.5"
