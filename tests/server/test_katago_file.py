"""Networks in KataGo's model format on the server: made by the background worker (never by a
request), once, when the network is accepted or released or first asked for; kept, and a refusal
remembered; served like the network's own file."""

from __future__ import annotations

import gzip
import hashlib
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import pytest
import safetensors.numpy
import torch
from django.utils import timezone

from common.nn.katago_import import read_katago_model
from common.nn.model import Model, named_config
from common.nn.modelfile import encode_model
from server.networks import katago
from server.networks.models import Network, NetworkKataGoFile
from server.networks.tasks import build_katago_file
from tests.server import helpers

State = NetworkKataGoFile.State


@pytest.fixture
def reads(monkeypatch):
    """The stored files the KataGo export reads, by name, as it reads them."""
    names: list[str] = []
    real = katago.read_file

    def counted(name: str) -> bytes:
        names.append(name)
        return real(name)

    monkeypatch.setattr(katago, "read_file", counted)
    return names


def _queued_builds() -> list[list]:
    from django_tasks_db.models import DBTaskResult

    return [t.args_kwargs["args"] for t in DBTaskResult.objects.all() if t.task_path.endswith("build_katago_file")]


def _not_ready(response) -> None:
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == str(katago.RETRY_AFTER_SECONDS)
    error = response.json()["error"]
    assert error["code"] == "not_ready" and "try again in" in error["message"], error


