"""The website's pages with Django's test client: what each shows, the answers to bad input, and a
fixed number of queries per page whatever the number of rows (networks, games, contributors): the
list pages are counted at two sizes of their data, the second twice the first."""

from __future__ import annotations

import html as htmllib
import json
import re
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from common.architecture import named_config
from tests.server import helpers

pytestmark = pytest.mark.django_db

CAPTURE_SGF = (
    b"(;FF[4]GM[1]SZ[7]KM[6.5]RU[koSIMPLEscoreAREAtaxNONEsui0]PB[net]PW[net]RE[B+R]"
    b";B[ab];W[bb];B[ba];W[dd];B[cb];W[ee];B[bc])"
)  # black captures the white stone at bb

# Japanese rules on 5x5: a ko captured in encore phase 1 (move 11, C4), White's pass for ko at the
# recapture point (move 12, B4), then passes through encore phase 2 to the end.
TERRITORY_SGF = (
    b"(;FF[4]GM[1]SZ[5]KM[0.5]RU[Japanese]PB[net]PW[net]RE[B+0.5]"
    b";B[ba];W[ca];B[ab];W[bb];B[bc];W[db];B[ee];W[cc];B[];W[];B[cb];W[bb];B[];W[];B[];W[])"
)


@pytest.fixture
def web() -> Client:
    return Client()


def _networks(run, count: int) -> list:
    """count networks after the random one, an hour apart, each the child of the one before, with
    ratings; the last one a candidate in its gating, the one before it rejected, the odd accepted
    ones released."""
    from server.networks.models import Network
    from server.ratings.models import Gating, Rating

    now = timezone.now()
    random_net = run.networks.get(is_random=True)
    random_net.created_at = now - timedelta(hours=count + 1)
    random_net.save()
    Rating.objects.create(network=random_net, elo=0.0, elo_se=0.0, games=40)
    networks = [random_net]
    for k in range(1, count + 1):
        state = (
            Network.State.RATING if k == count else Network.State.REJECTED if k == count - 1 else Network.State.ACCEPTED
        )
        parent = networks[-1] if networks[-1].state != Network.State.REJECTED else networks[-2]
        n = Network.objects.create(
            name=f"{run.name}-n{k}",
            run=run,
            parent=parent,
            state=state,
            released=k % 2 == 1 and state == Network.State.ACCEPTED,
            size_name="b6c96",
            architecture=named_config("b6c96").to_dict(),
            file=f"networks/{k:064x}.safetensors",
            size_bytes=4_000_000 + k,
            sha256=f"{k:064x}",
            train_step=1_000_000 * k,
            rows_seen=50_000 * k,
            created_at=now - timedelta(hours=count - k),
        )
        Rating.objects.create(network=n, elo=100.0 * k, elo_se=10.0 + k, games=20 * k)
        Gating.objects.create(
            candidate=n,
            opponent=parent,
            rule="fixed",
            wins=12,
            draws=1,
            losses=7,
            decision={Network.State.RATING: "continue", Network.State.REJECTED: "reject"}.get(state, "accept"),
            verdict={"reason": f"{k} reached the wins needed"},
        )
        networks.append(n)
    return networks


def _more_networks(run, count: int, prefix: str = "m") -> list:
    """count more accepted networks, newer than every other, each the child of the one before (the
    first the child of the newest accepted), with ratings and gatings, every other one released."""
    from server.networks.models import Network
    from server.ratings.models import Gating, Rating

    now = timezone.now()
    parent = run.selfplay_network()
    made = []
    for k in range(1, count + 1):
        n = Network.objects.create(
            name=f"{run.name}-{prefix}{k}",
            run=run,
            parent=parent,
            state=Network.State.ACCEPTED,
            released=k % 2 == 0,
            size_name="b6c96",
            file=f"networks/{prefix}{k:063x}.safetensors",
            size_bytes=5_000_000 + k,
            sha256=f"{prefix}{k:063x}"[:64],
            train_step=10_000_000 + k,
            rows_seen=900_000 + k,
            created_at=now + timedelta(seconds=k),
        )
        Rating.objects.create(network=n, elo=1000.0 + k, elo_se=20.0, games=10)
        Gating.objects.create(
            candidate=n,
            opponent=parent,
            rule="fixed",
            wins=12,
            draws=0,
            losses=8,
            decision="accept",
            verdict={"reason": "enough wins"},
        )
        made.append(n)
        parent = n
    return made


def _contributors(names: list[str]) -> list:
    from server.accounts.models import User

    return [User.objects.create_user(name, f"{name}@example.org", "a long enough password") for name in names]


_rating_games = helpers.store_rating_games


def _html(response) -> str:
    return response.content.decode()


def _text(response) -> str:
    """The page's text without tags and with spaces collapsed."""
    return re.sub(r"\s+", " ", htmllib.unescape(re.sub(r"<[^>]+>", " ", _html(response))))


# Besides its own, every page (not the JSON) reads the announcements in force, kept in the cache
# for some seconds (server.notices.announcements): counted here, with the cache empty.
PAGE_QUERIES = 1


def _queries(django_assert_num_queries, client: Client, url: str, expected: int):
    """GET url once to count what a first view counts (the finished days), then again with the
    cache empty, asserting the number of queries (``expected`` and, for a page, PAGE_QUERIES)."""
    assert client.get(url).status_code == 200
    cache.clear()
    if not url.split("?")[0].endswith(".json"):
        expected += PAGE_QUERIES
    with django_assert_num_queries(expected):
        response = client.get(url)
    assert response.status_code == 200
    return response


def _queries_at_two_sizes(django_assert_num_queries, client: Client, url: str, expected: int, grow, listed=None):
    """The page's queries with the data as it is and again after ``grow()`` doubled it: ``expected``
    both times (nothing is asked per row). ``listed(response)``, when given, is how many rows the
    page shows: the second time it must show more. Returns the two answers."""
    first = _queries(django_assert_num_queries, client, url, expected)
    grow()
    second = _queries(django_assert_num_queries, client, url, expected)
    if listed is not None:
        assert listed(second) > listed(first) > 0, (listed(first), listed(second))
    return first, second


def _listed(response) -> int:
    return len(response.context["page"].object_list)


# --- the front page ---------------------------------------------------------------------------------
def test_home_without_a_run(web):
    response = web.get("/")
    assert response.status_code == 200
    assert "No run is active" in _text(response)


