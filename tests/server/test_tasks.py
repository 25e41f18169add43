"""``POST /api/v1/tasks/``: self-play and rating tasks, the task ledger, and the refusals (version,
build, limits, no run, no work); ``PATCH /api/v1/tasks/``: games given up."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from rest_framework.test import APIClient

from common import __version__
from server.api.errors import from_refusal
from server.distribution.models import Task
from server.distribution.services import give_up_games, issue_task
from server.distribution.task_request import TaskRequestValues
from server.networks.models import Network
from server.refusals import ClientTooOld, Unavailable
from server.runs.models import create_run
from tests.server import helpers
from tests.server.conftest import api_error as _error
from tests.server.conftest import new_task


def _request(client, **changes):
    body = {"client_version": __version__, "client_instance_id": "machine-1", "kinds": ["selfplay"], "games": 4}
    body.update(changes)
    body = {k: v for k, v in body.items() if v is not None}
    return client.post("/api/v1/tasks/", body, format="json")


def _network(run, name: str, minutes_ago: int = 0, **fields):
    return Network.objects.create(
        name=name, run=run, created_at=timezone.now() - timedelta(minutes=minutes_ago), **fields
    )


def _age_random(run) -> None:
    """Make the run's random network a day old, older than the networks a test makes."""
    run.networks.filter(is_random=True).update(created_at=timezone.now() - timedelta(days=1))


def _with_settings(run, **gating):
    document = helpers.SETTINGS.to_dict()
    document["gating"].update(gating)
    return run.set_settings(document)


def test_a_task_names_the_networks_its_games_are_played_by():
    a, b = Network(name="a"), Network(name="b")
    assert Task(kind=Task.Kind.SELFPLAY, network=a).networks() == [a]
    assert Task(kind=Task.Kind.RATING, network_a=a, network_b=b).networks() == [a, b]
    with pytest.raises(ValueError, match="lacks a network"):
        Task(kind=Task.Kind.RATING, network_a=a).networks()


# --- self-play tasks ---------------------------------------------------------------------------------
def test_selfplay_task(run, alice):
    """A self-play task names the run's random network, carries the full settings document and its
    version, the games, an expiry six hours on and the upload URL."""
    before = timezone.now()
    task = new_task(alice[1], games=4)
    assert task["kind"] == "selfplay"
    assert task["run"] == run.name
    assert task["network"] == helpers.random_network_ref(run.name)
    assert "networks" not in task
    assert task["settings"] == helpers.SETTINGS.to_dict()
    assert task["settings_version"] == 1
    assert task["games"] == 4
    expires = parse_datetime(task["expires_at"])
    created = parse_datetime(task["created_at"])
    assert before - timedelta(seconds=1) <= created <= timezone.now()
    assert expires - created == timedelta(hours=6)
    assert task["upload_url"].endswith("/api/v1/games/training/")
    assert task["upload_url"].startswith("http")


def test_task_is_recorded(run, alice):
    """Every task handed out is a row: user, kind, network, settings version, games, client version and id."""
    user, client = alice
    body = new_task(client, games=7, version="0.1.0")
    task = Task.objects.get(pk=body["id"])
    assert task.user == user
    assert task.run == run
    assert task.kind == "selfplay"
    assert task.network.name == f"{run.name}-random"
    assert task.network_a is None and task.network_b is None
    assert task.settings_version == run.current_settings()
    assert task.games == 7
    assert task.games_received == 0
    assert task.client_version == "0.1.0"
    assert task.client_instance_id == "machine-1"
    assert parse_datetime(body["expires_at"]) == task.expires_at


def test_each_request_is_a_new_task(run, alice, bob):
    """Each request makes its own task, recorded for the user who asked."""
    ids = {new_task(alice[1])["id"], new_task(alice[1])["id"], new_task(bob[1])["id"]}
    assert len(ids) == 3
    assert Task.objects.filter(user=alice[0]).count() == 2
    assert Task.objects.filter(user=bob[0]).count() == 1


