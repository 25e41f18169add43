"""Accounts as people expect: a forgotten password reset by e-mail, a new e-mail address confirmed
from that address, and an account deleted with its games kept under an anonymous name (each flow
end to end through the pages, with Django's test mail outbox)."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from rest_framework.test import APIClient

from server.accounts.models import ClientToken, User
from tests.server import helpers

PASSWORD = "a long enough password"
pytestmark = pytest.mark.django_db


def _link(message) -> str:
    """The site's path in a mail's text."""
    return re.search(r"https?://[^/\s]+(/\S+)", message.body).group(1)


def _logged_in(user: User) -> Client:
    web = Client()
    assert web.login(username=user.username, password=PASSWORD)
    return web


def _task_request(api: APIClient):
    """POST /api/v1/tasks/ as the client asks for work."""
    return api.post(
        "/api/v1/tasks/",
        {"client_version": "0.1.0", "client_instance_id": "machine-1", "kinds": ["selfplay"], "games": 1},
        format="json",
    )


def test_a_forgotten_password_is_reset_by_e_mail(run, alice, mailoutbox):
    """The reset link sets a new password, works once, and revokes every client token of the account
    in the same step: the old token's next task request is refused 401."""
    user, api = alice
    ClientToken.issue(user, "second machine")
    assert _task_request(api).status_code == 201
    web = Client()
    assert 'href="/accounts/password/reset/"' in web.get("/accounts/login/").content.decode()
    sent = web.post("/accounts/password/reset/", {"email": "ALICE@example.org"})  # any case
    assert sent.status_code == 302 and sent["Location"] == "/accounts/password/reset/sent/"
    assert "Check your mail" in web.get(sent["Location"]).content.decode()
    (mail,) = mailoutbox
    assert mail.to == ["alice@example.org"] and mail.subject == "Choose a new password for Sente"
    assert "Hello alice" in mail.body and "testserver" in mail.body
    link = _link(mail)
    form = web.get(link, follow=True)  # Django moves the token out of the address, into the session
    assert "Choose a new password" in form.content.decode()
    new = "a brand new password 7"
    done = web.post(form.redirect_chain[-1][0], {"new_password1": new, "new_password2": new})
    assert done.status_code == 302 and done["Location"] == "/accounts/reset/done/"
    page = " ".join(web.get(done["Location"]).content.decode().split())
    assert "your clients must log in again: run <code>sente contribute</code> and give your password once" in page
    user.refresh_from_db()
    assert user.check_password(new)
    refused = _task_request(api)
    assert refused.status_code == 401 and "revoked" in refused.json()["error"]["message"]
    assert not ClientToken.objects.filter(user=user, revoked_at__isnull=True).exists()
    revoked = {t.revoked_at for t in ClientToken.objects.filter(user=user)}
    assert len(revoked) == 1  # both at once, in the transaction that set the password
    assert "cannot be used" in web.get(link, follow=True).content.decode()  # the link works once
    # An address no account has sends nothing, and says the same (no way to find who has an account).
    other = web.post("/accounts/password/reset/", {"email": "nobody@example.org"})
    assert other.status_code == 302 and len(mailoutbox) == 1


def test_a_password_change_revokes_every_client_token(run, alice, bob):
    """The password change page revokes the account's client tokens with the new password: the old
    token's next task request is refused 401, a token made with the new password works, and other
    accounts' tokens are untouched."""
    user, api = alice
    _, other = bob
    assert _task_request(api).status_code == 201
    web = _logged_in(user)
    new = "a brand new password 7"
    changed = web.post("/accounts/password/", {"old_password": PASSWORD, "new_password1": new, "new_password2": new})
    assert changed.status_code == 302
    assert "your clients must log in again" in web.get(changed["Location"]).content.decode()
    refused = _task_request(api)
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "authentication_failed"
    assert _task_request(other).status_code == 201
    login = APIClient().post("/api/v1/auth/token/", {"username": "alice", "password": new}, format="json")
    assert login.status_code == 201
    fresh = APIClient()
    fresh.credentials(HTTP_AUTHORIZATION=f"Token {login.json()['token']}")
    assert _task_request(fresh).status_code == 201


