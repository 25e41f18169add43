"""Networks: upload by trainers, listing and detail, file download with ranges and ETags, and the
request size limits."""

from __future__ import annotations

import functools
import hashlib
import os
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from common.nn.model import named_config
from server.accounts.models import ClientToken, User
from server.api.errors import from_refusal
from server.distribution.models import Task
from server.networks.models import Network
from server.networks.services import NetworkUpload, take_upload
from server.refusals import Conflict, Refused
from server.runs.models import create_run
from tests.server import helpers
from tests.server.conftest import api_error as _error
from tests.server.conftest import stored_files


@functools.cache
def net_file(name: str) -> bytes:
    """A real network file named name (made once per name)."""
    return helpers.network_file(name)


def _fields(name: str, data: bytes | None = None, run: str = helpers.RUN, **extra) -> dict:
    data = net_file(name) if data is None else data
    fields = {
        "name": name,
        "run": run,
        "train_step": 1000,
        "rows_seen": 5000,
        "notes": "from a test",
        "file": SimpleUploadedFile(f"{name}.safetensors", data, content_type="application/octet-stream"),
    }
    fields.update(extra)
    return {k: v for k, v in fields.items() if v is not None}


def _upload(client: APIClient, name: str, data: bytes | None = None, **extra):
    return client.post("/api/v1/networks/", _fields(name, data, **extra), format="multipart")


def _storage_path(sha256: str):
    return os.path.join(
        django_settings.STORAGES["default"]["OPTIONS"]["location"],
        "networks",
        sha256[:2],
        sha256[2:4],
        f"{sha256}.safetensors",
    )


@pytest.fixture
def uploaded(run, trainer):
    """A network n1 uploaded by the trainer: (its name, its file's bytes)."""
    _, client = trainer
    response = _upload(client, "n1")
    assert response.status_code == 201, response.content
    return "n1", net_file("n1")


# --- upload ----------------------------------------------------------------------------------------
def test_trainer_uploads_a_network(run, trainer):
    """A trainer's upload answers 201; the server computes sha256, size and size name and stores the file
    under networks/<aa>/<bb>/<sha256>.safetensors."""
    user, client = trainer
    data = net_file("up-1")
    sha = hashlib.sha256(data).hexdigest()
    response = _upload(client, "up-1", sha256=sha)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["name"] == "up-1"
    assert body["run"] == run.name
    assert body["parent"] is None
    assert body["is_random"] is False
    assert body["sha256"] == sha
    assert body["size_bytes"] == len(data)
    assert body["size_name"] == "b2c16"
    assert body["architecture"] == named_config("tiny").to_dict()
    assert body["state"] == "candidate"
    assert body["released"] is False
    assert body["train_step"] == 1000
    assert body["rows_seen"] == 5000
    assert body["notes"] == "from a test"
    assert body["file_url"].endswith("/api/v1/networks/up-1/file")
    network = Network.objects.get(name="up-1")
    assert network.uploaded_by == user
    assert network.file.name == f"networks/{sha[:2]}/{sha[2:4]}/{sha}.safetensors"
    path = _storage_path(sha)
    assert any(str(p) == path for p in stored_files())
    with open(path, "rb") as f:
        assert f.read() == data


def test_upload_without_declared_sha256(run, trainer):
    """The declared sha256 is optional; the server computes it anyway."""
    _, client = trainer
    response = _upload(client, "up-nosha")
    assert response.status_code == 201, response.content
    assert response.json()["sha256"] == hashlib.sha256(net_file("up-nosha")).hexdigest()


def test_upload_with_a_parent(uploaded, trainer):
    """A parent of the same run is recorded."""
    _, client = trainer
    response = _upload(client, "n2", parent="n1")
    assert response.status_code == 201, response.content
    assert response.json()["parent"] == "n1"
    assert Network.objects.get(name="n2").parent.name == "n1"


def _token_client(user) -> APIClient:
    _, key = ClientToken.issue(user, "laptop")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_staff_without_the_permission_cannot_upload(run):
    """Being staff (say, a moderator of the admin's lists) is not the right to upload: a network
    becomes what volunteers play, so uploading takes networks.upload_network; a superuser has it."""
    from django.contrib.auth.models import Permission

    staff = User.objects.create_user("admin1", "admin1@example.org", "pw long enough 1", is_staff=True)
    response = _upload(_token_client(staff), "by-staff")
    assert response.status_code == 403
    assert "networks.upload_network" in _error(response)["message"]
    assert not Network.objects.filter(name="by-staff").exists()
    staff.user_permissions.add(Permission.objects.get(codename="upload_network"))
    staff = User.objects.get(pk=staff.pk)  # permissions are cached on the instance
    assert _upload(_token_client(staff), "by-staff").status_code == 201
    root = User.objects.create_superuser("root1", "root1@example.org", "pw long enough 1")
    assert _upload(_token_client(root), "by-root").status_code == 201


