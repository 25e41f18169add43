"""Accounts: the web pages (sign-up and its mailed link, login, logout, password change), client
tokens from ``POST /api/v1/auth/token/``, token authentication and the signed-in user's totals."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from rest_framework.test import APIClient

from server.accounts.models import ClientToken, SignUp, User
from server.distribution.models import Task
from server.games.models import RatingGame, TrainingGame
from server.networks.models import Network
from tests.server.conftest import api_error as _error
from tests.server.conftest import new_task

PASSWORD = "a long enough password"


@pytest.fixture
def web(db) -> Client:
    return Client()


def _signup_data(username="carol", email="carol@example.org", password="correct horse battery 42") -> dict:
    return {"username": username, "email": email, "password1": password, "password2": password}


def _session_user_id(client: Client) -> str | None:
    return client.session.get("_auth_user_id")


# --- sign-up -----------------------------------------------------------------------------------------
def test_signup_page_shows_the_form(web):
    """GET /accounts/signup/ answers 200 with a form asking for username, email and password."""
    response = web.get("/accounts/signup/")
    assert response.status_code == 200
    html = response.content.decode()
    for field in ('name="username"', 'name="email"', 'name="password1"', 'name="password2"', "csrfmiddlewaretoken"):
        assert field in html


def _link(message) -> str:
    """The site's path in a mail's text."""
    return re.search(r"https?://[^/\s]+(/\S+)", message.body).group(1)


def test_signup_mails_a_link_that_makes_the_user_and_logs_in(web, mailoutbox):
    """A valid sign-up makes no user yet: it answers "check your mail" and mails the address a link;
    opening the link shows a button and changes nothing; pressing it makes an active user with a
    hashed password and logs them in."""
    response = web.post("/accounts/signup/", _signup_data())
    assert response.status_code == 200
    assert "Check your mail" in response.content.decode() and "carol@example.org" in response.content.decode()
    assert not User.objects.filter(username="carol").exists() and _session_user_id(web) is None
    (mail,) = mailoutbox
    assert mail.to == ["carol@example.org"] and mail.subject == "Finish signing up to Sente"
    assert "Hello carol" in mail.body and "within three days" in mail.body
    link = _link(mail)
    assert "Make my account" in web.get(link).content.decode()  # mail scanners open links
    assert not User.objects.filter(username="carol").exists()
    made = web.post(link)
    assert made.status_code == 302 and made["Location"] == "/"
    user = User.objects.get(username="carol")
    assert user.email == "carol@example.org"
    assert user.is_active and not user.is_staff and not user.is_superuser
    assert user.check_password("correct horse battery 42")
    assert user.password != "correct horse battery 42"
    assert _session_user_id(web) == str(user.pk)
    # the front page now knows them
    assert "carol" in web.get("/").content.decode()
    # the database keeps the link's hash, never its key
    assert not SignUp.objects.filter(key_hash__contains=link.rstrip("/").rsplit("/", 1)[1]).exists()


def test_signup_with_a_registered_email_answers_as_with_a_new_one(web, alice, mailoutbox):
    """An address that has an account (any case) gets the very same page as a new one (status,
    headers, body but the address typed, no cookie, no session); no account or sign-up is made for
    it, and its owner is mailed that someone tried, with how to log in or reset the password."""
    new, registered = "carla@example.org", "ALICE@example.org"  # of the same length
    assert len(new) == len(registered)
    answers = []
    for email in (new, registered):
        client = Client()
        response = client.post("/accounts/signup/", _signup_data(username="carol", email=email))
        answers.append((response, email, client))
    (first, first_email, first_client), (second, second_email, second_client) = answers
    assert first.status_code == second.status_code == 200
    assert dict(first.headers) == dict(second.headers)
    assert first.content.replace(first_email.encode(), b"@") == second.content.replace(second_email.encode(), b"@")
    assert first.cookies.keys() == second.cookies.keys() and not first.cookies
    assert _session_user_id(first_client) is None and _session_user_id(second_client) is None
    assert User.objects.filter(email__iexact="alice@example.org").count() == 1
    assert not User.objects.filter(username="carol").exists()
    assert list(SignUp.objects.values_list("email", flat=True)) == [new]
    to_new, to_owner = mailoutbox
    assert to_new.to == [new] and to_new.subject == "Finish signing up to Sente"
    assert to_owner.to == ["alice@example.org"]
    assert to_owner.subject == "Someone tried to sign up to Sente with your address"
    body = to_owner.body
    assert "Hello alice" in body and "no other account was made" in body and "If it was you, log in" in body
    assert "http://testserver/accounts/login/" in body and "http://testserver/accounts/password/reset/" in body
    assert "/accounts/signup/confirm/" not in body  # nothing in it makes an account


def test_a_signup_link_works_once(web, mailoutbox):
    """The second use of a sign-up link fails with a page saying it was used, and makes nothing."""
    web.post("/accounts/signup/", _signup_data())
    link = _link(mailoutbox[0])
    assert Client().post(link).status_code == 302
    again = Client().post(link)
    assert again.status_code == 400
    text = again.content.decode()
    assert "This link was used already" in text and "each link works once" in text and "carol" in text
    assert User.objects.filter(username="carol").count() == 1


def test_a_signup_link_expires_and_must_be_whole(web, mailoutbox):
    """A link older than three days, or cut short, makes no account and says why."""
    web.post("/accounts/signup/", _signup_data())
    link = _link(mailoutbox[0])
    cut = Client().post(link[:-4] + "/")
    assert cut.status_code == 400 and "not one the site sent" in cut.content.decode()
    SignUp.objects.update(created_at=timezone.now() - timedelta(days=3, minutes=1))
    old = Client().post(link)
    assert old.status_code == 400 and "more than three days old" in old.content.decode()
    assert not User.objects.filter(username="carol").exists()


def test_a_signup_link_refuses_a_name_or_address_taken_since(web, mailoutbox):
    """Two sign-ups with one name: the first link opened makes the account, the second says the name
    was taken; an address that became an account's meanwhile is refused too."""
    web.post("/accounts/signup/", _signup_data(email="one@example.org"))
    web.post("/accounts/signup/", _signup_data(email="two@example.org"))
    web.post("/accounts/signup/", _signup_data(username="other", email="one@example.org"))
    first, second, third = (_link(m) for m in mailoutbox)
    assert Client().post(first).status_code == 302
    taken = Client().post(second)
    assert taken.status_code == 400 and "name carol was taken since you signed up" in taken.content.decode()
    address = Client().post(third)
    assert address.status_code == 400 and "has become an account&#x27;s address" in address.content.decode()
    assert list(User.objects.filter(username__in=["carol", "other"]).values_list("email", flat=True)) == [
        "one@example.org"
    ]


