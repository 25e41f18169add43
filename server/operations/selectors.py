"""Reads of the data page: the daily archives and the runs a selection can be exported from."""

from __future__ import annotations

from django.db.models import QuerySet

from server.operations.models import DataExport
from server.runs.models import Run


def archives() -> QuerySet[DataExport]:
    """The daily archives of the games, newest first."""
    return DataExport.objects.select_related("run").order_by("-day", "run__name", "kind")


def run_names() -> QuerySet[Run]:
    """The runs, newest first (the export form's default), with only their names read."""
    return Run.objects.order_by("-created_at", "-id").only("name")
