"""What the end-to-end tests need from the machine (GNU Go, Chromium, nginx, ...)."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def missing(what: str, install: str) -> NoReturn:
    """Skip the test for want of ``what`` (``install``: how to get it). Under CI, where .ci/run installs
    everything, fail instead: a part left unexercised there would pass unseen."""
    if os.environ.get("CI"):
        pytest.fail(f"{what} is required in CI: {install}")
    pytest.skip(f"{what} is not available: {install}")
