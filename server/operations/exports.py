"""Building a day's data exports of a run: the games stored that UTC day (disabled ones left out).

- ``sgf``: a zip of every game's SGF, ``training/<game id>.sgf`` and ``rating/<game id>.sgf``;
- ``npz``: a tar of every self-play game's training rows, ``<game id>.npz`` (KataGo's layout: its
  tools read a folder of such files).

The archive is written to a temporary file, hashed, and stored under a name of its own,
``exports/<run>/<file name stem>.<sha256 prefix>.<zip|tar>``; the row is made once the file is
stored, so a failed export leaves no row (and is simply run again). Made again (``force``), the new
archive is stored beside the old one, the row switched to it, and only then the old file deleted: a
failure on the way leaves the old archive as it was, listed and downloadable.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.core.files import File
from django.core.files.storage import default_storage
from django.db import transaction

from server.files import sha256_of_file
from server.games import rows
from server.games.models import RatingGame, TrainingGame
from server.operations.archives import Member, npz_tar, sgf_zip
from server.operations.models import DataExport

log = logging.getLogger(__name__)


def day_bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time.min, tzinfo=UTC)
    return start, start + timedelta(days=1)


def _games(model, run, day: date):
    start, end = day_bounds(day)
    return model.objects.filter(run=run, disabled=False, created_at__gte=start, created_at__lt=end).order_by(
        "created_at", "id"
    )


def _training_and_rating(run, day: date) -> Iterator[Member]:
    for folder, model in (("training", TrainingGame), ("rating", RatingGame)):
        for game_id, name, stamp in (
            _games(model, run, day).values_list("client_game_id", "sgf", "created_at").iterator()
        ):
            yield Member(f"{folder}/{game_id}.sgf", name, stamp)


def _rows(run, day: date) -> Iterator[Member]:
    for game_id, stamp, *place in (
        _games(TrainingGame, run, day).values_list("client_game_id", "created_at", *rows.FIELDS).iterator()
    ):
        yield Member(f"{game_id}.npz", place[0], stamp, rows.Place(*place))


def _write_sgf(out, run, day: date) -> int:
    return sum(1 for _ in sgf_zip(out, _training_and_rating(run, day)))


def _write_npz(out, run, day: date) -> int:
    return sum(1 for _ in npz_tar(out, _rows(run, day)))


WRITERS: dict[str, Callable[[Any, Any, date], int]] = {DataExport.Kind.SGF: _write_sgf, DataExport.Kind.NPZ: _write_npz}


def export_day(run, day: date, kind: str, force: bool = False) -> DataExport | None:
    """The run's export of ``kind`` for ``day`` (made unless it exists; ``force`` makes it again).
    None when the day has no games."""
    existing = DataExport.objects.filter(run=run, day=day, kind=kind).first()
    if existing is not None and not force:
        return existing
    with tempfile.TemporaryFile() as out:
        games = WRITERS[kind](out, run, day)
        if games == 0:
            return None
        sha256, size = sha256_of_file(out)
        export = DataExport(run=run, day=day, kind=kind, size_bytes=size, sha256=sha256, games=games)
        stem, suffix = export.filename.rsplit(".", 1)
        stored = default_storage.save(
            f"exports/{run.name}/{stem}.{export.sha256[:16]}.{suffix}", File(out, name=export.filename)
        )
    old_name = None
    try:
        with transaction.atomic():
            old = DataExport.objects.select_for_update().filter(run=run, day=day, kind=kind).first()
            if old is not None:
                old_name = old.file.name
                old.delete()
            export.file.name = stored
            export.save()
    except BaseException:
        if stored != old_name:
            default_storage.delete(stored)
        raise
    if old_name and old_name != stored and not DataExport.objects.filter(file=old_name).exists():
        try:
            default_storage.delete(old_name)
        except Exception:  # the new archive is in place; the old file is only wasted space
            log.exception("run %s: could not delete the replaced export %s", run.name, old_name)
    log.info("run %s: %s export of %s: %d games, %d bytes", run.name, kind, day, games, size)
    return export
