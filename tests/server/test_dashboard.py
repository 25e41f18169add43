"""The website's pages with Django's test client: what each shows, the answers to bad input, and a
fixed number of queries per page whatever the number of rows (networks, games, contributors)."""

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

from tests.server import helpers

pytestmark = pytest.mark.django_db

CAPTURE_SGF = (b"(;FF[4]GM[1]SZ[7]KM[6.5]RU[koSIMPLEscoreAREAtaxNONEsui0]PB[net]PW[net]RE[B+R]"
               b";B[ab];W[bb];B[ba];W[dd];B[cb];W[ee];B[bc])")  # black captures the white stone at bb


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
        state = (Network.State.RATING if k == count else Network.State.REJECTED if k == count - 1
                 else Network.State.ACCEPTED)
        parent = networks[-1] if networks[-1].state != Network.State.REJECTED else networks[-2]
        n = Network.objects.create(
            name=f"{run.name}-n{k}", run=run, parent=parent, state=state,
            released=k % 2 == 1 and state == Network.State.ACCEPTED, size_name="b6c96",
            file=f"networks/{k:064x}.safetensors", size_bytes=4_000_000 + k, sha256=f"{k:064x}",
            train_step=1_000_000 * k, rows_seen=50_000 * k, created_at=now - timedelta(hours=count - k))
        Rating.objects.create(network=n, elo=100.0 * k, elo_se=10.0 + k, games=20 * k)
        Gating.objects.create(candidate=n, opponent=parent, rule="fixed", wins=12, draws=1, losses=7,
                              decision={Network.State.RATING: "continue", Network.State.REJECTED: "reject"}
                              .get(state, "accept"), verdict={"reason": f"{k} reached the wins needed"})
        networks.append(n)
    return networks


def _rating_games(run, user, black, white, sgf: bytes, count: int) -> list:
    from server.distribution.models import Task
    from server.files import StoredFiles, sha256_of
    from server.games.models import RatingGame

    now = timezone.now()
    task = Task.objects.create(kind=Task.Kind.RATING, run=run, user=user, network_a=black, network_b=white,
                               settings_version=run.current_settings(), games=count, client_version="0.1.0",
                               client_instance_id="test", expires_at=now + timedelta(hours=1))
    name = StoredFiles().put("games", sgf, ".sgf")
    return RatingGame.objects.bulk_create([RatingGame(
        client_game_id=f"{task.id.hex}-{k}", task=task, user=user, run=run, settings_version=task.settings_version,
        board_x_size=7, board_y_size=7, komi=7.5, rules={"ko": "POSITIONAL", "scoring": "AREA", "tax": "NONE",
                                                          "suicide": True, "hasButton": False,
                                                          "whiteHandicapBonus": "0"},
        result="W+R", winner="W", moves=20, sgf=name, sgf_sha256=sha256_of(sgf), black_network=black,
        white_network=white, created_at=now - timedelta(minutes=k)) for k in range(count)])


def _html(response) -> str:
    return response.content.decode()


def _text(response) -> str:
    """The page's text without tags and with spaces collapsed."""
    return re.sub(r"\s+", " ", htmllib.unescape(re.sub(r"<[^>]+>", " ", _html(response))))


def _queries(django_assert_num_queries, client: Client, url: str, expected: int):
    """GET url once to count what a first view counts (the finished days), then again with the
    cache empty, asserting the number of queries."""
    assert client.get(url).status_code == 200
    cache.clear()
    with django_assert_num_queries(expected):
        response = client.get(url)
    assert response.status_code == 200
    return response


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
    TrainingLine.objects.create(run=run, architecture="b6c96", role="current", status="training",
                                status_note="training on the newest window", samples=12_345_678, rows_total=4321,
                                window_rows=2500, losses={"policy": 2.125, "value": 0.625, "note": "x"},
                                last_export=networks[-1])
    TrainingLine.objects.create(run=run, architecture="b10c128", role="next", status="idle",
                                status_note="waiting for rows")
    response = _queries(django_assert_num_queries, web, "/", 13)
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
    for expected in ("b6c96", "b10c128", "training on the newest window", "waiting for rows", "policy 2.125",
                     "value 0.625", networks[-1].name):
        assert expected in text
    assert "note x" not in text  # only numbers are losses
    assert 'id="elo-chart"' in _html(response) and "/static/vendor/uplot/uPlot.iife.min.js" in _html(response)