def test_signup_is_rate_limited_per_address(web, mailoutbox, settings):
    """Sign-ups count per client address: past the ``signup`` rate the next one is answered 429 with
    Retry-After, sends no mail and stores nothing; another address signs up."""
    from server.api.throttling import parse_rate

    most, _ = parse_rate(settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["signup"])
    assert most == 20
    for n in range(most):
        response = web.post("/accounts/signup/", _signup_data(username=f"user{n}", email=f"user{n}@example.org"))
        assert response.status_code == 200, n
    over = web.post("/accounts/signup/", _signup_data(username="user20", email="user20@example.org"))
    assert over.status_code == 429 and int(over["Retry-After"]) > 60
    assert "Too many sign-ups" in over.content.decode()
    assert len(mailoutbox) == most and not SignUp.objects.filter(username="user20").exists()
    elsewhere = Client(REMOTE_ADDR="10.3.3.3").post("/accounts/signup/", _signup_data(username="user20"))
    assert elsewhere.status_code == 200 and len(mailoutbox) == most + 1
    assert web.get("/accounts/signup/").status_code == 200  # looking at the form costs nothing


def test_signups_from_one_ipv6_network_count_as_from_one_address(db, mailoutbox, settings):
    """Sign-ups from addresses of one /64 share its counter; another /64 has its own, and an IPv4
    address and its IPv4-mapped form share one."""
    from server.api.throttling import parse_rate

    most, _ = parse_rate(settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["signup"])
    for n in range(most):
        address = f"2001:db8:9:9:{n:x}::1"
        response = Client(REMOTE_ADDR=address).post("/accounts/signup/", _signup_data(f"user{n}", f"u{n}@example.org"))
        assert response.status_code == 200, n
    over = Client(REMOTE_ADDR="2001:db8:9:9:ffff::2").post("/accounts/signup/", _signup_data("late", "l@example.org"))
    assert over.status_code == 429 and len(mailoutbox) == most
    other = Client(REMOTE_ADDR="2001:db8:9:a::1").post("/accounts/signup/", _signup_data("late", "l@example.org"))
    assert other.status_code == 200 and len(mailoutbox) == most + 1
    for n in range(most):
        address = "198.51.100.9" if n % 2 else "::ffff:198.51.100.9"
        response = Client(REMOTE_ADDR=address).post("/accounts/signup/", _signup_data(f"v{n}", f"v{n}@example.org"))
        assert response.status_code == 200, n
    assert (
        Client(REMOTE_ADDR="198.51.100.9").post("/accounts/signup/", _signup_data("w", "w@example.org")).status_code
        == 429
    )


