"""The server's wish to be asked again later: its ``Retry-After`` answer (with 429 Too Many Requests,
or 503 when it is busy or down for maintenance), read as seconds, and calls that wait it out.

Every part of the client that talks to the server honours it: the task supply, the uploads, the
network downloads and the checks at start. None of them asks again before the server said it may.
"""

from __future__ import annotations

import email.utils
import logging
import time
from collections.abc import Callable
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

PATIENCE_SECONDS = 900.0  # how long a start-up call waits, in all, for a server asking to be asked later


def retry_after_seconds(header: str | None, now: float | None = None) -> float | None:
    """The wait a ``Retry-After`` header asks for, in seconds: a number of seconds or an HTTP date;
    None when there is none or it cannot be read."""
    if header is None or not header.strip():
        return None
    text = header.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def patiently(
    call: Callable[[], T], patience: float = PATIENCE_SECONDS, sleep: Callable[[float], object] = time.sleep
) -> T:
    """call(), and again after every wait the server asks for (an exception with a ``retry_after``
    that is not None), as long as the waits add up to at most `patience` seconds; then the last
    exception is raised."""
    waited = 0.0
    while True:
        try:
            return call()
        except Exception as e:
            wait = getattr(e, "retry_after", None)
            if wait is None or waited + wait > patience:
                raise
            log.warning("the server asks to be asked again in %.0f s (%s); waiting", wait, e)
            sleep(wait)
            waited += wait
