"""Fixtures of the end-to-end tests."""

from __future__ import annotations

import pytest

from server.platform.processes import database_url
from tests.server import helpers
from tests.server.live import LiveServer


@pytest.fixture
def server(tmp_path):
    """The server under gunicorn on the test database, with the test run (the test must use the
    database with transactions, so that the server's processes see its rows)."""
    from django.db import connection

    from server.runs.models import create_run

    create_run(helpers.RUN, helpers.SETTINGS.to_dict())
    live = LiveServer(database_url(connection.settings_dict), tmp_path)
    yield live
    live.stop()