def test_normal_user_cannot_upload(run, alice):
    """A user who is neither staff nor trainer gets 403 and nothing is stored."""
    _, client = alice
    before = stored_files()
    response = _upload(client, "forbidden-1")
    assert response.status_code == 403
    _error(response)
    assert not Network.objects.filter(name="forbidden-1").exists()
    assert stored_files() == before


def test_anonymous_cannot_upload(run):
    """An anonymous upload gets 401 and nothing is stored."""
    before = stored_files()
    response = _upload(APIClient(), "forbidden-2")
    assert response.status_code == 401
    _error(response)
    assert not Network.objects.filter(name="forbidden-2").exists()
    assert stored_files() == before


class _UnreadBody:
    """A request body of any length that records every read of it (the test fails if there is one)."""

    def __init__(self) -> None:
        self.reads: list[int] = []

    def read(self, size: int = -1) -> bytes:
        self.reads.append(size)
        return b"x" * (size if 0 <= size < 1 << 20 else 1 << 20)

    def readline(self, size: int = -1) -> bytes:
        return self.read(size)


@pytest.mark.parametrize("who", ["alice", "trainer"])
@pytest.mark.parametrize("accept", ["application/json", "text/html"])
def test_a_web_session_cannot_upload_and_its_body_is_never_read(run, who, accept, request):
    """A network upload authenticates by client token alone: a signed-in web session (sign-up is
    free) that posts with its session cookie, a CSRF cookie and a matching Origin would have the CSRF
    check parse the whole multipart body (up to a gigabyte, which nginx passes on as it comes) before
    any permission is looked at. It is refused from the headers instead, without a byte of the body
    read, even a trainer's (trainers upload with their client tokens)."""
    from django.test import Client, RequestFactory
    from django.test.client import ClientHandler

    user, _ = request.getfixturevalue(who)
    browser = Client()
    browser.force_login(user)
    csrf = "a" * 32
    body = _UnreadBody()
    environ = RequestFactory()._base_environ(
        PATH_INFO="/api/v1/networks/",
        REQUEST_METHOD="POST",
        CONTENT_TYPE="multipart/form-data; boundary=x",
        CONTENT_LENGTH=str(100 * 1024 * 1024),
        HTTP_COOKIE=f"sessionid={browser.cookies['sessionid'].value}; csrftoken={csrf}",
        HTTP_ORIGIN="http://testserver",
        HTTP_ACCEPT=accept,
        **{"wsgi.input": body},
    )
    response = ClientHandler(enforce_csrf_checks=True)(environ)  # the whole stack, as a server runs it
    assert response.status_code == 401, response.content[:500]
    assert body.reads == []
    assert not Network.objects.exclude(is_random=True).exists()
    # The same account's client token is looked at, from its headers alone too.
    token_answer = _upload(_token_client(user), "by-token")
    assert token_answer.status_code == (201 if who == "trainer" else 403), token_answer.content


def test_declared_sha256_mismatch(run, trainer):
    """A declared sha256 other than the file's gets 400 naming sha256; no row, no file."""
    _, client = trainer
    data = net_file("badsha")
    before = stored_files()
    response = _upload(client, "badsha", sha256="0" * 64)
    assert response.status_code == 400
    error = _error(response)
    assert error["field"] == "sha256"
    assert error["code"] == "sha256_mismatch"
    assert hashlib.sha256(data).hexdigest() in error["message"]
    assert not Network.objects.filter(name="badsha").exists()
    assert stored_files() == before
    assert not os.path.exists(_storage_path(hashlib.sha256(data).hexdigest()))


def test_malformed_declared_sha256(run, trainer):
    """A declared sha256 that is not 64 hex digits gets 400 naming sha256."""
    _, client = trainer
    response = _upload(client, "shortsha", sha256="abc")
    assert response.status_code == 400
    assert _error(response)["field"] == "sha256"


