"""Building a day's data exports of a run: the games stored that UTC day.

- ``sgf``: a zip of every game's SGF, ``training/<game id>.sgf`` and ``rating/<game id>.sgf``
  (disabled games left out);
- ``npz``: the day's shards (``server.games.shards``), the tars of every self-play game's training
  rows, ``<game id>.npz``, that the trainer reads (KataGo's layout: its tools read a folder of such
  files). No second copy of the rows is written: the archive lists the shards. It holds every game
  of the day, the disabled ones too (their rows are in the shards' bytes, which never change): the
  archive lists those games as they are now (:func:`disabled_members`), for its downloaders to skip.

The zip is written to a temporary file, hashed, and stored under a name of its own,
``exports/<run>/<file name stem>.<sha256 prefix>.zip``; the row is made once the file is stored, so
a failed export leaves no row (and is simply run again). Made again (``force``), the new archive is
stored beside the old one, the row switched to it, and only then the old file deleted: a failure on
the way leaves the old archive as it was, listed and downloadable.

An npz archive is made once the day is over and every game of it is in a shard: building it first
packs what is due for the run (every past day is), and a day with a game left unpacked (a packer
that stopped on a missing file) has no npz archive until that game is packed (``NotPacked``). Made
again, the same row lists the day's shards in the transaction that checks them all packed, so the
listing is never without them and the shards themselves are never written or deleted here.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta

from django.core.files import File
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from server.files import sha256_of_file
from server.games.models import RatingGame, Shard, TrainingGame
from server.games.shards import pack_due
from server.operations.archives import Member, sgf_zip
from server.operations.models import DataExport

log = logging.getLogger(__name__)


class NotPacked(Exception):
    """A day not over yet, or with games not in a shard yet: its npz archive would miss some."""


def day_bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time.min, tzinfo=UTC)
    return start, start + timedelta(days=1)


def _games(model, run, day: date):
    start, end = day_bounds(day)
    return model.objects.filter(run=run, created_at__gte=start, created_at__lt=end)


def _training_and_rating(run, day: date) -> Iterator[Member]:
    for folder, model in (("training", TrainingGame), ("rating", RatingGame)):
        games = _games(model, run, day).filter(disabled=False).order_by("created_at", "id")
        for game_id, name, stamp in games.values_list("client_game_id", "sgf", "created_at").iterator():
            yield Member(f"{folder}/{game_id}.sgf", name, stamp)


def export_day(run, day: date, kind: str, force: bool = False) -> DataExport | None:
    """The run's export of ``kind`` for ``day`` (made unless it exists; ``force`` makes it again).
    None when the day has no games; NotPacked when its npz archive cannot be made yet."""
    existing = DataExport.objects.filter(run=run, day=day, kind=kind).first()
    if existing is not None and not force:
        return existing
    if kind == DataExport.Kind.NPZ:
        return _npz_archive(run, day)
    return _sgf_archive(run, day)


def _sgf_archive(run, day: date) -> DataExport | None:
    kind = DataExport.Kind.SGF
    with tempfile.TemporaryFile() as out:
        games = sum(1 for _ in sgf_zip(out, _training_and_rating(run, day)))
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


def _npz_archive(run, day: date) -> DataExport | None:
    end = day_bounds(day)[1]
    if timezone.now() < end:
        raise NotPacked(f"run {run.name}: {day} is not over: its npz archive would miss the games still to come")
    pack_due(run)
    kind = DataExport.Kind.NPZ
    with transaction.atomic():
        export = DataExport.objects.select_for_update().filter(run=run, day=day, kind=kind).first()
        # Unpacked games first, then the shards: a shard committed between the two reads is listed.
        left = _games(TrainingGame, run, day).filter(shard__isnull=True).count()
        if left:
            raise NotPacked(f"run {run.name}: {left} game(s) of {day} are not in a shard yet (see the packer's log)")
        shards = list(Shard.objects.filter(run=run, day=day).order_by("id"))
        if not shards:
            return None
        export = export or DataExport(run=run, day=day, kind=kind)
        export.size_bytes = sum(shard.size_bytes for shard in shards)
        export.games = sum(shard.games for shard in shards)
        export.created_at = timezone.now()
        export.save()
        export.shards.set(shards)
    log.info(
        "run %s: npz export of %s: %d shards, %d games, %d bytes",
        run.name,
        day,
        len(shards),
        export.games,
        export.size_bytes,
    )
    return export


def disabled_members(export: DataExport) -> Iterator[str]:
    """The member names (``<game id>.npz``) of an npz archive's games that are disabled now: in its
    shards' bytes, to be skipped (e.g. ``tar -x --exclude-from``). Read through the index of the
    disabled packed games, so it costs what they are, not the day's games."""
    games = TrainingGame.objects.filter(disabled=True, shard__exports=export).order_by("client_game_id")
    for game_id in games.values_list("client_game_id", flat=True).iterator(chunk_size=2000):
        yield f"{game_id}.npz"
