"""A territory game through the real server under gunicorn: the run's settings draw Japanese-style
rules, our self-play client plays games of them, the server replays an upload through the encore and
takes it; the same kind of game declaring another result is refused naming the game and both
results, and the game already taken stays, with its files."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import requests

from common.go.sgf import read_sgf
from common.settings import RulesChoice
from tests.server import helpers

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

# Games end by passes through both encore phases (not once every point is pass-alive, which would
# end most of them before the encore); the random network's games through the encore often run past
# 200 moves, so the limit is 300 and six games are played for two with a counted result.
TERRITORY = replace(
    helpers.SETTINGS,
    selfplay=replace(
        helpers.SELFPLAY,
        end_when_all_pass_alive=False,
        max_moves=300,
        rules=RulesChoice(
            ko=("SIMPLE", "POSITIONAL", "SITUATIONAL"),
            scoring=("TERRITORY",),
            tax=("NONE", "SEKI", "ALL"),
            suicide=(False, True),
            button=(False,),
        ),
    ),
)


def _post(server, path: str, headers: dict | None = None, **kwargs) -> requests.Response:
    return requests.post(server.url + path, headers=headers, timeout=60, **kwargs)


def _upload(task: dict, headers: dict, game: helpers.PlayedGame) -> requests.Response:
    return requests.post(
        task["upload_url"],
        data={"task": task["id"], "metadata": json.dumps(game.metadata)},
        files={"sgf": ("game.sgf", game.sgf), "npz": ("game.npz", game.npz)},
        headers=headers,
        timeout=60,
    )


def _flipped(result: str) -> str:
    return {"B": "W", "W": "B"}[result[0]] + result[1:]


def test_a_territory_game_is_taken_and_one_with_a_wrong_result_refused(server, tmp_path):
    from server.accounts.models import User
    from server.distribution.models import Task
    from server.games.models import TrainingGame, UploadRefusal
    from server.runs.models import Run

    version = Run.objects.get(name=helpers.RUN).set_settings(TERRITORY.to_dict()).version
    User.objects.create_user("alice", "alice@example.org", "correct horse battery")
    token = _post(server, "/api/v1/auth/token/", json={"username": "alice", "password": "correct horse battery"})
    headers = {"Authorization": f"Token {token.json()['token']}"}
    task = _post(
        server,
        "/api/v1/tasks/",
        headers,
        json={"client_version": "0.1.0", "client_instance_id": "e2e", "kinds": ["selfplay"], "games": 2},
    ).json()
    assert task["settings_version"] == version

    played = helpers.selfplay_games(tmp_path / "games", helpers.RANDOM_NET, count=6, settings=TERRITORY.selfplay)
    games = [
        helpers.PlayedGame(
            g.sgf, g.npz, helpers.training_metadata(g.sgf, g.npz, helpers.RANDOM_NET, g.metadata["game_id"], version)
        )
        for g in played
        if g.metadata["result"][:2] in ("B+", "W+")
    ]
    assert len(games) >= 2
    good, other = games[0], games[1]
    replayed = read_sgf(good.sgf).to_game()
    assert replayed.rules.scoring == "TERRITORY" and replayed.encore_phase == 2
    assert replayed.result.reason == "two passes"

    taken = _upload(task, headers, good)
    assert taken.status_code == 201, taken.text
    row = TrainingGame.objects.get()
    assert (row.result, row.rules["scoring"]) == (good.metadata["result"], "TERRITORY")

    declared = _flipped(other.metadata["result"])
    text = other.sgf.decode().replace(f"RE[{other.metadata['result']}]", f"RE[{declared}]", 1)
    wrong = helpers.PlayedGame(text.encode(), other.npz, dict(other.metadata, result=declared))
    refused = _upload(task, headers, wrong)
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert (error["field"], error["code"]) == ("sgf", "wrong_result")
    game_id = other.metadata["game_id"]
    assert f"game {game_id!r}" in error["message"]
    assert f"with {other.metadata['result']} by territory scoring, but declares {declared}" in error["message"]
    assert UploadRefusal.objects.get().code == "wrong_result"

    # Nothing already taken is lost: the game, its files and its count on the task.
    assert list(TrainingGame.objects.values_list("client_game_id", flat=True)) == [good.metadata["game_id"]]
    assert Path(tmp_path / "files" / row.sgf.name).read_bytes() == good.sgf
    assert Path(tmp_path / "files" / row.npz.name).read_bytes() == good.npz
    assert Task.objects.get(pk=task["id"]).games_received == 1