def test_home_shows_the_run_at_a_glance(web, run, alice, bob, selfplay_games, django_assert_num_queries):
    from server.training.models import TrainingLine

    networks = _networks(run, 6)
    current = networks[4]  # the newest accepted: n5 is rejected, n6 in its gating
    helpers.store_training_games(run, alice[0], selfplay_games[:4], network=current)
    helpers.store_training_games(run, bob[0], selfplay_games[4:], network=current, minutes_apart=200)
    TrainingLine.objects.create(
        run=run,
        architecture="b6c96",
        role="current",
        status="training",
        status_note="training on the newest window",
        samples=12_345_678,
        rows_total=4321,
        window_rows=2500,
        losses={"policy": 2.125, "value": 0.625, "note": "x"},
        last_export=networks[-1],
    )
    TrainingLine.objects.create(
        run=run, architecture="b10c128", role="next", status="idle", status_note="waiting for rows"
    )

    def grow():  # more networks, training lines, contributors and games
        newer = _more_networks(run, 7)
        TrainingLine.objects.create(
            run=run, architecture="b15c192", role="next", status="idle", last_export=newer[0], losses={"policy": 2.5}
        )
        TrainingLine.objects.create(run=run, architecture="b20c256", role="next", status="idle")
        for user in _contributors(["carol", "dave"]):
            helpers.store_training_games(run, user, selfplay_games, network=newer[-1])

    response, grown = _queries_at_two_sizes(django_assert_num_queries, web, "/", 17, grow)
    assert grown.context["numbers"]["contributors_day"] == 4 and len(grown.context["lines"]) == 4
    text = _text(response)
    rows = sum(g.metadata["rows"] for g in selfplay_games)
    assert f"Run {run.name}" in text
    assert current.name in text and "Elo 400 ± 27" in text  # n4: 400, se 14
    # bob's games are 200 minutes apart: only his newest is within the hour
    assert response.context["numbers"]["games_hour"] == 4 + 1
    assert response.context["numbers"]["games_total"] == len(selfplay_games)
    assert response.context["numbers"]["rows_total"] == rows
    assert response.context["numbers"]["contributors_day"] == 2
    assert f"{rows:,}" in text
    for expected in (
        "b6c96",
        "b10c128",
        "training on the newest window",
        "waiting for rows",
        "policy 2.125",
        "value 0.625",
        networks[-1].name,
    ):
        assert expected in text
    assert "note x" not in text  # only numbers are losses
    assert 'id="elo-chart"' in _html(response) and "/static/vendor/uplot/uPlot.iife.min.js" in _html(response)


def test_live_numbers_as_json(web, run, alice, selfplay_games, django_assert_num_queries):
    helpers.store_training_games(run, alice[0], selfplay_games[:3])
    body = _queries(django_assert_num_queries, web, "/live.json", 11).json()
    assert body["run"] == run.name and body["network"] == helpers.RANDOM_NET
    assert (body["games_hour"], body["games_day"], body["games_total"]) == (3, 3, 3)
    assert body["rows_total"] == sum(g.metadata["rows"] for g in selfplay_games[:3])
    assert body["contributors_day"] == 1
    assert body["z95"] == 1.96  # the scripts' 95% intervals use the server's constant
    assert web.get("/live.json?run=nope").status_code == 404


# --- networks ---------------------------------------------------------------------------------------
def test_networks_page_lists_every_network_with_filters(web, run, alice, selfplay_games, django_assert_num_queries):
    networks = _networks(run, 7)
    helpers.store_training_games(run, alice[0], selfplay_games[:2], network=networks[2])

    def grow():
        for n in _more_networks(run, 8):
            helpers.store_training_games(run, alice[0], selfplay_games[:1], network=n)

    response, _ = _queries_at_two_sizes(django_assert_num_queries, web, "/networks/", 7, grow, _listed)
    html, text = _html(response), _text(response)
    for n in networks:
        assert f'href="/networks/{n.name}/"' in html
    n2 = networks[2]
    assert f'href="/api/v1/networks/{n2.name}/file"' in html and "4.0 MB" in text and n2.sha256[:10] in html
    assert "200 ± 24" in text and f"{n2.rows_seen:,}" in text  # n2: elo 200, se 12
    assert [n.selfplay_games for n in response.context["page"].object_list if n.pk == n2.pk] == [2]
    released = [n.name for n in web.get("/networks/?show=released").context["page"].object_list]
    assert released[-3:] == [networks[5].name, networks[3].name, networks[1].name]
    # a released network shows its state and that it is released
    row = re.search(rf'<tr>\s*<td><a href="/networks/{networks[1].name}/".*?</tr>', html, re.S).group(0)
    assert (
        '<span class="badge badge-accepted">accepted</span> <span class="badge badge-released">released</span>' in row
    )
    candidates = web.get("/networks/?show=candidates").context["page"].object_list
    assert [n.name for n in candidates] == [networks[7].name]
    accepted = {n.name for n in web.get("/networks/?show=accepted").context["page"].object_list}
    assert accepted >= {n.name for n in networks if n.state == "accepted"}
    assert not accepted & {n.name for n in networks if n.state != "accepted"}


def test_networks_page_refuses_bad_filters_and_pages(web, run):
    bad = web.get("/networks/?show=strongest")
    assert bad.status_code == 400
    assert "show='strongest': must be one of all, released, accepted, candidates" in _text(bad)
    for value in ("two", "0", "-1", "1.5"):  # not page numbers: 400, naming the parameter, on every list
        for path in ("/networks/", "/games/", "/games/rating/", "/contributors/", "/releases/", "/data/"):
            page = web.get(f"{path}?page={value}")
            assert page.status_code == 400, (path, value)
            assert f"page={value!r}: not a page number (pages are counted from 1)" in _text(page), (path, value)
    past = web.get("/networks/?page=9")
    assert past.status_code == 404 and "page 9 is past the last page (1)" in _text(past)
    unknown_run = web.get("/networks/?run=nope")
    assert unknown_run.status_code == 404 and "there is no run named 'nope'" in _text(unknown_run)


def test_networks_are_paginated(web, run):
    from server.networks.models import Network

    Network.objects.bulk_create(
        [Network(name=f"bulk-{k:03d}", run=run, created_at=timezone.now() - timedelta(minutes=k)) for k in range(120)]
    )
    first = web.get("/networks/")
    assert len(first.context["page"].object_list) == 50 and "page 1 of 3" in _text(first)
    last = web.get("/networks/?page=3")
    assert len(last.context["page"].object_list) == 121 - 100
    assert "bulk-119" in _text(last) and "bulk-119" not in _text(first)


def test_network_page_shows_gating_lineage_and_games(web, run, alice, bob, selfplay_games, django_assert_num_queries):
    from server.networks.models import Network
    from server.ratings.models import NetworkEvent

    networks = _networks(run, 6)
    n3 = networks[3]
    NetworkEvent.objects.create(network=n3, kind=NetworkEvent.Kind.RELEASED, note="a good one")
    helpers.store_training_games(run, alice[0], selfplay_games[:3], network=n3)
    _rating_games(run, alice[0], n3, networks[2], selfplay_games[0].sgf, 2)

    def grow():  # more children, games, rating games and events
        for k in range(3):
            Network.objects.create(name=f"{run.name}-child{k}", run=run, parent=n3, state=Network.State.REJECTED)
            NetworkEvent.objects.create(network=n3, kind=NetworkEvent.Kind.RELEASED, note=f"again {k}")
        helpers.store_training_games(run, bob[0], selfplay_games, network=n3)
        _rating_games(run, bob[0], networks[4], n3, selfplay_games[0].sgf, 6)

    response, grown = _queries_at_two_sizes(django_assert_num_queries, web, f"/networks/{n3.name}/", 12, grow)
    assert len(grown.context["children"]) == 4 and len(grown.context["events"]) == 4
    assert grown.context["selfplay_games"] == 3 + len(selfplay_games) and len(grown.context["rating_games"]) == 8
    text = _text(response)
    assert "12 wins, 1 draws, 7 losses (score 0.625)" in text
    assert response.context["gating"].decision == "accept"
    assert '<span class="badge badge-accept">accept</span>' in _html(response)  # the gating's decision
    assert "Decision: accept" in text and "Decision: reject" not in text
    assert response.context["selfplay_games"] == 3
    assert "3 reached the wins needed" in text and "released by staff" in text and "a good one" in text
    assert [a.name for a in response.context["ancestors"]] == [networks[2].name, networks[1].name, helpers.RANDOM_NET]
    assert [c.name for c in response.context["children"]] == [networks[4].name]
    assert len(response.context["games"]) == 3 and len(response.context["rating_games"]) == 2
    assert f'href="/api/v1/networks/{n3.name}/file"' in _html(response) and n3.sha256 in text
    # a parent with two children (n5 was rejected; n6 is n4's child too)
    assert {c.name for c in web.get(f"/networks/{networks[4].name}/").context["children"]} == {
        networks[5].name,
        networks[6].name,
    }
    missing = web.get("/networks/nope/")
    assert missing.status_code == 404 and "there is no network named 'nope'" in _text(missing)


