"""One attempt of a webhook post (see ``server.notices.webhooks``): posted, recorded, and the delay
before the next attempt worked out."""

from __future__ import annotations

import logging
from datetime import timedelta

import requests
from django.conf import settings
from django.utils import timezone

from common import __version__
from server.notices.models import WebhookDelivery

log = logging.getLogger(__name__)

ERROR_CHARS = 500  # of an answer's body kept as the delivery's last error


def attempt(delivery_id: int) -> float | None:
    """Post the delivery once; the delay before the next attempt, or None when it is done (delivered,
    given up, or gone)."""
    delivery = WebhookDelivery.objects.filter(pk=delivery_id, status=WebhookDelivery.Status.PENDING).first()
    if delivery is None:
        return None
    delivery.attempts += 1
    error = _post(delivery.url, delivery.payload)
    if error is None:
        delivery.status = WebhookDelivery.Status.DELIVERED
        delivery.delivered_at = timezone.now()
        delivery.last_error = ""
        delivery.next_attempt_at = None
        delivery.save()
        return None
    delivery.last_error = error
    if delivery.attempts >= settings.SENTE_WEBHOOK["attempts"]:
        delivery.status = WebhookDelivery.Status.FAILED
        delivery.next_attempt_at = None
        delivery.save()
        log.error(
            "webhook of run %s to %s: given up after %d attempts: %s",
            delivery.run_id,
            delivery.url,
            delivery.attempts,
            error,
        )
        return None
    delay = settings.SENTE_WEBHOOK["backoff_seconds"] * 2 ** (delivery.attempts - 1)
    delivery.next_attempt_at = timezone.now() + timedelta(seconds=delay)
    delivery.save()
    log.warning(
        "webhook of run %s to %s failed (attempt %d), again in %.0f s: %s",
        delivery.run_id,
        delivery.url,
        delivery.attempts,
        delay,
        error,
    )
    return delay


def _post(url: str, body: dict) -> str | None:
    """Post body as JSON to url: None when the answer is 2xx, else what went wrong."""
    try:
        response = requests.post(
            url,
            json=body,
            timeout=settings.SENTE_WEBHOOK["timeout_seconds"],
            headers={"User-Agent": f"sente-server/{__version__}"},
            allow_redirects=False,
        )
    except requests.RequestException as e:
        return f"{type(e).__name__}: {e}"[:ERROR_CHARS]
    if 200 <= response.status_code < 300:
        return None
    return f"HTTP {response.status_code}: {response.text}"[:ERROR_CHARS]
