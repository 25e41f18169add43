"""What a hostile client sends is answered 4xx, never 500, and stores nothing: nesting beyond every
parser's bound (SGF variations, the upload's metadata, every JSON body), control characters in
every address and query parameter (found by walking the URL map and the code that reads the query,
so new pages and endpoints are covered as they come) and in the text fields that are stored, and
password guesses on the website's login forms beyond the login rate."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

import pytest
from django.apps import apps
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.converters import IntConverter, PathConverter, SlugConverter, StringConverter, UUIDConverter
from rest_framework.settings import api_settings
from rest_framework.test import APIClient

from common.boundedjson import MAX_DEPTH
from common.go.sgf import MAX_VARIATION_DEPTH
from server.accounts.models import ClientToken, User
from tests.server.conftest import api_error, new_task, stored_files
from tests.server.helpers import upload_fields

SERVER = Path(__file__).resolve().parents[2] / "server"
PASSWORD = "a long enough password"
NUL = "x\x00y"
TRAINING = "/api/v1/games/training/"


def row_counts() -> dict[str, int]:
    """The number of rows of every table, to show that a request stored nothing."""
    return {m._meta.label: m.objects.count() for m in apps.get_models() if not m._meta.proxy}


@pytest.fixture
def boss(db):
    """A superuser: signed in on the website and holding a client token, so that every page and
    endpoint gets as far as its own checks."""
    user = User.objects.create_superuser("boss", "boss@example.org", PASSWORD)
    web = Client()
    web.force_login(user)
    _, key = ClientToken.issue(user, "boss's machine")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return user, web, api


def deep_json(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


# --- nesting ---------------------------------------------------------------------------------------
def _json_views() -> list[tuple[str, type]]:
    """Every API URL whose view takes a JSON body (POST, PUT or PATCH with the JSON parser)."""
    from server.api.parsers import JSONParser

    out = []
    for route, callback in routes():
        view = getattr(callback, "cls", None)
        if not route.startswith("api/") or view is None or not any(hasattr(view, m) for m in ("post", "put", "patch")):
            continue
        if any(issubclass(p, JSONParser) for p in view.parser_classes):
            out.append((route, view))
    return out


def test_every_json_body_nested_beyond_the_bound_is_refused_naming_the_body(run, boss):
    _, _, api = boss
    views = _json_views()
    assert {route for route, _ in views} >= {"api/v1/tasks/", "api/v1/auth/token/"}
    before = row_counts()
    for route, _ in views:
        path = "/" + fill(route, "1")
        for method in (api.post, api.put, api.patch):
            response = method(path, deep_json(MAX_DEPTH + 1), content_type="application/json")
            if response.status_code == 405:
                continue
            assert response.status_code == 400, (path, response.content)
            error = api_error(response)
            assert (error["field"], error["code"]) == ("body", "parse_error"), error
            assert "nested more than" in error["message"]
    # the same deep body far beyond the stack's depth, and the other ways a body is not JSON
    for body in (
        deep_json(50_000),
        "[" * 200_000,
        '{"username": NaN}',
        '{"games": 1e999}',
        '{"games": 123456789012345678901234567890}',
        '{"name": "\\ud800"}',
        b'{"name": "\xff"}',
    ):
        response = APIClient().post("/api/v1/auth/token/", body, content_type="application/json")
        assert response.status_code == 400, response.content
        assert api_error(response)["field"] == "body"
        response = api.post("/api/v1/tasks/", body, content_type="application/json")
        assert response.status_code == 400, response.content
        assert api_error(response)["field"] == "body"
    assert row_counts() == before


def test_a_body_in_a_charset_that_is_not_text_is_refused_naming_the_body(run, boss):
    _, _, api = boss
    response = api.post("/api/v1/tasks/", b"BZh9", content_type="application/json; charset=bz2_codec")
    assert response.status_code == 400
    assert api_error(response)["field"] == "body"


@pytest.fixture
def task(run, alice):
    return new_task(alice[1], games=3)


@pytest.fixture
def game(selfplay_games):
    return selfplay_games[0]


def _refused_upload(client, fields: dict, field: str) -> dict:
    """Post an upload, check it is refused naming field, that nothing but its refusal is stored."""
    from server.games.models import RatingGame, TrainingGame, UploadRefusal

    refusals = UploadRefusal.objects.count()
    response = client.post(TRAINING, fields, format="multipart")
    assert response.status_code == 400, response.content
    error = api_error(response)
    assert error["field"] == field, error
    assert TrainingGame.objects.count() == RatingGame.objects.count() == 0 and stored_files() == []
    assert UploadRefusal.objects.count() == refusals + 1
    refusal = UploadRefusal.objects.latest("id")
    assert (refusal.field, refusal.code) == (field.replace("\x00", "\\x00")[:32], error["code"])
    return error


@pytest.mark.parametrize(
    ("metadata", "problem"),
    [
        (deep_json(MAX_DEPTH + 1), "nested more than"),
        ("[" * 10_000, "nested more than"),  # (far beyond the stack, within the size limit)
        ('{"komi": NaN}', "not a JSON number"),
        ('{"komi": 1e400}', "too large"),
        ('{"moves": 99999999999999999999999}', "64-bit"),
        ('{"game_id": "\\udc00"}', "unpaired surrogate"),
    ],
)
def test_metadata_beyond_the_bounds_is_refused_naming_it(alice, task, game, metadata, problem):
    fields = upload_fields(task["id"], game)
    fields["metadata"] = metadata
    assert problem in _refused_upload(alice[1], fields, "metadata")["message"]


def test_sgf_variations_nested_beyond_the_bound_are_refused_naming_the_sgf(alice, task, game):
    from django.core.files.uploadedfile import SimpleUploadedFile

    for depth in (MAX_VARIATION_DEPTH + 1, 30_000):
        fields = upload_fields(task["id"], game)
        fields["sgf"] = SimpleUploadedFile("game.sgf", b"(;" * depth + b")" * depth)
        error = _refused_upload(alice[1], fields, "sgf")
        assert f"nested more than {MAX_VARIATION_DEPTH} deep" in error["message"]
        assert f"line 1, column {2 * MAX_VARIATION_DEPTH + 1}" in error["message"]


# --- control characters in addresses -----------------------------------------------------------------
def routes() -> list[tuple[str, object]]:
    """(route, view) for every URL pattern of the server, the route written as its patterns are
    (``networks/<str:name>/``, the admin's regular expressions)."""
    out = []

    def walk(patterns, prefix: str) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern):
                out.append((prefix + str(p.pattern), p.callback))

    walk(get_resolver().url_patterns, "")
    return out


