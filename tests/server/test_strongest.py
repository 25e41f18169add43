"""The stable links to a run's strongest network and to the newest release: the pick (the lower end
of the 95% interval, enough games, ties, what is never picked), the API, the files with their ETags,
the pages that show them, and the names they keep from networks."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from tests.server import helpers

pytestmark = pytest.mark.django_db


def _network(run, name: str, elo: float | None, se: float | None, games: int, minutes_ago: int = 0, **fields):
    """An accepted network with a file name and a rating (no file is stored)."""
    from server.networks.models import Network
    from server.ratings.models import Rating

    digest = (name.encode().hex() + "0" * 64)[:64]
    n = Network.objects.create(
        name=name,
        run=run,
        state=fields.pop("state", Network.State.ACCEPTED),
        file=f"networks/{digest}.safetensors",
        sha256=digest,
        size_bytes=1000,
        created_at=timezone.now() - timedelta(minutes=minutes_ago),
        **fields,
    )
    Rating.objects.create(network=n, elo=elo, elo_se=se, games=games)
    return n


def _min_games(run, games: int) -> None:
    document = helpers.SETTINGS.to_dict()
    document["gating"]["strongest_min_games"] = games
    run.set_settings(document)


def test_the_highest_lower_bound_wins_not_the_highest_elo(run):
    from server.networks.selectors import lower_bound, strongest

    _min_games(run, 25)
    _network(run, "lucky", 500.0, 100.0, 30, minutes_ago=3)  # 500 - 196 = 304
    sure = _network(run, "sure", 400.0, 20.0, 300, minutes_ago=2)  # 400 - 39.2 = 360.8
    _network(run, "few", 900.0, 10.0, 24, minutes_ago=1)  # one game short of the 25 needed
    assert strongest(run) == sure
    assert lower_bound(400.0, 20.0) == pytest.approx(360.8) and lower_bound(None, 3.0) is None
    assert strongest(run, min_games=24).name == "few"  # the setting decides


def test_ties_go_to_the_higher_elo_then_to_the_newer_network(run):
    from server.networks.selectors import strongest

    _min_games(run, 1)
    _network(run, "narrow", 100.0, 25.0, 50, minutes_ago=5)  # bound 100 - 49 = 51
    wide = _network(run, "wide", 149.0, 50.0, 50, minutes_ago=6)  # bound 149 - 98 = 51, higher Elo
    assert strongest(run) == wide
    _network(run, "twin-old", 149.0, 50.0, 50, minutes_ago=7)
    newer = _network(run, "twin-new", 149.0, 50.0, 50, minutes_ago=1)
    assert strongest(run) == newer  # the same bound and Elo as "wide": the newest of the three


def test_what_is_never_picked(run, db):
    from server.networks.models import Network
    from server.networks.selectors import newest_released, strongest
    from server.ratings.models import Rating
    from server.runs.models import create_run

    _min_games(run, 0)
    random_net = run.networks.get(is_random=True)
    Rating.objects.create(network=random_net, elo=5000.0, elo_se=1.0, games=1000)  # no file
    for state in (Network.State.CANDIDATE, Network.State.RATING, Network.State.REJECTED, Network.State.RETIRED):
        _network(run, f"n-{state}", 3000.0, 1.0, 1000, state=state, released=True)
    _network(run, "unconnected", None, None, 1000)  # not connected to the run's first network
    assert strongest(run) is None
    other = create_run("other-run", helpers.SETTINGS.to_dict())
    _network(other, "elsewhere", 10.0, 1.0, 1000)
    assert strongest(run) is None  # Elo is per run: another run's networks never count
    kept = _network(run, "kept", 1.0, 1.0, 1000)
    assert strongest(run) == kept
    assert newest_released(other) is None and newest_released(run).name == "n-retired"


def _store(run, trainer, name: str, seed: int, elo: float, released: bool = False):
    """A network uploaded as a trainer uploads it (so its file is stored), accepted and rated."""
    from server.networks.models import Network
    from server.ratings.models import Rating

    response = helpers.upload_network(trainer[1], name, helpers.network_file(name, seed=seed))
    assert response.status_code == 201, response.content
    Network.objects.filter(name=name).update(state=Network.State.ACCEPTED, released=released)
    Rating.objects.create(network=Network.objects.get(name=name), elo=elo, elo_se=10.0, games=100)
    return Network.objects.get(name=name)


def test_the_stable_links_follow_the_pick_with_etags(run, trainer):
    web = Client()
    first = _store(run, trainer, "first", 1, 100.0, released=True)
    response = web.get("/networks/strongest/file")
    body = helpers.content(response)
    assert response.status_code == 200 and body == first.file.open("rb").read()
    assert response["ETag"] == f'"{first.sha256}"' and response["X-Sente-Network"] == "first"
    assert "no-cache" in response["Cache-Control"] and "immutable" not in response["Cache-Control"]
    assert 'filename="first.safetensors"' in response["Content-Disposition"]
    again = web.get("/networks/strongest/file", HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304  # nothing new: a script keeps its copy

    second = _store(run, trainer, "second", 2, 300.0)
    moved = web.get("/networks/strongest/file", HTTP_IF_NONE_MATCH=response["ETag"])
    assert moved.status_code == 200 and moved["ETag"] == f'"{second.sha256}"' and moved["X-Sente-Network"] == "second"
    helpers.content(moved)
    released = web.get("/networks/released/file")  # "second" is not released: the newest release is "first"
    assert released["X-Sente-Network"] == "first"
    helpers.content(released)
    partial = web.get("/networks/strongest/file", HTTP_RANGE="bytes=0-9")
    assert partial.status_code == 206 and len(helpers.content(partial)) == 10
    assert web.get("/networks/strongest/").url == "/networks/second/"
    assert web.get(f"/networks/released/?run={run.name}").url == "/networks/first/"


def test_the_api_says_what_it_picked_and_why(run, trainer, client):
    from server.runs.models import create_run

    response = client.get("/api/v1/networks/strongest/")
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "no_network" and "25 rating games" in error["message"] and run.name in error["message"]
    assert client.get("/api/v1/networks/released/").json()["error"]["message"] == "no network is released yet"
    _store(run, trainer, "first", 1, 100.0, released=True)
    body = client.get("/api/v1/networks/strongest/").json()
    assert body["name"] == "first" and body["picked_as"] == "strongest" and body["min_games"] == 25
    assert body["elo_lower_bound"] == pytest.approx(100.0 - 19.6)
    assert body["file_url"].endswith("/api/v1/networks/first/file")
    released = client.get("/api/v1/networks/released/").json()
    assert released["name"] == "first" and released["picked_as"] == "released" and released["min_games"] is None
    missing = client.get("/api/v1/networks/strongest/?run=nope")
    assert missing.status_code == 404 and missing.json()["error"]["field"] == "run"
    create_run("empty-run", helpers.SETTINGS.to_dict())  # now the current run: it has no network with a file
    assert client.get("/api/v1/networks/strongest/").status_code == 404
    assert client.get(f"/api/v1/networks/strongest/?run={run.name}").json()["name"] == "first"
    assert client.get("/api/v1/networks/released/?run=empty-run").status_code == 404
    assert client.get("/api/v1/networks/released/").json()["name"] == "first"  # of any run
    assert Client().get("/networks/strongest/file").status_code == 404
    assert Client().get("/networks/strongest/").status_code == 404


@pytest.mark.parametrize("name", ["strongest", "Released"])
def test_no_network_takes_a_stable_links_name(run, trainer, name):
    from django.core.exceptions import ValidationError

    from server.networks.models import Network

    response = helpers.upload_network(trainer[1], name, helpers.network_file(name))
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["field"] == "name" and "stable link" in error["message"]
    assert not Network.objects.filter(name=name).exists()
    with pytest.raises(ValidationError, match="stable link"):
        Network(name=name, run=run).full_clean()


def test_the_front_page_and_the_releases_page_show_it(run, trainer):
    web = Client()
    assert "a network needs 25 rating games to be picked" in web.get("/").content.decode()
    _store(run, trainer, "first", 1, 100.0, released=True)
    home = web.get("/").content.decode()
    assert 'id="strongest"' in home and 'href="/networks/first/"' in home
    assert f'href="/networks/strongest/file?run={run.name}"' in home
    releases = web.get("/releases/").content.decode()
    assert "The strongest network of run" in releases and "http://testserver/networks/strongest/file" in releases
    assert "http://testserver/networks/released/file" in releases


def test_the_setting_is_checked():
    from common.settings import RunSettings, SettingsError

    with pytest.raises(SettingsError, match=r"gating\.strongest_min_games"):
        RunSettings.from_dict({"gating": {"strongest_min_games": -1}})
