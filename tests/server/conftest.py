"""Fixtures of the server's tests: a run, users with client tokens, API clients, and games played
by the client's own code (made once per session)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from tests.server import helpers


@pytest.fixture(autouse=True)
def _fresh_storage(settings, tmp_path):
    """Each test stores files in a folder of its own (the database rolls back; files would not)."""
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "server.files.AtomicFileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "files")},
        },
    }


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # the default takes 0.2 s


@pytest.fixture(autouse=True)
def _fresh_throttles(monkeypatch):
    """Throttle counters live in the cache, in fixed windows of the clock: each test starts with
    none, and at a moment early in every window, so that its requests never straddle two windows."""
    import types

    from server.api import throttling

    moment = 1_800_000_000 - 1_800_000_000 % 86_400 + 1.0  # one second into a day, an hour, a minute
    monkeypatch.setattr(throttling, "time", types.SimpleNamespace(time=lambda: moment))
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def run(db):
    from server.runs.models import create_run

    return create_run(helpers.RUN, helpers.SETTINGS.to_dict())


def _user(name: str, **extra):
    from server.accounts.models import ClientToken, User

    user = User.objects.create_user(name, f"{name}@example.org", "a long enough password", **extra)
    _, key = ClientToken.issue(user, f"{name}'s machine")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return user, client


@pytest.fixture
def alice(db):
    return _user("alice")


@pytest.fixture
def bob(db):
    return _user("bob")


@pytest.fixture
def trainer(db):
    from django.contrib.auth.models import Group

    user, client = _user("trainer")
    user.groups.add(Group.objects.get(name="trainers"))
    return user, client


@pytest.fixture(scope="session")
def selfplay_games(tmp_path_factory) -> list[helpers.PlayedGame]:
    from tests.conftest import wait_for_warmup

    wait_for_warmup()
    return helpers.selfplay_games(Path(tmp_path_factory.mktemp("selfplay")), helpers.RANDOM_NET)


@pytest.fixture(scope="session")
def tiny_network_file() -> bytes:
    return helpers.network_file("test-net1")


def new_task(client, kinds=("selfplay",), games=4, version="0.1.0") -> dict:
    response = client.post(
        "/api/v1/tasks/",
        {"client_version": version, "client_instance_id": "machine-1", "kinds": list(kinds), "games": games},
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def stored_files() -> list[Path]:
    """Every file in the storage folder (game and network files)."""
    from django.conf import settings

    root = Path(settings.STORAGES["default"]["OPTIONS"]["location"])
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def api_error(response) -> dict:
    """The error object of an API error response (which must have nothing else)."""
    body = response.json()
    assert set(body) == {"error"}, body
    assert body["error"]["code"] and body["error"]["message"], body
    return body["error"]