def test_a_password_set_by_staff_or_a_command_revokes_the_tokens_too(run, alice):
    """Wherever a new password is set (the admin's password form, ``manage.py changepassword``), the
    account's client tokens stop working; other saves of the account keep them."""
    from io import StringIO
    from unittest import mock

    from django.core.management import call_command

    user, api = alice
    user.first_name = "Alice"
    user.save()  # not a new password
    assert _task_request(api).status_code == 201
    admin = User.objects.create_superuser("boss", "boss@example.org", "a long enough password")
    web = Client()
    web.force_login(admin)
    new = "a brand new password 7"
    response = web.post(
        f"/admin/accounts/user/{user.pk}/password/", {"password1": new, "password2": new, "usable_password": "true"}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert _task_request(api).status_code == 401

    _, key = ClientToken.issue(User.objects.get(pk=user.pk), "laptop")
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert _task_request(api).status_code == 201
    with mock.patch("getpass.getpass", return_value="yet another password 9"):
        call_command("changepassword", "alice", stdout=StringIO())
    assert _task_request(api).status_code == 401


def test_a_refused_password_change_keeps_the_tokens(run, alice):
    """A change the form refuses (wrong old password, new ones that differ) revokes nothing."""
    user, api = alice
    web = _logged_in(user)
    for old, second in ((PASSWORD, "another one entirely 8"), ("not it", "a brand new password 7")):
        response = web.post(
            "/accounts/password/",
            {"old_password": old, "new_password1": "a brand new password 7", "new_password2": second},
        )
        assert response.status_code == 200
    assert _task_request(api).status_code == 201


def test_reset_requests_are_rate_limited(alice, bob, mailoutbox):
    """Reset requests count like password checks: from one address, 5 a minute for one e-mail address
    (the first ``login_pair`` window), 10 a minute in all (``login``, which counts refused ones too);
    each one over is answered 429 and sends nothing. A reset never clears the count (its answer is
    the same for every address)."""
    web = Client()
    answers = [web.post("/accounts/password/reset/", {"email": "alice@example.org"}) for _ in range(6)]
    assert [a.status_code for a in answers[:-1]] == [302] * 5
    assert answers[-1].status_code == 429 and "Retry-After" in answers[-1]
    assert len(mailoutbox) == 5
    others = [web.post("/accounts/password/reset/", {"email": f"x{n}@example.org"}) for n in range(3)]
    assert [a.status_code for a in others] == [302] * 3
    # the address's 10th request this minute (the refused one counts for the address)
    assert web.post("/accounts/password/reset/", {"email": "bob@example.org"}).status_code == 302
    assert web.post("/accounts/password/reset/", {"email": "bob@example.org"}).status_code == 429  # the address's
    assert [m.to for m in mailoutbox[5:]] == [["bob@example.org"]]


def test_a_new_e_mail_address_is_taken_once_confirmed_from_it(alice, bob, mailoutbox):
    user, _ = alice
    web = _logged_in(user)
    page = web.get("/accounts/").content.decode()
    assert "alice@example.org" in page and 'href="/accounts/email/"' in page and 'href="/accounts/delete/"' in page
    wrong = web.post("/accounts/email/", {"email": "new@example.org", "password": "not it"})
    assert "that is not your password" in wrong.content.decode() and not mailoutbox
    taken = web.post("/accounts/email/", {"email": "Bob@example.org", "password": PASSWORD})
    assert "exists already" in taken.content.decode()
    asked = web.post("/accounts/email/", {"email": "new@example.org", "password": PASSWORD}, follow=True)
    assert "A link to confirm new@example.org is on its way" in asked.content.decode()
    user.refresh_from_db()
    assert user.email == "alice@example.org"  # not before the link is opened
    (mail,) = mailoutbox
    assert mail.to == ["new@example.org"]
    link = _link(mail)
    assert "Use this address" in Client().get(link).content.decode()  # opening it changes nothing
    user.refresh_from_db()
    assert user.email == "alice@example.org"
    confirmed = Client().post(link, follow=True)  # from the mail, signed in or not
    assert "Your e-mail address is now new@example.org" in confirmed.content.decode()
    user.refresh_from_db()
    assert user.email == "new@example.org"
    assert mailoutbox[-1].to == ["alice@example.org"] and "is now new@example.org" in mailoutbox[-1].body
    bad = Client().post(link[:-3] + "xyz/")
    assert bad.status_code == 400 and "not one the site sent" in bad.content.decode()


def test_an_old_or_overtaken_confirmation_link_is_refused(alice, mailoutbox):
    """A link sent while the account had another address is refused, and so is one older than three
    days; neither changes anything."""
    from datetime import timedelta

    from django.utils import timezone

    from server.accounts.models import EmailChange

    user, _ = alice
    web = _logged_in(user)
    web.post("/accounts/email/", {"email": "first@example.org", "password": PASSWORD})
    web.post("/accounts/email/", {"email": "second@example.org", "password": PASSWORD})
    first, second = (_link(m) for m in mailoutbox)
    assert Client().post(second).status_code == 302
    stale = Client().post(first)  # the address changed since the first link was sent
    assert stale.status_code == 400 and "changed since this link was sent" in stale.content.decode()
    web.post("/accounts/email/", {"email": "third@example.org", "password": PASSWORD})
    third = _link(mailoutbox[-1])
    EmailChange.objects.filter(email="third@example.org").update(
        created_at=timezone.now() - timedelta(days=3, seconds=1)
    )
    old = Client().post(third)
    assert old.status_code == 400 and "more than three days old" in old.content.decode()
    user.refresh_from_db()
    assert user.email == "second@example.org"


def test_an_e_mail_change_link_works_once(alice, mailoutbox):
    """The second use of a confirmation link fails with a page saying so, even after the address went
    back to the one the link was sent from (the link is bound to that address and used once)."""
    user, _ = alice
    web = _logged_in(user)
    web.post("/accounts/email/", {"email": "new@example.org", "password": PASSWORD})
    link = _link(mailoutbox[0])
    assert Client().post(link).status_code == 302
    again = Client().post(link)
    assert again.status_code == 400
    text = again.content.decode()
    assert "This link was used already" in text and "each link works once" in text
    # back to the first address, by a second change: the first link still works no more
    web.post("/accounts/email/", {"email": "alice@example.org", "password": PASSWORD})
    assert Client().post(_link(mailoutbox[-1])).status_code == 302
    user.refresh_from_db()
    assert user.email == "alice@example.org"
    replayed = Client().post(link)
    assert replayed.status_code == 400 and "used already" in replayed.content.decode()
    user.refresh_from_db()
    assert user.email == "alice@example.org"


def test_a_deleted_account_keeps_its_games_under_an_anonymous_name(run, alice, selfplay_games, mailoutbox):
    from server.games.models import TrainingGame

    user, api = alice
    ClientToken.issue(user, "second machine")
    games = helpers.store_training_games(run, user, selfplay_games[:2])
    web, elsewhere = _logged_in(user), _logged_in(user)
    page = web.get("/accounts/delete/").content.decode()
    assert "Your 2 games stay" in page
    refused = web.post("/accounts/delete/", {"confirm": "bob", "password": PASSWORD})
    assert "type alice to confirm" in refused.content.decode()
    done = web.post("/accounts/delete/", {"confirm": "alice", "password": PASSWORD}, follow=True)
    text = done.content.decode()
    assert "Your account is deleted" in text and "log in" in text  # logged out here
    user.refresh_from_db()
    assert user.username.startswith("deleted-") and user.email == "" and user.deleted_at is not None
    assert user.is_active and not user.has_usable_password()  # its games go on counting
    assert not ClientToken.objects.filter(user=user, revoked_at__isnull=True).exists()
    assert api.get("/api/v1/me/").status_code == 401  # its tokens are refused at once
    assert elsewhere.get("/accounts/").status_code == 302  # its other sessions end too (to the login page)
    assert not Client().login(username="alice", password=PASSWORD)
    assert set(TrainingGame.objects.filter(user=user).values_list("pk", flat=True)) == {g.pk for g in games}
    board = Client().get("/contributors/?period=all").content.decode()
    assert user.username in board and ">alice<" not in board
    # The name is free again; the address too: a sign-up with them mails the link that makes the account.
    signup = {
        "username": "alice",
        "email": "alice@example.org",
        "password1": "x" * 20 + "1",
        "password2": "x" * 20 + "1",
    }
    assert Client().post("/accounts/signup/", signup).status_code == 200
    (mail,) = mailoutbox
    assert mail.subject == "Finish signing up to Sente"
    assert Client().post(_link(mail)).status_code == 302
    # A reset asked for the old address reaches nobody but the new alice.
    Client().post("/accounts/password/reset/", {"email": "alice@example.org"})
    assert [m.to for m in mailoutbox] == [["alice@example.org"]] * 2  # the new alice's account, not the deleted one
    assert "Choose a new password" in mailoutbox[-1].subject
    assert User.objects.get(email="alice@example.org").deleted_at is None


def test_account_pages_need_a_login(db):
    web = Client()
    for url in ("/accounts/", "/accounts/email/", "/accounts/delete/"):
        response = web.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert APIClient().get("/api/v1/me/").status_code == 401
