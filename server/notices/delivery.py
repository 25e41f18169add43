"""One attempt of a webhook post (see ``server.notices.webhooks``): claimed, its target checked again,
signed, posted, recorded, and the delay before the next attempt worked out; and the deliveries a
sweep finds waiting for an attempt (``server.notices.tasks`` runs them)."""

from __future__ import annotations

import json
import logging
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from common import __version__
from server.notices.models import WebhookDelivery
from server.outbound import signing
from server.outbound.targets import Refused, TargetError, resolve
from server.outbound.transport import Deadline, PostFailed, post, printable

log = logging.getLogger(__name__)

# A claim lasts the attempt's deadline and this much more (writing the outcome), then runs out.
CLAIM_MARGIN_SECONDS = 30.0
ERROR_CHARS = 1000  # the most kept as a delivery's last error (its URL may take 500)
PENDING = WebhookDelivery.Status.PENDING


def _unclaimed(now: datetime) -> Q:
    return Q(claimed_until__isnull=True) | Q(claimed_until__lte=now)


def _due(now: datetime) -> Q:
    return Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now)


def attempt(delivery_id: int) -> float | None:
    """Post the delivery once if it is pending, due and held by no other attempt: the delay before the
    next attempt, or None when there is none to schedule (delivered, given up, refused, gone, not due
    yet, or another attempt holds it and schedules its next)."""
    hook = settings.SENTE_WEBHOOK
    now = timezone.now()
    claimed = (
        WebhookDelivery.objects.filter(_due(now), _unclaimed(now), pk=delivery_id, status=PENDING)
        .filter(attempts__lt=hook["attempts"])
        .update(
            claimed_until=now + timedelta(seconds=hook["timeout_seconds"] + CLAIM_MARGIN_SECONDS),
            attempts=F("attempts") + 1,
        )
    )
    if not claimed:
        return None
    delivery = WebhookDelivery.objects.select_related("run").get(pk=delivery_id)
    error, final = _post(delivery)
    if error is not None:
        error = printable(error, ERROR_CHARS)
    fields = ["status", "last_error", "next_attempt_at", "claimed_until", "delivered_at"]
    delivery.claimed_until = None
    delivery.next_attempt_at = None
    if error is None:
        delivery.status = WebhookDelivery.Status.DELIVERED
        delivery.delivered_at = timezone.now()
        delivery.last_error = ""
        delivery.save(update_fields=fields)
        return None
    delivery.last_error = error
    if final or delivery.attempts >= hook["attempts"]:
        delivery.status = WebhookDelivery.Status.FAILED
        delivery.save(update_fields=fields)
        log.error(
            "webhook of run %s to %s: given up after %d attempts: %s",
            delivery.run_id,
            delivery.url,
            delivery.attempts,
            error,
        )
        return None
    delay = hook["backoff_seconds"] * 2 ** (delivery.attempts - 1)
    delivery.next_attempt_at = timezone.now() + timedelta(seconds=delay)
    delivery.save(update_fields=fields)
    log.warning(
        "webhook of run %s to %s failed (attempt %d), again in %.0f s: %s",
        delivery.run_id,
        delivery.url,
        delivery.attempts,
        delay,
        error,
    )
    return delay


def _post(delivery: WebhookDelivery) -> tuple[str | None, bool]:
    """Check the target, sign and post the delivery: (None, _) when the answer is 2xx, else what went
    wrong, and whether retrying is pointless (a refused address, a run without its webhook, or whose
    webhook has another URL now: the old one must not get posts signed with the new URL's secret)."""
    hook = settings.SENTE_WEBHOOK
    secret = delivery.run.webhook_secret
    if not secret:
        return "the run has no webhook any more", True
    if delivery.run.webhook_url != delivery.url:
        return "the run's webhook URL has changed since; posts to the old one are given up", True
    deadline = Deadline(hook["timeout_seconds"])
    try:
        target = resolve(delivery.url, allow_private=bool(hook["allow_private"]), timeout=deadline.remaining())
    except Refused as e:
        return f"refused: {e}", True
    except (TargetError, PostFailed) as e:
        return str(e), False
    body = json.dumps(delivery.payload, separators=(",", ":"), ensure_ascii=False).encode()
    headers = {
        "User-Agent": f"sente-server/{__version__}",
        "Content-Type": "application/json",
        **signing.headers(secret, delivery.webhook_id, int(time.time()), body),
    }
    try:
        reply = post(target, body, headers, deadline)
    except PostFailed as e:
        return str(e), False
    if 200 <= reply.status < 300:
        return None, False
    error = f"HTTP {reply.status} {reply.reason}".rstrip()
    if 300 <= reply.status < 400:
        error += " (redirects are not followed: set the webhook URL to where it points)"
    if reply.excerpt:
        error += f": {reply.excerpt}"
    return error, False


def waiting(now: datetime | None = None) -> list[int]:
    """The pending deliveries due now that no attempt holds: those whose attempt never ran (its
    process ended first) or ended with its process, and retries whose time has come; oldest first.
    Those whose last allowed attempt ended with its process are given up here."""
    now = now or timezone.now()
    pending = WebhookDelivery.objects.filter(_unclaimed(now), status=PENDING)
    cut_off = pending.filter(attempts__gte=settings.SENTE_WEBHOOK["attempts"])
    for delivery_id, url in cut_off.values_list("id", "url"):
        log.error("webhook delivery %s to %s: given up, its last attempt never finished", delivery_id, url)
    cut_off.update(
        status=WebhookDelivery.Status.FAILED,
        claimed_until=None,
        next_attempt_at=None,
        last_error="given up: the last attempt never finished (its process ended during it)",
    )
    return list(pending.filter(_due(now)).order_by("created_at", "id").values_list("id", flat=True))


def next_due() -> datetime | None:
    """When the next pending delivery falls due or its attempt's claim runs out (None: none pending)."""
    now = timezone.now()
    rows = WebhookDelivery.objects.filter(status=PENDING).values_list("next_attempt_at", "claimed_until")
    return min((max(due or now, claim or now) for due, claim in rows), default=None)
