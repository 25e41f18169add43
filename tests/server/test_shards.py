"""Shards: a run's self-play games packed into content-addressed tars, closed on rows, bytes, age and
the day's end, recorded with each game's place, and never losing a game to a crash."""

from __future__ import annotations

import io
import tarfile
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from server.games import shards, tasks
from server.games.shards import Caps, ShardConflict, pack, pack_due
from tests.server import helpers
from tests.server.conftest import stored_files

NOW = datetime(2026, 12, 6, 18, 0, tzinfo=UTC)
CAPS = Caps(rows=100, bytes=1 << 30, seconds=3600)


@pytest.fixture
def alice_user(alice):
    return alice[0]


def with_holdout(run, one_in: int):
    document = run.current_settings().settings.to_dict()
    document["training"]["holdout_one_in"] = one_in
    run.set_settings(document)
    return run


@pytest.fixture
def no_holdout(run):
    """The run holds out none of its games (the packing of held-out games has a test of its own)."""
    with_holdout(run, 0)


def fake_games(count: int, rows: int = 10, seed: int = 0) -> list[helpers.PlayedGame]:
    """Games whose npz bytes differ (the packer reads them, never parses them)."""
    rng = np.random.default_rng(seed)
    meta = {"board_x_size": 9, "board_y_size": 9, "komi": 7.0, "result": "B+R", "moves": 40, "rows": rows}
    return [helpers.PlayedGame(b"sgf", rng.bytes(3000 + 17 * k), dict(meta)) for k in range(count)]


def store(run, user, games, end: datetime, minutes_apart: float = 1.0) -> list:
    """The games stored oldest first, ``minutes_apart`` apart, the last at ``end``."""
    rows = helpers.store_training_games(run, user, games, minutes_apart=minutes_apart)
    for k, game in enumerate(rows):
        game.created_at = end - timedelta(minutes=minutes_apart * (len(rows) - 1 - k))
        game.save(update_fields=["created_at"])
    return rows


def read_back(shard) -> dict[str, bytes]:
    with shard.file.open("rb") as f:
        data = f.read()
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        return {m.name: archive.extractfile(m).read() for m in archive.getmembers()}


def test_a_shard_closes_on_its_rows_and_says_where_each_game_lies(run, no_holdout, alice_user):
    games = store(run, alice_user, fake_games(25), NOW)  # 250 rows, the oldest 24 minutes old
    assert pack(run, CAPS, NOW) is not None
    first = run.shards.get()
    assert (first.rows, first.games, first.day) == (100, 10, NOW.date())
    assert (first.first_game_id, first.last_game_id) == (games[0].id, games[9].id)
    assert first.file.name == f"shards/{first.sha256[:2]}/{first.sha256[2:4]}/{first.sha256}.tar"
    with first.file.open("rb") as f:
        data = f.read()
    assert len(data) == first.size_bytes
    # Each game's npz file at its offset, and the tar KataGo's tools unpack: <game id>.npz.
    for game in games[:10]:
        game.refresh_from_db()
        assert game.shard_id == first.id
        original = game.npz.open("rb").read()
        assert data[game.shard_offset : game.shard_offset + game.shard_length] == original
    assert read_back(first) == {f"{g.client_game_id}.npz": g.npz.open("rb").read() for g in games[:10]}
    # 150 rows left: one more full shard, then 50 rows that wait (their oldest has waited 4 minutes).
    assert len(pack_due(run, CAPS, NOW)) == 1
    assert run.shards.count() == 2 and shards.unpacked(run).count() == 5
    assert pack(run, CAPS, NOW) is None
    # An hour after the oldest of them, they close a shard of their own.
    assert pack(run, CAPS, NOW + timedelta(minutes=55)) is None
    last = pack(run, CAPS, NOW + timedelta(minutes=56))
    assert last is not None and (last.rows, last.games) == (50, 5) and not shards.unpacked(run).exists()


def test_the_same_games_make_the_same_bytes_and_name(run, no_holdout, alice_user):
    store(run, alice_user, fake_games(4), NOW)
    shard = pack(run, CAPS, NOW, force=True)
    first = shard.file.open("rb").read()
    from server.games.models import TrainingGame

    TrainingGame.objects.update(shard=None, shard_offset=None, shard_length=None)
    shard.delete()
    again = pack(run, CAPS, NOW + timedelta(days=3), force=True)
    assert again.sha256 == shard.sha256 and again.file.name == shard.file.name
    assert again.file.open("rb").read() == first
    with tarfile.open(fileobj=io.BytesIO(first)) as archive:
        assert {(m.mtime, m.uid, m.gid, m.uname, m.gname, m.mode) for m in archive} == {(0, 0, 0, "", "", 0o644)}