def test_live_numbers_as_json(web, run, alice, selfplay_games):
    helpers.store_training_games(run, alice[0], selfplay_games[:3])
    body = web.get("/live.json").json()
    assert body["run"] == run.name and body["network"] == helpers.RANDOM_NET
    assert (body["games_hour"], body["games_day"], body["games_total"]) == (3, 3, 3)
    assert body["rows_total"] == sum(g.metadata["rows"] for g in selfplay_games[:3])
    assert body["contributors_day"] == 1
    assert web.get("/live.json?run=nope").status_code == 404


# --- networks ---------------------------------------------------------------------------------------
def test_networks_page_lists_every_network_with_filters(web, run, alice, selfplay_games, django_assert_num_queries):
    networks = _networks(run, 7)
    helpers.store_training_games(run, alice[0], selfplay_games[:2], network=networks[2])
    response = _queries(django_assert_num_queries, web, "/networks/", 4)
    html, text = _html(response), _text(response)
    for n in networks:
        assert f'href="/networks/{n.name}/"' in html
    n2 = networks[2]
    assert f'href="/api/v1/networks/{n2.name}/file"' in html and "4.0 MB" in text and n2.sha256[:10] in html
    assert "200 ± 24" in text and f"{n2.rows_seen:,}" in text  # n2: elo 200, se 12
    assert [n.selfplay_games for n in response.context["page"].object_list if n.pk == n2.pk] == [2]
    released = [n.name for n in web.get("/networks/?show=released").context["page"].object_list]
    assert released == [networks[5].name, networks[3].name, networks[1].name]
    candidates = web.get("/networks/?show=candidates").context["page"].object_list
    assert [n.name for n in candidates] == [networks[7].name]
    accepted = {n.name for n in web.get("/networks/?show=accepted").context["page"].object_list}
    assert accepted == {n.name for n in networks if n.state == "accepted"}


def test_networks_page_refuses_bad_filters_and_pages(web, run):
    bad = web.get("/networks/?show=strongest")
    assert bad.status_code == 400
    assert "show='strongest': must be one of all, released, accepted, candidates" in _text(bad)
    page = web.get("/networks/?page=two")
    assert page.status_code == 404 and "page='two' is not a page number" in _text(page)
    past = web.get("/networks/?page=9")
    assert past.status_code == 404 and "page 9 is past the last page (1)" in _text(past)
    assert web.get("/networks/?page=0").status_code == 404
    unknown_run = web.get("/networks/?run=nope")
    assert unknown_run.status_code == 404 and "there is no run named 'nope'" in _text(unknown_run)


def test_networks_are_paginated(web, run):
    from server.networks.models import Network

    Network.objects.bulk_create([Network(name=f"bulk-{k:03d}", run=run, created_at=timezone.now()
                                         - timedelta(minutes=k)) for k in range(120)])
    first = web.get("/networks/")
    assert len(first.context["page"].object_list) == 50 and "page 1 of 3" in _text(first)
    last = web.get("/networks/?page=3")
    assert len(last.context["page"].object_list) == 121 - 100
    assert "bulk-119" in _text(last) and "bulk-119" not in _text(first)