def test_network_page_lineage_stops_after_a_dozen(web, run):
    from server.dashboard.views import LINEAGE_DEPTH

    networks = _networks(run, LINEAGE_DEPTH + 4)
    response = web.get(f"/networks/{networks[-1].name}/")
    assert len(response.context["ancestors"]) == LINEAGE_DEPTH and response.context["more_ancestors"]


# --- the Elo chart ----------------------------------------------------------------------------------
def test_elo_page_and_its_data(web, run, django_assert_num_queries):
    networks = _networks(run, 5)
    page = _queries(django_assert_num_queries, web, "/elo/", 2)  # the run, its last fit
    html = _html(page)
    assert 'data-src="/elo/data.json?run=test"' in html and "/static/sente/elo.js" in html
    assert "/static/vendor/uplot/uPlot.iife.min.js" in html
    with django_assert_num_queries(3):  # the run, its networks, its anchors
        data = web.get("/elo/data.json").json()
    columns = data["networks"]
    assert data["run"] == run.name and columns["name"] == [n.name for n in networks] and data["z95"] == 1.96
    assert columns["elo"] == [0.0, 100.0, 200.0, 300.0, 400.0, 500.0]
    assert columns["se"][1:] == [11.0, 12.0, 13.0, 14.0, 15.0]
    assert columns["rows"] == [n.rows_seen for n in networks]
    assert columns["state"][-2:] == ["rejected", "rating"] and columns["released"][3] is True
    assert columns["parent"][:2] == [None, helpers.RANDOM_NET]
    missing = web.get("/elo/data.json?run=nope")
    assert missing.status_code == 404 and missing.json()["error"]["message"] == "there is no run named 'nope'"


def test_the_chart_library_is_served_from_this_site():
    from django.contrib.staticfiles import finders

    for name in (
        "vendor/uplot/uPlot.iife.min.js",
        "vendor/uplot/uPlot.min.css",
        "vendor/uplot/LICENSE",
        "sente/elo.js",
        "sente/board.js",
        "sente/live.js",
        "sente/site.css",
    ):
        assert finders.find(name), name
    with open(finders.find("sente/elo.js")) as f:
        script = f.read()
    assert "http://" not in script and "https://" not in script


# --- games ------------------------------------------------------------------------------------------
def test_games_lists_by_network_and_contributor(web, run, alice, bob, selfplay_games, django_assert_num_queries):
    networks = _networks(run, 3)
    helpers.store_training_games(run, alice[0], selfplay_games[:4], network=networks[1])
    helpers.store_training_games(run, bob[0], selfplay_games[4:], network=networks[2])
    everything = _queries(django_assert_num_queries, web, "/games/", 3)
    assert len(everything.context["page"].object_list) == len(selfplay_games)
    by_network = _queries(django_assert_num_queries, web, f"/games/?network={networks[1].name}", 3)
    assert {g.network_id for g in by_network.context["page"].object_list} == {networks[1].pk}
    assert len(by_network.context["page"].object_list) == 4
    by_user = _queries(django_assert_num_queries, web, "/games/?user=bob", 4)
    assert {g.user.username for g in by_user.context["page"].object_list} == {"bob"}
    both = web.get(f"/games/?user=bob&network={networks[1].name}")
    assert list(both.context["page"].object_list) == []
    newest_first = [g.created_at for g in everything.context["page"].object_list]
    assert newest_first == sorted(newest_first, reverse=True)
    missing = web.get("/games/?network=nope")
    assert missing.status_code == 404 and "there is no network named 'nope'" in _text(missing)
    assert web.get("/games/?user=nobody").status_code == 404


@pytest.mark.parametrize(
    "url, expected",
    [
        ("/games/", 3),
        ("/games/?network={n1}", 3),
        ("/games/?user=alice", 4),
        ("/games/rating/", 3),
        ("/games/rating/?network={n1}", 3),
        ("/games/rating/?user=alice", 4),
    ],
)
def test_game_lists_ask_the_same_at_two_sizes(
    web, run, alice, bob, selfplay_games, django_assert_num_queries, url, expected
):
    networks = _networks(run, 3)
    url = url.format(n1=networks[1].name)

    def games(count: int) -> None:
        for user in (alice[0], bob[0]):
            helpers.store_training_games(run, user, selfplay_games[:count], network=networks[1])
            _rating_games(run, user, networks[1], networks[2], selfplay_games[0].sgf, count)
            _rating_games(run, user, networks[0], networks[1], selfplay_games[0].sgf, count)

    games(2)
    _queries_at_two_sizes(django_assert_num_queries, web, url, expected, lambda: games(2), _listed)


def test_rating_games_list(web, run, alice, selfplay_games, django_assert_num_queries):
    networks = _networks(run, 3)
    _rating_games(run, alice[0], networks[2], networks[1], selfplay_games[0].sgf, 3)
    _rating_games(run, alice[0], networks[1], networks[0], selfplay_games[0].sgf, 2)
    response = _queries(django_assert_num_queries, web, "/games/rating/", 3)
    assert len(response.context["page"].object_list) == 5
    of_n2 = web.get(f"/games/rating/?network={networks[2].name}").context["page"].object_list
    assert len(of_n2) == 3
    of_n1 = web.get(f"/games/rating/?network={networks[1].name}").context["page"].object_list
    assert len(of_n1) == 5  # as black and as white


def test_game_list_is_capped_and_paged(web, run, alice, selfplay_games, monkeypatch):
    from server import paging

    helpers.store_training_games(run, alice[0], selfplay_games)
    monkeypatch.setattr(paging, "PER_PAGE", 2)
    monkeypatch.setattr(paging, "LIST_CAP", 4)
    monkeypatch.setattr(paging.paginate, "__defaults__", (2, 4))
    first = web.get("/games/")
    assert "page 1 of 2 (the newest 4 are listed)" in _text(first)
    second = web.get("/games/?page=2")
    assert len(second.context["page"].object_list) == 2
    past = web.get("/games/?page=3")
    assert past.status_code == 404 and "past the newest 4 listed here" in _text(past)


