"""Handing out tasks and taking games of them back.

:func:`issue_task` gives a client its next piece of work: a rating task (a pair of networks to play
against each other) when the run's gating needs games and the client takes them and its account is
one rating games go to (:func:`takes_rating_games`), else a self-play task with the run's current
network. :func:`give_up_games` lowers the games owed on a user's tasks,
so that the ledger of open tasks owes only games that will come.
"""

from __future__ import annotations

import functools
import random
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from server.accounts.models import User
from server.audit.selectors import in_quarantine
from server.distribution.models import Task
from server.distribution.task_request import TaskRequestValues
from server.games.models import TrainingGame
from server.ratings.scheduling import choose_pair
from server.refusals import ClientTooOld, Unavailable
from server.runs.models import current_state
from server.sql import quoted_column


def issue_task(user: User, request: TaskRequestValues) -> Task:
    """Record the user's next task. ClientTooOld when the client is one the run no longer takes,
    Unavailable when there is no work of the kinds it takes."""
    state = current_state()
    if state is None:
        raise Unavailable("no run is active on this server; try again later", code="no_run")
    run = state.run
    refusal = run.client_refusal(request.client_version, request.client_build)
    if refusal is not None:
        raise ClientTooOld(refusal, code="upgrade_required", extra=run.clients_taken())
    kinds = request.kinds
    version = state.settings_version
    gating = version.settings.gating
    pair = None
    eligible = True
    if Task.Kind.RATING in kinds and (Task.Kind.SELFPLAY not in kinds or random.random() < gating.rating_game_prob):
        eligible = takes_rating_games(user, run, gating.rating_min_selfplay_games, gating.rating_group)
        pair = choose_pair(run) if eligible else None
    if pair is None and Task.Kind.SELFPLAY not in kinds:
        raise Unavailable(
            "no rating games are to be played now"
            + ("" if eligible else f" by this account (they go to accounts in good standing{_rating_needs(gating)})")
            + "; ask again later or take self-play tasks",
            code="no_work",
        )
    now = timezone.now()
    task = Task(
        run=run,
        user=user,
        settings_version=version,
        games=request.games,
        client_version=request.client_version,
        client_build=request.client_build,
        client_instance_id=request.client_instance_id,
        machine_name=request.machine_name,
        device_model=request.device_model,
        evals_per_second=request.evals_per_second,
        created_at=now,
        expires_at=now + timedelta(seconds=settings.SENTE_TASK_SECONDS),
    )
    if pair is not None:
        # A match is spread over many clients (KataGo's rating tasks are a few games each): one
        # client's fault or speed then weighs little in a gating decision.
        task.kind, task.network_a, task.network_b = Task.Kind.RATING, pair[0], pair[1]
        task.games = min(request.games, version.settings.gating.rating_task_games)
    else:
        if state.network is None:
            raise Unavailable(f"run {run.name} has no network to play yet; try again later", code="no_network")
        task.kind = Task.Kind.SELFPLAY
        task.network = state.network
    _insert(task)
    return task


def _rating_needs(gating) -> str:
    """What the run asks of the accounts it gives rating games, beyond good standing, in words."""
    needs = []
    if gating.rating_group:
        needs.append(f"in the group {gating.rating_group!r}")
    if gating.rating_min_selfplay_games:
        needs.append(f"with at least {gating.rating_min_selfplay_games} self-play games in this run")
    return "".join(f", {n}" for n in needs)


def takes_rating_games(user: User, run, min_selfplay_games: int, group: str = "") -> bool:
    """Whether the account is given rating games: active, not in quarantine, a member of ``group``
    when it names one, and with at least ``min_selfplay_games`` self-play games stored in the run
    that count."""
    if not user.is_active or in_quarantine(user):
        return False
    if group and not user.groups.filter(name=group).exists():
        return False
    if min_selfplay_games <= 0:
        return True
    games = TrainingGame.objects.filter(user=user, run=run, disabled=False)
    return games.order_by()[min_selfplay_games - 1 : min_selfplay_games].exists()


def _insert(task: Task) -> None:
    """Save a new task: one INSERT whose SQL is built once from the model (task requests are the
    server's most frequent write, and the ORM's per-insert work would be most of their cost)."""
    fields = Task._meta.concrete_fields
    params = [f.get_db_prep_save(f.pre_save(task, True), connection) for f in fields]
    with connection.cursor() as cursor:
        cursor.execute(_insert_sql(), params)
    task._state.adding = False
    task._state.db = "default"


@functools.cache
def _insert_sql() -> str:
    quote = connection.ops.quote_name
    fields = Task._meta.concrete_fields
    columns = ", ".join(quoted_column(f) for f in fields)
    return f"INSERT INTO {quote(Task._meta.db_table)} ({columns}) VALUES ({', '.join(['%s'] * len(fields))})"


@dataclass(frozen=True)
class GivenUp:
    """What giving up games did: the games no longer owed, each of the user's named tasks (id, games,
    games_received) as it is now, and the ids that are none of the user's tasks."""

    given_up: int
    tasks: list[dict[str, str | int]]
    unknown: list[str]


def give_up_games(user: User, wanted: Iterable[tuple[uuid.UUID, int]]) -> GivenUp:
    """Lower each named task's games to the games the client will deliver in all: never fewer than it
    has received, never more than it had; a task named twice takes the smaller count."""
    games_of: dict[uuid.UUID, int] = {}
    for task_id, games in wanted:
        games_of[task_id] = min(games, games_of.get(task_id, games))
    given_up = 0
    answer: list[dict[str, str | int]] = []
    with transaction.atomic():
        for task in (
            Task.objects.select_for_update()
            .filter(user=user, pk__in=list(games_of))
            .order_by("pk")
            .only("id", "games", "games_received")
        ):
            games = max(games_of[task.pk], task.games_received)
            if games < task.games:
                Task.objects.filter(pk=task.pk).update(games=Greatest(F("games_received"), games))
                given_up += task.games - games
                task.games = games
            answer.append({"id": str(task.pk), "games": task.games, "games_received": task.games_received})
    found = {item["id"] for item in answer}
    return GivenUp(given_up, answer, [str(t) for t in games_of if str(t) not in found])
