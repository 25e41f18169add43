"""The signature of every webhook post, as Standard Webhooks 1.0 defines it (standardwebhooks.com):
HMAC-SHA256 with the run's own secret over ``{webhook-id}.{webhook-timestamp}.{body}``, sent in the
``webhook-id``, ``webhook-timestamp`` and ``webhook-signature`` (``v1,<base64>``) headers. The id
stays the same across a delivery's attempts (a receiver drops the repeats by it); the timestamp is
the attempt's (a receiver refuses stale ones, so a recorded post cannot be replayed later). The
secret is ``whsec_`` and the base64 of 32 random bytes, the key those bytes; docs/website.md shows
how a receiver checks a post."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32


def new_secret() -> str:
    """A fresh signing secret."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` header's value for one attempt."""
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    mac = hmac.new(key, f"{message_id}.{timestamp}.".encode("ascii") + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode("ascii")


def headers(secret: str, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three headers that sign one attempt of a post."""
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(secret, message_id, timestamp, body),
    }