def test_default_kinds_and_games(run, alice):
    """Without kinds and games a client gets one self-play game (no rating games are due)."""
    response = alice[1].post(
        "/api/v1/tasks/", {"client_version": __version__, "client_instance_id": "m"}, format="json"
    )
    assert response.status_code == 201, response.content
    assert response.json()["kind"] == "selfplay"
    assert response.json()["games"] == 1


def test_task_uses_the_newest_settings(run, alice):
    """After a settings change, tasks carry the new document and version."""
    document = helpers.SETTINGS.to_dict()
    document["selfplay"]["visits"] = 20
    run.set_settings(document)
    task = new_task(alice[1])
    assert task["settings_version"] == 2
    assert task["settings"]["selfplay"]["visits"] == 20


def test_task_uses_an_uploaded_network(run, alice, trainer):
    """A trainer's network is a candidate: self-play keeps the accepted network until it passes its
    gating; then new tasks name it, with a URL that downloads the file."""
    from server.networks.models import Network
    from server.ratings.promotion import staff_decision

    data = helpers.network_file("tasknet")
    _, trainer_client = trainer
    response = trainer_client.post(
        "/api/v1/networks/",
        {
            "name": "tasknet",
            "run": run.name,
            "train_step": 10,
            "rows_seen": 10,
            "file": SimpleUploadedFile("tasknet.safetensors", data),
        },
        format="multipart",
    )
    assert response.status_code == 201, response.content
    assert new_task(alice[1])["network"]["name"] == helpers.RANDOM_NET
    staff_decision(Network.objects.get(name="tasknet"), "accept", note="the test passes it")
    task = new_task(alice[1])
    network = task["network"]
    assert network["name"] == "tasknet"
    assert network["is_random"] is False
    assert network["sha256"] == hashlib.sha256(data).hexdigest()
    assert network["bytes"] == len(data)
    assert network["url"].endswith("/api/v1/networks/tasknet/file")
    assert network["public_url"] is None  # no public download base: the server's alone
    download = APIClient().get(network["url"])
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == data
    assert Task.objects.get(pk=task["id"]).network.name == "tasknet"
    # With a public download base (a bucket behind a CDN), the task names the file there too, by its
    # content-addressed storage name, which no other content ever takes; the server's stays beside it.
    with override_settings(SENTE_FILES_PUBLIC_URL="https://cdn.example.org/sente/"):
        network = new_task(alice[1])["network"]
        sha256 = hashlib.sha256(data).hexdigest()
        assert network["public_url"] == (
            f"https://cdn.example.org/sente/networks/{sha256[:2]}/{sha256[2:4]}/{sha256}.safetensors"
        )
        assert network["url"].endswith("/api/v1/networks/tasknet/file")
        assert APIClient().get("/api/v1/runs/current/").json()["network"]["public_url"] == network["public_url"]
        random = Network.objects.get(name=helpers.RANDOM_NET)
        from server.networks.serializers import network_ref

        assert network_ref(random, None)["public_url"] is None and network_ref(random, None)["url"] is None


@pytest.mark.parametrize(
    "value, problem",
    [
        ("cdn.example.org/sente", "http:// or https://"),
        ("ftp://cdn.example.org/", "http:// or https://"),
        ("https:///sente/", "with a host"),
        ("https://cdn.example.org/sente/?token=1", "no query"),
    ],
)
def test_a_bad_public_download_base_is_refused_at_start(monkeypatch, value, problem):
    from django.core.exceptions import ImproperlyConfigured

    from server import settings as server_settings

    monkeypatch.setenv("SENTE_FILES_PUBLIC_URL", value)
    with pytest.raises(ImproperlyConfigured, match=re.escape(f"SENTE_FILES_PUBLIC_URL {value!r}") + f".*{problem}"):
        server_settings._files_public_url()
    monkeypatch.setenv("SENTE_FILES_PUBLIC_URL", "https://cdn.example.org/sente")
    assert server_settings._files_public_url() == "https://cdn.example.org/sente/"
    monkeypatch.setenv("SENTE_FILES_PUBLIC_URL", " ")
    assert server_settings._files_public_url() == ""


