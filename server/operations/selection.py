"""A filtered export of a run's games, for researchers: the games a selection names (by network,
date range, rules, komi, board size, result), streamed as one archive (``server.operations.archives``):
the SGF files of self-play and rating games as a gzipped tar, or the training rows of the self-play
games as a tar of npz files. The selection is read from the database a batch at a time and each game's file
when it is written, so the memory an export takes does not grow with the games it holds.

The filters are django-filter FilterSets, so a bad value is refused with the parameter's name and
what it may be, before anything is read. How many exports run at once and how long one may take to
send: ``server.operations.admission`` and ``server.operations.sending``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

import django_filters
from django.db.models import Q, QuerySet

from common.go.rules import KO_RULES, SCORING_RULES
from server.games import rows
from server.games.models import RatingGame, TrainingGame, Winner
from server.operations.archives import Member, Writer, npz_tar, sgf_tar_gz
from server.runs.models import Run

KINDS = ("sgf", "npz")
GAMES = ("training", "rating", "all")
BATCH = 2000  # games read from the database at a time


def _choices(values) -> list[tuple[str, str]]:
    return [(v.lower(), v.lower()) for v in values]


class GameSelection(django_filters.FilterSet):
    """The filters of an export (every one optional)."""

    network = django_filters.CharFilter(method="by_network", help_text="a network's name: the games it played")
    since = django_filters.DateFilter(method="from_day", help_text="the first day (UTC), YYYY-MM-DD")
    until = django_filters.DateFilter(method="to_day", help_text="the last day (UTC), YYYY-MM-DD, included")
    scoring = django_filters.ChoiceFilter(method="by_rule", choices=_choices(SCORING_RULES))
    ko = django_filters.ChoiceFilter(method="by_rule", choices=_choices(KO_RULES))
    komi = django_filters.NumberFilter(field_name="komi")
    komi_min = django_filters.NumberFilter(field_name="komi", lookup_expr="gte")
    komi_max = django_filters.NumberFilter(field_name="komi", lookup_expr="lte")
    size = django_filters.NumberFilter(method="by_size", help_text="square boards of this size")
    winner = django_filters.ChoiceFilter(
        field_name="winner", choices=Winner.choices, help_text="B, W, 0 (a draw) or - (no result)"
    )
    resigned = django_filters.BooleanFilter(field_name="resigned")

    class Meta:
        model = TrainingGame
        fields: list[str] = []

    def by_network(self, qs: QuerySet, name: str, value: str) -> QuerySet:
        if qs.model is RatingGame:
            return qs.filter(Q(black_network__name=value) | Q(white_network__name=value))
        return qs.filter(network__name=value)

    def from_day(self, qs: QuerySet, name: str, value) -> QuerySet:
        return qs.filter(created_at__gte=datetime.combine(value, time.min, tzinfo=UTC))

    def to_day(self, qs: QuerySet, name: str, value) -> QuerySet:
        return qs.filter(created_at__lt=datetime.combine(value + timedelta(days=1), time.min, tzinfo=UTC))

    def by_rule(self, qs: QuerySet, name: str, value: str) -> QuerySet:
        return qs.filter(**{f"rules__{name}": value.upper()})

    def by_size(self, qs: QuerySet, name: str, value) -> QuerySet:
        return qs.filter(board_x_size=value, board_y_size=value)


class SelectionError(ValueError):
    """A bad parameter: ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def _selected(model, run: Run, params) -> QuerySet:
    """The run's games of ``model`` the parameters select (disabled games never), oldest first."""
    qs = model.objects.filter(run=run, disabled=False)
    selection = GameSelection(params, queryset=qs)
    if not selection.is_valid():
        field, errors = next(iter(selection.errors.items()))
        raise SelectionError(field, f"{field}={params.get(field)!r}: {' '.join(errors)}")
    return selection.qs.order_by("created_at", "id")


@dataclass(frozen=True)
class Export:
    """A selection's archive, not read yet: its writer, its parts (the games, the file field of each
    game that goes in, the member name pattern), its file name and content type."""

    writer: Writer
    parts: tuple[tuple[QuerySet, str, str], ...]
    filename: str
    content_type: str

    def members(self) -> Iterator[Member]:
        """The members in order, read from the database a batch at a time."""
        return (m for qs, field, pattern in self.parts for m in _members(qs, field, pattern))

    def count(self, at_most: int) -> int:
        """The games the archive holds, counted no further than ``at_most`` (a bounded query: the
        size of a selection only matters up to a limit)."""
        total = 0
        for qs, _, _ in self.parts:
            total += qs[: at_most - total].count()
            if total >= at_most:
                break
        return total


def archive(run: Run, kind: str, games: str, params) -> Export:
    """The export a request names; SelectionError names a bad parameter."""
    if kind not in KINDS:
        raise SelectionError("kind", f"kind={kind!r}: expected one of {', '.join(KINDS)}")
    if games not in GAMES:
        raise SelectionError("games", f"games={games!r}: expected one of {', '.join(GAMES)}")
    if kind == "npz" and games == "rating":
        raise SelectionError("games", "rating games have no training rows: kind=npz takes games=training")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    if kind == "npz":
        training = (_selected(TrainingGame, run, params), "npz", "{id}.npz")
        return Export(npz_tar, (training,), f"sente-{run.name}-rows-{stamp}.tar", "application/x-tar")
    parts = []
    if games in ("training", "all"):
        parts.append((_selected(TrainingGame, run, params), "sgf", "training/{id}.sgf"))
    if games in ("rating", "all"):
        parts.append((_selected(RatingGame, run, params), "sgf", "rating/{id}.sgf"))
    return Export(sgf_tar_gz, tuple(parts), f"sente-{run.name}-sgf-{stamp}.tar.gz", "application/gzip")


def _members(qs: QuerySet, field: str, pattern: str) -> Iterator[Member]:
    if field == "npz":  # training rows: read where they are (server.games.rows)
        games = qs.values_list("client_game_id", "created_at", *rows.FIELDS).iterator(chunk_size=BATCH)
        for game_id, created, *place in games:
            yield Member(pattern.format(id=game_id), place[0], created, rows.Place(*place))
        return
    for game_id, stored, created in qs.values_list("client_game_id", field, "created_at").iterator(chunk_size=BATCH):
        yield Member(pattern.format(id=game_id), stored, created)