def test_network_page_shows_gating_lineage_and_games(web, run, alice, selfplay_games, django_assert_num_queries):
    from server.ratings.models import NetworkEvent

    networks = _networks(run, 6)
    n3 = networks[3]
    NetworkEvent.objects.create(network=n3, kind=NetworkEvent.Kind.RELEASED, note="a good one")
    helpers.store_training_games(run, alice[0], selfplay_games[:3], network=n3)
    _rating_games(run, alice[0], n3, networks[2], selfplay_games[0].sgf, 2)
    response = _queries(django_assert_num_queries, web, f"/networks/{n3.name}/", 8)
    text = _text(response)
    assert "12 wins, 1 draws, 7 losses (score 0.625)" in text and "accept" in text
    assert "3 reached the wins needed" in text and "released by staff" in text and "a good one" in text
    assert [a.name for a in response.context["ancestors"]] == [networks[2].name, networks[1].name,
                                                                helpers.RANDOM_NET]
    assert [c.name for c in response.context["children"]] == [networks[4].name]
    assert len(response.context["games"]) == 3 and len(response.context["rating_games"]) == 2
    assert f'href="/api/v1/networks/{n3.name}/file"' in _html(response) and n3.sha256 in text
    # a parent with two children (n5 was rejected; n6 is n4's child too)
    assert {c.name for c in web.get(f"/networks/{networks[4].name}/").context["children"]} == {
        networks[5].name, networks[6].name}
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
    page = web.get("/elo/")
    assert page.status_code == 200
    html = _html(page)
    assert 'data-src="/elo/data.json?run=test"' in html and "/static/sente/elo.js" in html
    assert "/static/vendor/uplot/uPlot.iife.min.js" in html
    with django_assert_num_queries(2):
        data = web.get("/elo/data.json").json()
    columns = data["networks"]
    assert data["run"] == run.name and columns["name"] == [n.name for n in networks]
    assert columns["elo"] == [0.0, 100.0, 200.0, 300.0, 400.0, 500.0]
    assert columns["se"][1:] == [11.0, 12.0, 13.0, 14.0, 15.0]
    assert columns["rows"] == [n.rows_seen for n in networks]
    assert columns["state"][-2:] == ["rejected", "rating"] and columns["released"][3] is True
    assert columns["parent"][:2] == [None, helpers.RANDOM_NET]
    missing = web.get("/elo/data.json?run=nope")
    assert missing.status_code == 404 and missing.json()["error"]["message"] == "there is no run named 'nope'"


def test_the_chart_library_is_served_from_this_site():
    from django.contrib.staticfiles import finders

    for name in ("vendor/uplot/uPlot.iife.min.js", "vendor/uplot/uPlot.min.css", "vendor/uplot/LICENSE",
                 "sente/elo.js", "sente/board.js", "sente/live.js", "sente/site.css"):
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
    by_user = web.get("/games/?user=bob")
    assert {g.user.username for g in by_user.context["page"].object_list} == {"bob"}
    both = web.get(f"/games/?user=bob&network={networks[1].name}")
    assert list(both.context["page"].object_list) == []
    newest_first = [g.created_at for g in everything.context["page"].object_list]
    assert newest_first == sorted(newest_first, reverse=True)
    missing = web.get("/games/?network=nope")
    assert missing.status_code == 404 and "there is no network named 'nope'" in _text(missing)
    assert web.get("/games/?user=nobody").status_code == 404


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
    from server.dashboard import paging

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
    board = json.loads(re.search(r'<script id="board-data" type="application/json">(.*?)</script>', html,
                                 re.S).group(1))
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


def test_rating_game_page(web, run, alice, selfplay_games):
    networks = _networks(run, 2)
    game = _rating_games(run, alice[0], networks[2], networks[1], selfplay_games[1].sgf, 1)[0]
    response = web.get(f"/games/rating/{game.pk}/")
    text = _text(response)
    assert response.status_code == 200 and f"Rating game #{game.pk}" in text
    assert f"Black {networks[2].name}" in text and f"White {networks[1].name}" in text
    assert "ko: positional" in text and response.context["board"]["positions"]
    assert b"".join(web.get(f"/games/rating/{game.pk}.sgf").streaming_content) == selfplay_games[1].sgf


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
    for path in ("/games/99999999999999999999/", "/games/99999999999999999999.sgf",
                 "/games/rating/99999999999999999999/"):
        response = web.get(path)
        assert response.status_code == 404 and "there is no" in _text(response), path


# --- contributors -----------------------------------------------------------------------------------
def _age(games, days: float) -> None:
    from server.games.models import TrainingGame

    TrainingGame.objects.filter(pk__in=[g.pk for g in games]).update(
        created_at=timezone.now() - timedelta(days=days))


