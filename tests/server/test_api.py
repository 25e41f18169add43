"""The API as a whole: the OpenAPI schema and its docs page, the health check, errors for unknown
URLs and methods, and the throttles."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.core.files.storage import Storage
from django.core.management import call_command
from django.test import Client
from rest_framework.settings import api_settings
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle

from common import __version__
from common.protocol import TASK_KINDS
from server import refusals
from server.accounts.models import ClientToken, User
from server.api.errors import exception_handler
from server.distribution.models import Task
from tests.server.conftest import api_error as _error

PASSWORD = "a long enough password"

ENDPOINTS = {
    "/api/v1/auth/token/": {"post"},
    "/api/v1/me/": {"get"},
    "/api/v1/runs/": {"get"},
    "/api/v1/runs/current/": {"get"},
    "/api/v1/runs/{name}/": {"get"},
    "/api/v1/networks/": {"get", "post"},
    "/api/v1/networks/strongest/": {"get"},
    "/api/v1/networks/released/": {"get"},
    "/api/v1/networks/{name}/": {"get"},
    "/api/v1/networks/{name}/file": {"get"},
    "/api/v1/networks/{name}/canary": {"get"},
    "/api/v1/networks/{name}/katago": {"get"},
    "/api/v1/tasks/": {"post", "patch"},
    "/api/v1/games/training/": {"post"},
    "/api/v1/games/rating/": {"post"},
    "/api/v1/games/export/": {"get"},
    "/api/v1/ratings/": {"get"},
    "/api/v1/exports/": {"get"},
    "/api/v1/exports/{id}/file": {"get"},
    "/api/v1/exports/{id}/files/": {"get"},
    "/api/v1/exports/{id}/shards/{shard}/file": {"get"},
    "/api/v1/exports/{id}/disabled": {"get"},
}


# --- schema and docs -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def schema() -> dict:
    response = Client().get("/api/v1/schema/?format=json")
    assert response.status_code == 200
    assert "openapi" in response["Content-Type"]
    return json.loads(response.content)


def test_schema_is_openapi(schema):
    """GET /api/v1/schema/ is an OpenAPI 3 document about this API."""
    assert schema["openapi"].startswith("3.")
    assert schema["info"]["title"] == "Sente API"


def test_schema_yaml_by_default():
    """Without a format the schema comes as YAML."""
    response = Client().get("/api/v1/schema/")
    assert response.status_code == 200
    assert response.content.startswith(b"openapi: 3.")


def test_schema_lists_the_endpoints(schema):
    """Every endpoint of the API is in the schema with its methods, and nothing else (schema and docs
    are not described)."""
    paths = schema["paths"]
    assert set(paths) == set(ENDPOINTS)
    for path, methods in ENDPOINTS.items():
        documented = {m for m in paths[path] if m in ("get", "post", "put", "patch", "delete")}
        assert documented == methods, path


def test_schema_describes_token_authentication(schema):
    """The schema names the client token scheme (Authorization header)."""
    scheme = schema["components"]["securitySchemes"]["clientToken"]
    assert scheme == {"type": "apiKey", "in": "header", "name": "Authorization", "description": scheme["description"]}
    task = schema["paths"]["/api/v1/tasks/"]["post"]
    assert {"clientToken": []} in task["security"]


def test_schema_task_kinds(schema):
    """The task request's kinds are the protocol's task kinds."""
    assert tuple(schema["components"]["schemas"]["TaskKindEnum"]["enum"]) == TASK_KINDS


def test_schema_validates_without_warnings(tmp_path):
    """drf-spectacular generates the schema without warnings and it validates against OpenAPI 3."""
    call_command(
        "spectacular",
        "--validate",
        "--fail-on-warn",
        "--file",
        str(tmp_path / "schema.yml"),
        stdout=StringIO(),
        stderr=StringIO(),
    )
    assert (tmp_path / "schema.yml").read_text().startswith("openapi: 3.")


def test_docs_page_uses_local_scripts():
    """GET /api/v1/docs/ is an HTML page whose scripts and styles come from this server's static files."""
    response = Client().get("/api/v1/docs/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    scripts = re.findall(r"<script[^>]*\bsrc=\"([^\"]+)\"", html)
    links = re.findall(r"<link[^>]*\bhref=\"([^\"]+)\"", html)
    assert scripts, html
    assert "http" not in " ".join(re.findall(r"<script[^>]*>", html))
    for url in scripts + links:
        assert not url.startswith(("http:", "https:", "//")), url
        assert url.startswith("/static/"), url
        assert finders.find(url.removeprefix("/static/")) is not None, url
    assert "/api/v1/schema/" in html


