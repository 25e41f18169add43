"""Reads of the data page: the daily archives and the runs a selection can be exported from."""

from __future__ import annotations

from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from server.games.models import Shard, TrainingGame
from server.operations.models import DataExport
from server.runs.models import Run


def _count(qs: QuerySet) -> Coalesce:
    """The rows of ``qs`` (which names ``OuterRef("pk")``) counted in the archive's own row."""
    counted = qs.order_by().values(one=Count("pk")).values("one")
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def archives() -> QuerySet[DataExport]:
    """The daily archives of the games, newest first, each with its shards counted (``shard_count``)
    and its games disabled now (``disabled_games``, through the index of the disabled packed games:
    what a page of the list costs does not grow with the days' games)."""
    return (
        DataExport.objects.select_related("run")
        .annotate(
            shard_count=_count(Shard.objects.filter(exports=OuterRef("pk")).values("exports")),
            disabled_games=_count(
                TrainingGame.objects.filter(disabled=True, shard__exports=OuterRef("pk")).values("shard__exports")
            ),
        )
        .order_by("-day", "run__name", "kind")
    )


def archive_shards(export: DataExport) -> QuerySet[Shard]:
    """An npz archive's files, in the order they were packed."""
    return export.shards.order_by("id").only("id", "sha256", "size_bytes", "games", "rows", "held_out", "file")


def run_names() -> QuerySet[Run]:
    """The runs, newest first (the export form's default), with only their names read."""
    return Run.objects.order_by("-created_at", "-id").only("name")