_PARAM = re.compile(r"<(?:(\w+):)?(\w+)>|\(\?P<(\w+)>(?:[^()]|\([^()]*\))*\)")
_TEXT = (StringConverter, SlugConverter, PathConverter)


def fill(route: str, text: str, number: str = "1") -> str:
    """A path matching the route's shape: ``text`` (quoted) for its text parameters and regular
    expression groups, ``number`` for its integers, a uuid for uuids."""
    from django.urls.converters import get_converters

    def value(m: re.Match) -> str:
        if m.group(3):  # a regular expression's group
            return quote(text, safe="")
        converter = get_converters()[m.group(1) or "str"]
        if isinstance(converter, IntConverter):
            return number
        if isinstance(converter, UUIDConverter):
            return "00000000-0000-0000-0000-000000000000"
        assert isinstance(converter, _TEXT), f"{route}: no value for converter {converter!r}"
        return quote(text, safe="")

    path = _PARAM.sub(value, route)
    return re.sub(r"\\(.)", r"\1", path.replace("^", "").replace("$", ""))


def has_text_parameter(route: str) -> bool:
    return any(m.group(3) or m.group(1) in (None, "str", "slug", "path") for m in _PARAM.finditer(route))


def query_parameters() -> set[str]:
    """Every query parameter name the server's code reads (``request.GET``, DRF's ``query_params``,
    the pages' ``choice``, the listings' ``filter_listing`` choices), with DRF's page and format
    parameters, the login's ``next``, and the admin's search, order, page and list filters."""
    from django.contrib import admin
    from django.contrib.admin.views.main import ORDER_VAR, PAGE_VAR, SEARCH_VAR

    names = {"page", api_settings.URL_FORMAT_OVERRIDE, "next", SEARCH_VAR, ORDER_VAR, PAGE_VAR}
    for model_admin in admin.site._registry.values():
        names.update(f"{f}__exact" for f in model_admin.list_filter if isinstance(f, str))
    patterns = (
        r"""(?:GET|query_params|params)\.get\(\s*["'](\w+)["']""",
        r"""params\[["'](\w+)["']\]""",
        r"""choice\(\s*request,\s*["'](\w+)["']""",
        r"""filter_listing\([^{]*\{\s*["'](\w+)["']""",
    )
    for source in SERVER.rglob("*.py"):
        text = source.read_text()
        for pattern in patterns:
            names.update(re.findall(pattern, text))
    return names