# --- health, unknown URLs, methods ------------------------------------------------------------------------
def _storage_folder(settings) -> Path:
    return Path(settings.STORAGES["default"]["OPTIONS"]["location"])


def test_healthz(db, settings):
    """GET /healthz answers 200 JSON saying database and storage are fine, and leaves no file behind."""
    folder = _storage_folder(settings)
    folder.mkdir(parents=True)  # (the server makes it at start; this test's storage is a folder of its own)
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"status": "ok", "database": "ok", "schema": "ok", "storage": "ok"}
    assert list(folder.iterdir()) == []


def test_healthz_reports_migrations_not_applied(db, settings, monkeypatch):
    """A database whose schema lags the code (an update without manage.py migrate) fails the check,
    saying how many migrations are missing."""
    from django.db import connection

    from server.operations import health

    _storage_folder(settings).mkdir(parents=True)
    monkeypatch.setattr(health, "_schema_current", False)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM django_migrations WHERE app = 'games'")
        removed = cursor.rowcount
    assert removed >= 1
    response = Client().get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["schema"].startswith(f"{removed} migration") and body["schema"].endswith("not applied")
    assert (body["database"], body["storage"]) == ("ok", "ok")


def test_healthz_reports_a_missing_storage_folder(db, settings):
    """A storage folder that is not there (a disk not mounted, a wrong STORAGE_URL) fails the check."""
    assert not _storage_folder(settings).exists()
    response = Client().get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"status": "failing", "database": "ok", "schema": "ok", "storage": "folder missing"}


@contextlib.contextmanager
def _read_only(folder: Path):
    """The folder made read-only for this process: by its mode, or for root (whom modes do not stop)
    by the immutable attribute."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip("running as root, and this file system has no immutable attribute (chattr +i)")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", str(folder)], check=True)


def test_healthz_reports_a_read_only_storage_folder(db, settings):
    """A storage folder that takes no files (a read-only disk, the wrong owner) fails the check."""
    folder = _storage_folder(settings)
    folder.mkdir(parents=True)
    with _read_only(folder):
        response = Client().get("/healthz")
    assert response.status_code == 503
    assert response.json()["storage"] == "folder not writable: PermissionError"
    assert list(folder.iterdir()) == []


class UnreachableStorage(Storage):
    """A storage whose backend does not answer (as object storage that is down)."""

    def exists(self, name):
        raise ConnectionError("storage is down")


def test_healthz_reports_a_broken_storage(db, settings):
    """A storage that cannot be reached makes /healthz answer 503 naming it."""
    settings.STORAGES = {**settings.STORAGES, "default": {"BACKEND": f"{__name__}.UnreachableStorage"}}
    response = Client().get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "failing"
    assert body["database"] == "ok"
    assert body["storage"] == "unreachable: ConnectionError"


@pytest.mark.parametrize("url", ["/api/v1/nosuch/", "/api/v1/", "/api/v2/runs/", "/api/v1/runs/a/b/"])
def test_unknown_api_url(db, url):
    """An unknown API URL gets 404."""
    assert APIClient().get(url).status_code == 404


def test_method_not_allowed(db):
    """GET on /api/v1/tasks/ by a signed-in user gets 405 with the JSON error body and an Allow header."""
    client = APIClient()
    client.force_authenticate(User.objects.create_user("m", "m@example.org", PASSWORD))
    response = client.get("/api/v1/tasks/")
    assert response.status_code == 405
    assert _error(response)["code"] == "method_not_allowed"
    assert "POST" in response["Allow"]
    assert "GET" not in response["Allow"].split(", ")


class _Stale(refusals.Unavailable):
    """A kind of refusal the handler does not name: it answers as the kind it derives from."""


@pytest.mark.parametrize(
    ("refusal", "status"),
    [
        (refusals.invalid("task", "is not a task id"), 400),
        (refusals.NotFound("there is no run 'x'", code="not_found", field="run"), 404),
        (refusals.Conflict("a network named 'n' exists already", code="exists", field="name"), 409),
        (refusals.ClientTooOld("upgrade", code="upgrade_required", extra={"min_client_version": "1.0"}), 426),
        (refusals.Unavailable("no run is active", code="no_run"), 503),
        (_Stale("the network is being replaced", code="stale"), 503),
    ],
)
def test_a_services_refusal_is_answered_with_its_status_and_the_error_body(refusal, status):
    """Services raise the domain's refusals, not HTTP errors; the one exception handler answers each
    kind with its status and the JSON body, the refusal's extra facts included."""
    response = exception_handler(refusal, {})
    assert response is not None and response.status_code == status
    error = response.data["error"]
    assert (error["code"], error["message"], error.get("field")) == (refusal.code, refusal.message, refusal.field)
    assert {k: error[k] for k in refusal.extra} == refusal.extra


