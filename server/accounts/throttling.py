"""The counters of password checks and sign-ups, on the site's throttle counters
(:mod:`server.api.throttling`: fixed windows in the cache, Redis in production).

A password check (the API's token request, the website's and the admin's login forms, the password
change, the e-mail change; a password reset, which sends mail, counts the same way with the address
typed) counts per client address (the ``login`` rate, every username together) and per (address,
username) (the ``login_pair`` rates: several windows, "5/min,20/hour,100/day", so that guessing on
at one account from one address waits longer and longer). A check that logs in starts the pair's
windows afresh. The address is the one every per-address counter takes (:mod:`server.api.addresses`:
an IPv6 address counts as its /64). Nothing counts per username alone: a counter that anyone may spend from anywhere is
one that strangers fill to lock the owner out, however high its rate, whereas the owner's own
address and pair are theirs alone. Why, and what that leaves an attacker: docs/api.md#throttles.

A sign-up counts per client address (the ``signup`` rate): each sends a mail.
"""

from __future__ import annotations

import hashlib

from rest_framework.settings import api_settings

from server.api.addresses import client_key
from server.api.throttling import count, forget, limit, parse_rate


def _pair_limits(request, username: str) -> list[tuple[str, int, int]]:
    """The (address, username) counters: one per window of the ``login_pair`` rates; the username
    compared without case, as the login compares it."""
    rates = api_settings.DEFAULT_THROTTLE_RATES.get("login_pair")  # '5/min,20/hour' texts
    if not rates:
        return []
    pair = f"{client_key(request)}\0{username.casefold()}".encode("utf-8", "surrogatepass")
    ident = hashlib.sha256(pair).hexdigest()[:32]
    limits = []
    for rate in str(rates).split(","):
        most, seconds = parse_rate(rate)
        limits.append((f"throttle:login_pair:{seconds}:{ident}", most, seconds))
    return limits


def password_check_wait(request, username: str, address: bool = True) -> float | None:
    """Count a password check for ``username`` (whatever was typed) from the client's address: on the
    address's counter (with ``address``; the ``login`` rate) and on the (address, username) counters
    (the ``login_pair`` rates). The seconds to wait when any is over its rate, else None. A check the
    address's rate refuses does not count for the pair. The API's token request counts the address
    before its view (its ``throttle_scope``), and so passes ``address=False``."""
    if address:
        per_address = limit("login", f"ip:{client_key(request)}")
        wait = count([per_address]) if per_address is not None else None
        if wait is not None:
            return wait  # refused before any password is looked at
    pair = _pair_limits(request, username)
    return count(pair) if pair else None


def password_check_passed(request, username: str) -> None:
    """The password of ``username`` was right from this address: its failures there are forgotten."""
    pair = _pair_limits(request, username)
    if pair:
        forget(pair)


def signup_wait(request) -> float | None:
    """Count a sign-up from the client's address (the ``signup`` rate); the seconds to wait when it
    is over, else None."""
    per_address = limit("signup", f"ip:{client_key(request)}")
    return count([per_address]) if per_address is not None else None
