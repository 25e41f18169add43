"""The dashboard's writes: queueing the background counts its pages read.

A page that shows the training window's shares asks for a fresh count of them when the last one is
older than ``tallies.window_seconds()`` (:func:`ask_for_window`).

An account turned off or on, or quarantined or let out, changes what the site counts: its games
leave (or rejoin) every number. The contributors' and the run's numbers leave them out when read;
the networks' counts (``NetworkTotal``) hold no contributors, so the runs the account played for
are counted again in the background (``tasks.recount_run``: seconds for a run of a million games).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from server.accounts.models import User
from server.dashboard import tallies
from server.dashboard.models import ContributionTotal, RunTally
from server.dashboard.tasks import count_training_window, recount_run
from server.ratings.tasks import account_changed
from server.runs.models import Run

log = logging.getLogger(__name__)


def queue_recounts(run_ids: Iterable[int], *, window: bool = False) -> None:
    """Once the transaction commits, queue a recount of each run's finished days (and, with
    ``window``, of its training window)."""
    runs = sorted(set(run_ids))

    def enqueue() -> None:
        for run_id in runs:
            try:
                recount_run.enqueue(run_id)
                if window:
                    count_training_window.enqueue(run_id)
            except Exception:  # manage.py tally --rebuild does the same
                log.exception("queueing a recount of run %s failed", run_id)

    transaction.on_commit(enqueue)


def account_turned(user: User) -> None:
    """The account was turned off or on: count again the runs it has games counted in, and the
    gatings and ratings of those it played rating games for."""
    account_changed(user)
    runs = list(ContributionTotal.objects.filter(user=user).values_list("run_id", flat=True))
    if runs:
        log.info(
            "account %s turned %s: its runs %s are counted again",
            user.username,
            "on" if user.is_active else "off",
            runs,
        )
        queue_recounts(runs)


def ask_for_window(run: Run, state: RunTally) -> bool:
    """Queue a count of the window when the last one is older than window_seconds() and none was
    asked for since; True when this call queued it."""
    now = timezone.now()
    fresh = now - timedelta(seconds=tallies.window_seconds())
    if state.window_at is not None and state.window_at >= fresh:
        return False
    if state.window_queued_at is not None and state.window_queued_at >= fresh:
        return False  # asked for already
    claimed = (
        RunTally.objects.filter(run=run)
        .filter(Q(window_queued_at__isnull=True) | Q(window_queued_at__lt=fresh))
        .update(window_queued_at=now)
    )
    if not claimed:
        return False

    def enqueue() -> None:
        try:
            count_training_window.enqueue(run.pk)
        except Exception:  # the next page view after window_seconds() asks again
            log.exception("queueing the training window count of run %s failed", run.name)

    transaction.on_commit(enqueue)
    return True