@pytest.mark.parametrize(
    ("method", "url"), [("delete", "/api/v1/runs/"), ("put", "/api/v1/me/"), ("get", "/api/v1/auth/token/")]
)
def test_other_methods_not_allowed(db, method, url):
    """Other unsupported methods get 405 (or 401 first where a login is needed), never 200."""
    client = APIClient()
    client.force_authenticate(User.objects.create_user("m", "m@example.org", PASSWORD))
    response = getattr(client, method)(url)
    assert response.status_code == 405
    _error(response)


def test_json_errors_for_a_bad_json_body(db):
    """A body that is not JSON gets 400 with the JSON error body."""
    response = APIClient().post("/api/v1/auth/token/", "{not json", content_type="application/json")
    assert response.status_code == 400
    assert _error(response)["code"] == "parse_error"


# --- throttles -------------------------------------------------------------------------------------------
@pytest.fixture
def rates(monkeypatch):
    """Set a throttle scope's rate for one test (DRF's class attribute and its settings, in case they differ)."""

    def set_rate(scope: str, rate: str) -> None:
        monkeypatch.setitem(api_settings.DEFAULT_THROTTLE_RATES, scope, rate)
        monkeypatch.setitem(SimpleRateThrottle.THROTTLE_RATES, scope, rate)

    return set_rate


def _user_client(name: str):
    user = User.objects.create_user(name, f"{name}@example.org", PASSWORD)
    _, key = ClientToken.issue(user, "machine")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def _task(client):
    return client.post(
        "/api/v1/tasks/",
        {"client_version": __version__, "client_instance_id": "m1", "kinds": ["selfplay"], "games": 1},
        format="json",
    )


def _assert_throttled(response) -> None:
    assert response.status_code == 429
    error = _error(response)
    assert error["code"] == "throttled"
    wait = int(response["Retry-After"])
    assert 1 <= wait <= 60
    assert error["retry_after"] >= wait


def test_tasks_throttle(run, rates):
    """With tasks at 2/min the third task request of a user gets 429 throttled with Retry-After, and
    records no task; another user is not affected."""
    rates("tasks", "2/min")
    alice = _user_client("alice")
    assert _task(alice).status_code == 201
    assert _task(alice).status_code == 201
    _assert_throttled(_task(alice))
    assert Task.objects.count() == 2
    assert _task(_user_client("bob")).status_code == 201


def test_throttled_body_agrees_with_retry_after(run, rates):
    """The error body's retry_after and its message give the same wait as the Retry-After header."""
    rates("tasks", "1/min")
    client = _user_client("henry")
    assert _task(client).status_code == 201
    response = _task(client)
    assert response.status_code == 429
    error = _error(response)
    wait = int(response["Retry-After"])
    assert error["retry_after"] == wait
    assert f"try again in {wait} s" in error["message"]


def test_tasks_throttle_counts_per_user_not_per_token(run, rates):
    """Two tokens of one user share the user's task budget."""
    rates("tasks", "2/min")
    user = User.objects.create_user("multi", "multi@example.org", PASSWORD)
    clients = []
    for name in ("one", "two"):
        _, key = ClientToken.issue(user, name)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        clients.append(client)
    assert _task(clients[0]).status_code == 201
    assert _task(clients[1]).status_code == 201
    _assert_throttled(_task(clients[0]))
    _assert_throttled(_task(clients[1]))


def test_ip_throttle_on_an_anonymous_endpoint(run, rates):
    """With ip at 2/min the third anonymous request from one address gets 429; another address does not."""
    rates("ip", "2/min")
    client = APIClient()
    assert client.get("/api/v1/runs/").status_code == 200
    assert client.get("/api/v1/runs/current/").status_code == 200
    _assert_throttled(client.get("/api/v1/networks/"))
    assert APIClient(REMOTE_ADDR="10.1.2.3").get("/api/v1/runs/").status_code == 200


@pytest.mark.parametrize(
    "address, key",
    [
        ("203.0.113.9", "203.0.113.9"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("2001:DB8:1:2::", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),
        ("2001:db8:1:3::1", "2001:db8:1:3::/64"),
        ("::ffff:203.0.113.9", "203.0.113.9"),
        ("::1", "::/64"),
        ("fe80::1%eth0", "fe80::/64"),
        (" 198.51.100.1 ", "198.51.100.1"),
        ("not an address", "not an address"),
        ("", ""),
    ],
)
def test_an_address_counts_as_itself_or_its_ipv6_network(address, key):
    from server.api.addresses import address_key

    assert address_key(address) == key


def test_the_client_is_the_address_the_trusted_proxies_name(settings):
    """Behind NUM_PROXIES proxies the client is the entry that many from X-Forwarded-For's end (what
    the nearest proxy wrote; what the client wrote before it is not believed), keyed as every
    per-address counter keys it; with none, the connection's address."""
    from django.test import RequestFactory

    from server.api.addresses import client_key

    forwarded = "10.6.6.6, 2001:db8:5:6:a:b:c:d"
    request = RequestFactory().get("/", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=forwarded)
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    assert client_key(request) == "2001:db8:5:6::/64"
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 2}
    assert client_key(request) == "10.6.6.6"
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 0}
    assert client_key(request) == "127.0.0.1"


