"""Fixtures of the client's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.server import helpers


@pytest.fixture(scope="session")
def network(tmp_path_factory) -> Path:
    """A tiny random-weight network file."""
    path = tmp_path_factory.mktemp("net") / "tiny.safetensors"
    path.write_bytes(helpers.network_file("tiny"))
    return path
