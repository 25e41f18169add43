"""Release notes and the releases page's words: Markdown rendered safely, the strength against the
previous release, and the games a network was trained on."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from common.settings import RulesChoice, SelfPlaySettings
from tests.server import helpers

pytestmark = pytest.mark.django_db


def test_markdown_is_rendered_and_nothing_unsafe_gets_through():
    from server.dashboard.markdown import to_html

    html = to_html(
        "## Stronger in the opening\n\n**bold** <script>alert(1)</script> <img src=x onerror=alert(1)>\n\n"
        "[bad](javascript:alert(1)) [data](data:text/html;base64,PHNjcmlwdD4=) [ftp](ftp://example.org/x) "
        "[ok](https://example.org/notes) [page](/releases/) ![pixel](https://tracker.example.org/p.png)\n\n"
        "| size | Elo |\n|---|---|\n| 9x9 | +40 |\n"
    )
    assert "<h2>Stronger in the opening</h2>" in html and "<strong>bold</strong>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html and "<img" not in html
    assert 'href="javascript' not in html and 'href="data' not in html and 'href="ftp' not in html
    assert '<a href="https://example.org/notes" rel="nofollow noopener">ok</a>' in html
    assert '<a href="/releases/" rel="nofollow noopener">page</a>' in html
    assert "<td>9x9</td>" in html and "<img" not in html  # an image would load from another site


def test_the_words_for_strength_and_training():
    from server.dashboard.releases import strength_words, trained_on_words
    from server.networks.models import Network
    from server.ratings.models import Rating

    def rated(name, elo, se):
        n = Network(name=name)
        n.rating = Rating(elo=elo, elo_se=se)
        return n

    new, old = rated("new", 300.0, 10.0), rated("old", 200.0, 20.0)
    assert strength_words(new, old) == (
        "+100 ± 44 Elo against old, the previous release: it would win about 64% of its games against it."
    )
    assert strength_words(old, new).endswith("weaker; it would win about 36% of its games against it.")
    assert strength_words(rated("close", 210.0, 20.0), old).endswith("not clearly stronger or weaker.")
    assert strength_words(new, None) == "The run's first release."
    assert strength_words(Network(name="unrated"), old) == "Not rated yet."
    assert trained_on_words(SelfPlaySettings()) == (
        "Trained on self-play on 9x9 to 19x19 boards (most on 19x19), area or territory scoring, simple, "
        "positional or situational ko, komi about 7."
    )
    small = SelfPlaySettings(
        board_sizes=(7, 9, 13), board_size_weights=(1.0, 1.0, 0.0), rules=RulesChoice(scoring=("AREA",)), komi_mean=6.5
    )
    assert trained_on_words(small) == (
        "Trained on self-play on 7x7 and 9x9 boards, area scoring, simple, positional or situational ko, "
        "komi about 6.5."
    )
    assert "on 9x9, 13x13 and 19x19 boards (most on 19x19)," in trained_on_words(
        SelfPlaySettings(board_sizes=(9, 13, 19), board_size_weights=(1.0, 1.0, 3.0))
    )


def test_the_releases_page_shows_notes_strength_and_training(run):
    from server.networks.models import Network
    from server.ratings.models import Rating

    now = timezone.now()
    made = []
    for k, (elo, notes) in enumerate([(100.0, ""), (180.0, "Plays **ladders** right. <b>x</b>")], start=1):
        n = Network.objects.create(
            name=f"rel-{k}",
            run=run,
            state=Network.State.ACCEPTED,
            released=True,
            release_notes=notes,
            file=f"networks/{k:064x}.safetensors",
            sha256=f"{k:064x}",
            created_at=now - timedelta(hours=3 - k),
        )
        Rating.objects.create(network=n, elo=elo, elo_se=10.0, games=200)
        made.append(n)
    page = Client().get("/releases/").content.decode()
    assert "<p>Plays <strong>ladders</strong> right. &lt;b&gt;x&lt;/b&gt;</p>" in page
    assert "+80 ± 28 Elo against rel-1, the previous release: it would win about 61% of its games" in page
    assert "The run&#x27;s first release." in page
    sizes = helpers.SETTINGS.selfplay.sizes_in_play()
    assert f"Trained on self-play on {sizes[0]}x{sizes[0]}" in page
    detail = Client().get("/networks/rel-2/").content.decode()
    assert "Release notes" in detail and "<strong>ladders</strong>" in detail