def test_signup_refuses_a_username_in_use(web, alice, mailoutbox):
    """A taken username is refused (usernames are public) and no mail is sent."""
    response = web.post("/accounts/signup/", _signup_data(username="alice", email="new@example.org"))
    assert response.status_code == 200
    assert "username" in response.context["form"].errors
    assert not User.objects.filter(email="new@example.org").exists()
    assert not mailoutbox and not SignUp.objects.exists()


def test_signup_refuses_a_username_differing_only_in_case(web, alice):
    """'ALICE' is refused when 'alice' exists (two accounts must not look the same)."""
    response = web.post("/accounts/signup/", _signup_data(username="ALICE", email="other@example.org"))
    assert response.status_code == 200
    assert "username" in response.context["form"].errors
    assert not User.objects.filter(username="ALICE").exists()


def test_signup_refuses_mismatched_or_weak_passwords(web):
    """Passwords that differ, or fail the password validators, make no user."""
    data = _signup_data()
    data["password2"] = "something else entirely 7"
    assert web.post("/accounts/signup/", data).status_code == 200
    assert web.post("/accounts/signup/", _signup_data(password="12345678")).status_code == 200
    assert not User.objects.filter(username="carol").exists()


def test_signup_needs_an_email(web):
    """The email field is required."""
    data = _signup_data()
    data["email"] = ""
    response = web.post("/accounts/signup/", data)
    assert response.status_code == 200
    assert "email" in response.context["form"].errors
    assert not User.objects.filter(username="carol").exists()


def test_signup_without_csrf_token_is_refused(db):
    """A sign-up POST without the CSRF token gets 403 and creates nothing."""
    client = Client(enforce_csrf_checks=True)
    response = client.post("/accounts/signup/", _signup_data())
    assert response.status_code == 403
    assert not User.objects.filter(username="carol").exists() and not SignUp.objects.exists()


def test_signup_with_csrf_token_works_under_csrf_checks(db):
    """The same POST with the page's CSRF token goes through (the 403 above is the CSRF check)."""
    client = Client(enforce_csrf_checks=True)
    page = client.get("/accounts/signup/")
    token = page.context["csrf_token"]
    response = client.post("/accounts/signup/", {**_signup_data(), "csrfmiddlewaretoken": str(token)})
    assert response.status_code == 200 and "Check your mail" in response.content.decode()
    assert SignUp.objects.filter(username="carol").exists()


def test_signed_in_user_is_sent_home_from_signup(web, alice):
    """A signed-in user visiting the sign-up page is redirected to the front page."""
    user, _ = alice
    web.force_login(user)
    response = web.get("/accounts/signup/")
    assert response.status_code == 302
    assert response["Location"] == "/"


