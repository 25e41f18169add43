"""How long refused uploads are kept: the daily job (``manage.py prune``) deletes the older ones.

A refusal only records what went wrong (the admin lists them, the metrics count the last hour's), so
a stream of bad uploads must not grow the table for ever. The rows go in batches, each its own short
transaction, through the index of the refusals by time.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from server.games.models import UploadRefusal


def prune_refusals(before: datetime, batch: int) -> int:
    """Delete the refusals recorded before ``before``, ``batch`` rows per transaction; returns how many."""
    if batch < 1:
        raise ValueError(f"batch {batch}: must be at least 1")
    deleted = 0
    while True:
        ids = list(
            UploadRefusal.objects.filter(created_at__lt=before)
            .order_by("created_at", "id")
            .values_list("id", flat=True)[:batch]
        )
        if not ids:
            return deleted
        with transaction.atomic():
            count, _ = UploadRefusal.objects.filter(pk__in=ids).delete()
        deleted += count
