"""A run's webhook: a JSON post to the URL staff set on the run (``Run.webhook_url``, e.g. a chat
channel's incoming webhook) when one of its networks is accepted, released or rolled back.

The post is recorded with the event, in the same transaction (a :class:`WebhookDelivery`), and made
by the background worker, never by the request that caused it (``server.notices.tasks`` says when;
without a worker, ``SENTE_TASKS=immediate``, a thread of the process). Each attempt checks the URL's
addresses again and connects only to those it checked (``server.outbound.targets``), is signed with
the run's secret (``server.outbound.signing``), and must be answered within
``SENTE_WEBHOOK_TIMEOUT_SECONDS`` in all (``server.outbound.transport``). A failed post (no 2xx
answer in time) is retried after ``SENTE_WEBHOOK_BACKOFF_SECONDS`` doubled at each attempt, up to
``SENTE_WEBHOOK_ATTEMPTS`` attempts (with the defaults: 30 s, 1 min, 2, 4 ... about 2 hours in all),
then given up and logged; a refused address is given up at once.

The body is JSON with ``text`` (Slack, Mattermost, Rocket.Chat, Zulip's Slack-compatible hook) and
``content`` (Discord) holding the same sentence, plus the facts for programs: ``event``
(``accepted``, ``released``, ``rolled_back``), ``run``, ``network``, ``url``, ``elo``, ``elo_se``,
``note`` and ``at``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.urls import reverse

from common.elo import Z95
from common.settings import NO_GATING
from server.notices.models import WebhookDelivery
from server.notices.tasks import queue
from server.ratings.models import NetworkEvent

EVENTS = {  # the events posted, by the name the body gives them
    NetworkEvent.Kind.ACCEPTED: "accepted",
    NetworkEvent.Kind.FORCED_ACCEPT: "accepted",
    NetworkEvent.Kind.RELEASED: "released",
    NetworkEvent.Kind.ROLLED_BACK: "rolled_back",
}


def public_url(path: str) -> str:
    return settings.SENTE_PUBLIC_URL.rstrip("/") + path


def payload(event: NetworkEvent) -> dict[str, Any]:
    """The body posted about ``event``."""
    network = event.network
    rating = getattr(network, "rating", None)
    elo = rating.elo if rating is not None else None
    se = rating.elo_se if rating is not None else None
    page = public_url(reverse("network", args=[network.name]))
    strength = f" (Elo {elo:+.0f} ± {Z95 * se:.0f})" if elo is not None and se is not None else ""
    kind = EVENTS[NetworkEvent.Kind(event.kind)]
    if event.kind == NetworkEvent.Kind.ACCEPTED:
        gating = getattr(network, "gating", None)
        record = ""
        if gating is not None and gating.rule != NO_GATING:  # (under none the note says it)
            record = (
                f": {gating.wins} wins, {gating.draws} draws, {gating.losses} losses against {gating.opponent.name}"
            )
        text = f"Network {network.name} of run {network.run.name} is accepted{record}{strength}; self-play uses it now."
    elif event.kind == NetworkEvent.Kind.FORCED_ACCEPT:
        text = (
            f"Network {network.name} of run {network.run.name} is accepted by staff{strength}; self-play uses it now."
        )
    elif event.kind == NetworkEvent.Kind.RELEASED:
        releases = public_url(reverse("releases"))
        text = f"Network {network.name} of run {network.run.name} is released for Go players{strength}: {releases}"
    else:
        text = f"Network {network.name} of run {network.run.name} is rolled back: {event.note}."
    if event.note and event.kind != NetworkEvent.Kind.ROLLED_BACK:
        text += f" Note: {event.note}"
    text += f" {page}"
    return {
        "text": text,
        "content": text[:2000],  # Discord's limit
        "event": kind,
        "run": network.run.name,
        "network": network.name,
        "url": page,
        "elo": elo,
        "elo_se": se,
        "note": event.note,
        "at": event.created_at.isoformat(),
    }


def event_saved(sender: type[NetworkEvent], instance: NetworkEvent, created: bool, **kwargs: Any) -> None:
    """post_save of a network event: record the post of the run's webhook and queue it (made once the
    event is committed)."""
    if not created or instance.kind not in EVENTS or kwargs.get("raw"):
        return
    run = instance.network.run
    if not run.webhook_url:
        return
    delivery = WebhookDelivery.objects.create(run=run, event=instance, url=run.webhook_url, payload=payload(instance))
    queue(delivery.pk)
