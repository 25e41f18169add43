"""Shards: a run's self-play rows packed many games to a file, so that reading a window of a million
games takes a few hundred requests to storage rather than a million.

A game is stored as it is accepted, one npz file of its own (``server.games.ingest``); the packer
later packs the run's games not yet in a shard, oldest first, into an uncompressed tar of their npz
files named ``<game id>.npz`` (KataGo's layout: its tools read a folder of such files, and ``tar x``
makes one), closes it into storage under its content's sha256 and records it: a ``Shard`` row (its
rows, games, first and last game) and, on each of its games, the shard and where its file lies in
it (``shard_offset``, ``shard_length``), so that one game's rows are one ranged read. A shard holds
the games of one UTC day and is closed once they hold ``SENTE_SHARDS["rows"]`` rows or
``["bytes"]`` bytes, once its oldest game has waited ``["seconds"]``, or once its day is over.

The run's held-out games (``server.games.holdout``, one in ``holdout_one_in`` by the settings at
packing time) go into shards of their own, so that a window's ranged reads never read through
them: a shard's games are all held out or none are (``Shard.held_out``). A later change of
``holdout_one_in`` costs only bytes read through, never a wrong row.

The tar is deterministic (members in the games' order, times, owners and modes zeroed): the same
games always make the same bytes and so the same name.

Nothing is lost to a crash, because a game is packed only from its stored file and a shard counts
only once the transaction that records it commits. Killed before the commit, the packer leaves the
games unpacked (packed again by the next run, into the same name) and at most a file no row names;
killed after it, the shard is whole and recorded. Two packers of one run take turns at the commit
(the run's row, locked): the second finds its games taken and discards its file.

With ``SENTE_SHARD_DROP_GAME_FILES`` the packer then deletes the games' own npz files (off, they stay
as the record of each upload): only after the commit, so a file is deleted only once its game is
recorded as packed, and read from its shard since (``server.games.rows``); and never a file that a
game not packed yet names (the same rows uploaded again: names are the content's). An upload holds
its file's name (:func:`hold_rows_file`) from before it looks for the file until it commits, and the
packer holds the names it deletes, so an upload that finds the file there is committed before the
packer looks for unpacked games naming it, and one that comes after the deletion stores the file
again. ``TrainingGame.npz`` keeps the name: it is the rows' identity (the training window reads each
distinct one once). A shard is marked ``game_files_dropped`` once its files are gone; a packer killed
before that leaves files that are only wasted space, and the run's next packing deletes them (as it
does those of every shard packed before the setting was turned on).
"""

from __future__ import annotations

import hashlib
import io
import itertools
import logging
import tarfile
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import connection, transaction
from django.db.models import Min, Sum
from django.utils import timezone

from server.files import StoredFiles, sha256_of_file
from server.games.holdout import is_held_out
from server.games.models import Shard, TrainingGame
from server.games.rows import Place, read_rows
from server.runs.models import Run

log = logging.getLogger(__name__)

KIND = "shards"  # the storage folder: shards/<aa>/<bb>/<sha256>.tar
READERS = 16  # game files read at once: a round trip each on object storage
DROP_BATCH = 500  # game files deleted per transaction (their names held meanwhile)


class ShardConflict(Exception):
    """Another packer packed some of the games first."""


@dataclass(frozen=True)
class Caps:
    rows: int
    bytes: int
    seconds: int

    @classmethod
    def from_settings(cls) -> Caps:
        return cls(**settings.SENTE_SHARDS)


@dataclass(frozen=True)
class _Game:
    id: int
    game_id: str
    npz: str
    rows: int
    created_at: datetime
    held_out: bool


def _day_bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    return start, start + timedelta(days=1)


def unpacked(run):
    """The run's self-play games not in a shard yet, oldest first."""
    return TrainingGame.objects.filter(run=run, shard__isnull=True).order_by("created_at", "id")