def test_game_page_replays_the_record(web, run, alice, selfplay_games, django_assert_num_queries):
    from common.go.sgf import read_sgf

    game = helpers.store_training_games(run, alice[0], selfplay_games[:1])[0]
    response = _queries(django_assert_num_queries, web, f"/games/{game.pk}/", 1)
    html, text = _html(response), _text(response)
    board = json.loads(
        re.search(r'<script id="board-data" type="application/json">(.*?)</script>', html, re.S).group(1)
    )
    record = read_sgf(selfplay_games[0].sgf)
    final = record.to_game()
    assert (board["x"], board["y"]) == (7, 7)
    assert len(board["positions"]) == len(record.moves) + 1 == len(board["moves"]) + 1
    expected = "".join(".bw"[c] for c in final.colors().flat)
    assert board["positions"][-1] == expected and board["positions"][0] == "." * 49
    assert board["captures"][-1] == [final.captures(1), final.captures(2)]
    assert f"Self-play game #{game.pk}" in text and game.result in text and f"Komi {game.komi}" in text
    assert "version 1 of run test" in text and helpers.RANDOM_NET in text
    assert f'href="/games/{game.pk}.sgf"' in html and "/static/sente/board.js" in html
    with django_assert_num_queries(1):
        sgf = web.get(f"/games/{game.pk}.sgf")
    assert sgf.status_code == 200 and sgf["Content-Type"] == "application/x-go-sgf"
    assert b"".join(sgf.streaming_content) == selfplay_games[0].sgf
    assert f'filename="{game.client_game_id}.sgf"' in sgf["Content-Disposition"]


def test_game_page_shows_captures_and_rules(web, run, alice, selfplay_games):
    from server.files import StoredFiles

    game = helpers.store_training_games(run, alice[0], selfplay_games[:1])[0]
    game.sgf = StoredFiles().put("games", CAPTURE_SGF, ".sgf")
    game.save()
    response = web.get(f"/games/{game.pk}/")
    board = response.context["board"]
    bb = 1 * 7 + 1  # column b, row b (from the top)
    assert board["positions"][2][bb] == "w" and board["positions"][6][bb] == "w"
    assert board["positions"][7][bb] == "." and board["positions"][7].count("b") == 4
    assert board["captures"][7] == [1, 0] and board["moves"][6] == {"c": "B", "v": "B5", "x": 1, "y": 2}
    text = _text(response)
    # the row's rules are empty here: the record's (simple ko, no suicide) are shown
    assert "ko: simple" in text and "multi-stone suicide: not allowed" in text


def test_game_page_shows_the_encore_phases_passes_for_ko_and_the_territory_result(web, run, alice, selfplay_games):
    from server.files import StoredFiles
    from server.games.models import TrainingGame

    game = helpers.store_training_games(run, alice[0], selfplay_games[:1])[0]
    TrainingGame.objects.filter(pk=game.pk).update(
        sgf=StoredFiles().put("games", TERRITORY_SGF, ".sgf"), result="B+0.5", score=-0.5, komi=0.5, moves=16
    )
    response = web.get(f"/games/{game.pk}/")
    board = response.context["board"]
    assert board["phases"] == [0] * 10 + [1] * 4 + [2] * 2
    assert board["ko_passes"] == [12] and board["moves"][11]["v"] == "B4"
    assert board["positions"][12] == board["positions"][11]  # a pass for ko leaves the board
    assert (board["scoring"], board["result"]) == ("territory", "B+0.5")
    text = _text(response)
    assert "scoring: territory" in text and "counted by territory and prisoners" in text


def test_rating_game_page(web, run, alice, selfplay_games, django_assert_num_queries):
    from common.go.sgf import read_sgf

    networks = _networks(run, 2)
    game = _rating_games(run, alice[0], networks[2], networks[1], selfplay_games[1].sgf, 1)[0]
    response = _queries(django_assert_num_queries, web, f"/games/rating/{game.pk}/", 1)
    text = _text(response)
    assert f"Rating game #{game.pk}" in text
    assert f"Black {networks[2].name}" in text and f"White {networks[1].name}" in text
    rules = read_sgf(selfplay_games[1].sgf).rules  # the record's, by which the board is replayed
    assert f"ko: {rules.ko.lower()}" in text and response.context["board"]["positions"]
    with django_assert_num_queries(1):
        sgf = web.get(f"/games/rating/{game.pk}.sgf")
    assert b"".join(sgf.streaming_content) == selfplay_games[1].sgf
    assert web.get(f"/games/rating/{game.pk + 1000}.sgf").status_code == 404


def test_game_page_shows_the_rules_and_komi_the_board_is_replayed_by(web, run, alice, selfplay_games):
    """The row and the record disagree here (uploads are refused when they do): the page shows the
    record's rules and komi, by which its board is replayed, not the row's."""
    from server.files import StoredFiles
    from server.games.models import TrainingGame

    game = helpers.store_training_games(run, alice[0], selfplay_games[:1])[0]
    TrainingGame.objects.filter(pk=game.pk).update(
        sgf=StoredFiles().put("games", CAPTURE_SGF, ".sgf"),
        komi=7.5,
        rules={
            "ko": "POSITIONAL",
            "scoring": "AREA",
            "tax": "NONE",
            "suicide": True,
            "hasButton": False,
            "whiteHandicapBonus": "0",
        },
    )
    response = web.get(f"/games/{game.pk}/")
    text = _text(response)
    assert "ko: simple" in text and "multi-stone suicide: not allowed" in text and "Komi 6.5" in text
    assert "positional" not in text and "Komi 7.5" not in text
    assert response.context["board"]["captures"][7] == [1, 0]
    TrainingGame.objects.filter(pk=game.pk).update(sgf="games/missing.sgf")  # no record: the row's
    text = _text(web.get(f"/games/{game.pk}/"))
    assert "ko: positional" in text and "Komi 7.5" in text


@pytest.mark.parametrize("path", ["/games/", "/games/rating/"])
def test_an_empty_game_list_spans_its_columns(web, run, path):
    html = _html(web.get(path))
    assert "No run is active" not in html
    header = re.search(r'<table class="games">\s*<thead>(.*?)</thead>', html, re.S).group(1)
    colspan = re.search(r'<td colspan="(\d+)">No games yet.</td>', html).group(1)
    assert header.count("<th") == int(colspan) == 8


def test_game_page_with_a_missing_or_broken_record(web, run, alice, selfplay_games):
    from server.files import StoredFiles

    game, broken = helpers.store_training_games(run, alice[0], selfplay_games[:2])
    game.sgf = "games/missing.sgf"
    game.save()
    response = web.get(f"/games/{game.pk}/")
    assert response.status_code == 200 and "missing from storage" in _text(response)
    assert response.context["board"] is None
    assert web.get(f"/games/{game.pk}.sgf").status_code == 404
    broken.sgf = StoredFiles().put("games", b"(;FF[4]SZ[7];B[aa];W[aa])", ".sgf")
    broken.save()
    text = _text(web.get(f"/games/{broken.pk}/"))
    assert "cannot be replayed: move 2" in text and "occupied" in text
    assert web.get("/games/999999/").status_code == 404
    assert web.get("/games/rating/999999/").status_code == 404
    for path in (
        "/games/99999999999999999999/",
        "/games/99999999999999999999.sgf",
        "/games/rating/99999999999999999999/",
        "/games/rating/99999999999999999999.sgf",
    ):
        response = web.get(path)
        assert response.status_code == 404 and "there is no" in _text(response), path


