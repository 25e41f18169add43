"""Which rows a run trains on: the window of the paper's section 4.7, and the held-out rows.

The rows a run counts are those of its self-play games that are not disabled and whose players'
accounts are active and not in quarantine (``server.audit``). The trainer's budget counts every one
of them (``server.training.plan``); the window's size counts the rows of the random network only up
to ``window_c`` (the paper's footnote 11: it keeps the window from depending on how long the random
network played). One game in ``holdout_one_in`` is held out (``server.games.holdout``): never
trained on, its newest rows measure the networks. Which games are held out follows from their rows'
content (the npz file's sha256), not from their ids: files are stored by their content, so the same
rows uploaded under two game ids are one file, held out under both or under neither, and a window or
the held-out rows hold each file once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db.models import Q, QuerySet, Sum

from common.data.loader import RowFile
from common.settings import TrainingSettings
from server.audit.selectors import quarantined_users
from server.games.holdout import is_held_out
from server.games.models import TrainingGame

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RowCounts:
    """The rows a run counts, those of the random network's games apart."""

    random: int  # rows of the random network's games
    other: int  # rows of every other network's games

    @property
    def total(self) -> int:
        """Every row counted: what the trainer's budget counts."""
        return self.random + self.other

    def for_window(self, settings: TrainingSettings) -> int:
        """The ``N`` of the window's formula: the random network's rows counted up to ``window_c``."""
        return min(self.random, settings.window_c) + self.other


@dataclass(frozen=True)
class Window:
    """The window's files, newest first, with the counts it was made from."""

    files: list[RowFile]
    total_rows: int  # every row the run counts
    target_rows: int  # the window's size by the formula (random-network rows capped)

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)


def counted_games(run) -> QuerySet:
    return TrainingGame.objects.filter(~quarantined_users(), run=run, disabled=False, user__is_active=True)


def row_counts(run) -> RowCounts:
    """The rows the run counts, the random network's apart."""
    sums = counted_games(run).aggregate(
        random=Sum("rows", filter=Q(network__is_random=True)), other=Sum("rows", filter=Q(network__is_random=False))
    )
    return RowCounts(random=sums["random"] or 0, other=sums["other"] or 0)


def _newest(queryset: QuerySet, settings: TrainingSettings, held_out: bool, rows: int) -> list[RowFile]:
    """The newest distinct files, held out or not, until they hold ``rows`` rows."""
    files: list[RowFile] = []
    names: set[str] = set()
    held = 0
    if rows <= 0 or (held_out and settings.holdout_one_in == 0):
        return files
    fields = ("npz", "npz_sha256", "rows", "shard__file", "shard_offset", "shard_length")
    games = queryset.order_by("-created_at", "-id").values_list(*fields)
    for name, sha256, count, shard, offset, length in games.iterator(chunk_size=2000):
        if name in names or is_held_out(sha256, settings.holdout_one_in) != held_out:
            continue
        names.add(name)
        # A packed game is read from its shard, with its neighbours there (common.data.loader).
        files.append(RowFile(name, count, shard, offset, length) if shard else RowFile(name, count))
        held += count
        if held >= rows:
            break
    return files


def training_window(run, settings: TrainingSettings, counts: RowCounts | None = None) -> Window:
    """The newest games of the run (held-out ones left out, each file once) whose rows make up the
    window (the last game may take it a little past the formula's size); ``counts``: the run's
    :func:`row_counts`, if read already."""
    counts = row_counts(run) if counts is None else counts
    target = settings.window_rows(counts.for_window(settings))
    files = _newest(counted_games(run), settings, False, target)
    return Window(files=files, total_rows=counts.total, target_rows=target)


def validation_files(run, settings: TrainingSettings) -> list[RowFile]:
    """The newest held-out games, about ``validation_rows`` rows of them."""
    return _newest(counted_games(run), settings, True, settings.validation_rows)
