"""The audit's background work: an audit of a run, queued after uploads at a bounded rate.

A stored game of either kind asks for an audit of its run (:func:`audit_when_game_stored`, on the
games' ``game_stored`` signal inside the upload's transaction; nothing is computed in the request).
The run's ``AuditState`` makes the request idempotent and bounds the rate: only the first game after
``SENTE_AUDIT["interval_seconds"]`` since the last audit started queues one, to run after the upload
commits. Between those, a process remembers when the next audit may be queued and asks the database
nothing.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django_tasks import task

from server.audit.models import AuditState

log = logging.getLogger(__name__)

_not_before: dict[int, float] = {}  # run id -> monotonic time before which this process queues nothing


@task()
def audit_run_task(run_id: int) -> None:
    from server.audit.services import audit_run
    from server.runs.models import Run

    AuditState.objects.filter(run_id=run_id).update(pending=False, last_started_at=timezone.now())
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        log.info("run %s is gone; it is not audited", run_id)
        return
    audit_run(run)


def request_audit(run) -> None:
    """Queue an audit of the run unless one is queued or the last one started less than the
    interval ago (call inside the transaction that stored a game: it is queued when that commits)."""
    from server.audit.services import audit_settings

    if time.monotonic() < _not_before.get(run.pk, 0.0):
        return
    interval = audit_settings()["interval_seconds"]
    now = timezone.now()
    AuditState.objects.get_or_create(run=run)
    due = Q(last_started_at__isnull=True) | Q(last_started_at__lte=now - timedelta(seconds=interval))
    taken = AuditState.objects.filter(due, run=run, pending=False).update(pending=True)
    if not taken:
        state = AuditState.objects.filter(run=run).values_list("last_started_at", flat=True).first()
        wait = interval - (now - state).total_seconds() if state else 0.0
        _not_before[run.pk] = time.monotonic() + max(wait, 1.0)
        return

    def enqueue() -> None:
        try:
            audit_run_task.enqueue(run.pk)
        except Exception:  # the next game tries again
            AuditState.objects.filter(run=run).update(pending=False)
            log.exception("queueing the audit of run %s failed", run.name)

    _not_before[run.pk] = time.monotonic() + 1.0
    transaction.on_commit(enqueue)


def audit_when_game_stored(sender: type, game, **kwargs: Any) -> None:
    """game_stored (either kind): the run's audit is asked for (:func:`request_audit`)."""
    request_audit(game.run)