# --- contributors -----------------------------------------------------------------------------------
def _age(games, days: float) -> None:
    """Make the games (self-play or rating games, all of one kind) ``days`` old."""
    if games:
        type(games[0]).objects.filter(pk__in=[g.pk for g in games]).update(
            created_at=timezone.now() - timedelta(days=days)
        )


def test_contributors_leaderboard_by_period(web, run, alice, bob, selfplay_games, django_assert_num_queries):
    from server.accounts.models import User

    a_games = helpers.store_training_games(run, alice[0], selfplay_games[:2])
    b_games = helpers.store_training_games(run, bob[0], selfplay_games[2:])
    _age(b_games, 3)  # bob's games are three days old: in the week and all time, not in the day
    carol = User.objects.create_user("carol", "carol@example.org", "a long enough password", is_active=False)
    helpers.store_training_games(run, carol, selfplay_games[:1])  # inactive: never listed
    a_rows = sum(g.rows for g in a_games)
    b_rows = sum(g.rows for g in b_games)
    day = _queries(django_assert_num_queries, web, "/contributors/", 7)
    assert [r["user"].username for r in day.context["page"].object_list] == ["alice"]
    assert day.context["page"].object_list[0]["counts"].rows == a_rows
    _queries(django_assert_num_queries, web, "/contributors/?period=all", 8)
    week = _queries(django_assert_num_queries, web, "/contributors/?period=week", 10)
    ranked = [(r["rank"], r["user"].username, r["counts"].rows) for r in week.context["page"].object_list]
    expected = sorted([("alice", a_rows), ("bob", b_rows)], key=lambda x: -x[1])
    assert ranked == [(1, *expected[0]), (2, *expected[1])]
    assert "carol" not in _text(week)
    everyone = web.get("/contributors/?period=all")
    assert {r["user"].username: r["counts"].training_games for r in everyone.context["page"].object_list} == {
        "alice": 2,
        "bob": len(b_games),
    }
    bad = web.get("/contributors/?period=year")
    assert bad.status_code == 400 and "period='year': must be one of day, week, all" in _text(bad)


def test_empty_lists_say_so(web, run):
    """A run without games: the lists say there are none (not that there is no run)."""
    assert "No games in this period yet." in _text(web.get("/contributors/"))
    assert "No games yet." in _text(web.get("/games/"))
    assert "No network matches “rejected”." in _text(web.get("/networks/?show=rejected"))


@pytest.mark.parametrize("period, expected", [("day", 7), ("week", 10), ("all", 8)])  # the totals by device: one
def test_leaderboard_asks_the_same_at_two_sizes(web, run, selfplay_games, django_assert_num_queries, period, expected):
    from server.accounts.models import User

    def contributors(names: list[str]) -> None:
        for k, user in enumerate(_contributors(names)):
            games = helpers.store_training_games(run, user, selfplay_games[: 1 + k % 3])
            if k % 2:
                _age(games[:1], 3)  # a counted day, in the week and all time
            _rating_games(run, user, run.networks.get(), run.networks.get(), selfplay_games[0].sgf, 1)

    contributors(["u1", "u2", "u3", "u4"])
    User.objects.filter(username="u3").update(is_active=False)
    _queries_at_two_sizes(
        django_assert_num_queries,
        web,
        f"/contributors/?period={period}",
        expected,
        lambda: contributors(["u5", "u6", "u7", "u8"]),
        _listed,
    )


def test_contributor_page(web, run, alice, bob, selfplay_games, django_assert_num_queries):
    networks = _networks(run, 2)
    old = helpers.store_training_games(run, alice[0], selfplay_games[:3], network=networks[1])
    _age(old, 10)
    new = helpers.store_training_games(run, alice[0], selfplay_games[3:], network=networks[2])
    helpers.store_training_games(run, bob[0], selfplay_games)
    _rating_games(run, alice[0], networks[2], networks[1], selfplay_games[0].sgf, 2)

    def grow():  # as many games again, today's and counted days' (counted again: these are new)
        from server.dashboard import tallies

        _age(helpers.store_training_games(run, alice[0], selfplay_games[:3], network=networks[1]), 5)
        helpers.store_training_games(run, alice[0], selfplay_games[3:], network=networks[2])
        tallies.rebuild(run)

    response, grown = _queries_at_two_sizes(django_assert_num_queries, web, "/contributors/alice/", 15, grow, _listed)
    assert grown.context["periods"]["all"].training_games == 2 * len(selfplay_games)
    periods = response.context["periods"]
    assert periods["day"].training_games == len(new) and periods["day"].rating_games == 2
    assert periods["week"].rows == sum(g.rows for g in new)
    assert periods["all"].training_games == len(selfplay_games) and periods["all"].rows == sum(
        g.metadata["rows"] for g in selfplay_games
    )
    games = response.context["page"].object_list
    assert len(games) == len(selfplay_games) and {g.user.username for g in games} == {"alice"}
    assert "being counted" in _text(response)
    missing = web.get("/contributors/nobody/")
    assert missing.status_code == 404 and "there is no contributor named 'nobody'" in _text(missing)


def test_counts_of_finished_days_match_the_games(run, alice, bob, selfplay_games):
    """The counted days plus the live games give the same numbers as counting every game the site
    counts (not disabled, of active contributors): each contributor's self-play games, rows and
    rating games, the run's, and each network's."""
    from django.db.models import Count, Q, Sum

    from server.dashboard import tallies
    from server.games.models import RatingGame, TrainingGame

    networks = _networks(run, 3)
    (carol,) = _contributors(["carol"])
    ages = [0.01, 0.6, 1.3, 2.5, 6.8, 9.0]
    for user, network, count in ((alice[0], networks[1], 6), (bob[0], networks[2], 4), (carol, networks[2], 3)):
        for k, game in enumerate(helpers.store_training_games(run, user, selfplay_games[:count], network=network)):
            _age([game], ages[(k + count) % 6])
        for k, game in enumerate(_rating_games(run, user, networks[2], networks[1], selfplay_games[0].sgf, count)):
            _age([game], ages[(k + 2 * count) % 6])
    for model in (TrainingGame, RatingGame):
        model.objects.filter(pk=model.objects.order_by("id").first().pk).update(disabled=True)
    carol.is_active = False
    carol.save()  # off before the days are counted
    state = tallies.tally_state(run)
    assert state.days_through is not None
    now = timezone.now()
    counted = ~Q(user=carol) & Q(disabled=False)
    for since in (
        None,
        now - timedelta(hours=1),
        now - timedelta(days=1),
        now - timedelta(days=3.3),
        now - timedelta(days=7),
        now - timedelta(days=30),
    ):
        span = Q() if since is None else Q(created_at__gte=since)
        expected = {
            u: (n, r, 0)
            for u, n, r in TrainingGame.objects.filter(span, counted)
            .values_list("user_id")
            .annotate(n=Count("id"), r=Sum("rows"))
            .order_by()
        }
        for u, n in RatingGame.objects.filter(span, counted).values_list("user_id").annotate(n=Count("id")).order_by():
            expected[u] = (*expected.get(u, (0, 0))[:2], n)
        got = {u: (c.training_games, c.rows, c.rating_games) for u, c in tallies.per_user(run, since).items()}
        assert got == expected, since
        total = tallies.totals(run, since)
        assert (total.training_games, total.rows, total.rating_games) == tuple(
            sum(v[i] for v in expected.values()) for i in range(3)
        ), since
    assert tallies.per_user(run, None, user=bob[0]).keys() == {bob[0].pk}
    by_network = dict(TrainingGame.objects.filter(counted).values_list("network_id").annotate(n=Count("id")).order_by())
    ids = [n.pk for n in networks]
    assert tallies.network_games(run, ids) == {pk: by_network.get(pk, 0) for pk in ids}
    assert tallies.network_games(run, ids)[networks[2].pk] == 4  # bob's; carol's are not counted