# --- login, logout, password change -------------------------------------------------------------------
def test_login_page_and_login(web, alice):
    """The login page answers 200; right credentials log in, wrong ones do not."""
    user, _ = alice
    assert web.get("/accounts/login/").status_code == 200
    response = web.post("/accounts/login/", {"username": "alice", "password": "wrong password"})
    assert response.status_code == 200
    assert _session_user_id(web) is None
    response = web.post("/accounts/login/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == "/"
    assert _session_user_id(web) == str(user.pk)


def test_logout_is_a_post(web, alice):
    """POST /accounts/logout/ ends the session; a GET does not log out."""
    user, _ = alice
    web.force_login(user)
    assert web.get("/accounts/logout/").status_code == 405
    assert _session_user_id(web) == str(user.pk)
    response = web.post("/accounts/logout/")
    assert response.status_code == 302
    assert _session_user_id(web) is None


def test_password_change_needs_login(web):
    """The password change page sends anonymous visitors to the login page."""
    response = web.get("/accounts/password/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_password_change(web, alice):
    """A signed-in user changes their password; the old one stops working, the session goes on, and
    every client token of the account is revoked (the page says the clients must log in again)."""
    user, api = alice
    web.force_login(user)
    assert web.get("/accounts/password/").status_code == 200
    new = "another long password 99"
    response = web.post("/accounts/password/", {"old_password": "wrong", "new_password1": new, "new_password2": new})
    assert response.status_code == 200
    user.refresh_from_db()
    assert user.check_password(PASSWORD)
    response = web.post("/accounts/password/", {"old_password": PASSWORD, "new_password1": new, "new_password2": new})
    assert response.status_code == 302
    assert response["Location"] == "/accounts/password/done/"
    done = web.get("/accounts/password/done/")
    assert done.status_code == 200
    assert "your clients must log in again: run <code>sente contribute</code>" in done.content.decode()
    user.refresh_from_db()
    assert user.check_password(new)
    assert not user.check_password(PASSWORD)
    assert _session_user_id(web) == str(user.pk)  # still signed in after the change
    assert api.get("/api/v1/me/").status_code == 401
    assert not user.tokens.filter(revoked_at__isnull=True).exists()


# --- tokens -------------------------------------------------------------------------------------------
def _token(client: APIClient, username="alice", password=PASSWORD, **extra):
    return client.post("/api/v1/auth/token/", {"username": username, "password": password, **extra}, format="json")


def test_token_from_password_authenticates(alice):
    """POST /api/v1/auth/token/ answers 201 with a token that then authenticates GET /api/v1/me/."""
    user, _ = alice
    response = _token(APIClient(), name="desktop")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["username"] == "alice"
    assert body["name"] == "desktop"
    assert body["token"].startswith("sente_")
    assert body["created_at"]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {body['token']}")
    me = client.get("/api/v1/me/")
    assert me.status_code == 200
    assert me.json()["username"] == "alice"
    assert user.tokens.filter(name="desktop").count() == 1


def test_token_default_name(alice):
    """A token request without a name gets a token named 'client'."""
    response = _token(APIClient())
    assert response.status_code == 201
    assert response.json()["name"] == "client"


def test_each_token_request_makes_a_new_token(alice):
    """Two requests make two different tokens, both working."""
    user, _ = alice
    keys = [_token(APIClient()).json()["token"] for _ in range(2)]
    assert keys[0] != keys[1]
    for key in keys:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        assert client.get("/api/v1/me/").status_code == 200
    assert user.tokens.count() == 3  # the fixture's and these two


def test_token_wrong_password(alice):
    """A wrong password gets 401 with the JSON error body and makes no token."""
    user, _ = alice
    before = user.tokens.count()
    response = _token(APIClient(), password="not the password")
    assert response.status_code == 401
    error = _error(response)
    assert error["code"] == "bad_credentials"
    assert user.tokens.count() == before


def test_token_unknown_user(db):
    """An unknown username gets the same 401 as a wrong password."""
    response = _token(APIClient(), username="nobody")
    assert response.status_code == 401
    assert _error(response)["code"] == "bad_credentials"


def test_token_inactive_user_gets_no_token(alice):
    """A disabled account cannot get a token with its (right) password."""
    user, _ = alice
    user.is_active = False
    user.save()
    response = _token(APIClient())
    assert response.status_code == 401
    assert _error(response)["code"] == "bad_credentials"


@pytest.mark.parametrize("missing", ["username", "password"])
def test_token_missing_field(alice, missing):
    """A token request without a field gets 400 naming the field."""
    data = {"username": "alice", "password": PASSWORD}
    del data[missing]
    response = APIClient().post("/api/v1/auth/token/", data, format="json")
    assert response.status_code == 400
    error = _error(response)
    assert error["field"] == missing
    assert missing in error["message"]


def test_token_request_without_any_field_lists_them_all(db):
    """An empty token request names every missing field."""
    response = APIClient().post("/api/v1/auth/token/", {}, format="json")
    assert response.status_code == 400
    error = _error(response)
    assert {f["field"] for f in error["fields"]} == {"username", "password"}


def test_only_the_token_hash_is_stored(alice):
    """The database keeps the key's sha256 and a short prefix, never the key itself."""

    user, _ = alice
    key = _token(APIClient(), name="hashed").json()["token"]
    token = ClientToken.objects.get(user=user, name="hashed")
    assert token.key_hash == hashlib.sha256(key.encode()).hexdigest()
    assert key.startswith(token.key_prefix)
    assert len(token.key_prefix) < len(key) // 2
    # no column of any row of the token table holds the key
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {ClientToken._meta.db_table}")
        rows = cursor.fetchall()
    assert rows
    assert not any(key in str(value) for row in rows for value in row)


def test_revoked_token_is_refused(alice):
    """A token revoked with ClientToken.revoke() gets 401."""
    user, client = alice
    assert client.get("/api/v1/me/").status_code == 200
    token = user.tokens.get()
    token.revoke()
    token.refresh_from_db()
    assert token.revoked_at is not None
    response = client.get("/api/v1/me/")
    assert response.status_code == 401
    assert "revoked" in _error(response)["message"]


def test_a_token_revoked_elsewhere_is_refused_by_the_next_request(alice):
    """Another process revoking the token (or disabling the account) in the database: the very next
    request is refused; no process keeps a token it checked before."""
    from django.utils import timezone

    from server.accounts.models import ClientToken, User

    user, client = alice
    assert client.get("/api/v1/me/").status_code == 200
    ClientToken.objects.filter(user=user).update(revoked_at=timezone.now())
    assert client.get("/api/v1/me/").status_code == 401
    ClientToken.objects.filter(user=user).update(revoked_at=None)
    assert client.get("/api/v1/me/").status_code == 200
    User.objects.filter(pk=user.pk).update(is_active=False)
    assert "disabled" in _error(client.get("/api/v1/me/"))["message"]


def test_revoke_twice_keeps_the_first_time(alice):
    """Revoking a revoked token does not move its revocation time."""
    user, _ = alice
    token = user.tokens.get()
    token.revoke()
    first = token.revoked_at
    token.revoke()
    token.refresh_from_db()
    assert token.revoked_at == first


def test_inactive_users_token_is_refused(alice):
    """The token of a disabled account gets 401."""
    user, client = alice
    user.is_active = False
    user.save()
    response = client.get("/api/v1/me/")
    assert response.status_code == 401
    assert "disabled" in _error(response)["message"]


def test_unknown_token_is_refused(db):
    """A well-formed but unknown token gets 401."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token sente_nosuchtoken")
    response = client.get("/api/v1/me/")
    assert response.status_code == 401
    _error(response)


@pytest.mark.parametrize("header", ["Token", "Token a b", "token  ", "Token sente_x extra"])
def test_malformed_token_header(alice, header):
    """An Authorization: Token header without exactly one key gets 401."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get("/api/v1/me/")
    assert response.status_code == 401
    _error(response)


def test_malformed_token_header_on_a_public_endpoint(alice):
    """A broken token is refused even where no login is needed (no silent anonymous fallback)."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token sente_unknown")
    assert client.get("/api/v1/runs/").status_code == 401


def test_session_api_posts_need_csrf(run, alice):
    """A browser session's API POST without a CSRF token gets 403; a token-authenticated client needs none."""

    user, _ = alice
    body = {"client_version": "0.1.0", "client_instance_id": "browser", "kinds": ["selfplay"], "games": 1}
    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(user)
    response = browser.post("/api/v1/tasks/", body, format="json")
    assert response.status_code == 403
    assert "CSRF" in _error(response)["message"]
    assert Task.objects.count() == 0
    _, key = ClientToken.issue(user, "csrf test")
    token_client = APIClient(enforce_csrf_checks=True)
    token_client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert token_client.post("/api/v1/tasks/", body, format="json").status_code == 201


def test_token_use_is_recorded(alice):
    """Using a token sets its last_used_at; it is not rewritten on every request."""
    user, client = alice
    token = user.tokens.get()
    assert token.last_used_at is None
    client.get("/api/v1/me/")
    token.refresh_from_db()
    first = token.last_used_at
    assert first is not None and timezone.now() - first < timedelta(minutes=1)
    client.get("/api/v1/me/")
    token.refresh_from_db()
    assert token.last_used_at == first


# --- /me ----------------------------------------------------------------------------------------------
def test_me_needs_authentication(db):
    """GET /api/v1/me/ without credentials gets 401 with the JSON error body and a WWW-Authenticate header."""
    response = APIClient().get("/api/v1/me/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    _error(response)


def test_me_works_with_a_web_session(alice):
    """A signed-in browser session authenticates /api/v1/me/ too."""
    user, _ = alice
    client = APIClient()
    client.force_login(user)
    response = client.get("/api/v1/me/")
    assert response.status_code == 200
    assert response.json()["username"] == "alice"


def test_me_totals_of_a_new_user(alice):
    """A new user's totals are all zero."""
    _, client = alice
    assert client.get("/api/v1/me/").json() == {
        "username": "alice",
        "training_games": 0,
        "rating_games": 0,
        "training_rows": 0,
        "tasks": 0,
        "last_game_at": None,
        "is_trainer": False,
    }


def test_me_trainer_flag(trainer):
    """A trainer account is marked as such."""
    _, client = trainer
    assert client.get("/api/v1/me/").json()["is_trainer"] is True


def _game_fields(task, user, n: int, created_at) -> dict:
    return dict(
        client_game_id=f"g-{user.username}-{n}",
        task=task,
        user=user,
        run=task.run,
        settings_version=task.settings_version,
        board_x_size=7,
        board_y_size=7,
        komi=7.5,
        rules={"ko": "POSITIONAL"},
        result="B+3.5",
        winner="B",
        moves=40,
        sgf=f"games/{n}.sgf",
        sgf_sha256="0" * 64,
        created_at=created_at,
    )


def test_me_totals_count_only_the_users_own(run, alice, bob):
    """Totals count the user's tasks, training games and rows, rating games and the last game time,
    and nothing of other users."""
    user, client = alice
    other, other_client = bob
    network = Network.objects.get(name=f"{run.name}-random")
    for c in (client, client, other_client):
        new_task(c)
    task = Task.objects.filter(user=user).first()
    other_task = Task.objects.get(user=other)
    now = timezone.now()
    TrainingGame.objects.create(
        network=network,
        rows=30,
        npz="npz/1.npz",
        npz_sha256="1" * 64,
        **_game_fields(task, user, 1, now - timedelta(hours=2)),
    )
    TrainingGame.objects.create(
        network=network,
        rows=12,
        npz="npz/2.npz",
        npz_sha256="2" * 64,
        **_game_fields(task, user, 2, now - timedelta(hours=1)),
    )
    RatingGame.objects.create(
        black_network=network, white_network=network, **_game_fields(task, user, 3, now - timedelta(minutes=5))
    )
    TrainingGame.objects.create(
        network=network, rows=99, npz="npz/3.npz", npz_sha256="3" * 64, **_game_fields(other_task, other, 4, now)
    )
    body = client.get("/api/v1/me/").json()
    assert body["tasks"] == 2
    assert body["training_games"] == 2
    assert body["training_rows"] == 42
    assert body["rating_games"] == 1
    assert body["last_game_at"] is not None
    assert abs(parse_datetime(body["last_game_at"]) - (now - timedelta(minutes=5))) < timedelta(seconds=1)
    other_body = other_client.get("/api/v1/me/").json()
    assert (
        other_body["tasks"],
        other_body["training_games"],
        other_body["training_rows"],
        other_body["rating_games"],
    ) == (1, 1, 99, 0)


# --- queries per page ---------------------------------------------------------------------------------
def _count(django_assert_num_queries, expected: int, send, *args):
    """send(*args) (the test client's get or post), asking exactly ``expected`` queries."""
    with django_assert_num_queries(expected):
        response = send(*args)
    return response


def test_the_account_pages_ask_a_fixed_number_of_queries(web, alice, django_assert_num_queries, mailoutbox):
    """Each account page and form asks the same few queries, however many tokens the user has."""
    user, _ = alice
    # the first page reads the announcements in force (server.notices), the next ones find them cached
    for page, queries in (("/accounts/signup/", 1), ("/accounts/login/", 0)):
        assert _count(django_assert_num_queries, queries, web.get, page).status_code == 200
    # sign-up: the form's checks of the name (any case, then the model's), the old sign-ups swept, the
    # address looked up, the new sign-up
    signed = _count(django_assert_num_queries, 5, web.post, "/accounts/signup/", _signup_data())
    assert signed.status_code == 200 and _session_user_id(web) is None
    link = re.search(r"https?://[^/\s]+(/\S+)", mailoutbox[0].body).group(1)
    # its link: the sign-up, the name and the address checked, the user made, the sign-up marked used
    # (with their savepoints: 9), the login's session (11)
    made = _count(django_assert_num_queries, 20, web.post, link)
    assert made.status_code == 302 and _session_user_id(web) is not None
    assert _count(django_assert_num_queries, 4, web.post, "/accounts/logout/").status_code == 302
    logged = _count(
        django_assert_num_queries, 9, web.post, "/accounts/login/", {"username": "alice", "password": PASSWORD}
    )
    assert logged.status_code == 302 and _session_user_id(web) == str(user.pk)
    for _ in range(2):  # the same queries with 1 and with 32 tokens
        # session, user, the tokens counted for the pages, the page's tokens
        assert _count(django_assert_num_queries, 4, web.get, "/accounts/tokens/").status_code == 200
        made = _count(django_assert_num_queries, 5, web.post, "/accounts/tokens/", {"name": "box"})
        assert made.status_code == 200 and "shown only this once" in made.content.decode()
        token = ClientToken.objects.filter(user=user).latest("id")
        revoked = _count(django_assert_num_queries, 4, web.post, f"/accounts/tokens/{token.pk}/revoke/")
        assert revoked.status_code == 302
        for k in range(30):
            ClientToken.issue(user, f"machine {k}")
    pages = web.get("/accounts/tokens/")  # 63 tokens: alice's first, two made here, 60 more
    assert len(pages.context["tokens"]) == 25 and "page 1 of 3" in pages.content.decode()
    assert len(web.get("/accounts/tokens/?page=3").context["tokens"]) == 13
    assert web.get("/accounts/tokens/?page=4").status_code == 404
    bad = web.get("/accounts/tokens/?page=zero")
    assert bad.status_code == 400 and "page=&#x27;zero&#x27;" in bad.content.decode()
    assert _count(django_assert_num_queries, 2, web.get, "/accounts/password/").status_code == 200
    new = "another long password 99"
    changed = _count(
        django_assert_num_queries,
        15,
        web.post,
        "/accounts/password/",  # the password and the tokens' revocation in a savepoint, the session made anew
        {"old_password": PASSWORD, "new_password1": new, "new_password2": new},
    )
    assert changed.status_code == 302
    assert _count(django_assert_num_queries, 2, web.get, "/accounts/password/done/").status_code == 200


def test_contributed(run, alice, selfplay_games):
    """An account's games, rows and tasks, and when its last game came."""
    from server.distribution.models import Task
    from server.games.selectors import contributed
    from tests.server import helpers

    user, _ = alice
    nothing = {"training_games": 0, "rating_games": 0, "training_rows": 0, "tasks": 0, "last_game_at": None}
    assert contributed(user) == nothing
    games = helpers.store_training_games(run, user, selfplay_games[:2])
    assert contributed(user) == {
        "training_games": 2,
        "rating_games": 0,
        "training_rows": sum(g.rows for g in games),
        "tasks": Task.objects.filter(user=user).count(),
        "last_game_at": max(g.created_at for g in games),
    }
