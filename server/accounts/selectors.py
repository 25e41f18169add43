"""Reads of an account for its pages."""

from __future__ import annotations

from django.db.models import QuerySet

from server.accounts.models import ClientToken, User


def tokens_of(user: User) -> QuerySet[ClientToken]:
    """The account's client tokens, revoked ones too, newest first."""
    return ClientToken.objects.filter(user=user).order_by("-created_at", "-id")


def token_of(user: User, pk: int) -> ClientToken | None:
    """One of the account's tokens (None: it has none by that id)."""
    return ClientToken.objects.filter(pk=pk, user=user).first()
