"""Changes to an account: its making (from a sign-up, once the link mailed to its address is opened),
a new password (which revokes every client token), a new e-mail address (confirmed from that
address before it is taken) and the account's deletion (the games stay, under an anonymous name).

A mailed link carries a random key that the database keeps only as its sha256, beside the time the
link was used: each works once, for three days."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import timedelta

from django.contrib.auth.hashers import make_password
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from server.accounts.models import ClientToken, EmailChange, SignUp, User, hash_token

LINK_SECONDS = 3 * 24 * 3600  # how long a mailed link (sign-up, e-mail change) works
LINK_LIFE = "three days"  # the same, as the mails and errors say it

BuildUri = Callable[[str], str]  # makes a path absolute (request.build_absolute_uri)


class LinkError(ValueError):
    """A mailed link that cannot be used, with why."""


class SignUpError(LinkError):
    """A sign-up link that cannot be used."""


class EmailChangeError(LinkError):
    """An e-mail change link that cannot be used."""


def _new_key() -> tuple[str, str]:
    """A link's key and its sha256 (the only form the database keeps)."""
    key = secrets.token_urlsafe(32)
    return key, hash_token(key)


def _expired(created_at) -> bool:
    return timezone.now() - created_at > timedelta(seconds=LINK_SECONDS)


def _used(kind: str, used_at) -> str:
    return f"this link was used already ({kind} on {used_at:%Y-%m-%d at %H:%M} UTC): each link works once"


# --- sign-up ---------------------------------------------------------------------------------------
def sign_up(username: str, email: str, password: str, build_uri: BuildUri) -> None:
    """Mail ``email`` what a sign-up with it does; the same work whether or not it has an account,
    so that neither the page nor its time tells which. A new address gets the link that makes the
    account (valid for three days); an account's address is told that someone tried it, and how to
    log in or reset the password. The password is hashed either way."""
    hashed = make_password(password)
    SignUp.objects.filter(created_at__lt=timezone.now() - timedelta(seconds=LINK_SECONDS)).delete()
    owner = User.objects.filter(email__iexact=email).first()
    if owner is not None:
        send_mail(
            "Someone tried to sign up to Sente with your address",
            f"Hello {owner.username},\n\nsomeone tried to sign up to Sente with this address, which is already "
            f"the address of your account {owner.username}; no other account was made. If it was you, log in "
            f"as {owner.username}:\n\n{build_uri(reverse('login'))}\n\nor, if you forgot your password, "
            f"reset it:\n\n{build_uri(reverse('password_reset'))}\n\n"
            "If it was not you, you need do nothing: your account is as it was.\n",
            None,
            [owner.email],
        )
        return
    key, key_hash = _new_key()
    SignUp.objects.create(username=username, email=email, password=hashed, key_hash=key_hash)
    send_mail(
        "Finish signing up to Sente",
        f"Hello {username},\n\nsomeone (you, we hope) signed up to Sente as {username} with this address. "
        f"To make the account, open this link within {LINK_LIFE}:\n\n{build_uri(reverse('signup_confirm', args=[key]))}"
        "\n\nIf it was not you, ignore this message: no account is made without the link.\n",
        None,
        [email],
    )


def confirm_sign_up(key: str) -> User:
    """Make the account a sign-up link names; SignUpError when the link cannot be used."""
    with transaction.atomic():
        signup = SignUp.objects.select_for_update().filter(key_hash=hash_token(key)).first()
        if signup is None:
            raise SignUpError(
                f"this link is not one the site sent (it may have been cut short), or it is more than {LINK_LIFE} "
                "old: sign up again"
            )
        if signup.used_at is not None:
            raise SignUpError(
                f"{_used('the account ' + signup.username + ' was made', signup.used_at)}; log in with its password"
            )
        if _expired(signup.created_at):
            raise SignUpError(f"this link is more than {LINK_LIFE} old: sign up again")
        if User.objects.filter(username__iexact=signup.username).exists():
            raise SignUpError(f"the name {signup.username} was taken since you signed up: sign up again with another")
        if User.objects.filter(email__iexact=signup.email).exists():
            raise SignUpError(
                f"{signup.email} has become an account's address since you signed up: log in, or reset its password"
            )
        try:
            with transaction.atomic():
                user = User.objects.create(username=signup.username, email=signup.email, password=signup.password)
        except IntegrityError:  # the same name made at the same moment
            raise SignUpError(
                f"the name {signup.username} was taken since you signed up: sign up again with another"
            ) from None
        signup.used_at = timezone.now()
        signup.save(update_fields=["used_at"])
    return user