def test_contributors_leaderboard_by_period(web, run, alice, bob, selfplay_games, django_assert_num_queries):
    from server.accounts.models import User

    a_games = helpers.store_training_games(run, alice[0], selfplay_games[:2])
    b_games = helpers.store_training_games(run, bob[0], selfplay_games[2:])
    _age(b_games, 3)  # bob's games are three days old: in the week and all time, not in the day
    carol = User.objects.create_user("carol", "carol@example.org", "a long enough password", is_active=False)
    helpers.store_training_games(run, carol, selfplay_games[:1])  # inactive: never listed
    a_rows = sum(g.rows for g in a_games)
    b_rows = sum(g.rows for g in b_games)
    day = _queries(django_assert_num_queries, web, "/contributors/", 6)
    assert [r["user"].username for r in day.context["page"].object_list] == ["alice"]
    assert day.context["page"].object_list[0]["counts"].rows == a_rows
    week = _queries(django_assert_num_queries, web, "/contributors/?period=week", 9)
    ranked = [(r["rank"], r["user"].username, r["counts"].rows) for r in week.context["page"].object_list]
    expected = sorted([("alice", a_rows), ("bob", b_rows)], key=lambda x: -x[1])
    assert ranked == [(1, *expected[0]), (2, *expected[1])]
    assert "carol" not in _text(week)
    everyone = web.get("/contributors/?period=all")
    assert {r["user"].username: r["counts"].training_games for r in everyone.context["page"].object_list} == {
        "alice": 2, "bob": len(b_games)}
    bad = web.get("/contributors/?period=year")
    assert bad.status_code == 400 and "period='year': must be one of day, week, all" in _text(bad)


def test_contributor_page(web, run, alice, bob, selfplay_games, django_assert_num_queries):
    networks = _networks(run, 2)
    old = helpers.store_training_games(run, alice[0], selfplay_games[:3], network=networks[1])
    _age(old, 10)
    new = helpers.store_training_games(run, alice[0], selfplay_games[3:], network=networks[2])
    helpers.store_training_games(run, bob[0], selfplay_games)
    _rating_games(run, alice[0], networks[2], networks[1], selfplay_games[0].sgf, 2)
    response = _queries(django_assert_num_queries, web, "/contributors/alice/", 15)
    periods = response.context["periods"]
    assert periods["day"].training_games == len(new) and periods["day"].rating_games == 2
    assert periods["week"].rows == sum(g.rows for g in new)
    assert periods["all"].training_games == len(selfplay_games) and periods["all"].rows == sum(
        g.metadata["rows"] for g in selfplay_games)
    games = response.context["page"].object_list
    assert len(games) == len(selfplay_games) and {g.user.username for g in games} == {"alice"}
    assert "being counted" in _text(response)
    missing = web.get("/contributors/nobody/")
    assert missing.status_code == 404 and "there is no contributor named 'nobody'" in _text(missing)


def test_counts_of_finished_days_match_the_games(run, alice, bob, selfplay_games):
    """The counted days plus the live games give the same totals as counting every game."""
    from django.db.models import Count, Q, Sum

    from server.dashboard import tallies
    from server.games.models import TrainingGame

    for k, game in enumerate(helpers.store_training_games(run, alice[0], selfplay_games)):
        _age([game], [0.01, 0.6, 1.3, 2.5, 6.8, 9.0][k % 6])
    for k, game in enumerate(helpers.store_training_games(run, bob[0], selfplay_games[:4])):
        _age([game], [0.2, 1.1, 3.7, 8.2][k])
    TrainingGame.objects.filter(pk=TrainingGame.objects.order_by("id").first().pk).update(disabled=True)
    state = tallies.tally_state(run)
    assert state.days_through is not None
    now = timezone.now()
    for since in (None, now - timedelta(hours=1), now - timedelta(days=1), now - timedelta(days=3.3),
                  now - timedelta(days=7), now - timedelta(days=30)):
        span = Q() if since is None else Q(created_at__gte=since)
        expected = {u: (n, r) for u, n, r in TrainingGame.objects.filter(span, disabled=False).values_list("user_id")
                    .annotate(n=Count("id"), r=Sum("rows")).order_by()}
        got = {u: (c.training_games, c.rows) for u, c in tallies.per_user(run, since).items()}
        assert got == expected, since
        total = tallies.totals(run, since)
        assert (total.training_games, total.rows) == (sum(n for n, _ in expected.values()),
                                                      sum(r for _, r in expected.values()))
    assert tallies.per_user(run, None, user=bob[0]).keys() == {bob[0].pk}