def test_task_skips_rejected_and_retired_networks(run, alice):
    """Self-play uses the newest accepted network: not a rejected or retired one, nor a candidate
    still to pass its gating."""
    _age_random(run)
    _network(run, "good", 30, state="accepted")
    _network(run, "retired", 20, state="retired")
    _network(run, "rejected", 10, state="rejected")
    assert new_task(alice[1])["network"]["name"] == "good"
    _network(run, "fresh", 0, state="candidate")
    _network(run, "gating", 0, state="rating")
    assert new_task(alice[1])["network"]["name"] == "good"


def test_task_from_the_current_run(run, alice):
    """Tasks come from the newest active run."""
    create_run("newer", {})
    task = new_task(alice[1])
    assert task["run"] == "newer"
    assert task["network"]["name"] == "newer-random"


# --- refusals -----------------------------------------------------------------------------------------
def test_unauthenticated(run):
    """A task request without credentials gets 401 and records nothing."""
    response = _request(APIClient())
    assert response.status_code == 401
    _error(response)
    assert Task.objects.count() == 0


def test_old_client_must_upgrade(run, alice):
    """A client older than the run's minimum version gets 426 upgrade_required naming the version needed."""
    run.min_client_version = "0.2.0"
    run.save()
    response = _request(alice[1], client_version="0.1.9")
    assert response.status_code == 426
    error = _error(response)
    assert error["code"] == "upgrade_required"
    assert error["min_client_version"] == "0.2.0"
    assert "0.2.0" in error["message"]
    assert Task.objects.count() == 0
    # the minimum itself and newer versions are fine (compared as numbers, not text)
    assert _request(alice[1], client_version="0.2").status_code == 201
    assert _request(alice[1], client_version="0.10.0").status_code == 201


BUILD_A, BUILD_B = "0123456789abcdef", "fedcba9876543210"


def test_the_run_takes_a_range_of_versions_and_a_list_of_builds(run, alice):
    """A client newer than the run's newest version, or of a build not on the run's list, gets 426
    upgrade_required saying what the run takes; the task records the build it was given to."""
    run.max_client_version = "0.3"
    run.save()
    response = _request(alice[1], client_version="0.3.1")
    assert response.status_code == 426
    error = _error(response)
    assert error["code"] == "upgrade_required" and "0.3" in error["message"] and "newer" in error["message"]
    assert (error["min_client_version"], error["max_client_version"], error["client_builds"]) == (
        __version__,
        "0.3",
        [],
    )
    assert _request(alice[1], client_version="0.3.0", client_build=BUILD_B).status_code == 201
    run.client_builds = [BUILD_A]
    run.save()
    for build in (BUILD_B, None):
        response = _request(alice[1], client_build=build)
        assert response.status_code == 426, response.content
        error = _error(response)
        assert BUILD_A in error["message"] and "upgrade" in error["message"] and error["client_builds"] == [BUILD_A]
    response = _request(alice[1], client_build=BUILD_A)
    assert response.status_code == 201, response.content
    assert Task.objects.get(pk=response.json()["id"]).client_build == BUILD_A
    assert Task.objects.count() == 2


def test_a_game_of_a_client_the_run_no_longer_takes_is_refused(run, alice, selfplay_games):
    """A game uploaded for a task of a build the run took then but no longer takes: 426, nothing
    stored; once the run takes the build again, the same game is stored."""
    from server.games.models import TrainingGame, UploadRefusal
    from tests.server.helpers import upload_fields

    response = _request(alice[1], client_build=BUILD_B, games=2)
    task = response.json()
    run.client_builds = [BUILD_A]
    run.save()
    fields = upload_fields(task["id"], selfplay_games[0])
    response = alice[1].post("/api/v1/games/training/", fields, format="multipart")
    assert response.status_code == 426, response.content
    error = _error(response)
    assert error["code"] == "upgrade_required" and error["field"] == "task" and BUILD_B in error["message"]
    assert TrainingGame.objects.count() == 0 and UploadRefusal.objects.get().code == "upgrade_required"
    run.client_builds = [BUILD_A, BUILD_B]
    run.save()
    fields = upload_fields(task["id"], selfplay_games[0])
    assert alice[1].post("/api/v1/games/training/", fields, format="multipart").status_code == 201