def test_a_shard_holds_one_days_games_and_a_day_over_is_packed_whatever_its_rows(run, no_holdout, alice_user):
    midnight = datetime(2026, 12, 6, tzinfo=UTC)
    store(run, alice_user, fake_games(6), midnight + timedelta(minutes=2))  # 3 before midnight, 3 after
    assert pack(run, CAPS, midnight + timedelta(minutes=5)) is not None  # the 5th is over: its 3 games
    shard = run.shards.get()
    assert (shard.day.isoformat(), shard.games, shard.rows) == ("2026-12-05", 3, 30)
    assert pack(run, CAPS, midnight + timedelta(minutes=5)) is None  # the 6th's have waited 5 minutes
    assert [s.games for s in pack_due(run, CAPS, midnight + timedelta(minutes=5), force=True)] == [3]


def test_a_shard_closes_before_the_game_that_would_pass_its_bytes(run, no_holdout, alice_user):
    store(run, alice_user, fake_games(10), NOW)
    closed = pack_due(run, Caps(rows=10_000, bytes=14_000, seconds=60), NOW)
    # Each game is about 3.5 KiB of tar: three fit in 14,000 bytes with the tar's end, a fourth would not.
    # The tenth waits: it is alone, and fresh.
    assert [s.games for s in closed] == [3, 3, 3] and shards.unpacked(run).count() == 1
    assert all(s.size_bytes <= 14_000 + tarfile.RECORDSIZE for s in closed)
    # A game larger than the cap on its own still gets a shard: one game each.
    store(run, alice_user, fake_games(1, seed=5), NOW)
    assert [s.games for s in pack_due(run, Caps(rows=10_000, bytes=100, seconds=60), NOW, force=True)] == [1, 1]


def test_a_crash_before_the_commit_loses_no_game_and_leaves_no_shard(run, no_holdout, alice_user, monkeypatch):
    games = store(run, alice_user, fake_games(12), NOW)
    before = {p.name for p in stored_files()}

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # as a process stopped between writing the file and recording it

    monkeypatch.setattr(shards.TrainingGame.objects, "bulk_update", killed)
    with pytest.raises(KeyboardInterrupt):
        pack(run, CAPS, NOW)
    assert not run.shards.exists() and shards.unpacked(run).count() == 12
    assert {p.name for p in stored_files()} == before  # the shard's file was removed with it
    monkeypatch.undo()
    closed = pack_due(run, CAPS, NOW, force=True)
    assert sum(s.games for s in closed) == 12 and not shards.unpacked(run).exists()
    for game in games:
        game.refresh_from_db()
        data = game.shard.file.open("rb").read()
        assert data[game.shard_offset : game.shard_offset + game.shard_length] == game.npz.open("rb").read()


def test_a_packer_that_finds_its_games_taken_discards_its_file(run, no_holdout, alice_user, monkeypatch):
    store(run, alice_user, fake_games(3), NOW)
    real_write = shards._write

    def write_then_lose_the_race(out, games, caps):
        placed = real_write(out, games, caps)
        shards.TrainingGame.objects.filter(pk=placed[0][0].id).update(shard_offset=0)  # not the race yet
        other = shards.Shard.objects.create(
            run=run, file="shards/other.tar", sha256="0" * 64, size_bytes=0, rows=0, games=0, day=NOW.date()
        )
        shards.TrainingGame.objects.filter(pk=placed[0][0].id).update(shard=other)
        return placed

    monkeypatch.setattr(shards, "_write", write_then_lose_the_race)
    with pytest.raises(ShardConflict, match="were packed meanwhile"):
        pack(run, CAPS, NOW, force=True)
    assert list(run.shards.values_list("sha256", flat=True)) == ["0" * 64]
    assert not any(p.suffix == ".tar" for p in stored_files())


def test_a_missing_game_file_stops_the_packing_and_names_the_game(run, no_holdout, alice_user):
    games = store(run, alice_user, fake_games(3), NOW)
    games[1].npz.storage.delete(games[1].npz.name)
    with pytest.raises(FileNotFoundError, match=f"game {games[1].client_game_id}: its rows' file"):
        pack(run, CAPS, NOW, force=True)
    assert not run.shards.exists() and not any(p.suffix == ".tar" for p in stored_files())


