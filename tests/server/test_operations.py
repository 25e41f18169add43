"""Operations: Prometheus metrics read from the database, refused uploads recorded, the daily data
exports (made once, downloadable in pieces; the SGF zip without the disabled games, the npz archive
the day's shards listing them), and the rows past their retention pruned."""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
import zipfile
from datetime import timedelta

import pytest
from django.core.files.storage import default_storage
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from tests.server import helpers
from tests.server.conftest import new_task

pytestmark = pytest.mark.django_db


def metric(text: str, name: str, **labels) -> float | None:
    """The sample of ``name`` with exactly these labels, from Prometheus' text format."""
    for line in text.splitlines():
        m = re.fullmatch(r"(\w+)(?:\{(.*)\})? (\S+)", line)
        if m and m.group(1) == name and dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or "")) == labels:
            return float(m.group(3))
    return None


def test_metrics_count_tasks_games_refusals_networks_and_the_trainer(run, alice, selfplay_games, settings):
    from server.distribution.models import Task
    from server.training.models import TrainingLine

    settings.SENTE_METRICS_SECONDS = 0
    user, client = alice
    task = new_task(client, games=2)
    old = new_task(client, games=1)  # handed out two hours ago: not in the last hour's
    Task.objects.filter(id=old["id"]).update(
        created_at=timezone.now() - timedelta(hours=2), expires_at=timezone.now() - timedelta(minutes=1)
    )
    stored = helpers.store_training_games(run, user, selfplay_games[:4])
    Task.objects.filter(id=stored[0].task_id).update(games_received=4)  # its games are all in
    for game in stored[:2]:  # two games of three days ago: in the days the website has counted
        game.created_at = timezone.now() - timedelta(days=3)
        game.save()
    stored[3].disabled = True  # left out, as the website leaves it out
    stored[3].save()
    bad = client.post(
        "/api/v1/games/training/", helpers.upload_fields(task["id"], selfplay_games[0], rows=999), format="multipart"
    )
    assert bad.status_code == 400
    TrainingLine.objects.create(
        run=run,
        architecture="tiny",
        role="current",
        status="training",
        samples=1234,
        losses={"policy": 2.5, "value": 0.75},
    )
    response = Client().get("/metrics")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    # the task asked for and the one stored with the games, not the old one
    assert metric(text, "sente_tasks_last_hour", run="test", kind="selfplay") == 2
    assert metric(text, "sente_tasks_last_hour", run="test", kind="rating") == 0
    assert metric(text, "sente_training_games", run="test") == 3
    assert metric(text, "sente_training_rows", run="test") == sum(g.metadata["rows"] for g in selfplay_games[:3])
    assert metric(text, "sente_rating_games", run="test") == 0
    # stored in the last hour: the two games of now (the disabled one too: it was uploaded)
    assert metric(text, "sente_uploads_last_hour", run="test", kind="training") == 2
    assert metric(text, "sente_uploads_last_hour", run="test", kind="rating") == 0
    # open: the task asked for (2 games to come), not the expired one nor the one whose games are in
    assert metric(text, "sente_open_tasks", run="test", kind="selfplay") == 1
    assert metric(text, "sente_open_task_games", run="test", kind="selfplay") == 2
    assert metric(text, "sente_open_tasks", run="test", kind="rating") == 0
    assert metric(text, "sente_upload_refusals_last_hour", kind="training", code=bad.json()["error"]["code"]) == 1
    assert metric(text, "sente_networks", run="test", state="accepted") == 1
    assert metric(text, "sente_trainer_samples", run="test", architecture="tiny", role="current") == 1234
    assert "# TYPE sente_trainer_samples gauge" in text  # a restored checkpoint takes it back
    assert metric(text, "sente_trainer_status", run="test", architecture="tiny", status="training") == 1
    assert metric(text, "sente_trainer_status", run="test", architecture="tiny", status="idle") == 0
    assert metric(text, "sente_trainer_loss", run="test", architecture="tiny", head="policy") == 2.5