def _assert_refused(response, path: str, field: str | None) -> None:
    assert response.status_code == 400, (path, response.status_code)
    if path.startswith("/api/"):
        error = api_error(response)
        assert error["code"] == "invalid" and "control character U+" in error["message"], error
        if field is not None:
            assert error["field"] == field, error
    else:
        assert response["Content-Type"].startswith("text/html")
        assert "control character U+" in response.content.decode()


def test_control_characters_in_every_address_are_refused(boss):
    """Every URL pattern with a text parameter, filled with NUL (and other control characters), on
    the API and the website, signed in and not: 400 before any view runs; nothing stored."""
    _, web, api = boss
    with_text = [route for route, _ in routes() if has_text_parameter(route)]
    assert {
        "api/v1/networks/<str:name>/",
        "api/v1/runs/<str:name>/",
        "networks/<str:name>/",
        "contributors/<str:username>/",
    } <= set(with_text)
    before = row_counts()
    for route in with_text:
        path = "/" + fill(route, NUL)
        for client in (web, Client()):
            _assert_refused(client.get(path), path, "path")
            _assert_refused(client.post(path, {}), path, "path")
        _assert_refused(api.get(path), path, "path")
        for text in ("a\nb", "\x1b[2J", "\x7f"):
            path = "/" + fill(route, text)
            _assert_refused(web.get(path), path, "path")
    assert row_counts() == before


def test_control_characters_in_every_query_parameter_are_refused(boss):
    """Every page and endpoint (its text parameters filled with ordinary words) with NUL in every
    query parameter the code reads, and with NUL in a parameter's name: 400. Each parameter alone
    is refused too (on a page and on an endpoint)."""
    _, web, api = boss
    names = sorted(query_parameters())
    assert {"run", "state", "released", "kind", "page", "network", "user", "show", "q", "state__exact"} <= set(names)
    before = row_counts()
    for route, _ in routes():
        path = "/" + fill(route, "word")
        client = api if path.startswith("/api/") else web
        _assert_refused(client.get(path, dict.fromkeys(names, NUL)), path, names[0])
        _assert_refused(client.get(f"{path}?ok=1&na%00me=1"), path, "query")
    for path, client in (("/games/", web), ("/api/v1/networks/", api)):
        for name in names:
            _assert_refused(client.get(path, {"ok": "1", name: NUL}), path, name)
    assert row_counts() == before