@pytest.mark.parametrize("version", ["latest", "1", "1.2.3.4", "v0.1.0", ""])
def test_malformed_client_version(run, alice, version):
    """A client version that is not MAJOR.MINOR[.PATCH] gets 400 naming client_version."""
    response = _request(alice[1], client_version=version)
    assert response.status_code == 400
    assert _error(response)["field"] == "client_version"


def test_an_instance_id_with_a_final_line_break_is_kept_without_it(run, alice):
    response = _request(alice[1], client_instance_id="machine-1\n")
    assert response.status_code == 201
    assert Task.objects.get(pk=response.json()["id"]).client_instance_id == "machine-1"


@pytest.mark.parametrize("instance", ["", "has space", "x" * 65, "slash/id"])
def test_malformed_instance_id(run, alice, instance):
    """A bad client instance id gets 400 naming client_instance_id."""
    response = _request(alice[1], client_instance_id=instance)
    assert response.status_code == 400
    assert _error(response)["field"] == "client_instance_id"


def test_the_machine_a_client_names_is_kept_with_its_task_and_a_bad_one_is_named(run, alice):
    machine = {"name": "alice-desktop", "device": "NVIDIA GeForce RTX 3060", "evals_per_second": 5120.5}
    response = _request(alice[1], machine=machine)
    assert response.status_code == 201
    task = Task.objects.get(pk=response.json()["id"])
    assert (task.machine_name, task.device_model, task.evals_per_second) == (
        "alice-desktop",
        "NVIDIA GeForce RTX 3060",
        5120.5,
    )
    assert _request(alice[1]).status_code == 201  # an older client names none
    for bad, field in (
        ({"evals_per_second": 1e12}, "machine.evals_per_second"),
        ({"name": "<b>" * 30}, "machine.name"),
        ({"device": "RTX\r\nSet-Cookie: x"}, "machine.device"),
    ):
        response = _request(alice[1], machine=bad)
        assert response.status_code == 400 and _error(response)["field"] == field, response.json()
    assert Task.objects.count() == 2  # nothing of the refused requests was kept


def test_too_many_games(run, alice):
    """More games than SENTE_LIMITS["games_per_task"] gets 400 naming games; the limit itself is fine."""
    most = django_settings.SENTE_LIMITS["games_per_task"]
    response = _request(alice[1], games=most + 1)
    assert response.status_code == 400
    error = _error(response)
    assert error["field"] == "games"
    assert str(most) in error["message"]
    assert _request(alice[1], games=most).status_code == 201
    with override_settings(SENTE_LIMITS={**django_settings.SENTE_LIMITS, "games_per_task": 3}):
        assert _request(alice[1], games=4).status_code == 400
        assert _request(alice[1], games=3).status_code == 201


@pytest.mark.parametrize("games", [0, -1, "many"])
def test_bad_games(run, alice, games):
    """Zero, negative or non-numeric games get 400 naming games."""
    response = _request(alice[1], games=games)
    assert response.status_code == 400
    assert _error(response)["field"] == "games"


@pytest.mark.parametrize("kinds", [["training"], ["selfplay", "bogus"], [], "selfplay"])
def test_bad_kinds(run, alice, kinds):
    """An unknown kind, an empty list or a non-list gets 400 naming kinds."""
    response = _request(alice[1], kinds=kinds)
    assert response.status_code == 400
    assert _error(response)["field"].startswith("kinds")
    assert Task.objects.count() == 0


def test_no_active_run(db, alice):
    """With no active run a task request gets 503 no_run."""
    response = _request(alice[1])
    assert response.status_code == 503
    assert _error(response)["code"] == "no_run"