def test_days_counted_in_steps_add_up_to_counting_them_at_once(run, alice, bob, selfplay_games):
    from server.dashboard import tallies
    from server.dashboard.models import ContributionTotal, NetworkTotal, RunTally

    networks = _networks(run, 2)
    for k, game in enumerate(selfplay_games):
        _age(helpers.store_training_games(run, alice[0], [game], network=networks[k % 3]), 1.5 + 2 * k)
    _age(helpers.store_training_games(run, bob[0], selfplay_games[:2], network=networks[1]), 4.5)
    for k, game in enumerate(_rating_games(run, bob[0], networks[2], networks[1], selfplay_games[0].sgf, 5)):
        _age([game], 1.2 + 2.1 * k)
    today = timezone.now().date()
    state = RunTally.objects.create(run=run)
    tallies.count_days(run, state, today - timedelta(days=5))
    tallies.count_days(run, state, today - timedelta(days=3))
    tallies.count_days(run, state, (timezone.now() - tallies.SETTLE).date())  # every day that is over
    stepwise = set(ContributionTotal.objects.values_list("user_id", "training_games", "rows", "rating_games"))
    stepwise_networks = set(NetworkTotal.objects.values_list("network_id", "training_games"))
    sums = (state.training_games, state.rows, state.rating_games)
    tallies.rebuild(run)
    assert set(ContributionTotal.objects.values_list("user_id", "training_games", "rows", "rating_games")) == stepwise
    assert set(NetworkTotal.objects.values_list("network_id", "training_games")) == stepwise_networks
    state.refresh_from_db()
    assert (state.training_games, state.rows, state.rating_games) == sums
    assert state.days_through == tallies.tally_state(run).days_through
    assert sums == (len(selfplay_games) + 2, sum(g.metadata["rows"] for g in selfplay_games + selfplay_games[:2]), 5)
    assert sum(n for _, n in stepwise_networks) == len(selfplay_games) + 2