@pytest.mark.parametrize("kind", ["random", "truncated", "short", "empty_header"])
def test_not_a_network_file(run, trainer, kind):
    """Random bytes, a truncated file, or a file shorter than a header get 400 naming file; nothing stored."""
    _, client = trainer
    good = net_file("broken")
    data = {
        "random": os.urandom(5000),
        "truncated": good[: len(good) - 100],
        "short": good[:5],
        "empty_header": (0).to_bytes(8, "little") + b"{}",
    }[kind]
    before = stored_files()
    response = _upload(client, "broken", data)
    assert response.status_code == 400, response.content
    error = _error(response)
    assert error["field"] == "file"
    assert not Network.objects.filter(name="broken").exists()
    assert stored_files() == before


def test_file_name_must_match(run, trainer):
    """A file whose header names another network gets 400 naming file; nothing stored."""
    _, client = trainer
    before = stored_files()
    response = _upload(client, "declared", net_file("inside"))
    assert response.status_code == 400
    error = _error(response)
    assert error["field"] == "file"
    assert "inside" in error["message"]
    assert not Network.objects.filter(name__in=["declared", "inside"]).exists()
    assert stored_files() == before


def test_existing_name(uploaded, trainer):
    """An upload under an existing name gets 409."""
    _, client = trainer
    response = _upload(client, "n1")
    assert response.status_code == 409
    error = _error(response)
    assert error["code"] == "exists"
    assert error["field"] == "name"
    assert Network.objects.filter(name="n1").count() == 1


def test_random_networks_name_is_taken(run, trainer):
    """The run's random network's name cannot be uploaded over."""
    _, client = trainer
    response = _upload(client, f"{run.name}-random")
    assert response.status_code == 409


def test_same_file_as_an_existing_network(run, trainer):
    """The bytes of an existing network's file under another name get 409."""
    _, client = trainer
    data = net_file("twin")
    Network.objects.create(name="original", run=run, sha256=hashlib.sha256(data).hexdigest(), size_bytes=len(data))
    response = _upload(client, "twin", data)
    assert response.status_code == 409
    error = _error(response)
    assert error["code"] == "duplicate_file"
    assert "original" in error["message"]
    assert not Network.objects.filter(name="twin").exists()


def test_parent_of_another_run(run, trainer):
    """A parent from another run gets 400 naming parent."""
    create_run("other", {})
    _, client = trainer
    response = _upload(client, "crossrun", parent="other-random")
    assert response.status_code == 400
    assert _error(response)["field"] == "parent"
    assert not Network.objects.filter(name="crossrun").exists()


def test_unknown_parent(run, trainer):
    """An unknown parent gets 400 naming parent."""
    _, client = trainer
    response = _upload(client, "orphan", parent="nosuchnet")
    assert response.status_code == 400
    assert _error(response)["field"] == "parent"


def test_unknown_run(run, trainer):
    """An unknown run gets 400 naming run."""
    _, client = trainer
    response = _upload(client, "norun", run="nosuchrun")
    assert response.status_code == 400
    assert _error(response)["field"] == "run"
    assert not Network.objects.filter(name="norun").exists()


@pytest.mark.parametrize("missing", ["file", "name", "run"])
def test_missing_field(run, trainer, missing):
    """An upload without a required field gets 400 naming it."""
    _, client = trainer
    fields = _fields("missing")
    del fields[missing]
    response = client.post("/api/v1/networks/", fields, format="multipart")
    assert response.status_code == 400
    assert _error(response)["field"] == missing


def test_bad_name(run, trainer):
    """A name that is not a network name gets 400 naming name."""
    _, client = trainer
    response = _upload(client, "bad/name", net_file("n-ok"))
    assert response.status_code == 400
    assert _error(response)["field"] == "name"


def test_negative_train_step(run, trainer):
    """train_step cannot be negative."""
    _, client = trainer
    response = _upload(client, "neg", train_step=-1)
    assert response.status_code == 400
    assert _error(response)["field"] == "train_step"


def test_upload_must_be_multipart(run, trainer):
    """A JSON upload gets 415."""
    _, client = trainer
    response = client.post("/api/v1/networks/", {"name": "json", "run": run.name}, format="json")
    assert response.status_code == 415


# --- the upload's service, without HTTP ----------------------------------------------------------
def _network_upload(name: str, data: bytes | None = None, **extra) -> NetworkUpload:
    data = net_file(name) if data is None else data
    file = SimpleUploadedFile(f"{name}.safetensors", data, content_type="application/octet-stream")
    return NetworkUpload(**{"name": name, "run": helpers.RUN, "file": file, **extra})