def _due_day(run, caps: Caps, now: datetime, force: bool) -> date | None:
    """The UTC day whose oldest unpacked games make a shard now, or None: the oldest day with
    unpacked games, when they fill a shard's rows, their day is over, the oldest has waited
    ``caps.seconds`` or ``force``."""
    oldest = unpacked(run).aggregate(first=Min("created_at"))["first"]
    if oldest is None:
        return None
    day = oldest.astimezone(UTC).date()
    end = _day_bounds(day)[1]
    if force or now >= end or now - oldest >= timedelta(seconds=caps.seconds):
        return day
    rows = unpacked(run).filter(created_at__lt=end).aggregate(n=Sum("rows"))["n"] or 0
    return day if rows >= caps.rows else None


def _holdout_one_in(run) -> int:
    version = run.current_settings()
    return version.settings.training.holdout_one_in if version is not None else 0


def _games(run, day: date, holdout_one_in: int) -> Iterator[_Game]:
    start, end = _day_bounds(day)
    fields = ("id", "client_game_id", "npz", "rows", "created_at", "npz_sha256")
    games = unpacked(run).filter(created_at__gte=start, created_at__lt=end).values_list(*fields)
    for pk, game_id, npz, rows, created_at, sha256 in games.iterator(2000):
        yield _Game(pk, game_id, npz, rows, created_at, held_out=is_held_out(sha256, holdout_one_in))


def _read(game: _Game) -> bytes:
    try:
        return read_rows(Place(game.npz))
    except FileNotFoundError:
        raise FileNotFoundError(
            f"game {game.game_id}: its rows' file {game.npz} is not in storage; its run's games are not packed "
            "until it is restored or the game deleted"
        ) from None


def _read_all(games: Iterator[_Game]) -> Iterator[tuple[_Game, bytes]]:
    """Each game with its npz file's bytes, ``READERS`` files read at once, in the games' order."""
    with ThreadPoolExecutor(max_workers=READERS) as pool:
        batch: list[_Game] = []
        for game in games:
            batch.append(game)
            if len(batch) == READERS:
                yield from zip(batch, pool.map(_read, batch), strict=True)
                batch = []
        yield from zip(batch, pool.map(_read, batch), strict=True)


