"""What a self-play SGF says beyond its moves: the search notes (side positions' too) and the root
comment's start (an early fork's too), written and read back."""

import json

import pytest

from common.data.selfplay_sgf import (
    ForkNote,
    RootInfo,
    SearchNote,
    SelfPlayRecordError,
    StartNote,
    read_root_comment,
    read_search_note,
)


def test_side_and_start_notes_read_back():
    side = SearchNote(True, 600, 0.512, -1.5, side=True)
    assert side.text().startswith("side 600 visits") and read_search_note(side.text()) == side
    assert not read_search_note(SearchNote(True, 600, 0.5, 0.0).text()).side
    fork = StartNote(6.5, 0, True, 4, ForkNote("s1-g000003", 3, 7))
    assert read_root_comment(RootInfo({}, fork, False).to_comment()).start == fork
    plain = StartNote(7.0, 0, False, 2)
    info = json.loads(RootInfo({}, plain, False).to_comment())
    assert info["start"]["fork"] is None
    del info["start"]["fork"]  # records written before forks have no such key
    assert read_root_comment(json.dumps(info)).start == plain
    info["start"]["fork"] = {"of": "x", "turn": -1, "choices": 3}
    with pytest.raises(SelfPlayRecordError, match=r"fork\.turn"):
        read_root_comment(json.dumps(info))


def test_a_fair_komi_reads_back_and_only_a_number_is_one():
    fair = StartNote(8.5, 0, False, 3, komi_fair=10.5)
    assert read_root_comment(RootInfo({}, fair, False).to_comment()).start == fair
    assert "komi_fair" not in json.loads(RootInfo({}, StartNote(7.0, 0, False, 2), False).to_comment())["start"]
    info = json.loads(RootInfo({}, fair, False).to_comment())
    for bad in ("10.5", True, [10.5]):
        info["start"]["komi_fair"] = bad
        with pytest.raises(SelfPlayRecordError, match=r"start\.komi_fair"):
            read_root_comment(json.dumps(info))


def test_a_note_of_a_win_rate_a_hair_outside_0_and_1_reads_back():
    """A search's 0.5 * (1 + winloss) can come out just below 0 or above 1: the note still reads."""
    from common.data.selfplay_sgf import SearchNote, read_note_winrate, read_search_note

    for winrate, written in ((-1e-17, 0.0), (1.0 + 2e-16, 1.0)):
        note = SearchNote(True, 8, winrate, 0.0)
        assert read_search_note(note.text()) == SearchNote(True, 8, written, 0.0)
        assert read_note_winrate(note) == written
