"""The announcements in force: on every page (:func:`context`, a template context processor) and in
every task answer, which the client shows in its status panel. Read at most every
``CACHE_SECONDS`` per process (at once in the process that changed one)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.cache import cache
from django.db.models import Q
from django.utils import timezone
from django.utils.functional import SimpleLazyObject

from server.notices.models import Announcement

CACHE_KEY = "notices:announcements"
CACHE_SECONDS = 15
LIMIT = 5  # the most shown at once, newest first


def in_force() -> list[dict[str, Any]]:
    """The announcements shown now: message, link, level and times (newest first)."""
    found = cache.get(CACHE_KEY)
    now = timezone.now()
    if found is None:
        # those in force now and those starting within the cache's time, so none starts late
        soon = now + timedelta(seconds=CACHE_SECONDS)
        rows = (
            Announcement.objects.filter(Q(ends_at__isnull=True) | Q(ends_at__gt=now), starts_at__lte=soon)
            .order_by("-starts_at", "-id")
            .values("message", "link", "level", "starts_at", "ends_at")[: 2 * LIMIT]
        )
        found = [dict(r) for r in rows]
        cache.set(CACHE_KEY, found, CACHE_SECONDS)
    shown = [a for a in found if a["starts_at"] <= now and (a["ends_at"] is None or a["ends_at"] > now)]
    return shown[:LIMIT]


def for_clients() -> list[dict[str, Any]]:
    """The announcements as a task answer carries them (times in ISO 8601)."""
    return [
        {
            "message": a["message"],
            "link": a["link"] or None,
            "level": a["level"],
            "ends_at": a["ends_at"].isoformat() if a["ends_at"] else None,
        }
        for a in in_force()
    ]


def context(request) -> dict[str, Any]:
    """Template context processor: ``announcements``, read when a template first uses them (the
    site's pages do; the API's documentation page does not)."""
    return {"announcements": SimpleLazyObject(in_force)}


def forget(**kwargs: Any) -> None:
    """post_save and post_delete of an announcement: read them again on the next page."""
    cache.delete(CACHE_KEY)