def test_every_page_counts_the_same_games(web, run, alice, bob, selfplay_games, django_capture_on_commit_callbacks):
    """Disabled games and the games of deactivated accounts count nowhere: the front page, the live
    numbers, the leaderboard, the networks and the training both leave them out. A deactivated
    account leaves at once; the networks' kept counts follow once the run is counted again, which
    turning the account off queues."""
    from django_tasks_db.models import DBTaskResult

    from server.dashboard.tasks import recount_run
    from server.games.models import TrainingGame
    from server.training.window import counted_games

    networks = _networks(run, 2)
    current = networks[1]
    (carol,) = _contributors(["carol"])
    for user, count in ((alice[0], 6), (bob[0], 3), (carol, 2)):
        games = helpers.store_training_games(run, user, selfplay_games[:count], network=current)
        _age(games[: count // 2], 2.5)  # half in a counted day
    TrainingGame.objects.filter(pk=TrainingGame.objects.filter(user=alice[0]).order_by("id").first().pk).update(
        disabled=True
    )

    def numbers() -> dict:
        cache.clear()
        home = web.get("/").context["numbers"]
        board = web.get("/contributors/?period=all").context["page"].object_list
        listed = {n.name: n.selfplay_games for n in web.get("/networks/").context["page"].object_list}
        return {
            "home": home["games_total"],
            "rows": home["rows_total"],
            "day": home["contributors_day"],
            "live": web.get("/live.json").json()["games_total"],
            "board": sum(r["counts"].training_games for r in board),
            "board_users": len(board),
            "network": web.get(f"/networks/{current.name}/").context["selfplay_games"],
            "list": listed[current.name],
        }

    def expect(games) -> dict:
        rows = sum(games.values_list("rows", flat=True))
        users = games.values("user").distinct().count()
        n = games.count()
        return {
            "home": n,
            "rows": rows,
            "day": users,
            "live": n,
            "board": n,
            "board_users": users,
            "network": n,
            "list": n,
        }

    assert numbers() == expect(counted_games(run)) == expect(TrainingGame.objects.filter(disabled=False))
    assert counted_games(run).count() == 6 - 1 + 3 + 2

    with django_capture_on_commit_callbacks(execute=True):
        carol.is_active = False
        carol.save()

    def queued():
        return DBTaskResult.objects.filter(task_path="server.dashboard.tasks.recount_run")

    assert [t.args_kwargs["args"] for t in queued()] == [[run.pk]]
    off = numbers()
    # the front page and the leaderboard leave carol out at once; the network's counted days still
    # hold her older game until the recount
    assert {k: v for k, v in off.items() if k not in ("network", "list")} == {
        k: v for k, v in expect(counted_games(run)).items() if k not in ("network", "list")
    }
    assert off["network"] == off["list"] == counted_games(run).count() + 1
    recount_run.call(run.pk)  # what the worker runs
    assert numbers() == expect(counted_games(run))

    with django_capture_on_commit_callbacks(execute=True):
        carol.refresh_from_db()
        carol.first_name = "Carol"
        carol.save()  # not a change of is_active: nothing to count again
    assert queued().count() == 1
    with django_capture_on_commit_callbacks(execute=True):
        carol.is_active = True
        carol.save()
    assert queued().count() == 2
    recount_run.call(run.pk)
    assert numbers() == expect(counted_games(run)) and numbers()["home"] == 10


def test_training_window_share_is_counted_in_the_background(
    web, run, alice, bob, selfplay_games, django_capture_on_commit_callbacks
):
    from django_tasks_db.models import DBTaskResult

    from server.dashboard.tasks import count_training_window
    from server.games.models import TrainingGame
    from server.training.window import training_window

    document = run.current_settings().document
    # a window smaller than the games: the oldest fall out
    document["training"].update(window_c=40, batch_size=32, export_every=160, snapshot_every=32)
    run.set_settings(document)
    helpers.store_training_games(run, alice[0], selfplay_games[:4], minutes_apart=2)
    helpers.store_training_games(run, bob[0], selfplay_games[4:], minutes_apart=3)
    with django_capture_on_commit_callbacks(execute=True):
        first = web.get("/contributors/alice/")
    assert "being counted" in _text(first) and DBTaskResult.objects.count() == 1
    with django_capture_on_commit_callbacks(execute=True):
        web.get("/contributors/")  # asked for already: not again
    assert DBTaskResult.objects.count() == 1
    task = DBTaskResult.objects.get()
    assert task.task_path == "server.dashboard.tasks.count_training_window" and task.args_kwargs["args"] == [run.pk]
    count_training_window.call(run.pk)  # what the worker runs

    window = training_window(run, run.current_settings().settings.training)
    owners = dict(TrainingGame.objects.values_list("npz", "user__username"))
    expected = {"alice": 0, "bob": 0}
    for f in window.files:
        expected[owners[f.name]] += f.rows
    assert 0 < window.rows < sum(TrainingGame.objects.values_list("rows", flat=True))
    page = web.get("/contributors/alice/")
    assert page.context["window_rows"] == expected["alice"]
    assert f"of its {window.rows:,} rows" in _text(page)
    board = {r["user"].username: r["window_rows"] for r in web.get("/contributors/").context["page"].object_list}
    assert board == expected


def test_tally_command(run, alice, selfplay_games):
    from io import StringIO

    from server.dashboard.models import ContributionDay

    games = helpers.store_training_games(run, alice[0], selfplay_games[:2])
    _age(games, 2)
    out = StringIO()
    call_command("tally", "--window", stdout=out)
    assert "test: days counted" in out.getvalue() and "training window counted" in out.getvalue()
    day = ContributionDay.objects.get()
    assert (day.training_games, day.rows) == (2, sum(g.rows for g in games))
    from server.games.models import TrainingGame

    TrainingGame.objects.filter(pk=games[0].pk).update(disabled=True)
    call_command("tally", "--rebuild", stdout=out)
    assert ContributionDay.objects.get().training_games == 1
    with pytest.raises(Exception, match="there is no run 'nope'"):
        call_command("tally", "--run", "nope", stdout=out)


# --- releases and getting started -------------------------------------------------------------------
def test_releases_page(web, run, django_assert_num_queries):
    networks = _networks(run, 7)
    response = _queries(django_assert_num_queries, web, "/releases/", 8)
    released = [n for n in networks if n.released]
    listed = [n.name for n in response.context["page"].object_list]
    _, grown = _queries_at_two_sizes(
        django_assert_num_queries, web, "/releases/", 8, lambda: _more_networks(run, 6), _listed
    )  # as many released again
    assert len(grown.context["page"].object_list) == 2 * len(released)
    assert listed == [n.name for n in sorted(released, key=lambda n: n.created_at, reverse=True)]
    html, text = _html(response), _text(response)
    n5 = networks[5]
    assert listed[0] == n5.name and len(listed) == 3
    assert f'href="/api/v1/networks/{n5.name}/file"' in html and n5.sha256 in text
    assert f'href="/api/v1/networks/{n5.name}/katago"' in html and "katago gtp -model NAME.bin.gz" in text
    assert f'href="/api/v1/networks/{networks[3].name}/katago"' in html
    networks[3].architecture = named_config("tinymobile").to_dict()  # KataGo's engine cannot run it
    networks[3].save()
    assert f'href="/api/v1/networks/{networks[3].name}/katago"' not in _html(web.get("/releases/"))
    assert "Elo 500 ± 29" in text and "4.0 MB" in text
    # the engine's command (tests/e2e/test_gtp_network.py runs it); KaTrain runs sente-katago
    assert "sente gtp --model FILE.safetensors The engine searches 400 visits" in text
    assert "Sabaki" in text and "Lizzie" in text and "sente-katago (with its full path) as the KataGo" in text
    assert networks[2].name not in listed


def test_the_releases_page_links_the_public_download_with_the_servers_beside_it(web, run, settings):
    """With a public download base, a release's file is linked there (its storage name, which never
    changes its content), and the server's own download beside it as the fallback; the KataGo file
    too once it is made (before, only the server can make it)."""
    from server.networks.models import NetworkKataGoFile

    networks = _networks(run, 7)
    n5 = networks[5]
    settings.SENTE_FILES_PUBLIC_URL = "https://cdn.example.org/sente/"
    html = _html(web.get("/releases/"))
    assert f'href="https://cdn.example.org/sente/{n5.file.name}" download="{n5.name}.safetensors"' in html
    assert f'href="/api/v1/networks/{n5.name}/file" download>from this server' in html
    assert f'href="/api/v1/networks/{n5.name}/katago" download="{n5.name}.bin.gz"' in html
    NetworkKataGoFile.objects.create(
        network=n5, state="ready", file="katago/ab/cd/abcd.bin.gz", sha256="ab" * 32, size_bytes=10, version=8
    )
    html = _html(web.get("/releases/"))
    assert f'href="https://cdn.example.org/sente/katago/ab/cd/abcd.bin.gz" download="{n5.name}.bin.gz"' in html
    assert f'href="/api/v1/networks/{n5.name}/katago" download>from this server' in html
    settings.SENTE_FILES_PUBLIC_URL = ""
    assert "cdn.example.org" not in _html(web.get("/releases/"))


def test_releases_page_with_none(web, db):
    assert "No network is released yet" in _text(web.get("/releases/"))


def test_data_page_lists_the_daily_archives(web, run, django_assert_num_queries):
    from datetime import date

    from server.operations.models import DataExport

    assert "No archive yet" in _text(web.get("/data/"))
    for day in (date(2026, 1, 2), date(2026, 1, 3)):
        for kind in ("sgf", "npz"):
            DataExport.objects.create(
                run=run,
                day=day,
                kind=kind,
                file=f"exports/test/{day}-{kind}",
                size_bytes=2048,
                sha256="ab" * 32,
                games=7,
            )
    response = _queries(django_assert_num_queries, web, "/data/", 3)
    text, html = _text(response), _html(response)
    assert text.index("2026-01-03") < text.index("2026-01-02")  # newest first

    def grow():  # two days more
        for day in (date(2025, 12, 30), date(2025, 12, 31)):
            for kind in ("sgf", "npz"):
                DataExport.objects.create(
                    run=run,
                    day=day,
                    kind=kind,
                    file=f"exports/test/{day}-{kind}",
                    size_bytes=4096,
                    sha256="cd" * 32,
                    games=3,
                )

    _queries_at_two_sizes(django_assert_num_queries, web, "/data/", 3, grow, _listed)
    export = DataExport.objects.get(day=date(2026, 1, 3), kind="sgf")
    assert f'href="/api/v1/exports/{export.pk}/file"' in html and "test-2026-01-03-sgf.zip" in text
    npz = DataExport.objects.get(day=date(2026, 1, 3), kind="npz")
    assert f'href="/data/{npz.pk}/"' in html and "training rows (npz): 0 files" in text
    assert "2.0 kB" in text


def test_an_npz_archives_page_lists_its_shards_and_its_disabled_games(
    web, run, alice, selfplay_games, django_assert_num_queries
):
    from datetime import timedelta

    from django.utils import timezone

    from server.games.models import TrainingGame
    from server.games.shards import Caps, pack_due
    from server.operations.exports import export_day

    day = (timezone.now() - timedelta(days=1)).date()

    def grow(games):
        stored = helpers.store_training_games(run, alice[0], games)
        TrainingGame.objects.filter(pk__in=[g.pk for g in stored]).update(
            created_at=timezone.now() - timedelta(days=1, minutes=1)
        )
        return stored

    grow(selfplay_games[:1])
    pack_due(run, Caps(rows=1, bytes=1 << 30, seconds=3600))  # a shard a game
    export = export_day(run, day, "npz")
    assert web.get(f"/data/{export.pk + 1000}/").status_code == 404

    def more():
        games = grow(selfplay_games[1:3])
        TrainingGame.objects.filter(pk=games[0].pk).update(disabled=True)
        pack_due(run, Caps(rows=1, bytes=1 << 30, seconds=3600))
        export_day(run, day, "npz", force=True)

    first, second = _queries_at_two_sizes(django_assert_num_queries, web, f"/data/{export.pk}/", 3, more, _listed)
    assert "No game of the day is disabled" in _text(first)
    text, html = _text(second), _html(second)
    assert "3 games in 3 files" in text and "1 game of the day is disabled" in text
    assert f'href="/api/v1/exports/{export.pk}/disabled"' in html
    for shard in export.shards.all():
        assert f'href="/api/v1/exports/{export.pk}/shards/{shard.pk}/file"' in html and shard.sha256 in text


def test_getting_started_fills_in_the_server_and_the_user(web, alice, django_assert_num_queries, settings):
    anonymous = _text(_queries(django_assert_num_queries, web, "/start/", 0))
    assert "sente contribute --server http://testserver/ --username YOUR_NAME" in anonymous
    web.force_login(alice[0])
    mine = _text(_queries(django_assert_num_queries, web, "/start/", 2))  # the session, the user
    assert "sente contribute --server http://testserver/ --username alice" in mine
    # where to get the source: the repository the server's settings name, else no made-up address
    assert "<" not in re.search(r'<code id="install-command">(.*?)</code>', _html(web.get("/start/")), re.S).group(1)
    assert "git+" not in mine and "this server does not name one" in mine
    settings.SENTE_SOURCE_URL = "https://git.example.org/sente.git"
    install = re.search(r'<code id="install-command">(.*?)</code>', _html(web.get("/start/")), re.S).group(1)
    assert htmllib.unescape(install) == 'pipx install "git+https://git.example.org/sente.git"'


# --- client tokens ----------------------------------------------------------------------------------
def test_tokens_need_a_login(web, db):
    response = web.get("/accounts/tokens/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_make_use_and_revoke_a_token(web, alice, bob, django_assert_num_queries):
    from rest_framework.test import APIClient

    from server.accounts.models import ClientToken

    user, _ = alice
    web.force_login(user)
    page = web.post("/accounts/tokens/", {"name": "gpu-box"})  # the answer itself shows the key
    assert page.status_code == 200
    key = re.search(r'id="new-token-key" class="key">([^<]+)<', _html(page)).group(1)
    assert key.startswith("sente_") and "shown only this once" in _text(page)
    assert f"SENTE_TOKEN={key}" in _text(page) and "--server http://testserver/" in _text(page)
    assert 'name="name"' in _html(page) and 'value="gpu-box"' not in _html(page)  # an empty form again
    for answer in (page, web.get("/accounts/tokens/")):
        assert "no-store" in answer["Cache-Control"] and "private" in answer["Cache-Control"]
    again = web.get("/accounts/tokens/")
    assert key not in _html(again) and "gpu-box" in _text(again)  # the key is shown once only
    token = ClientToken.objects.get(user=user, name="gpu-box")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/v1/me/").json()["username"] == "alice"

    # another user's token cannot be revoked from here
    other = ClientToken.objects.get(user=bob[0])
    assert web.post(f"/accounts/tokens/{other.pk}/revoke/").status_code == 404
    assert ClientToken.objects.get(pk=other.pk).active
    assert web.get(f"/accounts/tokens/{token.pk}/revoke/").status_code == 405
    assert web.post("/accounts/tokens/99999999999999999999/revoke/").status_code == 404
    revoked = web.post(f"/accounts/tokens/{token.pk}/revoke/", follow=True)
    assert "is revoked" in _text(revoked)
    assert not ClientToken.objects.get(pk=token.pk).active
    assert api.get("/api/v1/me/").status_code == 401
    with django_assert_num_queries(4):  # session, user, tokens counted, the page of tokens
        listing = web.get("/accounts/tokens/")
    assert "revoked" in _text(listing)


def test_a_new_tokens_key_is_kept_nowhere_on_the_server(web, alice):
    """The key is in the answer to the POST only: no session row holds it (nor its hash's source),
    the database keeps its hash."""
    from django.contrib.sessions.models import Session

    from server.accounts.models import ClientToken, hash_token

    web.force_login(alice[0])
    page = web.post("/accounts/tokens/", {"name": "laptop"})
    key = re.search(r'id="new-token-key" class="key">([^<]+)<', _html(page)).group(1)
    for _ in range(2):  # right after the POST, and after the next page
        sessions = list(Session.objects.all())
        assert sessions  # the signed-in session is stored in the database
        for session in sessions:
            assert key not in session.session_data and key not in json.dumps(session.get_decoded())
        web.get("/accounts/tokens/")
    token = ClientToken.objects.get(name="laptop")
    assert token.key_hash == hash_token(key) and key not in json.dumps(
        list(ClientToken.objects.values_list("name", "key_prefix", "key_hash"))
    )


def test_a_token_needs_a_name(web, alice):
    from server.accounts.models import ClientToken

    web.force_login(alice[0])
    before = ClientToken.objects.count()
    response = web.post("/accounts/tokens/", {"name": "   "})
    assert response.status_code == 200 and "This field is required" in _text(response)
    assert ClientToken.objects.count() == before


def test_every_page_links_the_site_and_the_account(web, alice):
    web.force_login(alice[0])
    html = _html(web.get("/start/"))
    for href in (
        "/networks/",
        "/elo/",
        "/games/",
        "/contributors/",
        "/releases/",
        "/start/",
        "/accounts/tokens/",
        "/contributors/alice/",
    ):
        assert f'href="{href}"' in html


# --- the selectors and services, without HTTP --------------------------------------------------------
def test_ancestors_nearest_first_up_to_the_depth(run):
    from server.dashboard.selectors import ancestors

    networks = _networks(run, 6)
    newest = networks[-1]
    chain = []
    while chain[-1:] != [networks[0]]:
        chain.append((chain[-1] if chain else newest).parent)
    assert len(chain) == 5
    assert ancestors(newest, 3) == chain[:3]
    assert ancestors(newest, 10) == chain
    assert ancestors(networks[0], 3) == []


def test_elo_columns_oldest_first(run):
    from server.dashboard.selectors import elo_columns

    networks = _networks(run, 3)
    columns = elo_columns(run)
    assert columns["name"] == [n.name for n in networks]
    assert columns["parent"] == [n.parent.name if n.parent else None for n in networks]
    assert columns["elo"] == [0.0, 100.0, 200.0, 300.0]
    assert len({len(values) for values in columns.values()}) == 1


def test_queue_recounts_once_per_run_after_the_commit(run, django_capture_on_commit_callbacks):
    from django_tasks_db.models import DBTaskResult

    from server.dashboard.services import queue_recounts

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        queue_recounts([run.pk, run.pk], window=True)
    assert not DBTaskResult.objects.exists()
    for callback in callbacks:
        callback()
    assert sorted(t.task_path.rsplit(".", 1)[1] for t in DBTaskResult.objects.all()) == [
        "count_training_window",
        "recount_run",
    ]