def test_paused_run_gives_no_work(run, alice):
    """A paused run hands out no tasks."""
    run.status = "paused"
    run.save()
    response = _request(alice[1])
    assert response.status_code == 503
    assert _error(response)["code"] == "no_run"


# --- rating tasks --------------------------------------------------------------------------------------
def test_rating_only_with_just_the_random_network(run, alice):
    """Asking only for rating games while the run has only its random network gets 503 no_work."""
    response = _request(alice[1], kinds=["rating"])
    assert response.status_code == 503
    assert _error(response)["code"] == "no_work"
    assert Task.objects.count() == 0


def test_rating_task_with_an_uploaded_network(run, alice, trainer):
    """With a second network, a rating-only request gets a rating task with both networks."""
    _, trainer_client = trainer
    data = helpers.network_file("rated")
    response = trainer_client.post(
        "/api/v1/networks/",
        {
            "name": "rated",
            "run": run.name,
            "parent": f"{run.name}-random",
            "file": SimpleUploadedFile("rated.safetensors", data),
        },
        format="multipart",
    )
    assert response.status_code == 201, response.content
    task = new_task(alice[1], kinds=("rating",), games=2)
    assert task["kind"] == "rating"
    assert "network" not in task
    names = {n["name"] for n in task["networks"]}
    assert names == {"rated", f"{run.name}-random"}
    by_name = {n["name"]: n for n in task["networks"]}
    assert by_name["rated"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert by_name["rated"]["url"].endswith("/api/v1/networks/rated/file")
    assert by_name[f"{run.name}-random"]["is_random"] is True
    assert task["upload_url"].endswith("/api/v1/games/rating/")
    assert task["games"] == 2
    assert task["settings"] == helpers.SETTINGS.to_dict()
    row = Task.objects.get(pk=task["id"])
    assert row.kind == "rating"
    assert row.network is None
    assert {row.network_a.name, row.network_b.name} == names
    big = new_task(alice[1], kinds=("rating",), games=256)  # a match is spread over many clients
    assert big["games"] == helpers.SETTINGS.gating.rating_task_games == 16


def test_rating_games_go_to_the_candidate_under_gating_first(run, alice):
    """The oldest candidate starts its gating against the accepted network and gets every rating
    game, colours balanced, until its gating settles; the newer candidate waits."""
    from server.ratings.models import Gating, NetworkEvent

    _age_random(run)
    random_net = run.networks.get(is_random=True)
    assert APIClient().get("/api/v1/runs/current/").json()["gating"] is False
    older = _network(run, "cand-old", 20, parent=random_net)
    _network(run, "cand-new", 10, parent=older)
    assert APIClient().get("/api/v1/runs/current/").json()["gating"] is True  # clients ask for rating
    firsts = []
    for _ in range(4):
        task = new_task(alice[1], kinds=("rating",), games=1)
        assert {n["name"] for n in task["networks"]} == {"cand-old", random_net.name}
        firsts.append(task["networks"][0]["name"])
    assert sorted(firsts) == sorted(["cand-old", random_net.name] * 2)  # black first as often as white
    older.refresh_from_db()
    gating = Gating.objects.get(candidate=older)
    assert older.state == "rating" and gating.opponent == random_net and gating.decision == "continue"
    assert Network.objects.get(name="cand-new").state == "candidate"
    assert NetworkEvent.objects.filter(network=older, kind="gating_started").count() == 1
    from server.ratings.promotion import staff_decision

    for name in ("cand-old", "cand-new"):
        staff_decision(Network.objects.get(name=name), "reject", note="rejected for the test")
    assert APIClient().get("/api/v1/runs/current/").json()["gating"] is False


def test_without_a_candidate_rating_games_go_where_they_tell_the_most(run):
    """Networks with wide error bars are chosen more often, and opponents near them in strength."""
    import random

    from server.ratings.models import Rating
    from server.ratings.scheduling import choose_pair

    _age_random(run)
    random_net = run.networks.get(is_random=True)
    near = _network(run, "near", 30, state="accepted")
    far = _network(run, "far", 20, state="accepted")
    vague = _network(run, "vague", 10, state="accepted")
    Rating.objects.bulk_create(
        [
            Rating(network=random_net, elo=0.0, elo_se=0.0, games=500),
            Rating(network=near, elo=420.0, elo_se=20.0, games=500),
            Rating(network=far, elo=1200.0, elo_se=20.0, games=500),
            Rating(network=vague, elo=450.0, elo_se=150.0, games=10),
        ]
    )
    rng = random.Random(1)
    pairs = [frozenset(n.name for n in choose_pair(run, rng)) for _ in range(150)]
    with_vague = [p for p in pairs if "vague" in p]
    assert len(with_vague) > 0.8 * len(pairs)
    # p(1 - p) against near (30 Elo apart) is 0.25, against the random network 0.07, against far 0.01.
    assert sum(p == {"vague", "near"} for p in with_vague) > 0.65 * len(with_vague)
    assert sum(p == {"vague", "far"} for p in with_vague) < sum(p == {"vague", random_net.name} for p in with_vague)


def test_rating_share_follows_the_settings(run, alice):
    """With both kinds, gating.rating_game_prob decides: 1 gives rating tasks, 0 self-play tasks."""
    _network(run, "second-net", 0)
    _with_settings(run, rating_game_prob=1.0)
    for _ in range(3):
        task = new_task(alice[1], kinds=("selfplay", "rating"))
        assert task["kind"] == "rating"
        assert task["settings_version"] == 2
    _with_settings(run, rating_game_prob=0.0)
    for _ in range(3):
        assert new_task(alice[1], kinds=("selfplay", "rating"))["kind"] == "selfplay"


def test_rating_preferred_but_none_due_falls_back_to_selfplay(run, alice):
    """With both kinds and rating_game_prob 1 but no pair to rate, the client gets self-play."""
    _with_settings(run, rating_game_prob=1.0)
    assert new_task(alice[1], kinds=("selfplay", "rating"))["kind"] == "selfplay"


def test_selfplay_only_never_gets_rating(run, alice):
    """A client asking only for self-play never gets a rating task, whatever the settings say."""
    _network(run, "other-net", 0)
    _with_settings(run, rating_game_prob=1.0)
    for _ in range(3):
        assert new_task(alice[1], kinds=("selfplay",))["kind"] == "selfplay"


# --- games given up ------------------------------------------------------------------------------------
def _give_up(client, **games):
    return client.patch("/api/v1/tasks/", {"tasks": [{"id": t, "games": n} for t, n in games.items()]}, format="json")


def test_games_given_up_leave_the_ledger_and_its_metrics(run, alice, bob, selfplay_games, settings):
    """A client gives up the games of its tasks it will not play: each task then owes only the games
    the client will still deliver (never fewer than it received), and the metrics of open tasks say
    so. Another user's task is no task of yours; giving up is not throttled like task requests."""
    from server.operations.metrics import render
    from tests.server.helpers import upload_fields
    from tests.server.test_operations import metric

    def owed() -> tuple[float | None, float | None]:
        text = render().decode()
        return (
            metric(text, "sente_open_tasks", run="test", kind="selfplay"),
            metric(text, "sente_open_task_games", run="test", kind="selfplay"),
        )

    settings.SENTE_METRICS_SECONDS = 0
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "tasks": "3/min"},
    }
    first, second, third = (new_task(alice[1], games=g)["id"] for g in (100, 50, 10))
    theirs = new_task(bob[1], games=5)["id"]
    fields = upload_fields(first, selfplay_games[0])
    assert alice[1].post("/api/v1/games/training/", fields, format="multipart").status_code == 201
    assert owed() == (4, 164)
    response = _give_up(alice[1], **{first: 0, second: 20, third: 10, theirs: 0})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["given_up"] == 99 + 30 and body["unknown"] == [theirs]
    assert {t["id"]: (t["games"], t["games_received"]) for t in body["tasks"]} == {
        first: (1, 1),
        second: (20, 0),
        third: (10, 0),
    }
    assert Task.objects.get(pk=first).games == 1 and Task.objects.get(pk=theirs).games == 5
    assert owed() == (3, 35)  # bob's 5, alice's 20 and 10; the first task has all its games
    # Never more games than a task had, and again as often as needed: the smallest count wins.
    assert _give_up(alice[1], **{second: 30}).json()["given_up"] == 0
    assert _give_up(alice[1], **{second: 5}).json()["given_up"] == 15
    assert _request(alice[1]).status_code == 429  # the fourth task request of the minute


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "tasks"),
        ({"tasks": []}, "tasks"),
        ({"tasks": [{"id": "nope", "games": 1}]}, "tasks.0.id"),
        ({"tasks": [{"id": "0d6a8c29-38b4-4c3b-9a43-d0c7b7c5b0a1", "games": -1}]}, "tasks.0.games"),
    ],
)
def test_a_bad_give_up_names_the_field(run, alice, body, field):
    response = alice[1].patch("/api/v1/tasks/", body, format="json")
    assert response.status_code == 400
    assert _error(response)["field"] == field