def test_an_upload_queues_the_packing_at_most_once_a_minute(
    run, alice, settings, monkeypatch, selfplay_games, django_capture_on_commit_callbacks
):
    """Through the API: an upload's game is stored in a file of its own, and once the upload commits
    the packer is queued (here run at once) and packs what is due; a process queues it at most once
    a minute per run, so the second upload's game waits for a later one."""
    from tests.server.conftest import new_task
    from tests.server.test_games import TRAINING, post

    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}
    settings.SENTE_SHARDS = {"rows": 1, "bytes": 1 << 30, "seconds": 3600}
    monkeypatch.setattr(tasks, "_not_before", {})
    task = new_task(alice[1], games=2)
    for game in selfplay_games[:2]:
        with django_capture_on_commit_callbacks(execute=True):
            response = post(alice[1], TRAINING, helpers.upload_fields(task["id"], game))
        assert response.status_code == 201, response.content
    shard = run.shards.get()
    assert shard.games == 1 and shard.rows == selfplay_games[0].metadata["rows"]
    assert [g.client_game_id for g in shards.unpacked(run)] == [selfplay_games[1].metadata["game_id"]]
    monkeypatch.setattr(tasks, "_not_before", {})  # a minute later
    with django_capture_on_commit_callbacks(execute=True):
        tasks.request_packing(run)
    assert run.shards.count() == 2 and not shards.unpacked(run).exists()


def test_the_command_packs_what_is_due_and_with_all_the_rest(run, no_holdout, alice_user):
    from django.core.management import CommandError, call_command

    store(run, alice_user, fake_games(3), datetime.now(UTC), minutes_apart=0)
    out = io.StringIO()
    call_command("shard", stdout=out)
    assert "test: 0 shard(s) closed, 0 games, 0 rows; 3 game(s) wait for the next" in out.getvalue()
    call_command("shard", "--run", "test", "--all", stdout=out)
    assert "test: 1 shard(s) closed, 3 games, 30 rows; 0 game(s) wait for the next" in out.getvalue()
    with pytest.raises(CommandError, match="there is no run 'nope'"):
        call_command("shard", "--run", "nope")


def test_the_admin_shows_the_shards_and_changes_none(run, no_holdout, alice_user, admin_client):
    store(run, alice_user, fake_games(2), NOW)
    shard = pack(run, CAPS, NOW, force=True)
    page = admin_client.get("/admin/games/shard/")
    assert page.status_code == 200 and shard.sha256.encode() in page.content
    assert admin_client.get(f"/admin/games/shard/{shard.pk}/change/").status_code == 200
    assert admin_client.get("/admin/games/shard/add/").status_code == 403
    assert admin_client.post(f"/admin/games/shard/{shard.pk}/delete/", {"post": "yes"}).status_code == 403
    assert run.shards.get() == shard


def test_held_out_games_go_into_shards_of_their_own(run, alice_user):
    """A shard's games are all held out of training or none are, so that reading a window's games
    from their shards never reads a held-out game's bytes; each kind keeps its games' order."""
    from server.games.holdout import is_held_out
    from server.games.models import TrainingGame

    with_holdout(run, 3)
    games = store(run, alice_user, fake_games(30, rows=5), NOW)  # 150 rows
    held = [g.id for g in games if is_held_out(g.npz_sha256, 3)]
    assert 3 <= len(held) <= 20
    packed = pack_due(run, Caps(rows=40, bytes=1 << 30, seconds=3600), NOW, force=True)
    assert not shards.unpacked(run).exists()

    def members(shard) -> list[int]:
        return list(TrainingGame.objects.filter(shard=shard).order_by("shard_offset").values_list("id", flat=True))

    for shard in packed:
        ids = members(shard)
        assert shard.games == len(ids) and ids == sorted(ids)
        assert all((game in held) == shard.held_out for game in ids), shard
    assert sorted(g for s in packed if s.held_out for g in members(s)) == held
    assert {s.held_out for s in packed} == {True, False}