def test_a_cookie_with_a_control_character_is_dropped(boss):
    """A session cookie holding NUL (which would reach the session table) is as if not sent."""
    _, web, _ = boss
    web.cookies["sessionid"] = "abcdefgh\x00ijklmnop"
    response = web.get("/accounts/tokens/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_an_id_beyond_64_bits_is_not_found(boss):
    """Every route with an integer parameter, given one no column holds: 404, never 500."""
    _, web, api = boss
    with_numbers = [route for route, _ in routes() if "<int:" in route]
    assert with_numbers
    for route in with_numbers:
        path = "/" + fill(route, "word", number=str(2**64))
        response = (api if path.startswith("/api/") else web).get(path)
        assert response.status_code in (404, 405), (path, response.status_code)


# --- control characters in stored text -------------------------------------------------------------
def test_nul_in_the_api_text_fields_is_refused(run, alice):
    """The token request's and the task request's text fields: 400 naming the field, nothing stored."""
    _, client = alice
    before = row_counts()
    token = {"username": "alice", "password": PASSWORD, "name": "box"}
    for key in token:
        response = APIClient().post("/api/v1/auth/token/", {**token, key: NUL}, format="json")
        assert response.status_code == 400 and api_error(response)["field"] == key, response.content
    task = {"client_version": "0.1.0", "client_instance_id": "m1", "kinds": ["selfplay"], "games": 1}
    for key, value in (("client_version", "0.1.0\x00"), ("client_instance_id", NUL), ("kinds", [NUL])):
        response = client.post("/api/v1/tasks/", {**task, key: value}, format="json")
        assert response.status_code == 400 and api_error(response)["field"].startswith(key), response.content
    assert row_counts() == before


def test_nul_in_the_forms_of_the_website_is_refused(run, alice):
    """Sign-up, login, password change and the token form: the form answers with its error, stores
    nothing and signs nobody in."""
    user, _ = alice
    before = row_counts()
    signup = {
        "username": "carol",
        "email": "carol@example.org",
        "password1": "correct horse 42",
        "password2": "correct horse 42",
    }
    for key in signup:
        response = Client().post("/accounts/signup/", {**signup, key: NUL})
        assert response.status_code == 200 and "Null characters are not allowed" in response.content.decode()
    login = {"username": "alice", "password": PASSWORD}
    for key in login:
        web = Client()
        response = web.post("/accounts/login/", {**login, key: PASSWORD + "\x00"})
        assert response.status_code == 200 and "_auth_user_id" not in web.session
    web = Client()
    web.force_login(user)
    before = row_counts()
    change = {"old_password": PASSWORD, "new_password1": "another long one 77", "new_password2": "another long one 77"}
    for key in change:
        response = web.post("/accounts/password/", {**change, key: change[key] + "\x00"})
        assert response.status_code == 200
    user.refresh_from_db()
    assert user.check_password(PASSWORD)
    response = web.post("/accounts/tokens/", {"name": NUL})
    assert response.status_code == 200 and "Null characters are not allowed" in response.content.decode()
    assert row_counts() == before


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"game_id": NUL}, "metadata.game_id"),
        ({"network": NUL}, "metadata.network"),
        ({"rules": NUL}, "metadata.rules"),
        ({"result": "B+R\x00"}, "sgf"),
        ({NUL: 1}, f"metadata.{NUL}"),
    ],
)
def test_nul_in_the_metadata_is_refused_and_the_refusal_recorded(alice, task, game, change, field):
    _refused_upload(alice[1], upload_fields(task["id"], game, **change), field)


@pytest.mark.parametrize("prop", ["SZ", "KM", "HA", "RU", "PB", "RE"])
def test_nul_in_the_sgf_is_refused_and_the_refusal_recorded(alice, task, game, prop):
    from django.core.files.uploadedfile import SimpleUploadedFile

    fields = upload_fields(task["id"], game)
    fields["sgf"] = SimpleUploadedFile(
        "game.sgf", re.sub(rb"(\(;)", rb"\1" + prop.encode() + b"[a\x00]", game.sgf, count=1)
    )
    _refused_upload(alice[1], fields, "sgf")


