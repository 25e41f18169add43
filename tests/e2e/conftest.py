"""Fixtures of the end-to-end tests."""

from __future__ import annotations

import pytest

from server.platform.processes import database_url
from tests.e2e.contributor import PASSWORD, Contributor
from tests.server import helpers
from tests.server.live import LiveServer


@pytest.fixture
def server(request, tmp_path):
    """The server under gunicorn on the test database, with the test run (the test must use the
    database with transactions, so that the server's processes see its rows), and its access log. A
    test gives it environment variables of its own by parametrizing it indirectly."""
    from django.db import connection

    from server.runs.models import create_run

    create_run(helpers.RUN, helpers.SETTINGS.to_dict())
    live = LiveServer(
        database_url(connection.settings_dict), tmp_path, env=getattr(request, "param", None), access_log=True
    )
    yield live
    live.stop()


@pytest.fixture
def volunteer():
    from server.accounts.models import User

    User.objects.create_user("alice", "alice@example.org", PASSWORD)
    return "alice"


@pytest.fixture
def contributors():
    started: list[Contributor] = []
    yield started
    for c in started:
        c.kill()
