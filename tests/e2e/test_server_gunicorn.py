"""The server under real gunicorn, driven over HTTP with requests: a client gets a token and a task,
uploads a self-play game (and retries it), a trainer uploads a network that new tasks then use, the
network downloads in pieces, a rating game goes in; the database holds what the answers said."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import requests

from tests.server import helpers
from tests.server.live import LiveServer

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def _token(server: LiveServer, username: str, password: str) -> dict:
    r = requests.post(
        server.url + "/api/v1/auth/token/",
        json={"username": username, "password": password, "name": "test machine"},
        timeout=30,
    )
    assert r.status_code == 201, r.text
    return {"Authorization": f"Token {r.json()['token']}"}


def _task(server: LiveServer, headers: dict, kinds=("selfplay",)) -> dict:
    r = requests.post(
        server.url + "/api/v1/tasks/",
        json={"client_version": "0.1.0", "client_instance_id": "e2e", "kinds": list(kinds), "games": 2},
        headers=headers,
        timeout=30,
    )
    assert r.status_code == 201, r.text
    return r.json()


def _upload(url: str, headers: dict, task: dict, game: helpers.PlayedGame) -> requests.Response:
    files = {"sgf": ("game.sgf", game.sgf)}
    if game.npz is not None:
        files["npz"] = ("game.npz", game.npz)
    return requests.post(
        url, data={"task": task["id"], "metadata": json.dumps(game.metadata)}, files=files, headers=headers, timeout=60
    )


def test_clients_and_a_trainer_talk_to_gunicorn(server, tmp_path):
    from django.contrib.auth.models import Group

    from server.accounts.models import User
    from server.games.models import RatingGame, TrainingGame
    from server.networks.models import Network
    from server.ratings.promotion import staff_decision

    User.objects.create_user("alice", "alice@example.org", "correct horse battery")
    trainer = User.objects.create_user("gpu-box", "trainer@example.org", "another long password")
    trainer.groups.add(Group.objects.get(name="trainers"))
    headers = _token(server, "alice", "correct horse battery")

    assert requests.get(server.url + "/api/v1/tasks/", headers=headers, timeout=30).status_code == 405
    bad = requests.post(server.url + "/api/v1/auth/token/", json={"username": "alice", "password": "wrong"}, timeout=30)
    assert bad.status_code == 401 and bad.json()["error"]["code"] == "bad_credentials"

    task = _task(server, headers)
    assert task["kind"] == "selfplay" and task["network"]["name"] == helpers.RANDOM_NET
    assert task["upload_url"].startswith(server.url)
    game = helpers.selfplay_games(tmp_path / "games", helpers.RANDOM_NET, count=2)[0]
    first = _upload(task["upload_url"], headers, task, game)
    assert first.status_code == 201, first.text
    again = _upload(task["upload_url"], headers, task, game)
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    row = TrainingGame.objects.get()
    stored = Path(tmp_path / "files" / row.sgf.name)
    assert stored.read_bytes() == game.sgf

    # A trainer's network is a candidate: it plays its gating games against the accepted network;
    # once accepted it becomes the self-play network, and downloads in two pieces.
    data = helpers.network_file("test-net1")
    r = requests.post(
        server.url + "/api/v1/networks/",
        headers=_token(server, "gpu-box", "another long password"),
        data={
            "name": "test-net1",
            "run": helpers.RUN,
            "parent": helpers.RANDOM_NET,
            "train_step": 1000,
            "rows_seen": 500,
            "sha256": hashlib.sha256(data).hexdigest(),
        },
        files={"file": ("test-net1.safetensors", data)},
        timeout=60,
    )
    assert r.status_code == 201, r.text
    assert r.json()["sha256"] == hashlib.sha256(data).hexdigest()
    refused = requests.post(
        server.url + "/api/v1/networks/",
        headers=headers,
        data={"name": "mine", "run": helpers.RUN},
        files={"file": ("x", data)},
        timeout=60,
    )
    assert refused.status_code == 403
    assert _task(server, headers)["network"]["name"] == helpers.RANDOM_NET
    rating = _task(server, headers, kinds=("rating",))
    assert {n["name"] for n in rating["networks"]} == {"test-net1", helpers.RANDOM_NET}
    match = helpers.rating_games(tmp_path / "match", "test-net1", helpers.RANDOM_NET, count=1)[0]
    r = _upload(rating["upload_url"], headers, rating, match)
    assert r.status_code == 201, r.text
    assert RatingGame.objects.get().black_network == Network.objects.get(name="test-net1")
    gating = requests.get(server.url + "/api/v1/networks/test-net1/", timeout=30).json()["gating"]
    assert gating["opponent"] == helpers.RANDOM_NET and gating["wins"] + gating["draws"] + gating["losses"] == 1
    staff_decision(Network.objects.get(name="test-net1"), "accept", note="accepted for the test")
    task = _task(server, headers)
    net = task["network"]
    assert net["name"] == "test-net1" and net["bytes"] == len(data)
    half = len(data) // 2
    head = requests.get(net["url"], headers={"Range": f"bytes=0-{half - 1}"}, timeout=30)
    assert head.status_code == 206 and head.content == data[:half]
    tail = requests.get(net["url"], headers={"Range": f"bytes={half}-", "If-Range": head.headers["ETag"]}, timeout=30)
    assert tail.status_code == 206 and head.content + tail.content == data
    assert hashlib.sha256(head.content + tail.content).hexdigest() == net["sha256"]

    me = requests.get(server.url + "/api/v1/me/", headers=headers, timeout=30).json()
    assert (me["training_games"], me["rating_games"], me["training_rows"]) == (1, 1, row.rows)
    schema = requests.get(server.url + "/api/v1/schema/", timeout=30)
    assert schema.status_code == 200 and b"/api/v1/games/training/" in schema.content
