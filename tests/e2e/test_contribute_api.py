"""The client's server calls, outbox, network cache and task supply against the real server under
gunicorn: login, tasks, games delivered once (a repeat is confirmed, not stored twice), a refused
game kept aside with the server's reason, a network fetched and checked, the games of an old network
given up when a new one comes (and the server told), a revoked token reported as fatal."""

from __future__ import annotations

import hashlib
import json
import time

import pytest
import requests

from client.contribute.netcache import NetworkCache, NetworkRef
from client.contribute.outbox import FATAL, Outbox
from client.contribute.server import AuthError, ServerClient
from client.contribute.sizing import Sizing
from client.contribute.tasks import TaskQueue
from tests.server import helpers

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def _until(condition, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_the_client_side_of_the_api_against_gunicorn(server, tmp_path):
    from django.contrib.auth.models import Group

    from server.accounts.models import ClientToken, User
    from server.distribution.models import Task
    from server.games.models import TrainingGame

    User.objects.create_user("alice", "alice@example.org", "correct horse battery")
    trainer = User.objects.create_user("gpu-box", "trainer@example.org", "another long password")
    trainer.groups.add(Group.objects.get(name="trainers"))

    client = ServerClient(server.url, instance_id="e2e-box")
    with pytest.raises(AuthError, match="wrong username or password"):
        client.login("alice", "wrong", "laptop")
    login = client.login("alice", "correct horse battery", "laptop")
    assert login.username == "alice" and client.token == login.token

    task = client.task(games=3, kinds=("selfplay",))
    assert task["kind"] == "selfplay" and task["network"]["is_random"]
    games = helpers.selfplay_games(tmp_path / "games", helpers.RANDOM_NET, count=3)
    outbox = Outbox(tmp_path / "outbox")
    for game in games[:2]:
        outbox.put("training", task["id"], game.metadata, game.sgf, game.npz)
    # The third game's metadata disagrees with its SGF: the server refuses it for good.
    bad = dict(games[2].metadata, moves=games[2].metadata["moves"] + 1)
    outbox.put("training", task["id"], bad, games[2].sgf, games[2].npz)
    assert outbox.deliver_due(client.upload) is None
    assert outbox.pending() == [] and (outbox.counts.delivered, outbox.counts.rejected) == (2, 1)
    (rejected,) = list((tmp_path / "outbox" / "rejected").iterdir())
    assert "the metadata says" in (rejected / "reason.txt").read_text()
    assert TrainingGame.objects.count() == 2
    # A game sent again (the client died before it removed the entry) is confirmed, not stored twice.
    outbox.put("training", task["id"], games[0].metadata, games[0].sgf, games[0].npz)
    assert outbox.deliver_due(client.upload) is None and outbox.counts.delivered == 3
    assert TrainingGame.objects.count() == 2
    assert client.me()["training_games"] == 2

    # A worker's task supply: a task of the random network in hand, one of its games played.
    ahead = NetworkCache(tmp_path / "ahead")
    supply = TaskQueue(
        ServerClient(server.url, client.token, instance_id="e2e-supply"),
        ahead,
        Sizing(parallel=2, fill_seconds=3600),
        look_seconds=0.3,
        prefetch_seconds=0,
    )
    supply.start()
    _until(lambda: supply.in_hand() >= 2, "a task in hand")
    played, _ = supply.take_game(None)
    supply.finished(played, True)

    # A trainer's network: the next task names it, and the cache fetches and checks it.
    data = helpers.network_file("test-net1")
    trainer_client = ServerClient(server.url)
    trainer_client.login("gpu-box", "another long password", "trainer")
    r = requests.post(
        trainer_client.url("networks/"),
        headers={"Authorization": f"Token {trainer_client.token}"},
        data={
            "name": "test-net1",
            "run": helpers.RUN,
            "parent": helpers.RANDOM_NET,
            "sha256": hashlib.sha256(data).hexdigest(),
        },
        files={"file": ("test-net1.safetensors", data)},
        timeout=60,
    )
    assert r.status_code == 201, r.text
    from server.networks.models import Network
    from server.ratings.promotion import staff_decision

    staff_decision(Network.objects.get(name="test-net1"), "accept", note="accepted for the test")
    ref = NetworkRef.from_task(client.task(kinds=("selfplay",))["network"])
    assert ref.name == "test-net1" and ref.size == len(data)
    path = NetworkCache(tmp_path / "networks").get(ref)
    assert path.read_bytes() == data
    # The task supply sees the new network: the games not started of the random network's tasks are
    # given up (the server is told: those tasks owe only the game played), its tasks are of the new one.
    _until(lambda: (task := supply.next_selfplay(0.1)) and task.key == ("test-net1", 1), "a task of the new network")
    assert ahead.path_of("test-net1").read_bytes() == data
    mine = Task.objects.filter(client_instance_id="e2e-supply")
    _until(
        lambda: sum(mine.filter(network__is_random=True).values_list("games", flat=True)) == 1,
        "the server told of the games given up",
    )
    # At the worker's end the server hears of every game it will not get.
    supply.close()
    assert supply.release_unplayed() >= 2
    assert [(t.games, t.games_received) for t in mine.filter(games__gt=0)] == [(1, 0)]

    # The token is revoked: uploads stop with a fatal outcome (the game stays), tasks raise.
    ClientToken.objects.filter(user__username="alice").get().revoke()
    outbox.put("training", task["id"], games[1].metadata, games[1].sgf, games[1].npz)
    outcome = outbox.deliver_due(client.upload)
    assert outcome is not None and outcome.kind == FATAL and "token" in outcome.message
    assert len(outbox.pending()) == 1
    with pytest.raises(AuthError) as e:
        client.task()
    assert e.value.status == 401
    assert json.loads(outbox.pending()[0].metadata)["game_id"] == games[1].metadata["game_id"]
