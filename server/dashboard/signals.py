"""An account turned off (or on again) changes what the site counts: its games leave (or rejoin)
every number. The contributors' and the run's numbers leave them out when read; the networks' counts
(``NetworkTotal``) hold no contributors, so the runs the account played for are counted again in the
background (``tasks.recount_run``: seconds for a run of a million games). A bulk
``User.objects.update(is_active=...)`` sends no signal: run ``manage.py tally --rebuild`` after one."""

from __future__ import annotations

import logging

from django.db import transaction

log = logging.getLogger(__name__)


def remember_active(sender, instance, **kwargs) -> None:
    """post_init: the account's state as read, to tell a change when it is saved (not read when
    the field was left out of the query: that would cost a query per row)."""
    if "is_active" in instance.__dict__:
        instance._sente_was_active = instance.is_active


def recount_when_active_changes(sender, instance, created, update_fields=None, **kwargs) -> None:
    """post_save: queue a recount of the account's runs when is_active changed."""
    was = getattr(instance, "_sente_was_active", instance.is_active)
    instance._sente_was_active = instance.is_active
    if created or was == instance.is_active or (update_fields is not None and "is_active" not in update_fields):
        return
    from server.dashboard.models import ContributionTotal
    from server.dashboard.tasks import recount_run

    runs = list(ContributionTotal.objects.filter(user=instance).values_list("run_id", flat=True))

    def enqueue() -> None:
        for run_id in runs:
            try:
                recount_run.enqueue(run_id)
            except Exception:  # manage.py tally --rebuild does the same
                log.exception("queueing a recount of run %s failed", run_id)

    if runs:
        log.info(
            "account %s turned %s: its runs %s are counted again",
            instance.username,
            "on" if instance.is_active else "off",
            runs,
        )
        transaction.on_commit(enqueue)