@pytest.mark.parametrize(
    "body",
    [
        {"client_version": "0.1.0", "client_instance_id": "a", "kinds": ["selfplay"], "games": 3},
        {"client_version": "0.1.0", "client_build": "0123456789abcdef", "client_instance_id": "a"},
        {"client_version": "0.1.0", "client_build": "", "client_instance_id": "a"},
        {"client_version": "0.1.0", "client_build": "0123456789ABCDEF", "client_instance_id": "a"},
        {"client_version": "0.1.0", "client_build": "0123456789abcdef0", "client_instance_id": "a"},
        {"client_version": "0.1.0", "client_build": 12, "client_instance_id": "a"},
        {"client_version": "0.1", "client_instance_id": "m:1.x-y_z"},
        {"client_version": "0.1.0", "client_instance_id": "a", "kinds": ["rating", "selfplay"], "games": 256},
        {"client_version": "0.1.0", "client_instance_id": "a", "games": 257},
        {"client_version": "0.1.0", "client_instance_id": "a", "games": 0},
        {"client_version": "0.1.0", "client_instance_id": "a", "games": True},
        {"client_version": "0.1.0", "client_instance_id": "a", "games": "3"},
        {"client_version": "0.1.0", "client_instance_id": "a", "kinds": []},
        {"client_version": "0.1.0", "client_instance_id": "a", "kinds": ["training"]},
        {"client_version": "0.1.0", "client_instance_id": "a", "kinds": "selfplay"},
        {"client_version": "1", "client_instance_id": "a"},
        {"client_version": "0.1.0" * 4, "client_instance_id": "a"},
        {"client_version": "0.1.0", "client_instance_id": "with space"},
        {"client_version": "0.1.0", "client_instance_id": "x" * 65},
        {"client_version": "0.1.0"},
        {"client_version": "0.1.0", "client_instance_id": "a", "extra": 1},
        ["not", "a", "dict"],
        {"client_version": "0.1.0", "client_instance_id": "a", "machine": {"name": "box", "device": "RTX 3060"}},
        {"client_version": "0.1.0", "client_instance_id": "a", "machine": {"evals_per_second": 4200.5}},
        {"client_version": "0.1.0", "client_instance_id": "a", "machine": {"evals_per_second": 0}},
        {"client_version": "0.1.0", "client_instance_id": "a", "machine": {"evals_per_second": None}},
        {"client_version": "0.1.0", "client_instance_id": "a", "machine": {}},
        {"client_version": "0.1.0", "client_instance_id": "a", "machine": {"name": "x" * 64}},
        {"client_version": "0.1.0", "client_instance_id": "a", "machine": {"name": "x" * 65}},
        {"client_version": "0.1.0", "client_instance_id": "a", "machine": {"name": " box ", "device": "RTX "}},
        {"client_version": "0.1.0", "client_instance_id": "a", "machine": {"name": "line\nbreak"}},
        {"client_version": "0.1.0", "client_instance_id": "a", "machine": {"device": "nul\x00"}},
        {"client_version": "0.1.0", "client_instance_id": "a", "machine": {"device": 3060}},
        {"client_version": "0.1.0", "client_instance_id": "a", "machine": {"evals_per_second": -1}},
        {"client_version": "0.1.0", "client_instance_id": "a", "machine": {"evals_per_second": 1e9}},
        {"client_version": "0.1.0", "client_instance_id": "a", "machine": {"evals_per_second": float("nan")}},
        {"client_version": "0.1.0", "client_instance_id": "a", "machine": {"evals_per_second": True}},
        {"client_version": "0.1.0", "client_instance_id": "a", "machine": {"evals_per_second": "fast"}},
        {"client_version": "0.1.0", "client_instance_id": "a", "machine": {"owner": "bob"}},
        {"client_version": "0.1.0", "client_instance_id": "a", "machine": "box"},
    ],
)
def test_the_plain_path_agrees_with_the_serializer(db, body):
    """The fast check of task requests takes only what the serializer takes, and gives the same values;
    reading a request gives the serializer's values or its refusal."""
    from rest_framework.exceptions import ValidationError

    from server.distribution.task_request import TaskRequest, plain_task_request, read_task_request

    plain = plain_task_request(body)
    serializer = TaskRequest(data=body)
    if not serializer.is_valid():
        assert plain is None
        with pytest.raises(ValidationError):
            read_task_request(body)
        return
    v = serializer.validated_data
    machine = v.get("machine") or {}
    expected = (
        v["client_version"],
        v["client_build"],
        v["client_instance_id"],
        tuple(v["kinds"]),
        v["games"],
        machine.get("name", ""),
        machine.get("device", ""),
        machine.get("evals_per_second"),
    )
    for values in (plain, read_task_request(body)):
        if values is not None:
            read = (
                values.client_version,
                values.client_build,
                values.client_instance_id,
                values.kinds,
                values.games,
                values.machine_name,
                values.device_model,
                values.evals_per_second,
            )
            assert read == expected