def _write(out, games: Iterator[_Game], caps: Caps) -> list[tuple[_Game, int, int]]:
    """Write the tar of the games' npz files to ``out``, stopping after the game that fills the
    rows or before the one that would pass the bytes (never before the first); each game written
    with its file's offset and length in the tar."""
    placed: list[tuple[_Game, int, int]] = []
    rows = 0
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as archive:
        for game, data in _read_all(games):
            info = tarfile.TarInfo(f"{game.game_id}.npz")
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            header = len(info.tobuf(tarfile.USTAR_FORMAT, archive.encoding, archive.errors))
            padded = -(-len(data) // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE
            if placed and archive.offset + header + padded + 2 * tarfile.BLOCKSIZE > caps.bytes:
                break
            offset = archive.offset + header
            archive.addfile(info, io.BytesIO(data))
            archive.getmembers().clear()  # a shard of many games keeps none of them in memory
            placed.append((game, offset, len(data)))
            rows += game.rows
            if rows >= caps.rows:
                break
    return placed


def pack(run, caps: Caps | None = None, now: datetime | None = None, force: bool = False) -> Shard | None:
    """Close one shard of the run's oldest unpacked games if one is due (see the module); None
    when none is. ``force``: close one of whatever games there are."""
    caps = caps or Caps.from_settings()
    now = now or timezone.now()
    day = _due_day(run, caps, now, force)
    if day is None:
        return None
    started = time.monotonic()
    games = _games(run, day, _holdout_one_in(run))
    oldest = next(games, None)
    if oldest is None:
        return None
    # The day's oldest unpacked game says whether this shard holds held-out games or the others.
    held_out = oldest.held_out
    games = itertools.chain([oldest], (game for game in games if game.held_out == held_out))
    with tempfile.TemporaryFile() as out:
        placed = _write(out, games, caps)
        if not placed:
            return None
        sha256, size = sha256_of_file(out)
        files = StoredFiles()
        name = files.put(KIND, File(out, name=f"{sha256}.tar"), ".tar", sha256=sha256)
    try:
        shard = _record(run, day, name, sha256, size, placed, held_out)
    except BaseException:
        files.discard(referenced=lambda stored: Shard.objects.filter(file=stored).exists())
        raise
    if settings.SENTE_SHARD_DROP_GAME_FILES:
        drop_game_files(shard)
    log.info(
        "run %s: shard %s of %s: %d %sgames, %d rows, %d bytes in %.1f s",
        run.name,
        sha256[:12],
        day,
        shard.games,
        "held-out " if held_out else "",
        shard.rows,
        size,
        time.monotonic() - started,
    )
    return shard


def _record(
    run, day: date, name: str, sha256: str, size: int, placed: list[tuple[_Game, int, int]], held_out: bool
) -> Shard:
    """The shard's row and its games' places, in one transaction, or ShardConflict when another
    packer took some of the games first."""
    ids = [game.id for game, _, _ in placed]
    with transaction.atomic():
        # Packers of one run take turns here; uploads, which only reference the run, go on.
        Run.objects.select_for_update(no_key=True).filter(pk=run.pk).first()
        if TrainingGame.objects.filter(pk__in=ids, shard__isnull=True).count() != len(ids):
            raise ShardConflict(f"run {run.name}: games of the shard of {day} were packed meanwhile")
        shard = Shard.objects.create(
            run=run,
            file=name,
            sha256=sha256,
            size_bytes=size,
            rows=sum(game.rows for game, _, _ in placed),
            games=len(placed),
            day=day,
            held_out=held_out,
            first_game_id=placed[0][0].id,
            last_game_id=placed[-1][0].id,
        )
        games = [
            TrainingGame(pk=game.id, shard=shard, shard_offset=offset, shard_length=length)
            for game, offset, length in placed
        ]
        TrainingGame.objects.bulk_update(games, ["shard", "shard_offset", "shard_length"], batch_size=1000)
    return shard


def _name_key(name: str) -> int:
    """The advisory lock of a stored file's name: 64 bits of its hash, in a namespace of its own."""
    return int.from_bytes(hashlib.sha256(f"sente/rows-file/{name}".encode()).digest()[:8], "big", signed=True)


def hold_rows_file(name: str) -> None:
    """Hold the npz file ``name`` until the current transaction ends: an upload, before it looks for
    the file, so that no packer deletes it in between (shared: uploads do not wait for each other).
    SQLite needs nothing: each transaction there holds the whole database from its start."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock_shared(%s)", [_name_key(name)])


def drop_game_files(shard: Shard) -> int:
    """Delete the own npz files of the shard's games that no game outside a shard names (see the
    module); returns how many names it deleted. Safe to run again."""
    names = sorted(set(TrainingGame.objects.filter(shard=shard).values_list("npz", flat=True)))
    deleted = 0
    for start in range(0, len(names), DROP_BATCH):
        batch = names[start : start + DROP_BATCH]
        with transaction.atomic():
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:  # in order: two packers never wait for each other's
                    for key in sorted(_name_key(name) for name in batch):
                        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])
            kept = set(TrainingGame.objects.filter(npz__in=batch, shard__isnull=True).values_list("npz", flat=True))
            for name in batch:
                if name not in kept:
                    default_storage.delete(name)  # a file gone already (a run before this one) is no error
                    deleted += 1
    Shard.objects.filter(pk=shard.pk).update(game_files_dropped=True)
    log.info(
        "shard %s: %d game file(s) deleted, %d kept for games not packed yet", shard, deleted, len(names) - deleted
    )
    return deleted


def drop_due(run) -> None:
    """Delete the game files of the run's shards that still have theirs (a packer killed before it
    deleted them, or shards packed before ``SENTE_SHARD_DROP_GAME_FILES`` was on)."""
    if settings.SENTE_SHARD_DROP_GAME_FILES:
        for shard in Shard.objects.filter(run=run, game_files_dropped=False).order_by("id"):
            drop_game_files(shard)


def pack_due(run, caps: Caps | None = None, now: datetime | None = None, force: bool = False) -> list[Shard]:
    """Every shard of the run that is due (``force``: and then the rest of its unpacked games), after
    the game files of its earlier shards left to drop (:func:`drop_due`)."""
    drop_due(run)
    shards: list[Shard] = []
    while True:
        try:
            shard = pack(run, caps, now, force)
        except ShardConflict as e:
            log.info("%s: another packer has them", e)
            break
        if shard is None:
            return shards
        shards.append(shard)
    return shards