def test_the_window_reads_packed_games_from_their_shards_every_row_once(run, no_holdout, alice_user, selfplay_games):
    """The trainer's window names each packed game's shard and place: a pass reads them in ranged
    reads of the shard and yields every row once, as it does from the games' own files."""
    from common.data.loader import ShuffledPass
    from common.data.schema import GT_GAME_HASH_FIRST, GT_TURN_INDEX
    from server.files import read_file, read_range
    from server.training.plan import Chunk
    from server.training.window import training_window

    settings = run.current_settings().settings.training.replace(holdout_one_in=0, window_c=10**6)
    store(run, alice_user, selfplay_games[:4], NOW)
    store(run, alice_user, selfplay_games[4:], NOW + timedelta(minutes=10))

    def rows(files) -> list[tuple[int, int]]:
        batches = ShuffledPass(files, read_file, 7, seed=3, open_range=read_range, unit_rows=50).batches()
        t = [b.global_targets for b in batches]
        return sorted((int(r[GT_GAME_HASH_FIRST]), int(r[GT_TURN_INDEX])) for batch in t for r in batch)

    unpacked = training_window(run, settings).files
    assert not any(f.shard for f in unpacked)
    four = Caps(rows=sum(g.metadata["rows"] for g in selfplay_games[:4]), bytes=1 << 30, seconds=3600)
    pack(run, four, NOW + timedelta(minutes=11), force=True)  # the older four; the newer two stay unpacked
    window = training_window(run, settings).files
    assert [bool(f.shard) for f in window] == [False] * 2 + [True] * 4
    packed = window[2:]
    shard = run.shards.get()
    assert {f.shard for f in packed} == {shard.file.name} and all(f.length > 0 for f in packed)
    assert rows(window) == rows(unpacked) and len(rows(window)) == sum(f.rows for f in window)
    # A chunk of the plan keeps the places, and one made before the packing reads the files by name.
    for files in (window, unpacked):
        chunk = Chunk(seed=1, files=files, end_samples=64, total_rows=1, window_rows=1)
        assert Chunk.from_dict(chunk.to_dict()).files == files


def test_a_stored_files_range_is_read_as_asked(run):
    from server.files import StoredFiles, read_range

    name = StoredFiles().put("shards", bytes(range(256)) * 4, ".tar")
    assert read_range(name, 0, 3) == b"\x00\x01\x02"
    assert read_range(name, 1020, 100) == bytes([252, 253, 254, 255])  # fewer at its end
    with pytest.raises(FileNotFoundError):
        read_range("shards/none.tar", 0, 1)


@pytest.fixture
def s3(settings, monkeypatch):
    """The default storage on an S3 server on this machine (moto's, serving the S3 protocol over
    HTTP on a free port), in a bucket of its own under a prefix."""
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    for key, value in (
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_DEFAULT_REGION", "us-east-1"),
    ):
        monkeypatch.setenv(key, value)
    endpoint = f"http://{host}:{port}"
    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="sente-files")
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": "sente-files",
                "location": "run",
                "endpoint_url": endpoint,
                "file_overwrite": False,
            },
        },
    }
    yield endpoint
    server.stop()


def test_a_range_of_an_object_on_s3_is_one_ranged_request(s3):
    from django.core.files.storage import default_storage

    from server.files import StoredFiles, _s3_client, read_file, read_range

    data = bytes(range(256)) * 4
    name = StoredFiles().put("shards", data, ".tar")
    asked: list[str | None] = []
    # One client serves every thread's ranged reads (a session and a resource per thread cost the GIL).
    with ThreadPoolExecutor(4) as pool:
        clients = set(pool.map(lambda _: id(_s3_client(default_storage)), range(8)))
    assert clients == {id(_s3_client(default_storage))}
    events = _s3_client(default_storage).meta.events
    events.register("before-send.s3.GetObject", lambda request, **_: asked.append(request.headers.get("Range")))
    assert read_range(name, 1000, 10) == data[1000:1010]
    assert read_range(name, 1020, 100) == data[1020:]  # fewer at its end
    assert read_range(name, 5000, 10) == b""  # past it
    assert [a.decode() if isinstance(a, bytes) else a for a in asked] == [
        "bytes=1000-1009",
        "bytes=1020-1119",
        "bytes=5000-5009",
    ]
    assert read_file(name) == data
    with pytest.raises(FileNotFoundError, match="no such object"):
        read_range("shards/none.tar", 0, 1)


def test_a_shard_on_s3_holds_each_game_at_its_place(s3, run, alice_user):
    from server.files import read_range

    games = store(run, alice_user, fake_games(5), NOW)
    shard = pack(run, CAPS, NOW, force=True)
    assert shard is not None and shard.games == 5
    for game in games:
        game.refresh_from_db()
        with game.npz.open("rb") as f:
            assert read_range(shard.file.name, game.shard_offset, game.shard_length) == f.read()


# --- SENTE_SHARD_DROP_GAME_FILES ------------------------------------------------------------------
def _exists(game) -> bool:
    return game.npz.storage.exists(game.npz.name)


@pytest.fixture
def drop(settings):
    settings.SENTE_SHARD_DROP_GAME_FILES = True


def test_by_default_the_game_files_stay_beside_their_shard(run, no_holdout, alice_user):
    games = store(run, alice_user, fake_games(3), NOW)
    (shard,) = pack_due(run, CAPS, NOW, force=True)
    assert all(_exists(game) for game in games) and not shard.game_files_dropped


