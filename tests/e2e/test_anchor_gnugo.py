"""``manage.py anchor`` with a real GNU Go: a run's accepted network plays it through the client's
GTP engine and twogtp, and the refit rates GNU Go with the networks."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from server.ratings.matches import gnugo_path
from tests.e2e.needs import missing
from tests.e2e.test_experiment import generation  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


def test_gnu_go_is_played_and_rated(generation, tmp_path):  # noqa: F811
    from server.ratings.models import AnchorMatch, AnchorRating

    if gnugo_path() is None:
        missing("GNU Go", "apt-get install gnugo")
    out = io.StringIO()
    call_command(
        "anchor",
        "--levels",
        "0",
        "--games",
        "2",
        "--visits",
        "2",
        "--size",
        "7",
        "--log",
        str(tmp_path / "log"),
        stdout=out,
    )
    match = AnchorMatch.objects.get()
    assert (match.network.name, match.anchor.name, match.games, match.board_size) == (
        "test-gen1",
        "GNU Go level 0",
        2,
        7,
    )
    rating = AnchorRating.objects.get(run=generation)
    assert rating.games == 2 and rating.elo is not None
    text = out.getvalue()
    assert "test-gen1 against GNU Go level 0 (2 games)" in text and "2 games played" in text
    again = io.StringIO()
    call_command("anchor", "--levels", "0", "--games", "2", "--log", str(tmp_path / "log"), stdout=again)
    assert "0 games played" in again.getvalue() and AnchorMatch.objects.count() == 1  # nothing left to play
