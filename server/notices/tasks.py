"""When the runs' webhook posts are attempted (``server.notices.delivery`` makes each attempt).

With the database worker (``SENTE_TASKS=database``) a delivery's first attempt is queued in the
transaction that records it, and each retry is queued for its time. While any delivery is pending, a
sweep is queued too, ``SWEEP_SECONDS`` ahead: it attempts those whose attempt was lost (a worker
that stops during a task leaves it marked running for ever, and the delivery's claim runs out).
Each sweep queues the next before it works, so a worker stopping during a sweep loses nothing.
Should queueing a delivery, its sweep or a retry fail (the queue's table locked, the database
refusing a write), the process's own thread (below) posts it, and sweeps until what is pending is
queued for the worker again.

Without a worker (``SENTE_TASKS=immediate``) each process that serves requests runs one thread
that sweeps: at the process's first request (so that a restarted or recycled process takes over
what the one before it left), whenever the process records a delivery, when the next pending one
falls due, and at least every ``SWEEP_SECONDS``.

Every attempt claims its delivery first, so however many workers, threads and sweeps find one due
at once, one attempt posts it.
"""

from __future__ import annotations

import logging
import os
import threading
from datetime import datetime, timedelta
from typing import Any

from django.db import connections, transaction
from django.utils import timezone
from django_tasks import task

from server.notices.delivery import attempt, next_due, waiting
from server.notices.models import WebhookDelivery

log = logging.getLogger(__name__)

SWEEP_SECONDS = 300.0


@task()
def deliver_webhook(delivery_id: int) -> None:
    delay = attempt(delivery_id)
    if delay is not None:
        _retry(delivery_id, delay)


@task()
def sweep_webhooks() -> None:
    keep_sweeping()  # first: should this worker stop during the sweep, the next is queued
    sweep()


def _queued() -> bool:
    """Whether background work is queued for a worker (else the process that has it runs it)."""
    return deliver_webhook.get_backend().supports_defer


def queue(delivery_id: int) -> None:
    """Have a delivery just recorded posted (call it in the transaction that records it)."""
    if _queued():
        try:
            with transaction.atomic():  # a failure here must not undo the event that was recorded
                deliver_webhook.enqueue(delivery_id)
                keep_sweeping()
            return
        except Exception:
            log.exception("queueing webhook delivery %s failed; a thread of this process posts it", delivery_id)
    transaction.on_commit(wake)


def sweep() -> datetime | None:
    """Attempt every delivery waiting for an attempt (``delivery.waiting``); when the next pending one
    falls due (None: none is pending)."""
    return _sweep()[0]


def _sweep() -> tuple[datetime | None, bool]:
    """:func:`sweep`, and whether the worker's queue holds every retry it made (False without a worker,
    or when queueing one failed: the delivery then waits for the next sweep)."""
    queued = _queued()
    for delivery_id in waiting():
        delay = attempt(delivery_id)
        if delay is not None and queued:
            try:
                _retry(delivery_id, delay)
            except Exception:
                log.exception("queueing the retry of webhook delivery %s failed; a sweep makes it", delivery_id)
                queued = False
    return next_due(), queued


def keep_sweeping() -> None:
    """Queue a sweep ``SWEEP_SECONDS`` ahead, unless one is queued or no delivery is pending."""
    from django_tasks_db.models import DBTaskResult

    if not WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING).exists():
        return
    if DBTaskResult.objects.filter(task_path=sweep_webhooks.module_path, status="READY").exists():
        return
    sweep_webhooks.using(run_after=timezone.now() + timedelta(seconds=SWEEP_SECONDS)).enqueue()


def _retry(delivery_id: int, delay_seconds: float) -> None:
    job = deliver_webhook
    if delay_seconds > 0:
        job = job.using(run_after=timezone.now() + timedelta(seconds=delay_seconds))
    job.enqueue(delivery_id)


# --- without a worker, or when queueing for it failed: one sweeping thread per process ----------------
_lock = threading.Lock()
_thread: threading.Thread | None = None
_wake = threading.Event()
_served_in: int | None = None  # the process whose first request started it (not a parent forked from)


def wake() -> None:
    """Start this process's sweeping thread, or have it sweep now."""
    global _thread
    with _lock:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_sweep_forever, name="webhooks", daemon=True)
            _thread.start()
        _wake.set()  # under the lock: a thread about to end sees it and sweeps again


def _sweep_forever() -> None:
    """Sweep at once, then whenever woken or a delivery falls due: for ever without a worker; with one,
    until the worker's queue holds every retry and a sweep (each sweep of the worker queues the next)."""
    global _thread
    while True:
        _wake.clear()
        due = None
        handed_over = False
        try:
            due, queued = _sweep()
            if queued:
                keep_sweeping()  # raises if the sweep cannot be queued: this thread goes on
                handed_over = True
        except Exception:
            log.exception("the webhook sweep failed; again in %.0f s at most", SWEEP_SECONDS)
        finally:
            connections.close_all()  # this thread's own
        if handed_over:
            with _lock:
                if not _wake.is_set():
                    _thread = None
                    return
            continue
        wait = SWEEP_SECONDS
        if due is not None:
            wait = min(SWEEP_SECONDS, max(1.0, (due - timezone.now()).total_seconds()))
        _wake.wait(wait)


def request_started(**kwargs: Any) -> None:
    """request_started: at a process's first request, without a worker, start its sweeping thread."""
    global _served_in
    if _served_in == os.getpid():
        return
    _served_in = os.getpid()
    if not _queued():
        wake()