def test_nul_in_the_upload_task_field_is_refused(alice, task, game):
    _refused_upload(alice[1], upload_fields(NUL, game), "task")


# --- password guesses --------------------------------------------------------------------------------
@pytest.fixture
def login_rate(monkeypatch):
    monkeypatch.setitem(api_settings.DEFAULT_THROTTLE_RATES, "login", "3/min")
    monkeypatch.setitem(api_settings.DEFAULT_THROTTLE_RATES, "login_pair", "5/min")
    return 3


def _assert_too_many(response) -> None:
    assert response.status_code == 429, response.status_code
    wait = int(response["Retry-After"])
    assert 1 <= wait <= 60
    text = response.content.decode()
    assert "Too many password attempts" in text and f"Try again in\n{wait} second" in text


def test_the_login_form_is_rate_limited_per_address_and_per_username(alice, bob, login_rate):
    """The login form counts on the API's login counters: after the rate's wrong passwords from one
    address, that address is refused (429, Retry-After) even with the right password, while the
    account still signs in from another address. Guesses at one username from several addresses
    never lock its owner out (nothing counts per username alone: server.accounts.throttling), on the
    form or the API, and other accounts are not touched."""
    attacker = Client(REMOTE_ADDR="10.0.0.1")
    for _ in range(login_rate):
        response = attacker.post("/accounts/login/", {"username": "alice", "password": "guess"})
        assert response.status_code == 200
    _assert_too_many(attacker.post("/accounts/login/", {"username": "alice", "password": "guess"}))
    _assert_too_many(attacker.post("/accounts/login/", {"username": "bob", "password": PASSWORD}))
    for _ in range(10):  # refused by the address's limit: no password checked
        _assert_too_many(attacker.post("/accounts/login/", {"username": "alice", "password": "guess"}))
    owner = Client(REMOTE_ADDR="10.0.0.2")
    assert owner.post("/accounts/login/", {"username": "alice", "password": PASSWORD}).status_code == 302
    second = Client(REMOTE_ADDR="10.0.0.4")  # a guesser's second address
    for _ in range(login_rate):
        assert second.post("/accounts/login/", {"username": "ALICE", "password": "guess"}).status_code == 200
    _assert_too_many(second.post("/accounts/login/", {"username": "alice", "password": "guess"}))
    elsewhere = Client(REMOTE_ADDR="10.0.0.5")
    assert elsewhere.post("/accounts/login/", {"username": "alice", "password": PASSWORD}).status_code == 302
    response = APIClient(REMOTE_ADDR="10.0.0.3").post(
        "/api/v1/auth/token/", {"username": "alice", "password": PASSWORD}, format="json"
    )
    assert response.status_code == 201
    assert elsewhere.post("/accounts/login/", {"username": "bob", "password": PASSWORD}).status_code == 302
    assert elsewhere.get("/accounts/login/").status_code == 200  # looking at the form costs nothing
    from django.core.cache import cache

    cache.clear()  # the window ends
    response = Client(REMOTE_ADDR="10.0.0.1").post("/accounts/login/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 302


def test_the_admin_login_and_the_password_change_are_rate_limited(alice, login_rate):
    user, _ = alice
    admin = Client()
    for _ in range(login_rate):
        assert admin.post("/admin/login/", {"username": "alice", "password": "guess"}).status_code == 200
    _assert_too_many(admin.post("/admin/login/", {"username": "alice", "password": "guess"}))
    from django.core.cache import cache

    cache.clear()
    web = Client(REMOTE_ADDR="10.0.0.5")
    web.force_login(user)
    new = "another long password 99"
    for _ in range(login_rate):
        response = web.post(
            "/accounts/password/", {"old_password": "guess", "new_password1": new, "new_password2": new}
        )
        assert response.status_code == 200
    _assert_too_many(
        web.post("/accounts/password/", {"old_password": PASSWORD, "new_password1": new, "new_password2": new})
    )
    user.refresh_from_db()
    assert user.check_password(PASSWORD)
