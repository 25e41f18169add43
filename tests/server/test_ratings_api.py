"""Ratings in the database: the refit reads a run's rating games (summed per pair in SQL), stores every
network's Elo, error and games, and the API serves them for the Elo graph."""

from __future__ import annotations

import math
from datetime import timedelta

import numpy as np
import pytest
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from common.elo import ELO_PER_NAT
from tests.server import helpers

pytestmark = pytest.mark.django_db


def _lineage(run, count: int) -> list:
    """count networks after the random one, each the child of the one before."""
    from server.networks.models import Network

    networks = [run.networks.get(is_random=True)]
    for k in range(1, count + 1):
        networks.append(
            Network.objects.create(
                name=f"{run.name}-n{k}",
                run=run,
                parent=networks[-1],
                state=Network.State.ACCEPTED,
                created_at=timezone.now() + timedelta(seconds=k),
                rows_seen=1000 * k,
            )
        )
    return networks


def _play(run, user, black, white, results: list[str]) -> None:
    """Rating games with these winners ("B", "W", "0" or "-") stored as ingestion stores them."""
    from server.distribution.models import Task
    from server.games.models import RatingGame

    now = timezone.now()
    task = Task.objects.create(
        kind=Task.Kind.RATING,
        run=run,
        user=user,
        network_a=black,
        network_b=white,
        settings_version=run.current_settings(),
        games=len(results),
        client_version="0.1.0",
        client_instance_id="test",
        expires_at=now + timedelta(hours=1),
    )
    RatingGame.objects.bulk_create(
        [
            RatingGame(
                client_game_id=f"{task.id.hex}-{k}",
                task=task,
                user=user,
                run=run,
                settings_version=task.settings_version,
                board_x_size=7,
                board_y_size=7,
                komi=7.5,
                rules={},
                result={"B": "B+R", "W": "W+R", "0": "0"}.get(w, "Void"),
                winner=w,
                moves=50,
                sgf=f"games/{task.id.hex}-{k}.sgf",
                sgf_sha256="0" * 64,
                black_network=black,
                white_network=white,
            )
            for k, w in enumerate(results)
        ]
    )


def test_a_refit_stores_every_network_and_the_api_serves_them(run, alice):
    from server.ratings.models import Rating, RatingFit

    user, _ = alice
    random_net, n1, n2, n3 = _lineage(run, 3)
    # n1 beats the random network 3 to 1 in 40 games, n2 beats n1 evenly, n3 has no games yet.
    _play(run, user, n1, random_net, ["B"] * 15 + ["W"] * 5)
    _play(run, user, random_net, n1, ["W"] * 15 + ["B"] * 5)
    _play(run, user, n2, n1, ["B", "W"] * 10 + ["0", "-"])
    call_command("rate", "--run", run.name, stdout=open("/dev/null", "w"))  # noqa: SIM115
    ratings = {r.network.name: r for r in Rating.objects.select_related("network")}
    assert ratings[random_net.name].elo == 0.0 and ratings[random_net.name].games == 40
    # 30 of 40 against the random network, tempered by the 4 virtual draws with its parent: 34 of 48.
    prior = helpers.SETTINGS.gating.virtual_draws
    assert ratings[n1.name].elo == pytest.approx(ELO_PER_NAT * math.log((30 + prior / 2) / (10 + prior / 2)), rel=0.05)
    assert abs(ratings[n2.name].elo - ratings[n1.name].elo) < 40
    assert ratings[n3.name].games == 0 and ratings[n3.name].elo == pytest.approx(ratings[n2.name].elo)
    assert ratings[n3.name].elo_se > ratings[n2.name].elo_se  # only its parent's prior speaks for it
    fit = RatingFit.objects.get(run=run)
    assert (fit.games, fit.networks) == (62, 4)

    body = APIClient().get("/api/v1/ratings/", {"run": run.name}).json()
    assert body["run"] == run.name and body["games"] == 62
    by_name = {n["name"]: n for n in body["networks"]}
    assert [n["name"] for n in body["networks"]] == [random_net.name, n1.name, n2.name, n3.name]
    assert by_name[n2.name]["parent"] == n1.name and by_name[n2.name]["rows_seen"] == 2000
    assert by_name[n1.name]["elo"] == pytest.approx(ratings[n1.name].elo)
    assert by_name[n1.name]["elo_se"] > 0 and by_name[n1.name]["games"] == 62
    assert by_name[n1.name]["state"] == "accepted"
    # Without ?run=, the current run; an unknown run is a clear 404.
    assert APIClient().get("/api/v1/ratings/").json()["run"] == run.name
    missing = APIClient().get("/api/v1/ratings/", {"run": "nope"})
    assert missing.status_code == 404 and "no run 'nope'" in missing.json()["error"]["message"]


def test_a_refit_is_repeatable_and_disabled_games_do_not_count(run, alice):
    from server.games.models import RatingGame
    from server.ratings.models import Rating
    from server.ratings.services import refit

    user, _ = alice
    random_net, n1 = _lineage(run, 1)
    _play(run, user, n1, random_net, ["B"] * 12 + ["W"] * 4)
    _, first = refit(run)
    _, again = refit(run)
    assert np.array_equal(first.elo, again.elo) and Rating.objects.count() == 2
    RatingGame.objects.filter(winner="W").update(disabled=True)
    _, without = refit(run)
    assert without.elo[1] > first.elo[1] and Rating.objects.get(network=n1).games == 12


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # the worker closes its connections
def test_new_rating_games_queue_one_refit_which_the_worker_runs(
    run, alice, settings, django_capture_on_commit_callbacks
):
    from django.db import transaction
    from django_tasks_db.models import DBTaskResult

    from server.games.models import RatingGame
    from server.ratings.models import Rating, RatingFit
    from server.ratings.tasks import rating_game_stored

    settings.SENTE_REFIT_DELAY_SECONDS = 0
    user, _ = alice
    random_net, n1 = _lineage(run, 1)
    _play(run, user, n1, random_net, ["B", "W", "B"])
    for game in RatingGame.objects.all():  # as ingestion does, one transaction per game
        with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
            rating_game_stored(game)
    assert DBTaskResult.objects.count() == 1 and RatingFit.objects.get(run=run).pending
    assert not Rating.objects.exists()
    call_command("db_worker", "--batch", "--no-startup-delay", stdout=open("/dev/null", "w"))  # noqa: SIM115
    fit = RatingFit.objects.get(run=run)
    assert not fit.pending and fit.games == 3 and Rating.objects.get(network=n1).games == 3
    assert DBTaskResult.objects.get().status == "SUCCESSFUL"
    # The next game queues the next refit.
    _play(run, user, random_net, n1, ["W"])
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        rating_game_stored(RatingGame.objects.order_by("-id").first())
    assert DBTaskResult.objects.filter(status="READY").count() == 1
