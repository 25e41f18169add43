"""How long tasks are kept: the daily job (``manage.py prune``) deletes the tasks whose games stopped
being taken long ago and that no stored row names.

Every task handed out is a row, so a stream of task requests grows the table; once a task's grace
is over (``Task.accepts_until``) no game of it can come, and one that brought none tells nothing
the games do not. A task a game names stays as long as the game (the games' foreign keys protect
it); so does one any other table names. Tasks go in batches, each its own short transaction,
walked in the order of their primary key so that the whole table is read once however many go.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.db.models.expressions import Combinable

from server.distribution.models import Task


def _named_by_no_row() -> list[Combinable]:
    """The conditions of a task no row of another table points at (the games, and any relation added
    later)."""
    return [
        ~Exists(relation.related_model._base_manager.filter(**{relation.field.name: OuterRef("pk")}))
        for relation in Task._meta.related_objects
    ]


def prune_tasks(before: datetime, batch: int) -> int:
    """Delete the tasks whose games were last taken before ``before`` (their expiry plus the grace,
    ``SENTE_TASK_GRACE_SECONDS``) and that no row names, ``batch`` per transaction; returns how many."""
    if batch < 1:
        raise ValueError(f"batch {batch}: must be at least 1")
    expired_before = before - timedelta(seconds=settings.SENTE_TASK_GRACE_SECONDS)
    prunable = Task.objects.filter(*_named_by_no_row(), expires_at__lt=expired_before)
    deleted = 0
    after = None
    while True:
        page = prunable if after is None else prunable.filter(pk__gt=after)
        ids = list(page.order_by("pk").values_list("pk", flat=True)[:batch])
        if not ids:
            return deleted
        after = ids[-1]
        with transaction.atomic():
            # The condition again, in the deleting transaction: a game stored meanwhile keeps its task.
            _, per_model = prunable.filter(pk__in=ids).delete()
        deleted += per_model.get(Task._meta.label, 0)
