"""Reads of the audit's verdicts that other apps' queries use."""

from __future__ import annotations

from django.db.models import Exists, OuterRef

from server.audit.models import Quarantine


def quarantined_users() -> Exists:
    """An expression true for games (or anything with ``user_id``) of an account in quarantine."""
    return Exists(Quarantine.objects.filter(user_id=OuterRef("user_id"), lifted_at__isnull=True))


def in_quarantine(user) -> bool:
    """Is the account in quarantine now?"""
    return Quarantine.objects.filter(user=user, lifted_at__isnull=True).exists()