def test_a_scrape_reads_no_table_of_games_or_tasks_whole(run, alice, selfplay_games, settings):
    """Tasks, games and refusals grow without end: a scrape reads them only from a time on (the
    last hour, or the day the website's tallies have counted up to), through their indexes by time."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    settings.SENTE_METRICS_SECONDS = 0
    user, client = alice
    new_task(client, games=2)
    for game in helpers.store_training_games(run, user, selfplay_games[:2]):
        game.created_at = timezone.now() - timedelta(days=2)
        game.save()
    Client().get("/metrics")  # the first look counts the days that are over, once (as a page view does)
    with CaptureQueriesContext(connection) as queries:
        assert Client().get("/metrics").status_code == 200
    growing = ("distribution_task", "games_traininggame", "games_ratinggame", "games_uploadrefusal")
    reads = [q["sql"] for q in queries.captured_queries if any(f'"{t}"' in q["sql"] for t in growing)]
    assert len(reads) >= 4
    for sql in reads:
        assert re.search(r'WHERE .*"created_at" >=', sql), sql


def test_metrics_can_require_a_scrape_token(db, settings):
    settings.SENTE_METRICS_TOKEN = "s3cret"
    assert Client().get("/metrics").status_code == 401
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret").status_code == 200


def test_a_refused_upload_is_recorded_with_its_reason(run, alice, selfplay_games):
    from server.games.models import TrainingGame, UploadRefusal

    user, client = alice
    task = new_task(client, games=2)
    response = client.post(
        "/api/v1/games/training/",
        helpers.upload_fields(task["id"], selfplay_games[0], network="nobody"),
        format="multipart",
    )
    assert response.status_code == 400
    refusal = UploadRefusal.objects.get()
    error = response.json()["error"]
    assert (refusal.kind, refusal.user, refusal.code, refusal.field) == (
        "training",
        user,
        error["code"],
        error.get("field") or "",
    )
    assert refusal.message == error["message"][:300]
    assert not TrainingGame.objects.exists()


def test_daily_exports_hold_the_days_games_and_download_in_pieces(run, alice, selfplay_games, tmp_path):
    from server.operations.models import DataExport

    user, _ = alice
    yesterday = timezone.now() - timedelta(days=1)
    games = helpers.store_training_games(run, user, selfplay_games[:4])
    for game in games:
        game.created_at = yesterday.replace(hour=12)
        game.save()
    games[3].disabled = True
    games[3].save()
    today = helpers.store_training_games(run, user, selfplay_games[4:5])  # not over yet: not exported

    out = io.StringIO()
    call_command("export_games", stdout=out)
    assert "2 archive(s) ready" in out.getvalue()
    sgf, npz = (DataExport.objects.get(kind=kind) for kind in ("sgf", "npz"))
    assert sgf.day == npz.day == yesterday.date() and sgf.games == 3
    assert npz.games == 4 and not npz.file.name  # every game of the day, in the shards, no tar of its own

    api = APIClient()
    listing = api.get("/api/v1/exports/", {"run": "test"}).json()
    assert {e["kind"] for e in listing["results"]} == {"sgf", "npz"}
    url = next(e["url"] for e in listing["results"] if e["kind"] == "sgf")
    response = api.get(url)
    assert response.status_code == 200 and response["ETag"] == f'"{sgf.sha256}"'
    data = b"".join(response.streaming_content)
    assert len(data) == sgf.size_bytes
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = sorted(archive.namelist())
        assert names == sorted(f"training/{g.client_game_id}.sgf" for g in games[:3])
        assert archive.read(f"training/{games[0].client_game_id}.sgf") == selfplay_games[0].sgf
    assert f"training/{today[0].client_game_id}.sgf" not in names
    part = api.get(url, HTTP_RANGE="bytes=10-19")
    assert part.status_code == 206 and b"".join(part.streaming_content) == data[10:20]

    # The npz archive: the day's shards, each downloadable, together every game of the day; the
    # disabled one listed to be skipped.
    listed = next(e for e in listing["results"] if e["kind"] == "npz")
    assert (listed["url"], listed["sha256"], listed["games"], listed["disabled_games"]) == (None, None, 4, 1)
    files = api.get(listed["files_url"]).json()["results"]
    shards = list(npz.shards.order_by("id"))
    assert listed["files"] == len(files) == len(shards) >= 1
    assert sum(f["size_bytes"] for f in files) == listed["size_bytes"] == npz.size_bytes
    members = {}
    for listed_file, shard in zip(files, shards, strict=True):
        assert (listed_file["sha256"], listed_file["rows"], listed_file["held_out"]) == (
            shard.sha256,
            shard.rows,
            shard.held_out,
        )
        response = api.get(listed_file["url"])
        body = b"".join(response.streaming_content)
        assert response["ETag"] == f'"{shard.sha256}"' and hashlib.sha256(body).hexdigest() == shard.sha256
        assert listed_file["filename"] in response["Content-Disposition"]
        with tarfile.open(fileobj=io.BytesIO(body)) as archive:
            members.update({m.name: archive.extractfile(m).read() for m in archive.getmembers()})
    assert members == {f"{g.client_game_id}.npz": game.npz for g, game in zip(games, selfplay_games[:4], strict=True)}
    disabled = api.get(listed["disabled_url"])
    assert b"".join(disabled.streaming_content).decode() == f"{games[3].client_game_id}.npz\n"
    assert api.get(f"/api/v1/exports/{npz.pk}/file").json()["error"]["files_url"] == listed["files_url"]
    assert not default_storage.listdir("exports/test")[1] or all(
        name.endswith(".zip") for name in default_storage.listdir("exports/test")[1]
    )

    again = io.StringIO()
    call_command("export_games", stdout=again)  # nothing new to do
    assert "0 archive(s) ready" in again.getvalue() and DataExport.objects.count() == 2
    assert api.get("/api/v1/exports/", {"kind": "bogus"}).json()["error"]["field"] == "kind"
    body = json.loads(api.get("/api/v1/exports/", {"run": "other"}).content)
    assert body["results"] == []


def _yesterdays_games(run, user, games):
    stored = helpers.store_training_games(run, user, games)
    for game in stored:
        game.created_at = (timezone.now() - timedelta(days=1)).replace(hour=12)
        game.save()
    return stored


def test_an_export_made_again_replaces_the_old_only_once_the_new_is_stored(run, alice, selfplay_games, monkeypatch):
    from django.core.files.storage import default_storage

    from server.operations.models import DataExport

    user, _ = alice
    _yesterdays_games(run, user, selfplay_games[:2])
    call_command("export_games", stdout=io.StringIO())
    old = DataExport.objects.get(kind="sgf")
    old_name, old_data = old.file.name, default_storage.open(old.file.name).read()

    # Storing the new archive fails (a full disk, the object store down): the old one stays, whole.
    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(default_storage, "save", full)
        with pytest.raises(CommandError, match="1 archive"):
            call_command("export_games", "--force", "--day", str(old.day), stdout=io.StringIO(), stderr=io.StringIO())
    again = DataExport.objects.get(kind="sgf")
    assert (again.pk, again.file.name, again.sha256) == (old.pk, old_name, old.sha256)
    assert default_storage.open(old_name).read() == old_data
    response = APIClient().get(f"/api/v1/exports/{old.pk}/file")
    assert response.status_code == 200 and b"".join(response.streaming_content) == old_data

    # Made again for real (with a game stored late): a new file under a new name, the row switched to
    # it, the old file gone.
    _yesterdays_games(run, user, selfplay_games[2:3])
    out = io.StringIO()
    call_command("export_games", "--force", "--day", str(old.day), stdout=out)
    assert "2 archive(s) ready" in out.getvalue()
    new = DataExport.objects.get(kind="sgf")
    assert new.games == 3 and new.file.name != old_name and not default_storage.exists(old_name)
    data = default_storage.open(new.file.name).read()
    assert hashlib.sha256(data).hexdigest() == new.sha256 and len(data) == new.size_bytes
    listed = APIClient().get("/api/v1/exports/", {"kind": "sgf"}).json()["results"]
    assert [e["sha256"] for e in listed] == [new.sha256]
    assert b"".join(APIClient().get(listed[0]["url"]).streaming_content) == data


def test_a_failed_export_of_one_kind_is_made_at_the_next_run(run, alice, selfplay_games):
    """A game whose file is missing stops its run's packing, so its day's npz archive waits (never
    listed with a game missing) until the file is back; the SGF archive is made meanwhile."""
    from server.operations.models import DataExport

    user, _ = alice
    games = _yesterdays_games(run, user, selfplay_games[:2])
    name = games[1].npz.name
    kept = default_storage.open(name).read()
    default_storage.delete(name)
    err = io.StringIO()
    with pytest.raises(CommandError, match="1 archive"):
        call_command("export_games", stdout=io.StringIO(), stderr=err)
    assert "npz: failed" in err.getvalue() and games[1].client_game_id in err.getvalue()
    assert set(DataExport.objects.values_list("kind", flat=True)) == {"sgf"}
    sgf = DataExport.objects.get(kind="sgf")

    default_storage.save(name, io.BytesIO(kept))
    out = io.StringIO()
    call_command("export_games", stdout=out)
    assert "1 archive(s) ready" in out.getvalue() and " npz: 2 games" in out.getvalue()
    assert DataExport.objects.get(kind="sgf") == sgf and DataExport.objects.get(kind="npz").games == 2


def test_an_npz_archive_waits_for_its_day_to_end_and_its_games_to_be_packed(run, alice, selfplay_games):
    from server.operations.exports import NotPacked, export_day

    user, _ = alice
    (game,) = helpers.store_training_games(run, user, selfplay_games[:1])
    with pytest.raises(NotPacked, match="not over"):
        export_day(run, timezone.now().date(), "npz")
    err = io.StringIO()
    with pytest.raises(CommandError, match="1 archive"):
        call_command("export_games", "--day", str(timezone.now().date()), stdout=io.StringIO(), stderr=err)
    assert "npz: not made" in err.getvalue()
    # Yesterday's game, whose file is missing: the packer stops on it, and the day has no npz archive.
    from server.games.models import TrainingGame

    TrainingGame.objects.filter(pk=game.pk).update(created_at=timezone.now() - timedelta(days=1))
    default_storage.delete(game.npz.name)
    with pytest.raises(FileNotFoundError):
        export_day(run, (timezone.now() - timedelta(days=1)).date(), "npz")
    from server.operations.models import DataExport

    assert not DataExport.objects.filter(kind="npz").exists()


def test_an_npz_archive_made_again_keeps_its_row_and_lists_games_disabled_later(run, alice, selfplay_games):
    from server.games.models import TrainingGame
    from server.games.services import set_disabled
    from server.operations.exports import export_day

    user, _ = alice
    games = _yesterdays_games(run, user, selfplay_games[:3])
    day = games[0].created_at.date()
    export = export_day(run, day, "npz")
    shards = set(export.shards.values_list("pk", flat=True))
    api = APIClient()
    (listed,) = api.get("/api/v1/exports/", {"kind": "npz"}).json()["results"]
    assert listed["disabled_games"] == 0 and b"".join(api.get(listed["disabled_url"]).streaming_content) == b""
    # Disabled after the archive was made: listed at once, without making it again.
    set_disabled(TrainingGame.objects.filter(pk__in=[games[2].pk, games[0].pk]), True)
    (listed,) = api.get("/api/v1/exports/", {"kind": "npz"}).json()["results"]
    assert listed["disabled_games"] == 2
    lines = b"".join(api.get(listed["disabled_url"]).streaming_content).decode().splitlines()
    assert lines == sorted(f"{g.client_game_id}.npz" for g in (games[0], games[2]))
    again = export_day(run, day, "npz", force=True)
    assert again.pk == export.pk and set(again.shards.values_list("pk", flat=True)) == shards
    from server.operations.models import DataExport

    assert again.games == 3 and DataExport.objects.filter(run=run).count() == 1


def _games_of(run, user, games, days_ago: int) -> list:
    from server.games.models import TrainingGame

    stored = helpers.store_training_games(run, user, games)
    TrainingGame.objects.filter(pk__in=[g.pk for g in stored]).update(
        created_at=(timezone.now() - timedelta(days=days_ago)).replace(hour=12)
    )
    return stored


def test_the_archives_cost_an_anonymous_caller_the_same_whatever_their_size(
    run, alice, selfplay_games, django_assert_num_queries
):
    """The list, an npz archive's files and one shard's download take a fixed number of queries,
    however many days, shards and disabled games there are; a shard is downloadable only through an
    archive that lists it (today's, in no archive yet, is not)."""
    from server.games.models import Shard, TrainingGame
    from server.games.shards import Caps, pack_due
    from server.operations.exports import export_day

    user, _ = alice
    api = APIClient()

    def made(days_ago: int, games, disabled: int = 0):
        stored = _games_of(run, user, games, days_ago)
        TrainingGame.objects.filter(pk__in=[g.pk for g in stored[:disabled]]).update(disabled=True)
        pack_due(run, Caps(rows=1, bytes=1 << 30, seconds=3600))  # a shard a game
        return export_day(run, (timezone.now() - timedelta(days=days_ago)).date(), "npz")

    def costs(export) -> None:
        with django_assert_num_queries(2):  # the count, the page
            assert api.get("/api/v1/exports/").status_code == 200
        with django_assert_num_queries(3):  # the archive, the count, the page
            assert api.get(f"/api/v1/exports/{export.pk}/files/").status_code == 200
        shard = export.shards.first()
        with django_assert_num_queries(2):  # the archive, the shard in it
            assert api.get(f"/api/v1/exports/{export.pk}/shards/{shard.pk}/file").status_code == 200

    costs(made(3, selfplay_games[:1]))
    made(2, selfplay_games[1:3], disabled=1)
    bigger = made(1, selfplay_games[3:6], disabled=1)
    costs(bigger)
    listing = api.get("/api/v1/exports/").json()["results"]
    assert [(e["files"], e["games"], e["disabled_games"]) for e in listing] == [(3, 3, 1), (2, 2, 1), (1, 1, 0)]
    files = api.get(f"/api/v1/exports/{bigger.pk}/files/").json()["results"]
    assert [f["sha256"] for f in files] == list(bigger.shards.order_by("id").values_list("sha256", flat=True))
    helpers.store_training_games(run, user, selfplay_games[:1])
    pack_due(run, force=True)
    today = Shard.objects.get(day=timezone.now().date())
    assert api.get(f"/api/v1/exports/{bigger.pk}/shards/{today.pk}/file").status_code == 404


def test_a_day_of_rating_games_only_is_exported_too(run, alice, selfplay_games):
    """The days to export start with the run's first game of either kind: a day with rating games
    and no self-play game has its SGF archive (rating/...), and no npz archive (no rows)."""
    from server.operations.models import DataExport

    user, _ = alice
    net = run.networks.get(is_random=True)
    rating = helpers.store_rating_games(run, user, net, net, selfplay_games[0].sgf, 2)
    two_days_ago = (timezone.now() - timedelta(days=2)).replace(hour=12)
    for game in rating:
        game.created_at = two_days_ago
        game.save()
    _yesterdays_games(run, user, selfplay_games[:1])
    out = io.StringIO()
    call_command("export_games", stdout=out)
    assert "3 archive(s) ready" in out.getvalue()
    sgf = DataExport.objects.get(day=two_days_ago.date(), kind="sgf")
    with default_storage.open(sgf.file.name, "rb") as f, zipfile.ZipFile(f) as archive:
        assert sorted(archive.namelist()) == sorted(f"rating/{g.client_game_id}.sgf" for g in rating)
    assert not DataExport.objects.filter(day=two_days_ago.date(), kind="npz").exists()


def _task_expired(run, user, ago: timedelta, kind: str = "selfplay"):
    """A task of ``user`` that expired ``ago`` (and brought no game)."""
    from server.distribution.models import Task

    net = run.networks.get(is_random=True)
    networks = {"network": net} if kind == "selfplay" else {"network_a": net, "network_b": net}
    now = timezone.now()
    return Task.objects.create(
        kind=kind,
        run=run,
        user=user,
        settings_version=run.current_settings(),
        games=4,
        client_version="0.1.0",
        client_instance_id="test",
        created_at=now - ago - timedelta(seconds=6 * 3600),
        expires_at=now - ago,
        **networks,
    )


def test_prune_deletes_old_refusals_and_old_tasks_no_game_names_in_batches(run, alice, selfplay_games, settings):
    """A stream of refused uploads and of task requests does not grow the tables for ever: the daily
    job deletes the refusals older than their retention and the tasks whose games stopped being taken
    longer ago than theirs, a batch per transaction; a task a game names stays with the game, and so do
    recent rows. Run again, it deletes nothing more."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from server.distribution.models import Task
    from server.games.models import UploadRefusal

    settings.SENTE_RETENTION_DAYS = {"refusals": 30, "tasks": 30}
    settings.SENTE_TASK_GRACE_SECONDS = 24 * 3600
    user, _ = alice
    now = timezone.now()
    for days in (400, 45, 31, 31, 31, 29, 1, 0):
        UploadRefusal.objects.create(
            kind="training", user=user, code="bad_rows", message="m", created_at=now - timedelta(days=days)
        )
    # Expired 31 days + the grace ago and more: their games stopped being taken over 30 days ago.
    gone = [_task_expired(run, user, timedelta(days=d, hours=25)) for d in (31, 31, 60, 365)]
    gone.append(_task_expired(run, user, timedelta(days=40), kind="rating"))
    # Within the retention once the grace is counted: games were taken until 29.5 days ago.
    kept = [_task_expired(run, user, timedelta(days=30, hours=12)), _task_expired(run, user, timedelta(days=3))]
    # Tasks with games, expired a year ago: their games name them.
    net = run.networks.get(is_random=True)
    with_games = [
        helpers.store_training_games(run, user, selfplay_games[:2])[0].task,
        helpers.store_rating_games(run, user, net, net, selfplay_games[0].sgf, 1)[0].task,
    ]
    Task.objects.filter(pk__in=[t.pk for t in with_games]).update(expires_at=now - timedelta(days=365))
    open_task = _task_expired(run, user, -timedelta(hours=1))  # not expired yet

    out = io.StringIO()
    with CaptureQueriesContext(connection) as queries:
        call_command("prune", batch_size=2, stdout=out)
    assert "deleted 5 refused upload(s) older than 30 days" in out.getvalue()
    assert "deleted 5 task(s) with no game" in out.getvalue()
    ages = sorted((now - r.created_at).days for r in UploadRefusal.objects.all())
    assert ages == [0, 1, 29]
    assert set(Task.objects.values_list("pk", flat=True)) == {t.pk for t in [*kept, *with_games, open_task]}
    # In batches of two, each its own statement: three for five rows of each table.
    deletes = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("DELETE")]
    assert sum('"games_uploadrefusal"' in sql for sql in deletes) == 3
    assert sum('"distribution_task"' in sql for sql in deletes) == 3

    out = io.StringIO()
    call_command("prune", stdout=out)
    assert "deleted 0 refused upload(s)" in out.getvalue() and "deleted 0 task(s)" in out.getvalue()
    assert UploadRefusal.objects.count() == 3 and Task.objects.count() == len(kept) + len(with_games) + 1


def test_prune_keeps_the_tasks_of_a_longer_grace(run, alice, settings):
    """The retention counts from the last moment a task's games are taken: with a grace of 60 days, a
    task expired 40 days ago may still bring games and stays."""
    from server.distribution.models import Task

    settings.SENTE_RETENTION_DAYS = {"refusals": 30, "tasks": 30}
    settings.SENTE_TASK_GRACE_SECONDS = 60 * 24 * 3600
    user, _ = alice
    task = _task_expired(run, user, timedelta(days=40))
    call_command("prune", stdout=io.StringIO())
    assert Task.objects.filter(pk=task.pk).exists()
    settings.SENTE_TASK_GRACE_SECONDS = 24 * 3600
    call_command("prune", stdout=io.StringIO())
    assert not Task.objects.filter(pk=task.pk).exists()


def test_prune_refuses_a_batch_size_below_one(db):
    with pytest.raises(CommandError, match="--batch-size 0: must be at least 1"):
        call_command("prune", batch_size=0)


@pytest.mark.parametrize("name", ["SENTE_REFUSAL_RETENTION_DAYS", "SENTE_TASK_RETENTION_DAYS"])
def test_a_retention_of_less_than_a_day_is_refused(tmp_path, name):
    done = helpers.settings_in_a_process({"SENTE_DATA_DIR": str(tmp_path), name: "0"}, "SENTE_RETENTION_DAYS")
    assert done.returncode != 0 and f"{name}=0: must be at least 1 (days)" in done.stderr
    done = helpers.settings_in_a_process({"SENTE_DATA_DIR": str(tmp_path), name: "90"}, "SENTE_RETENTION_DAYS")
    assert done.returncode == 0 and "90" in done.stdout, done.stderr
