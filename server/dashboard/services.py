"""The dashboard's writes: queueing the background counts its pages read.

An account turned off or on, or quarantined or let out, changes what the site counts: its games
leave (or rejoin) every number. The contributors' and the run's numbers leave them out when read;
the networks' counts (``NetworkTotal``) hold no contributors, so the runs the account played for
are counted again in the background (``tasks.recount_run``: seconds for a run of a million games).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.db import transaction

from server.accounts.models import User
from server.dashboard.models import ContributionTotal
from server.dashboard.tasks import count_training_window, recount_run

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
    """The account was turned off or on: count again the runs it has games counted in."""
    runs = list(ContributionTotal.objects.filter(user=user).values_list("run_id", flat=True))
    if runs:
        log.info(
            "account %s turned %s: its runs %s are counted again",
            user.username,
            "on" if user.is_active else "off",
            runs,
        )
        queue_recounts(runs)