def test_days_counted_in_steps_add_up_to_counting_them_at_once(run, alice, bob, selfplay_games):
    from server.dashboard import tallies
    from server.dashboard.models import ContributionTotal, RunTally

    for k, game in enumerate(helpers.store_training_games(run, alice[0], selfplay_games)):
        _age([game], 1.5 + 2 * k)
    _age(helpers.store_training_games(run, bob[0], selfplay_games[:2]), 4.5)
    today = timezone.now().date()
    state = RunTally.objects.create(run=run)
    tallies.count_days(run, state, today - timedelta(days=5))
    tallies.count_days(run, state, today - timedelta(days=3))
    tallies.count_days(run, state, (timezone.now() - tallies.SETTLE).date())  # every day that is over
    stepwise = set(ContributionTotal.objects.values_list("user_id", "training_games", "rows", "rating_games"))
    sums = (state.training_games, state.rows)
    tallies.rebuild(run)
    assert set(ContributionTotal.objects.values_list("user_id", "training_games", "rows", "rating_games")) == stepwise
    state.refresh_from_db()
    assert (state.training_games, state.rows) == sums and state.days_through == tallies.tally_state(run).days_through
    assert sums == (len(selfplay_games) + 2, sum(g.metadata["rows"] for g in selfplay_games + selfplay_games[:2]))


def test_training_window_share_is_counted_in_the_background(web, run, alice, bob, selfplay_games,
                                                            django_capture_on_commit_callbacks):
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
    response = _queries(django_assert_num_queries, web, "/releases/", 2)
    released = [n for n in networks if n.released]
    listed = [n.name for n in response.context["page"].object_list]
    assert listed == [n.name for n in sorted(released, key=lambda n: n.created_at, reverse=True)]
    html, text = _html(response), _text(response)
    n5 = networks[5]
    assert listed[0] == n5.name and len(listed) == 3
    assert f'href="/api/v1/networks/{n5.name}/file"' in html and n5.sha256 in text
    assert "Elo 500 ± 29" in text and "4.0 MB" in text
    # the engine's command (tests/e2e/test_gtp_network.py runs it); KaTrain needs KataGo's analysis engine
    assert ".venv/bin/python -m client gtp --model FILE.safetensors The engine searches 400 visits" in text
    assert "Sabaki" in text and "Lizzie" in text and "KaTrain cannot use this engine" in text
    assert networks[2].name not in listed


def test_releases_page_with_none(web, db):
    assert "No network is released yet" in _text(web.get("/releases/"))


def test_data_page_lists_the_daily_archives(web, run, django_assert_num_queries):
    from datetime import date

    from server.operations.models import DataExport

    assert "No archive yet" in _text(web.get("/data/"))
    for day in (date(2026, 1, 2), date(2026, 1, 3)):
        for kind in ("sgf", "npz"):
            DataExport.objects.create(run=run, day=day, kind=kind, file=f"exports/test/{day}-{kind}", size_bytes=2048,
                                      sha256="ab" * 32, games=7)
    response = _queries(django_assert_num_queries, web, "/data/", 2)
    text, html = _text(response), _html(response)
    assert text.index("2026-01-03") < text.index("2026-01-02")  # newest first
    export = DataExport.objects.get(day=date(2026, 1, 3), kind="npz")
    assert f'href="/api/v1/exports/{export.pk}/file"' in html and "test-2026-01-03-npz.tar" in text
    assert "2.0 kB" in text


def test_getting_started_fills_in_the_server_and_the_user(web, alice):
    anonymous = _text(web.get("/start/"))
    assert "client contribute --server http://testserver/ --username YOUR_NAME" in anonymous
    web.force_login(alice[0])
    mine = _text(web.get("/start/"))
    assert "client contribute --server http://testserver/ --username alice" in mine


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
    with django_assert_num_queries(3):  # session, user, tokens
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
        list(ClientToken.objects.values_list("name", "key_prefix", "key_hash")))


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
    for href in ("/networks/", "/elo/", "/games/", "/contributors/", "/releases/", "/start/", "/accounts/tokens/",
                 "/contributors/alice/"):
        assert f'href="{href}"' in html