def test_take_upload_stores_a_candidate(run, trainer):
    """The service checks the file and stores the network as its run's candidate."""
    user, _ = trainer
    data = net_file("svc-1")
    sha = hashlib.sha256(data).hexdigest()
    network = take_upload(user, _network_upload("svc-1", sha256=sha, train_step=7, notes="direct"))
    assert (network.run, network.sha256, network.size_bytes) == (run, sha, len(data))
    assert (network.train_step, network.notes, network.uploaded_by, network.parent) == (7, "direct", user, None)


@pytest.mark.parametrize(
    ("upload", "status", "code", "field"),
    [
        (lambda: _network_upload("svc-2", run="no-such-run"), 400, "invalid", "run"),
        (lambda: _network_upload("svc-2", parent="no-such-net"), 400, "invalid", "parent"),
        (lambda: _network_upload("svc-2", data=net_file("svc-3")), 400, "name_mismatch", "file"),
        (lambda: _network_upload("svc-2", data=b"not a network"), 400, "bad_file", "file"),
        (lambda: _network_upload("svc-2", sha256="0" * 64), 400, "sha256_mismatch", "sha256"),
    ],
)
def test_take_upload_refusals(run, trainer, upload, status, code, field):
    """Each refusal is a Refused that the API answers with the status, code and field given; nothing
    is stored."""
    user, _ = trainer
    with pytest.raises(Refused) as refused:
        take_upload(user, upload())
    answer = from_refusal(refused.value)
    assert (answer.status_code, answer.error_code, answer.field) == (status, code, field)
    assert not Network.objects.filter(name="svc-2").exists()


def test_take_upload_conflicts(run, trainer):
    """A taken name and a file some network has already are conflicts (409)."""
    user, _ = trainer
    take_upload(user, _network_upload("svc-4"))
    with pytest.raises(Conflict) as taken:
        take_upload(user, _network_upload("svc-4"))
    assert (from_refusal(taken.value).status_code, taken.value.code) == (409, "exists")
    data = net_file("svc-5")
    Network.objects.create(name="svc-6", run=run, sha256=hashlib.sha256(data).hexdigest(), size_bytes=len(data))
    with pytest.raises(Conflict) as twin:
        take_upload(user, _network_upload("svc-5", data=data))
    assert (from_refusal(twin.value).status_code, twin.value.code) == (409, "duplicate_file")


def _limits(**changes) -> dict:
    return {**django_settings.SENTE_LIMITS, **changes}


def test_network_too_large_for_the_server(run, trainer):
    """A file above the network size limit (but within the request limit) gets 400 naming file."""
    _, client = trainer
    with override_settings(SENTE_LIMITS=_limits(network_bytes=1000)):
        response = _upload(client, "toolarge")
    assert response.status_code == 400
    error = _error(response)
    assert error["field"] == "file"
    assert error["code"] == "too_large"
    assert not Network.objects.filter(name="toolarge").exists()


def test_network_uploads_have_their_own_request_limit(run, trainer):
    """A network upload larger than the ordinary request limit is taken."""
    _, client = trainer
    with override_settings(SENTE_LIMITS=_limits(request_bytes=1000)):
        response = _upload(client, "biggerthanrequests")
    assert response.status_code == 201, response.content


def test_network_upload_above_its_limit_is_413(run, trainer):
    """A network upload whose body is above the network limit (plus 1 MiB) gets 413 before it is read."""
    _, client = trainer
    data = os.urandom(1024 * 1024 + 2000)
    with override_settings(SENTE_LIMITS=_limits(network_bytes=100)):
        response = _upload(client, "huge", data)
    assert response.status_code == 413
    assert _error(response)["code"] == "too_large"
    assert not Network.objects.filter(name="huge").exists()


# --- request size limits ---------------------------------------------------------------------------
def test_declared_content_length_above_the_limit(run, alice):
    """A request declaring a body above the limit gets 413 with the JSON error body, before it is read."""
    _, client = alice
    response = client.post("/api/v1/tasks/", {"client_version": "0.1.0"}, format="json", CONTENT_LENGTH=str(10**10))
    assert response.status_code == 413
    error = _error(response)
    assert error["code"] == "too_large"
    assert str(10**10) in error["message"]
    assert Task.objects.count() == 0