# --- password --------------------------------------------------------------------------------------
def set_password(user: User, password: str) -> int:
    """Give the account a new password, which revokes every client token it has in the same
    transaction (``User.save``): whoever had the old password may have made tokens with it. The
    number of tokens revoked."""
    user.set_password(password)
    user.save(update_fields=["password"])
    return user.revoked_tokens


# --- e-mail address ----------------------------------------------------------------------------------
def request_email_change(user: User, new_email: str, build_uri: BuildUri) -> None:
    """Send the link that confirms ``new_email`` to that address. It works once, for three days, and
    only while the account keeps the address it has now."""
    key, key_hash = _new_key()
    EmailChange.objects.filter(created_at__lt=timezone.now() - timedelta(seconds=LINK_SECONDS)).delete()
    EmailChange.objects.create(user=user, email=new_email, old_email=user.email, key_hash=key_hash)
    link = build_uri(reverse("email_confirm", args=[key]))
    send_mail(
        "Confirm your new e-mail address for Sente",
        f"Hello {user.username},\n\nsomeone (you, we hope) asked to use this address for the Sente account "
        f"{user.username}. To confirm, open this link within {LINK_LIFE}:\n\n{link}\n\n"
        "If it was not you, ignore this message: nothing changes without the link.\n",
        None,
        [new_email],
    )


def confirm_email_change(key: str) -> User:
    """Take the new address the link confirms; EmailChangeError when it cannot be used."""
    with transaction.atomic():
        change = EmailChange.objects.select_for_update().filter(key_hash=hash_token(key)).first()
        if change is None:
            raise EmailChangeError(
                f"this link is not one the site sent (it may have been cut short), or it is more than {LINK_LIFE} "
                "old: ask for the change again"
            )
        if change.used_at is not None:
            raise EmailChangeError(
                f"{_used('the address became ' + change.email, change.used_at)}; ask for a change again if you "
                "want another"
            )
        if _expired(change.created_at):
            raise EmailChangeError(f"this link is more than {LINK_LIFE} old: ask for the change again")
        user = User.objects.select_for_update().filter(pk=change.user_id, deleted_at__isnull=True).first()
        if user is None:
            raise EmailChangeError("the account of this link no longer exists")
        if user.email != change.old_email:
            raise EmailChangeError("the account's address changed since this link was sent: ask again")
        if User.objects.filter(email__iexact=change.email).exclude(pk=user.pk).exists():
            raise EmailChangeError(f"{change.email} is another account's address now")
        old = user.email
        user.email = change.email
        user.save(update_fields=["email"])
        change.used_at = timezone.now()
        change.save(update_fields=["used_at"])
    if old:
        send_mail(
            "Your Sente e-mail address changed",
            f"Hello {user.username},\n\nthe address of your Sente account is now {user.email}. If you did not "
            "ask for this, reset your password and tell the site's staff.\n",
            None,
            [old],
        )
    return user


# --- deletion ------------------------------------------------------------------------------------------
def delete_account(user: User) -> str:
    """Delete the account as its owner sees it, keeping its games: every token is revoked, the
    password made unusable (which ends every session: Django checks a session against the
    password), the name replaced by an anonymous one, the e-mail address and names erased, and staff
    rights dropped. The account stays active so that its games go on counting for training and on
    the site. Returns the anonymous name."""
    with transaction.atomic():
        user = User.objects.select_for_update().get(pk=user.pk)
        anonymous = f"deleted-{secrets.token_hex(6)}"
        while User.objects.filter(username=anonymous).exists():
            anonymous = f"deleted-{secrets.token_hex(6)}"
        ClientToken.objects.filter(user=user, revoked_at__isnull=True).update(revoked_at=timezone.now())
        EmailChange.objects.filter(user=user).delete()  # its addresses go, and its links with them
        user.username = anonymous
        user.email = ""
        user.first_name = user.last_name = ""
        user.is_staff = user.is_superuser = False
        user.set_unusable_password()
        user.deleted_at = timezone.now()
        user.save()
        user.groups.clear()
        user.user_permissions.clear()
    return anonymous
