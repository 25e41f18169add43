"""Telling when an account is turned off or on, to count its runs again
(:func:`server.dashboard.services.account_turned`). A bulk ``User.objects.update(is_active=...)``
sends no signal: run ``manage.py tally --rebuild`` after one."""

from __future__ import annotations

from typing import Any

from server.accounts.models import User
from server.dashboard.services import account_turned


def remember_active(sender: type[User], instance: User, **kwargs: Any) -> None:
    """post_init: the account's state as read, to tell a change when it is saved (not read when
    the field was left out of the query: that would cost a query per row)."""
    if "is_active" in instance.__dict__:
        instance._sente_was_active = instance.is_active


def recount_when_active_changes(
    sender: type[User],
    instance: User,
    created: bool,
    update_fields: frozenset[str] | None = None,
    **kwargs: Any,
) -> None:
    """post_save: count the account's runs again when is_active changed."""
    was = getattr(instance, "_sente_was_active", instance.is_active)
    instance._sente_was_active = instance.is_active
    if created or was == instance.is_active or (update_fields is not None and "is_active" not in update_fields):
        return
    account_turned(instance)