def test_the_first_download_queues_the_file_which_the_worker_makes_once(
    run, trainer, tiny_network_file, tmp_path, reads, django_capture_on_commit_callbacks
):
    _, client = trainer
    assert helpers.upload_network(client, "test-net1", tiny_network_file).status_code == 201
    network = Network.objects.get(name="test-net1")
    assert not NetworkKataGoFile.objects.exists()

    url = client.get("/api/v1/networks/test-net1/").json()["katago_file_url"]
    assert url.endswith("/api/v1/networks/test-net1/katago")
    with django_capture_on_commit_callbacks(execute=True):
        _not_ready(client.get(url))
        _not_ready(client.get(url))  # asked again before the worker came: queued once
    assert _queued_builds() == [[network.pk]]
    assert NetworkKataGoFile.objects.get().state == State.QUEUED
    assert reads == []  # the requests read nothing

    build_katago_file.call(network.pk)
    assert len(reads) == 1
    response = client.get(url)
    assert response.status_code == 200
    data = helpers.content(response)
    row = NetworkKataGoFile.objects.get(network__name="test-net1")
    assert row.state == State.READY and row.finished_at is not None
    assert row.version == 8 and row.size_bytes == len(data) and row.sha256 == hashlib.sha256(data).hexdigest()
    assert response["ETag"] == f'"{row.sha256}"'
    assert 'filename="test-net1.bin.gz"' in response["Content-Disposition"]
    assert gzip.decompress(data).startswith(b"test-net1\n8\n22\n19\ntrunk\n")

    path = tmp_path / "test-net1.bin.gz"
    path.write_bytes(data)
    imported = read_katago_model(path)
    ours = safetensors.numpy.load(tiny_network_file)
    for key in ("conv_spatial.weight", "blocks.1.gpool_to_bias.weight", "value_head.linear_v3.bias"):
        assert (imported.state_dict[key].numpy() == ours[key]).all(), key
    assert (imported.state_dict["policy_head.conv_p2.weight"].numpy() == ours["policy_head.conv_p2.weight"][:1]).all()

    again = client.get("/api/v1/networks/test-net1/katago", HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304
    assert helpers.content(client.get("/api/v1/networks/test-net1/katago")) == data
    build_katago_file.call(network.pk)  # a second task (queued twice somehow) finds nothing to do
    assert len(reads) == 1 and NetworkKataGoFile.objects.count() == 1


def test_accepting_or_releasing_a_network_queues_its_file(
    run, trainer, tiny_network_file, reads, django_capture_on_commit_callbacks
):
    from server.ratings.models import NetworkEvent
    from server.ratings.promotion import staff_decision

    _, client = trainer
    assert helpers.upload_network(client, "test-net1", tiny_network_file).status_code == 201
    network = Network.objects.get(name="test-net1")
    assert _queued_builds() == []  # a candidate's file waits for a download or its acceptance
    with django_capture_on_commit_callbacks(execute=True):
        NetworkEvent.objects.create(network=network, kind=NetworkEvent.Kind.GATING_STARTED)
    assert _queued_builds() == []
    with django_capture_on_commit_callbacks(execute=True):
        staff_decision(network, "accept", note="for the test")
    assert _queued_builds() == [[network.pk]]
    build_katago_file.call(network.pk)
    with django_capture_on_commit_callbacks(execute=True):
        staff_decision(network, "release", note="for the test")  # made already: nothing more to do
    assert _queued_builds() == [[network.pk]] and len(reads) == 1
    picked = client.get(f"/networks/released/katago?run={run.name}")
    assert picked.status_code == 200 and picked["X-Sente-Network"] == "test-net1"

    # A gating's own verdict queues it too (the event it records).
    helpers.upload_network(client, "test-net2", helpers.network_file("test-net2", seed=1))
    second = Network.objects.get(name="test-net2")
    with django_capture_on_commit_callbacks(execute=True):
        NetworkEvent.objects.create(network=second, kind=NetworkEvent.Kind.ACCEPTED)
    assert _queued_builds() == [[network.pk], [second.pk]]


def test_a_stable_link_waits_for_the_file_too(run, trainer, tiny_network_file, django_capture_on_commit_callbacks):
    from server.ratings.promotion import staff_decision

    _, client = trainer
    helpers.upload_network(client, "test-net1", tiny_network_file)
    network = Network.objects.get(name="test-net1")
    staff_decision(network, "release", note="for the test")
    response = client.get("/networks/released/katago")
    _not_ready(response)
    assert response["X-Sente-Network"] == "test-net1"
    build_katago_file.call(network.pk)
    assert client.get("/networks/released/katago").status_code == 200


def test_the_random_network_has_no_katago_file(run, client):
    random = Network.objects.get(run__name=helpers.RUN, is_random=True)
    assert client.get(f"/api/v1/networks/{random.name}/").json()["katago_file_url"] is None
    response = client.get(f"/api/v1/networks/{random.name}/katago")
    assert response.status_code == 404 and response.json()["error"]["code"] == "no_file"
    assert client.get("/api/v1/networks/no-such-net/katago").status_code == 404
    assert not NetworkKataGoFile.objects.exists()


def test_the_export_does_not_load_torch(tiny_network_file, tmp_path):
    """The worker that exports may be one without torch: the export must not pull it in."""
    net = tmp_path / "net.safetensors"
    net.write_bytes(tiny_network_file)
    code = (
        "import sys, safetensors.numpy\n"
        "from common.nn.header import read_header\n"
        "from common.nn.katago_export import katago_model_bytes\n"
        f"data = open({str(net)!r}, 'rb').read()\n"
        "blob = katago_model_bytes(read_header(data).config, safetensors.numpy.load(data), 'net')\n"
        "assert blob[:2] == b'\\x1f\\x8b'\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_refused_architecture_is_remembered_and_never_read(run, trainer, reads, django_capture_on_commit_callbacks):
    _, client = trainer
    torch.manual_seed(0)
    model = Model(named_config("tinymobile"))
    data = encode_model(model.config, model.state_dict(), "mobile-1")
    assert helpers.upload_network(client, "mobile-1", data).status_code == 201
    network = Network.objects.get(name="mobile-1")
    assert client.get("/api/v1/networks/mobile-1/").json()["katago_file_url"] is None
    with django_capture_on_commit_callbacks(execute=True):
        _not_ready(client.get("/api/v1/networks/mobile-1/katago"))
    build_katago_file.call(network.pk)
    row = NetworkKataGoFile.objects.get()
    assert row.state == State.REFUSED and "no MobileNet blocks" in row.refusal and not row.file
    for _ in range(3):
        with django_capture_on_commit_callbacks(execute=True):
            response = client.get("/api/v1/networks/mobile-1/katago")
        assert response.status_code == 409 and response.json()["error"]["code"] == "not_exportable"
        assert "no MobileNet blocks" in response.json()["error"]["message"]
    assert reads == []  # known from the architecture: the file was never read
    assert _queued_builds() == [[network.pk]]  # and the work never queued again
    build_katago_file.call(network.pk)
    assert reads == [] and NetworkKataGoFile.objects.get().state == State.REFUSED


def test_an_unreadable_file_is_refused_once(run, trainer, tiny_network_file, reads):
    """A file whose header the export cannot read is refused with the reason, read once."""
    _, client = trainer
    helpers.upload_network(client, "test-net1", tiny_network_file)
    network = Network.objects.get(name="test-net1")
    Network.objects.filter(pk=network.pk).update(architecture=None)
    with network.file.storage.open(network.file.name, "wb") as f:
        f.write(b"not a network")
    katago.queue(network)
    build_katago_file.call(network.pk)
    build_katago_file.call(network.pk)
    row = NetworkKataGoFile.objects.get()
    assert row.state == State.REFUSED and row.refusal.startswith("network test-net1: ") and len(reads) == 1
    response = client.get("/api/v1/networks/test-net1/katago")
    assert response.status_code == 409 and response.json()["error"]["message"] == row.refusal


def test_a_failed_build_is_given_back_and_a_lost_one_queued_again(
    run, trainer, tiny_network_file, monkeypatch, django_capture_on_commit_callbacks
):
    _, client = trainer
    helpers.upload_network(client, "test-net1", tiny_network_file)
    network = Network.objects.get(name="test-net1")
    with django_capture_on_commit_callbacks(execute=True):
        _not_ready(client.get("/api/v1/networks/test-net1/katago"))

    def broken(name: str) -> bytes:
        raise OSError("the storage is down")

    monkeypatch.setattr(katago, "read_file", broken)
    with pytest.raises(OSError, match="the storage is down"):
        katago.build(network.pk)
    row = NetworkKataGoFile.objects.get()
    assert row.state == State.QUEUED and row.started_at is None and row.failures == 1  # given back, not refused
    monkeypatch.undo()

    # A worker that died while building: the row stays "building" until its lease ends, then the
    # next request queues it again and the next worker takes it over.
    now = timezone.now()
    NetworkKataGoFile.objects.update(state=State.BUILDING, started_at=now, retry_at=None)  # taken, as _take does
    with django_capture_on_commit_callbacks(execute=True):
        _not_ready(client.get("/api/v1/networks/test-net1/katago"))
    assert _queued_builds() == [[network.pk]] and katago.build(network.pk) is None  # still taken
    NetworkKataGoFile.objects.update(started_at=now - katago.BUILD_LEASE - timedelta(seconds=1))
    with django_capture_on_commit_callbacks(execute=True):
        _not_ready(client.get("/api/v1/networks/test-net1/katago"))
        _not_ready(client.get("/api/v1/networks/test-net1/katago"))
    assert _queued_builds() == [[network.pk], [network.pk]]
    row = katago.build(network.pk)
    assert row.state == State.READY and row.failures == 0 and row.retry_at is None
    assert client.get("/api/v1/networks/test-net1/katago").status_code == 200


def test_a_missing_file_is_refused_and_never_tried_again(
    run, trainer, tiny_network_file, reads, django_capture_on_commit_callbacks
):
    """A network whose file is gone from the storage (the storage itself being there) is refused with
    the reason: a file deleted does not come back, so no request queues its build again."""
    from django.core.files.storage import default_storage

    _, client = trainer
    helpers.upload_network(client, "test-net1", tiny_network_file)
    network = Network.objects.get(name="test-net1")
    default_storage.delete(network.file.name)
    with django_capture_on_commit_callbacks(execute=True):
        _not_ready(client.get("/api/v1/networks/test-net1/katago"))
    assert katago.build(network.pk).state == State.REFUSED
    row = NetworkKataGoFile.objects.get()
    assert row.refusal == (
        f"network test-net1: its file ({network.file.name}) is not in the storage: it was deleted or lost"
    )
    later = timezone.now() - katago.RETRY_WAIT_MOST - timedelta(days=1)
    NetworkKataGoFile.objects.update(queued_at=later, started_at=later)  # long ago: no lease holds it
    for _ in range(3):
        with django_capture_on_commit_callbacks(execute=True):
            response = client.get("/api/v1/networks/test-net1/katago")
        assert response.status_code == 409 and response.json()["error"]["message"] == row.refusal
    assert _queued_builds() == [[network.pk]] and len(reads) == 1
    assert katago.build(network.pk) is None


def test_a_storage_outage_is_tried_again_after_a_wait_that_grows(
    run, trainer, tiny_network_file, django_capture_on_commit_callbacks, settings, tmp_path
):
    """The storage away (its folder gone, as when a disk is not mounted: the file is not found, but
    neither is the storage) is no refusal: the build is given back, and each failure in a row waits
    longer (15 minutes, 30, 60, ... at most a day) before a request queues it again or a worker takes
    it, the lease of a lost build notwithstanding; downloads are told to come back when it is over.
    A build that then succeeds forgets the failures."""
    from django.db.models import F

    _, client = trainer
    helpers.upload_network(client, "test-net1", tiny_network_file)
    network = Network.objects.get(name="test-net1")
    url = "/api/v1/networks/test-net1/katago"
    with django_capture_on_commit_callbacks(execute=True):
        _not_ready(client.get(url))
    assert _queued_builds() == [[network.pk]]

    def earlier(by: timedelta) -> None:  # time passes: the row's moments move back
        NetworkKataGoFile.objects.update(queued_at=F("queued_at") - by, retry_at=F("retry_at") - by)

    storage = Path(settings.STORAGES["default"]["OPTIONS"]["location"])
    unmounted = tmp_path / "unmounted"
    waits = []
    for failures in range(1, 10):
        storage.rename(unmounted)
        try:
            with pytest.raises(FileNotFoundError):
                katago.build(network.pk)
        finally:
            unmounted.rename(storage)
        row = NetworkKataGoFile.objects.get()
        assert row.state == State.QUEUED and row.failures == failures and row.refusal == "", row.refusal
        waits.append(row.retry_at - row.queued_at)
        # A minute before its wait is over (long after the lease): not queued, not taken.
        earlier(waits[-1] - timedelta(minutes=1))
        with django_capture_on_commit_callbacks(execute=True):
            response = client.get(url)
        assert response.status_code == 503 and 55 <= int(response["Retry-After"]) <= 60, response["Retry-After"]
        assert "could not be made" in response.json()["error"]["message"]
        assert katago.build(network.pk) is None  # a task queued twice: too early
        assert len(_queued_builds()) == failures
        earlier(timedelta(minutes=1, seconds=1))
        with django_capture_on_commit_callbacks(execute=True):
            _not_ready(client.get(url))
        assert len(_queued_builds()) == failures + 1
    assert [w.total_seconds() / 60 for w in waits] == [15, 30, 60, 120, 240, 480, 960, 1440, 1440]

    row = katago.build(network.pk)
    assert row.state == State.READY and row.failures == 0 and row.retry_at is None
    assert client.get(url).status_code == 200


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_workers_never_build_the_same_file_at_once(run, trainer, tiny_network_file, monkeypatch):
    """While one worker reads the network's file, another given the same task builds nothing."""
    from django.db import connection

    _, client = trainer
    helpers.upload_network(client, "test-net1", tiny_network_file)
    network = Network.objects.get(name="test-net1")
    katago.queue(network)
    inside, go_on = threading.Event(), threading.Event()
    reads: list[str] = []
    real = katago.read_file

    def held(name: str) -> bytes:
        reads.append(name)
        inside.set()
        assert go_on.wait(60)
        return real(name)

    monkeypatch.setattr(katago, "read_file", held)
    results: list = []

    def first() -> None:
        try:
            results.append(katago.build(network.pk))
        finally:
            connection.close()

    worker = threading.Thread(target=first)
    worker.start()
    try:
        assert inside.wait(60)
        assert katago.build(network.pk) is None  # the second worker: taken already
        assert NetworkKataGoFile.objects.get().state == State.BUILDING
    finally:
        go_on.set()
        worker.join(60)
    assert len(reads) == 1 and results[0].state == State.READY