def test_ip_throttle_counts_an_ipv6_network_as_one_client(run, rates):
    """Addresses of one /64 share the per-address counter (a machine picks any address in its /64);
    another /64 has its own; an IPv4 address and its IPv4-mapped IPv6 form are one client."""
    rates("ip", "2/min")
    assert APIClient(REMOTE_ADDR="2001:db8:1:2::a").get("/api/v1/runs/").status_code == 200
    assert APIClient(REMOTE_ADDR="2001:db8:1:2:9:8:7:6").get("/api/v1/runs/").status_code == 200
    _assert_throttled(APIClient(REMOTE_ADDR="2001:db8:1:2:ffff::1").get("/api/v1/runs/"))
    assert APIClient(REMOTE_ADDR="2001:db8:1:3::a").get("/api/v1/runs/").status_code == 200
    assert APIClient(REMOTE_ADDR="203.0.113.5").get("/api/v1/runs/").status_code == 200
    assert APIClient(REMOTE_ADDR="::ffff:203.0.113.5").get("/api/v1/runs/").status_code == 200
    _assert_throttled(APIClient(REMOTE_ADDR="203.0.113.5").get("/api/v1/runs/"))


def test_ip_throttle_covers_signed_in_users(run, rates):
    """The per-address limit counts signed-in requests too."""
    rates("ip", "2/min")
    client = _user_client("carol")
    assert client.get("/api/v1/me/").status_code == 200
    assert client.get("/api/v1/me/").status_code == 200
    _assert_throttled(client.get("/api/v1/me/"))


def test_user_throttle(run, rates):
    """With user at 2/min a user's third request gets 429, from any address; others go on."""
    rates("user", "2/min")
    client = _user_client("dave")
    assert client.get("/api/v1/me/").status_code == 200
    assert client.get("/api/v1/runs/", REMOTE_ADDR="10.0.0.2").status_code == 200
    _assert_throttled(client.get("/api/v1/me/", REMOTE_ADDR="10.0.0.3"))
    assert _user_client("erin").get("/api/v1/me/").status_code == 200


def test_login_throttle(db, rates):
    """With login at 2/min the third password login from one address gets 429, even with the right
    password, for any account; guesses at one username from one address count on their own counters
    too (login_pair), but never for the username alone: another address logs in to that account and
    to another one."""
    User.objects.create_user("frank", "frank@example.org", PASSWORD)
    User.objects.create_user("fiona", "fiona@example.org", PASSWORD)
    rates("login", "2/min")
    rates("login_pair", "2/min")
    client = APIClient()
    url = "/api/v1/auth/token/"
    assert client.post(url, {"username": "frank", "password": "wrong"}, format="json").status_code == 401
    assert client.post(url, {"username": "frank", "password": "wrong"}, format="json").status_code == 401
    response = client.post(url, {"username": "frank", "password": PASSWORD}, format="json")
    _assert_throttled(response)
    _assert_throttled(client.post(url, {"username": "fiona", "password": PASSWORD}, format="json"))
    elsewhere = APIClient(REMOTE_ADDR="10.9.9.9")
    assert elsewhere.post(url, {"username": "frank", "password": PASSWORD}, format="json").status_code == 201
    assert User.objects.get(username="frank").tokens.count() == 1
    assert elsewhere.post(url, {"username": "fiona", "password": PASSWORD}, format="json").status_code == 201


def test_default_rates_let_normal_use_through(run):
    """With the configured rates a handful of requests is never throttled."""
    client = _user_client("gina")
    for _ in range(5):
        assert _task(client).status_code == 201
        assert client.get("/api/v1/me/").status_code == 200


def test_a_chunked_api_body_without_length_is_refused(db):
    """Bodies must declare their length, so that the size limits apply before anything is read."""
    response = Client().generic(
        "POST",
        "/api/v1/tasks/",
        b"",
        content_type="application/json",
        HTTP_TRANSFER_ENCODING="chunked",
        CONTENT_LENGTH="",
    )
    assert response.status_code == 411
    assert response.json()["error"]["code"] == "length_required"
