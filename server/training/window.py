"""Which rows a run trains on: the window of the paper's section 4.7, and the held-out rows.

The rows a run counts are those of its self-play games that are not disabled and whose players'
accounts are active. Rows of the random network count at most ``window_c`` (the paper's footnote 11:
it keeps runs from depending on how long the random network played). One game in
``holdout_one_in`` (those whose id is a multiple of it) is held out: never trained on, its newest
rows measure the networks.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.files.storage import default_storage
from django.db.models import F, Q, QuerySet, Sum

from common.data.loader import RowFile
from common.settings import TrainingSettings
from server.games.models import TrainingGame


@dataclass(frozen=True)
class Window:
    """The window's files, newest first, with the counts it was made from."""

    files: list[RowFile]
    total_rows: int  # rows the run counts (random-network rows capped)
    target_rows: int  # the window's size by the formula

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)


def counted_games(run) -> QuerySet:
    return TrainingGame.objects.filter(run=run, disabled=False, user__is_active=True)


def total_rows(run, settings: TrainingSettings) -> int:
    """The rows the run counts: every counted row, those of the random network up to ``window_c``."""
    sums = counted_games(run).aggregate(random=Sum("rows", filter=Q(network__is_random=True)),
                                        other=Sum("rows", filter=Q(network__is_random=False)))
    return min(sums["random"] or 0, settings.window_c) + (sums["other"] or 0)


def _held_out(queryset: QuerySet, settings: TrainingSettings, held_out: bool) -> QuerySet:
    if settings.holdout_one_in == 0:
        return queryset.none() if held_out else queryset
    queryset = queryset.annotate(holdout_slot=F("id") % settings.holdout_one_in)
    return queryset.filter(holdout_slot=0) if held_out else queryset.exclude(holdout_slot=0)


def _newest(queryset: QuerySet, rows: int) -> list[RowFile]:
    files: list[RowFile] = []
    held = 0
    if rows <= 0:
        return files
    for name, count in queryset.order_by("-created_at", "-id").values_list("npz", "rows").iterator(chunk_size=2000):
        files.append(RowFile(name, count))
        held += count
        if held >= rows:
            break
    return files


def training_window(run, settings: TrainingSettings, total: int | None = None) -> Window:
    """The newest games of the run (held-out ones left out) whose rows make up the window (the last
    game may take it a little past the formula's size)."""
    total = total_rows(run, settings) if total is None else total
    target = settings.window_rows(total)
    files = _newest(_held_out(counted_games(run), settings, held_out=False), target)
    return Window(files=files, total_rows=total, target_rows=target)


def validation_files(run, settings: TrainingSettings) -> list[RowFile]:
    """The newest held-out games, about ``validation_rows`` rows of them."""
    return _newest(_held_out(counted_games(run), settings, held_out=True), settings.validation_rows)


def read_file(name: str) -> bytes:
    """A stored file's bytes (local disk or object storage)."""
    with default_storage.open(name, "rb") as f:
        return f.read()
