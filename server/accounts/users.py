"""The account behind an API request."""

from __future__ import annotations

from typing import cast

from rest_framework.request import Request

from server.accounts.models import User


def request_user(request: Request) -> User:
    """The account of a request its view's permissions let through only when authenticated."""
    # DRF types request.user as possibly anonymous; the permission check has ruled that out.
    return cast(User, request.user)
