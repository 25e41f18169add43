"""Changes to an account its owner asks for: a new e-mail address (confirmed from that address
before it is taken) and the account's deletion (the games stay, under an anonymous name)."""

from __future__ import annotations

import secrets

from django.core import signing
from django.core.mail import send_mail
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from server.accounts.models import ClientToken, User

EMAIL_CHANGE_SALT = "sente.accounts.email-change"
EMAIL_CHANGE_SECONDS = 3 * 24 * 3600


class EmailChangeError(ValueError):
    """A confirmation link that cannot be used, with why."""


def request_email_change(user: User, new_email: str, build_uri) -> None:
    """Send the link that confirms ``new_email`` to that address (``build_uri`` makes a path absolute)."""
    token = signing.dumps({"user": user.pk, "email": new_email, "old": user.email}, salt=EMAIL_CHANGE_SALT)
    link = build_uri(reverse("email_confirm", args=[token]))
    send_mail(
        "Confirm your new e-mail address for Sente",
        f"Hello {user.username},\n\nsomeone (you, we hope) asked to use this address for the Sente account "
        f"{user.username}. To confirm, open this link within three days:\n\n{link}\n\n"
        "If it was not you, ignore this message: nothing changes without the link.\n",
        None,
        [new_email],
    )


def confirm_email_change(token: str) -> User:
    """Take the new address the link confirms; EmailChangeError when it cannot be used."""
    try:
        data = signing.loads(token, salt=EMAIL_CHANGE_SALT, max_age=EMAIL_CHANGE_SECONDS)
    except signing.SignatureExpired:
        raise EmailChangeError("this link is more than three days old: ask for the change again") from None
    except signing.BadSignature:
        raise EmailChangeError("this link is not one the site sent (it may have been cut short)") from None
    with transaction.atomic():
        user = User.objects.select_for_update().filter(pk=data["user"], deleted_at__isnull=True).first()
        if user is None:
            raise EmailChangeError("the account of this link no longer exists")
        if user.email == data["email"]:
            return user  # confirmed already
        if user.email != data["old"]:
            raise EmailChangeError("the account's address changed since this link was sent: ask again")
        if User.objects.filter(email__iexact=data["email"]).exclude(pk=user.pk).exists():
            raise EmailChangeError(f"{data['email']} is another account's address now")
        old = user.email
        user.email = data["email"]
        user.save(update_fields=["email"])
    if old:
        send_mail(
            "Your Sente e-mail address changed",
            f"Hello {user.username},\n\nthe address of your Sente account is now {user.email}. If you did not "
            "ask for this, reset your password and tell the site's staff.\n",
            None,
            [old],
        )
    return user


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
