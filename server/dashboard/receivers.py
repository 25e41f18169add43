"""The dashboard's answers to the writes below it, connected in its ``ready()``: games turned off or on,
an account put in quarantine or let out, and an account turned off or on
(:func:`server.dashboard.services.account_turned`); each has the runs it touches counted again. A
bulk ``User.objects.update(is_active=...)`` sends no signal: run ``manage.py tally --rebuild`` after
one."""

from __future__ import annotations

from typing import Any

from server.accounts.models import User
from server.dashboard.models import ContributionTotal
from server.dashboard.services import account_turned, queue_recounts
from server.games.models import Game, TrainingGame


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


def recount_when_games_change(sender: type[Game], run_ids: list[int], **kwargs: Any) -> None:
    """games_counting_changed: the runs' tallies (both kinds of games), and for self-play games their
    training windows, are counted again."""
    queue_recounts(run_ids, window=sender is TrainingGame)


def recount_when_standing_changes(sender: type[User], user: User, **kwargs: Any) -> None:
    """standing_changed: the site's counts leave quarantined games out as they leave out a turned-off
    account's: the runs the account played for are counted again, their training windows too."""
    runs = list(ContributionTotal.objects.filter(user=user).values_list("run_id", flat=True))
    runs += list(TrainingGame.objects.filter(user=user).values_list("run_id", flat=True).distinct())
    queue_recounts(runs, window=True)