def test_real_body_above_the_limit(run, alice):
    """A body above an overridden limit gets 413; one below it goes through."""
    _, client = alice
    body = {"client_version": "0.1.0", "client_instance_id": "m1", "kinds": ["selfplay"], "games": 1}
    with override_settings(SENTE_LIMITS=_limits(request_bytes=20)):
        assert client.post("/api/v1/tasks/", body, format="json").status_code == 413
    with override_settings(SENTE_LIMITS=_limits(request_bytes=1000)):
        assert client.post("/api/v1/tasks/", body, format="json").status_code == 201


def test_content_length_not_a_number(run, alice):
    """A Content-Length that is not a number gets 400."""
    _, client = alice
    response = client.post("/api/v1/tasks/", {}, format="json", CONTENT_LENGTH="lots")
    assert response.status_code == 400
    assert _error(response)["code"] == "invalid"


# --- listing and detail -----------------------------------------------------------------------------
def _make(run, name: str, minutes_ago: int, **fields):
    created_at = timezone.now() - timedelta(minutes=minutes_ago)
    return Network.objects.create(name=name, run=run, created_at=created_at, **fields)


def test_listing_is_public_and_newest_first(run):
    """GET /api/v1/networks/ lists every network to anyone, newest first."""
    _make(run, "old", 30)
    _make(run, "mid", 20)
    _make(run, "new", 10)
    response = APIClient().get("/api/v1/networks/")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 4
    assert [n["name"] for n in body["results"]] == ["test-random", "new", "mid", "old"]
    random_entry = body["results"][0]
    assert random_entry["is_random"] is True
    assert random_entry["file_url"] is None
    assert random_entry["state"] == "accepted"


def test_listing_filters(run):
    """The run, state and released filters narrow the list."""
    other = create_run("other", {})
    _make(run, "a-cand", 30, state="candidate")
    _make(run, "a-rel", 20, state="accepted", released=True)
    _make(other, "b-rel", 10, state="accepted", released=True)
    client = APIClient()

    def names(query: str) -> set[str]:
        response = client.get(f"/api/v1/networks/?{query}")
        assert response.status_code == 200
        return {n["name"] for n in response.json()["results"]}

    assert names("run=test") == {"test-random", "a-cand", "a-rel"}
    assert names("run=other") == {"other-random", "b-rel"}
    assert names("run=nosuch") == set()
    assert names("state=candidate") == {"a-cand"}
    assert names("state=accepted") == {"test-random", "a-rel", "other-random", "b-rel"}
    assert names("released=true") == {"a-rel", "b-rel"}
    assert names("released=1&run=test") == {"a-rel"}
    assert names("run=test&state=accepted&released=true") == {"a-rel"}
    bad = client.get("/api/v1/networks/?state=acepted")
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "state"
    assert "'acepted' is not one of candidate, rating, accepted" in bad.json()["error"]["message"]


def test_detail(uploaded):
    """GET /api/v1/networks/<name>/ shows one network; an unknown name gets 404."""
    name, data = uploaded
    client = APIClient()
    response = client.get(f"/api/v1/networks/{name}/")
    assert response.status_code == 200
    body = response.json()
    assert body["name"] == name
    assert body["sha256"] == hashlib.sha256(data).hexdigest()
    assert body["size_bytes"] == len(data)
    assert client.get("/api/v1/networks/nosuch/").status_code == 404


# --- file download -----------------------------------------------------------------------------------
def _file(name: str, **headers):
    return APIClient().get(f"/api/v1/networks/{name}/file", **headers)


def test_download_whole_file(uploaded):
    """The file downloads whole with its ETag (the sha256 in quotes), Accept-Ranges and length."""
    name, data = uploaded
    response = _file(name)
    assert response.status_code == 200
    assert response["ETag"] == f'"{hashlib.sha256(data).hexdigest()}"'
    assert response["Accept-Ranges"] == "bytes"
    assert response["Content-Length"] == str(len(data))
    assert response["Content-Type"] == "application/octet-stream"
    assert f'filename="{name}.safetensors"' in response["Content-Disposition"]
    assert helpers.content(response) == data


def test_download_url_from_the_listing(uploaded):
    """The file_url the API gives downloads the file."""
    name, data = uploaded
    url = APIClient().get(f"/api/v1/networks/{name}/").json()["file_url"]
    response = APIClient().get(url)
    assert response.status_code == 200
    assert helpers.content(response) == data


