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


def test_a_forgotten_password_is_reset_by_e_mail(alice, mailoutbox):
    user, _ = alice
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
    user.refresh_from_db()
    assert user.check_password(new)
    assert "cannot be used" in web.get(link, follow=True).content.decode()  # the link works once
    # An address no account has sends nothing, and says the same (no way to find who has an account).
    other = web.post("/accounts/password/reset/", {"email": "nobody@example.org"})
    assert other.status_code == 302 and len(mailoutbox) == 1


def test_reset_requests_are_rate_limited(alice, mailoutbox, settings):
    from server.api.throttling import parse_rate

    LOGIN_ATTEMPTS, _ = parse_rate(settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["login"])
    web = Client()
    answers = [web.post("/accounts/password/reset/", {"email": "alice@example.org"}) for _ in range(LOGIN_ATTEMPTS + 1)]
    assert [a.status_code for a in answers[:-1]] == [302] * LOGIN_ATTEMPTS
    assert answers[-1].status_code == 429 and "Retry-After" in answers[-1]
    assert len(mailoutbox) == LOGIN_ATTEMPTS


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
    from django.core import signing

    from server.accounts import services

    user, _ = alice
    web = _logged_in(user)
    web.post("/accounts/email/", {"email": "first@example.org", "password": PASSWORD})
    web.post("/accounts/email/", {"email": "second@example.org", "password": PASSWORD})
    first, second = (_link(m) for m in mailoutbox)
    assert Client().post(second).status_code == 302
    stale = Client().post(first)  # the address changed since the first link was sent
    assert stale.status_code == 400 and "changed since this link was sent" in stale.content.decode()
    old = signing.dumps(
        {"user": user.pk, "email": "x@example.org", "old": "second@example.org"}, salt=services.EMAIL_CHANGE_SALT
    )
    signer = signing.TimestampSigner(salt=services.EMAIL_CHANGE_SALT)
    signer.timestamp = lambda: signing.b62_encode(0)  # signed in 1970
    expired = signer.sign_object({"user": user.pk, "email": "x@example.org", "old": "second@example.org"})
    with pytest.raises(services.EmailChangeError, match="more than three days old"):
        services.confirm_email_change(expired)
    assert services.confirm_email_change(old).email == "x@example.org"


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
    # The name is free again; the address too.
    assert (
        Client()
        .post(
            "/accounts/signup/",
            {
                "username": "alice",
                "email": "alice@example.org",
                "password1": "x" * 20 + "1",
                "password2": "x" * 20 + "1",
            },
        )
        .status_code
        == 302
    )
    # A reset asked for the old address reaches nobody.
    Client().post("/accounts/password/reset/", {"email": "alice@example.org"})
    assert [m.to for m in mailoutbox] == [["alice@example.org"]]  # the new alice's account, not the deleted one
    assert User.objects.get(email="alice@example.org").deleted_at is None


def test_account_pages_need_a_login(db):
    web = Client()
    for url in ("/accounts/", "/accounts/email/", "/accounts/delete/"):
        response = web.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert APIClient().get("/api/v1/me/").status_code == 401
