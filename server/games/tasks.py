"""The games' background work: packing a run's self-play games into shards (``server.games.shards``),
queued after uploads at most once a minute per process and run (or once every
``SENTE_SHARDS["seconds"]``, when a shard comes due sooner by its age)."""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.db import transaction
from django_tasks import task

from server.games.shards import pack_due

log = logging.getLogger(__name__)

REQUEST_SECONDS = 60.0  # a process queues the packing of a run at most this often

_not_before: dict[int, float] = {}  # run id -> monotonic time before which this process queues none


@task()
def pack_run(run_id: int) -> None:
    from server.runs.models import Run

    run = Run.objects.filter(pk=run_id).first()
    if run is not None:
        pack_due(run)


def request_packing(run) -> None:
    """Queue the packing of the run's due shards once the current transaction commits, at most once
    every ``REQUEST_SECONDS`` (or a shard's age limit, if shorter) per process and run (call after
    storing a self-play game)."""
    if time.monotonic() < _not_before.get(run.pk, 0.0):
        return
    _not_before[run.pk] = time.monotonic() + min(REQUEST_SECONDS, settings.SENTE_SHARDS["seconds"])

    def enqueue() -> None:
        try:
            pack_run.enqueue(run.pk)
        except Exception:  # a later game asks again
            _not_before.pop(run.pk, None)
            log.exception("queueing the packing of run %s failed", run.name)

    transaction.on_commit(enqueue)
