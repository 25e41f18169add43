"""The dashboard's background work: counting each contributor's rows in the training window
(seconds of work for a big run; pages queue it through ``services.ask_for_window``), and counting a
run's finished days again after an account was turned off or on (``server.dashboard.services``)."""

from __future__ import annotations

import logging

from django_tasks import task

from server.dashboard.tallies import count_window, rebuild
from server.runs.models import Run

log = logging.getLogger(__name__)


@task()
def count_training_window(run_id: int) -> None:
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        log.info("run %s is gone; its training window is not counted", run_id)
        return
    count_window(run)


@task()
def recount_run(run_id: int) -> None:
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        log.info("run %s is gone; its days are not counted again", run_id)
        return
    rebuild(run)
