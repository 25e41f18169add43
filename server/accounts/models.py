"""Users, their client tokens, and the links mailed to finish a sign-up or an e-mail change.

A token is shown once, when it is made; the database keeps only its sha256 (and a short prefix to
tell tokens apart), so a copy of the database gives nobody a way in. A user has any number of named
tokens (one per machine, say) and can revoke each; a new password revokes them all. A mailed link's
key is kept the same way, by its sha256 alone, with the time it was used: a link works once.
"""

from __future__ import annotations

import hashlib
import secrets

from django.contrib.auth.models import AbstractUser
from django.db import models, transaction
from django.utils import timezone

TOKEN_PREFIX = "sente_"


class User(AbstractUser):
    """A contributor. Staff run the site; the ``networks.upload_network`` permission (the
    ``trainers`` group) marks the machines that upload trained networks."""

    deleted_at = models.DateTimeField(
        null=True, blank=True, help_text="the account was deleted: its games are kept under an anonymous name"
    )

    # is_active as loaded, to tell a change when saved (server.dashboard.receivers); unset when the
    # field was not loaded
    _sente_was_active: bool
    revoked_tokens = 0  # the client tokens the last save revoked (a new password revokes them all)

    class Meta:
        db_table = "accounts_user"

    def save(self, *args, **kwargs) -> None:
        """Save; a new password (``set_password`` since the account was read) revokes every client
        token of the account in the same transaction, wherever it was set: the website's forms, the
        admin, ``manage.py changepassword``. Whoever had the old password may have made tokens."""
        # AbstractBaseUser keeps the raw password set since the account was read until it is saved.
        new_password = self.pk is not None and getattr(self, "_password", None) is not None
        if not new_password:
            self.revoked_tokens = 0
            super().save(*args, **kwargs)
            return
        with transaction.atomic():
            super().save(*args, **kwargs)
            self.revoked_tokens = ClientToken.objects.filter(user=self, revoked_at__isnull=True).update(
                revoked_at=timezone.now()
            )


def hash_token(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class ClientToken(models.Model):
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="tokens")
    name = models.CharField(max_length=100, help_text="what the token is for, e.g. the machine's name")
    key_prefix = models.CharField(max_length=16, help_text="the first characters of the token")
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.user.username}: {self.name} ({self.key_prefix}…)"

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    @classmethod
    def issue(cls, user: User, name: str) -> tuple[ClientToken, str]:
        """A new token for user; returns it and its key (the only time the key is known)."""
        key = TOKEN_PREFIX + secrets.token_urlsafe(30)
        token = cls.objects.create(
            user=user, name=name[:100] or "client", key_prefix=key[: len(TOKEN_PREFIX) + 6], key_hash=hash_token(key)
        )
        return token, key

    def revoke(self) -> None:
        if self.revoked_at is None:
            self.revoked_at = timezone.now()
            self.save(update_fields=["revoked_at"])


class SignUp(models.Model):
    """A sign-up waiting for its mailed link: the account is made only when the link is opened, so
    that the sign-up page answers alike whether or not its address has an account."""

    username = models.CharField(max_length=150)
    email = models.EmailField()
    password = models.CharField(max_length=128, help_text="the password's hash, as the account will keep it")
    key_hash = models.CharField(max_length=64, unique=True, help_text="sha256 of the key in the mailed link")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    used_at = models.DateTimeField(null=True, blank=True, help_text="when the link made the account")

    def __str__(self) -> str:
        return f"sign-up of {self.username} <{self.email}>"


class EmailChange(models.Model):
    """A new address asked for, waiting for the link mailed to it; bound to the address the account
    had when it was asked, and used once."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="email_changes")
    email = models.EmailField(help_text="the new address")
    old_email = models.EmailField(blank=True, help_text="the account's address when the change was asked")
    key_hash = models.CharField(max_length=64, unique=True, help_text="sha256 of the key in the mailed link")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    used_at = models.DateTimeField(null=True, blank=True, help_text="when the link changed the address")

    def __str__(self) -> str:
        return f"{self.user.username}: {self.old_email} -> {self.email}"
