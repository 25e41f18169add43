"""The notices' background work: the posts of the runs' webhooks (``server.notices.webhooks`` says
when and what; ``server.notices.delivery`` posts)."""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta

from django.db import connections
from django.utils import timezone
from django_tasks import task

from server.notices.delivery import attempt

log = logging.getLogger(__name__)


@task()
def deliver_webhook(delivery_id: int) -> None:
    delay = attempt(delivery_id)
    if delay is not None:
        schedule(delivery_id, delay)


def schedule(delivery_id: int, delay_seconds: float) -> None:
    """Queue an attempt of the delivery in ``delay_seconds``, for the worker or, without one, a thread."""
    try:
        backend = deliver_webhook.get_backend()
        if backend.supports_defer:
            job = deliver_webhook
            if delay_seconds > 0:
                job = job.using(run_after=timezone.now() + timedelta(seconds=delay_seconds))
            job.enqueue(delivery_id)
            return
    except Exception:
        log.exception("queueing webhook delivery %s failed; a thread of this process posts it", delivery_id)
    threading.Thread(target=_in_thread, args=(delivery_id, delay_seconds), daemon=True, name="webhook").start()


def _in_thread(delivery_id: int, delay_seconds: float) -> None:
    try:
        while True:
            time.sleep(delay_seconds)
            delay = attempt(delivery_id)
            if delay is None:
                return
            delay_seconds = delay
    finally:
        connections.close_all()  # this thread's own