def test_dropped_game_files_are_read_from_their_shards(run, no_holdout, alice_user, drop):
    from django.test import Client

    from server.games.models import TrainingGame
    from server.games.rows import game_rows

    games = store(run, alice_user, fake_games(3), NOW)
    rows = {game.client_game_id: game.npz.open("rb").read() for game in games}
    names = {game.pk: game.npz.name for game in games}
    (shard,) = pack_due(run, CAPS, NOW, force=True)
    shard.refresh_from_db()
    assert shard.game_files_dropped and not any(_exists(game) for game in games)
    for game in TrainingGame.objects.select_related("shard").filter(run=run):
        assert game.npz.name == names[game.pk]  # the rows' name stays: their identity
        assert game_rows(game) == rows[game.client_game_id]
    response = Client().get("/api/v1/games/export/?kind=npz")
    with tarfile.open(fileobj=io.BytesIO(b"".join(response.streaming_content))) as archive:
        members = {m.name: archive.extractfile(m).read() for m in archive.getmembers()}
    assert members == {f"{game_id}.npz": data for game_id, data in rows.items()}


def test_a_file_a_game_not_packed_yet_names_is_kept_until_that_game_is_packed(run, no_holdout, alice_user, drop):
    """The same rows uploaded twice share one file: packing the first game must not delete it while
    the second, not packed yet, still reads it."""
    (played,) = fake_games(1)
    (first,) = store(run, alice_user, [played], NOW - timedelta(days=1))
    (second,) = store(run, alice_user, [played], NOW)
    assert first.npz.name == second.npz.name
    (shard,) = pack_due(run, CAPS, NOW)  # yesterday's game; today's is not due
    shard.refresh_from_db()
    assert shard.game_files_dropped and _exists(second) and shards.unpacked(run).get() == second
    assert len(pack_due(run, CAPS, NOW, force=True)) == 1
    assert not _exists(second)
    for game in (first, second):
        game.refresh_from_db()
        data = game.shard.file.open("rb").read()
        assert data[game.shard_offset : game.shard_offset + game.shard_length] == played.npz


def test_files_left_by_a_packer_killed_after_its_commit_are_deleted_by_the_next(
    run, no_holdout, alice_user, settings, monkeypatch
):
    """Killed between the shard's commit and the deletion, a packer leaves files no one needs (the
    games are packed); the run's next packing deletes them, as it does those of the shards packed
    before the setting was turned on."""
    from django.core.files.storage import default_storage

    from server.games.rows import game_rows

    settings.SENTE_SHARD_DROP_GAME_FILES = True
    games = store(run, alice_user, fake_games(3, seed=2), NOW - timedelta(days=1))

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(default_storage, "delete", killed)
    with pytest.raises(KeyboardInterrupt):
        pack_due(run, CAPS, NOW)
    monkeypatch.undo()
    assert not shards.unpacked(run).exists() and all(_exists(game) for game in games)
    settings.SENTE_SHARD_DROP_GAME_FILES = False
    early = store(run, alice_user, fake_games(2, seed=1), NOW - timedelta(days=2))
    pack_due(run, CAPS, NOW)  # the setting off: the files stay, and those left are left
    assert all(_exists(game) for game in early + games)
    assert not run.shards.filter(game_files_dropped=True).exists()
    settings.SENTE_SHARD_DROP_GAME_FILES = True
    assert pack_due(run, CAPS, NOW) == []
    assert run.shards.filter(game_files_dropped=False).count() == 0
    for game in early + games:
        game.refresh_from_db()
        assert (
            not _exists(game)
            and game_rows(game)
            == game.shard.file.open("rb").read()[game.shard_offset : game.shard_offset + game.shard_length]
        )


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # two connections see each other's locks
def test_an_upload_waits_for_a_packer_deleting_its_file(run, no_holdout, alice_user, drop):
    """The packer holds the names it deletes: an upload of the same rows meanwhile waits, then stores
    the file again rather than naming one that is gone."""
    import threading

    from django.db import connection, transaction

    from server.games.shards import _name_key, hold_rows_file

    (played,) = fake_games(1)
    (game,) = store(run, alice_user, [played], NOW - timedelta(days=1))
    name = game.npz.name
    done = []

    def upload():
        try:
            with transaction.atomic():
                hold_rows_file(name)
                done.append(True)
        finally:
            connection.close()

    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_name_key(name)])
        thread = threading.Thread(target=upload)
        thread.start()
        thread.join(1.0)
        assert not done  # the upload waits while the packer holds the name
    thread.join(10.0)
    assert done == [True]