def test_download_a_range(uploaded):
    """Range: bytes=10-99 gets 206 with exactly those bytes and Content-Range."""
    name, data = uploaded
    response = _file(name, HTTP_RANGE="bytes=10-99")
    assert response.status_code == 206
    assert response["Content-Range"] == f"bytes 10-99/{len(data)}"
    assert response["Content-Length"] == "90"
    assert response["ETag"] == f'"{hashlib.sha256(data).hexdigest()}"'
    assert helpers.content(response) == data[10:100]


def test_download_open_ended_range(uploaded):
    """Range: bytes=100- gets everything from byte 100."""
    name, data = uploaded
    response = _file(name, HTTP_RANGE="bytes=100-")
    assert response.status_code == 206
    assert response["Content-Range"] == f"bytes 100-{len(data) - 1}/{len(data)}"
    assert helpers.content(response) == data[100:]


def test_download_suffix_range(uploaded):
    """Range: bytes=-50 gets the last 50 bytes."""
    name, data = uploaded
    response = _file(name, HTTP_RANGE="bytes=-50")
    assert response.status_code == 206
    assert response["Content-Range"] == f"bytes {len(data) - 50}-{len(data) - 1}/{len(data)}"
    assert helpers.content(response) == data[-50:]


def test_download_range_past_the_end_is_clipped(uploaded):
    """A range whose end is past the file's end ends at the last byte; a suffix longer than the file is
    the whole file."""
    name, data = uploaded
    response = _file(name, HTTP_RANGE=f"bytes=5-{len(data) * 2}")
    assert response.status_code == 206
    assert response["Content-Range"] == f"bytes 5-{len(data) - 1}/{len(data)}"
    assert helpers.content(response) == data[5:]
    response = _file(name, HTTP_RANGE=f"bytes=-{len(data) * 2}")
    assert response.status_code == 206
    assert helpers.content(response) == data


def test_download_range_beyond_the_end(uploaded):
    """A range starting at or past the end gets 416 with Content-Range bytes */size."""
    name, data = uploaded
    for start in (len(data), len(data) + 1000):
        response = _file(name, HTTP_RANGE=f"bytes={start}-")
        assert response.status_code == 416
        assert response["Content-Range"] == f"bytes */{len(data)}"


def test_download_unparsable_range_gets_everything(uploaded):
    """A Range header this server does not parse (other units, several ranges) gets the whole file."""
    name, data = uploaded
    for header in ("items=0-5", "bytes=0-5,10-20", "bytes=-"):
        response = _file(name, HTTP_RANGE=header)
        assert response.status_code == 200
        assert helpers.content(response) == data


def test_download_if_none_match(uploaded):
    """If-None-Match with the ETag gets 304 with no body; another ETag gets the file."""
    name, data = uploaded
    etag = f'"{hashlib.sha256(data).hexdigest()}"'
    response = _file(name, HTTP_IF_NONE_MATCH=etag)
    assert response.status_code == 304
    assert helpers.content(response) == b""
    assert response["ETag"] == etag
    response = _file(name, HTTP_IF_NONE_MATCH=f'"other", {etag}')
    assert response.status_code == 304
    response = _file(name, HTTP_IF_NONE_MATCH='"0000"')
    assert response.status_code == 200
    assert helpers.content(response) == data


def test_download_if_range(uploaded):
    """If-Range with the ETag honours the Range; with another ETag the whole file comes back (200)."""
    name, data = uploaded
    etag = f'"{hashlib.sha256(data).hexdigest()}"'
    response = _file(name, HTTP_RANGE="bytes=10-99", HTTP_IF_RANGE=etag)
    assert response.status_code == 206
    assert helpers.content(response) == data[10:100]
    response = _file(name, HTTP_RANGE="bytes=10-99", HTTP_IF_RANGE='"not-the-etag"')
    assert response.status_code == 200
    assert "Content-Range" not in response
    assert helpers.content(response) == data


def test_random_network_has_no_file(run):
    """The random network's file gets 404 with the JSON error body."""
    response = _file(f"{run.name}-random")
    assert response.status_code == 404
    assert _error(response)["code"] == "no_file"


def test_unknown_network_file(db):
    """The file of an unknown network gets 404."""
    response = _file("nosuch")
    assert response.status_code == 404


def test_a_stored_name_is_the_fields_and_an_empty_field_has_none():
    from server.files import stored_name
    from server.networks.models import Network

    assert (
        stored_name(Network(name="n", file="networks/ab/cd/abcd.safetensors").file) == "networks/ab/cd/abcd.safetensors"
    )
    with pytest.raises(FileNotFoundError, match="holds no file"):
        stored_name(Network(name="random").file)
