"""The ratings' background work: a refit after new rating games, queued once per burst of games, and
a recount of the gatings with a refit when games stop or start counting (:func:`rating_games_changed`).

A stored rating game is counted into its gating and asks for a refit (:func:`rating_game_stored`,
:func:`request_refit`). The run's ``RatingFit.pending`` flag makes the request idempotent: only the
game that turns it on queues the task, to run ``SENTE_REFIT_DELAY_SECONDS`` later, so the games that
come meanwhile are fitted together. The task turns the flag off before it fits, so games stored
during the fit queue the next one.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_tasks import task

from server.games.models import RatingGame
from server.ratings.fit import FitError
from server.ratings.models import RatingFit
from server.ratings.promotion import record_game, recount
from server.ratings.services import refit
from server.runs.models import Run

log = logging.getLogger(__name__)


@task()
def refit_ratings(run_id: int) -> None:
    # Waits for the uploads that hold the row (see request_refit): their games are in this fit.
    RatingFit.objects.filter(run_id=run_id).update(pending=False)
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        return
    try:
        refit(run)
    except FitError as e:
        log.error("run %s: the ratings cannot be refitted: %s", run.name, e)


def request_refit(run: Run) -> None:
    """Queue a refit of the run's ratings unless one is queued already (call inside the transaction
    that stored the game: the task is queued when it commits)."""
    RatingFit.objects.get_or_create(run=run)
    # The row stays locked until the game's transaction commits, and the task's first step (clearing
    # the flag) waits for it: a game is either in the queued refit or queues the next one.
    fit = RatingFit.objects.select_for_update().get(run=run)
    if fit.pending:
        return
    RatingFit.objects.filter(run=run).update(pending=True)

    def enqueue() -> None:
        try:
            delay = settings.SENTE_REFIT_DELAY_SECONDS
            job = refit_ratings
            if delay > 0 and job.get_backend().supports_defer:
                job = job.using(run_after=timezone.now() + timedelta(seconds=delay))
            job.enqueue(run.pk)
        except Exception:  # the next game tries again
            RatingFit.objects.filter(run=run).update(pending=False)
            log.exception("queueing the refit of run %s failed", run.name)

    transaction.on_commit(enqueue)


@task()
def recount_ratings(run_id: int) -> None:
    """Count the run's gatings again and refit its ratings, after games stopped or started counting."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        return
    recount(run)
    try:
        refit(run)
    except FitError as e:
        log.error("run %s: the ratings cannot be refitted: %s", run.name, e)


def rating_games_changed(run_ids) -> None:
    """Games of these runs stopped or started counting (an account quarantined or turned off, or back;
    games disabled or enabled): once the transaction commits, their gatings are counted again and
    their ratings refitted, in the background."""
    runs = sorted(set(run_ids))

    def enqueue() -> None:
        for run_id in runs:
            try:
                recount_ratings.enqueue(run_id)
            except Exception:  # manage.py rate does the same by hand
                log.exception("queueing the recount of the ratings of run %s failed", run_id)

    if runs:
        transaction.on_commit(enqueue)


def account_changed(user) -> None:
    """The account's games stopped or started counting (quarantined or turned off, or back): the
    runs it played rating games for are counted again (:func:`rating_games_changed`)."""
    rating_games_changed(RatingGame.objects.filter(user=user).values_list("run_id", flat=True).distinct().order_by())


def rating_game_stored(game: RatingGame) -> None:
    """What a new rating game changes, in the transaction that stored it: its gating, if it is one's,
    and (soon, in the background) the run's ratings."""
    record_game(game)
    request_refit(game.run)