# --- the services, without HTTP ------------------------------------------------------------------
def _values(**changes) -> TaskRequestValues:
    fields = {
        "client_version": __version__,
        "client_build": "",
        "client_instance_id": "machine-1",
        "kinds": ("selfplay",),
        "games": 4,
    }
    return TaskRequestValues(**{**fields, **changes})


def test_issue_task_records_a_selfplay_task(run, alice):
    """issue_task stores the task it returns, with the request's values and the run's network."""
    task = issue_task(alice[0], _values(client_instance_id="m-2"))
    stored = Task.objects.get(pk=task.pk)
    assert (stored.kind, stored.user, stored.run, stored.network) == ("selfplay", alice[0], run, run.networks.get())
    assert (stored.games, stored.games_received, stored.client_instance_id) == (4, 0, "m-2")
    assert stored.expires_at == task.expires_at


def test_issue_task_refusals(run, alice):
    """An old client gets 426, a rating-only request with nothing to rate 503."""
    with pytest.raises(ClientTooOld) as old:
        issue_task(alice[0], _values(client_version="0.0.1"))
    assert (from_refusal(old.value).status_code, old.value.code) == (426, "upgrade_required")
    with pytest.raises(Unavailable) as none:
        issue_task(alice[0], _values(kinds=("rating",)))
    assert (from_refusal(none.value).status_code, none.value.code) == (503, "no_work")
    assert not Task.objects.exists()


def test_give_up_games(run, alice, bob):
    """Each of the user's tasks keeps the smallest count asked for it; others' tasks are unknown."""
    mine, theirs = issue_task(alice[0], _values(games=10)), issue_task(bob[0], _values(games=10))
    done = give_up_games(alice[0], [(mine.pk, 6), (mine.pk, 3), (theirs.pk, 1)])
    assert done.given_up == 7
    assert done.tasks == [{"id": str(mine.pk), "games": 3, "games_received": 0}]
    assert done.unknown == [str(theirs.pk)]
    assert Task.objects.get(pk=theirs.pk).games == 10
