"""The contributors' machines, from what their clients say when they ask for tasks.

Each worker of a client (one per device) asks for its tasks with the installation's id and its own
number (``sente-0123456789abcdef-1``) and, since clients report them, the machine's name, the
device's model and its evaluations per second lately; the games of each task come back counted on
it (``games_received``). So the figures need no table of their own: a machine is an installation
(the id without the worker's number), its devices are its workers, and its games are those of its
tasks asked for within the period (a task's games come back within its lifetime, hours, so the
periods' edges are that approximate).

The figures are the clients' own, bounded when asked for (``server.distribution.task_request``),
not verified: the totals by device model count only devices whose games came back, so a name no
game stands behind never shows, and they show the mean of what the devices reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.core.cache import cache
from django.db.models import Avg, Count, Max, OuterRef, Q, Subquery, Sum
from django.utils import timezone

from server.distribution.models import Task

DAY, WEEK = timedelta(days=1), timedelta(days=7)
MOST_WORKERS_SHOWN = 200  # an account's workers of the last week, newest first
MOST_MODELS_SHOWN = 40  # device models on the contributors page, most games first
TOTALS_SECONDS = 600  # how long the totals by device model are kept in the cache
_WORKER = re.compile(r"-\d+\Z")


@dataclass
class MachineRow:
    installation: str
    name: str = ""
    devices: list[str] = field(default_factory=list)
    evals_per_second: float | None = None  # its devices' last reports, summed
    games_day: int = 0
    games_week: int = 0
    last_seen: datetime | None = None


def installation(instance_id: str) -> str:
    """The installation a worker's id belongs to: the id without its worker number."""
    return _WORKER.sub("", instance_id)


def machines_of(user, now: datetime | None = None) -> list[MachineRow]:
    """The account's machines that asked for tasks in the last week, the most recently seen first."""
    now = now or timezone.now()
    tasks = Task.objects.filter(user=user, created_at__gte=now - WEEK)
    newest = Task.objects.filter(user=user, client_instance_id=OuterRef("client_instance_id")).order_by("-created_at")
    workers = (
        tasks.values("client_instance_id")
        .annotate(
            week=Sum("games_received"),
            day=Sum("games_received", filter=Q(created_at__gte=now - DAY)),
            last=Max("created_at"),
            name=Subquery(newest.values("machine_name")[:1]),
            device=Subquery(newest.values("device_model")[:1]),
            rate=Subquery(newest.values("evals_per_second")[:1]),
        )
        .order_by("-last")[:MOST_WORKERS_SHOWN]
    )
    machines: dict[str, MachineRow] = {}
    for w in workers:
        key = installation(w["client_instance_id"])
        row = machines.setdefault(key, MachineRow(installation=key, name=w["name"] or "", last_seen=w["last"]))
        row.games_week += w["week"] or 0
        row.games_day += w["day"] or 0
        if w["device"]:
            row.devices.append(w["device"])
        if w["rate"] is not None:
            row.evals_per_second = (row.evals_per_second or 0.0) + w["rate"]
    for row in machines.values():
        row.devices.sort()
    return list(machines.values())


def device_totals(run, now: datetime | None = None) -> list[dict]:
    """The run's devices of the last week by model, the most games first: devices (workers), games,
    mean evaluations per second reported (kept TOTALS_SECONDS in the cache)."""
    key = f"device-totals:{run.pk}"
    rows = cache.get(key)
    if rows is None:
        now = now or timezone.now()
        rows = list(
            Task.objects.filter(run=run, created_at__gte=now - WEEK, games_received__gt=0, user__is_active=True)
            .exclude(device_model="")
            .values("device_model")
            .annotate(
                devices=Count("client_instance_id", distinct=True),
                games=Sum("games_received"),
                evals_per_second=Avg("evals_per_second"),
            )
            .order_by("-games", "device_model")[:MOST_MODELS_SHOWN]
        )
        cache.set(key, rows, TOTALS_SECONDS)
    return rows
