"""Request rate limits, on by default: every request per signed-in user and per client address (as
:mod:`server.api.addresses` takes it: an IPv6 address counts as its /64), plus the view's own scope
(``throttle_scope``: task requests, game uploads, password logins) per user (per address when nobody
is signed in). Rates are settings (``SENTE_THROTTLE_*``, DRF's
``DEFAULT_THROTTLE_RATES``), e.g. ``600/min``.

The password checks and sign-ups count on counters of their own, built on :func:`count`
(``server.accounts.throttling``).

Counting is by fixed windows in the default cache, all of a request's counters in one round trip:
one small Lua script on Redis (production, shared by every worker), ``add`` + ``incr`` on other
caches. A request over any limit is answered 429 with ``Retry-After`` (the end of the window).
"""

from __future__ import annotations

import time

from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

from server.api.addresses import client_key

_DURATIONS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _rates() -> dict[str, str | None]:
    """DRF's ``DEFAULT_THROTTLE_RATES``: '600/min' texts (its stubs say numbers)."""
    return api_settings.DEFAULT_THROTTLE_RATES  # type: ignore[return-value]


def parse_rate(rate: str) -> tuple[int, int]:
    """'600/min' -> (600, 60)."""
    count, period = rate.split("/")
    return int(count), _DURATIONS[period.strip()[0]]


# KEYS: the counters; ARGV: their windows' lengths. Counts each up, starts its expiry on the first.
_COUNT = """
local counts = {}
for i, key in ipairs(KEYS) do
  local n = redis.call('INCR', key)
  if n == 1 then redis.call('EXPIRE', key, ARGV[i]) end
  counts[i] = n
end
return counts
"""
_scripts: dict[int, tuple[object, object]] = {}  # id(connection pool) -> (pool, script on a client of it)


def _redis_script():
    """The counting script on a client of the default cache's Redis pool (None for other caches).
    One client per pool (each thread has its cache and pool): making a Redis client costs more than
    the round trip."""
    cache = caches["default"]
    if not isinstance(cache, RedisCache):
        return None
    # Django's Redis client keeps its pool and client class private (and out of its stubs).
    pool = cache._cache._get_connection_pool(write=True)  # type: ignore[attr-defined]
    entry = _scripts.get(id(pool))
    if entry is None or entry[0] is not pool:
        client = cache._cache._client(connection_pool=pool)  # type: ignore[attr-defined]
        entry = _scripts[id(pool)] = (pool, client.register_script(_COUNT))
    return entry[1]


def _windows(limits: list[tuple[str, int, int]], now: float) -> list[tuple[str, int, int]]:
    """Each (key, count, seconds) counter with its key for the window that holds ``now``."""
    return [(f"{key}:{int(now // seconds)}", most, seconds) for key, most, seconds in limits]


def count(limits: list[tuple[str, int, int]]) -> float | None:
    """Count one request on each (key, count, seconds) counter's current window; the seconds until
    the last of the windows whose count is exceeded ends, or None when none is."""
    now = time.time()
    cache = caches["default"]
    keys = _windows(limits, now)
    script = _redis_script()
    if script is not None:
        counts = script(
            keys=[cache.make_and_validate_key(key) for key, _, _ in keys], args=[seconds + 1 for _, _, seconds in keys]
        )
    else:
        counts = []
        for key, _, seconds in keys:
            cache.add(key, 0, seconds + 1)
            try:
                counts.append(cache.incr(key))
            except ValueError:  # expired between add and incr
                cache.add(key, 1, seconds + 1)
                counts.append(1)
    wait = None
    for (_, most, seconds), n in zip(keys, counts):
        if n > most:
            left = seconds - (now % seconds)
            wait = left if wait is None else max(wait, left)
    return wait


def forget(limits: list[tuple[str, int, int]]) -> None:
    """Start these counters' current windows afresh (after a success that ends what they count)."""
    caches["default"].delete_many([key for key, _, _ in _windows(limits, time.time())])


def limit(scope: str, ident: object) -> tuple[str, int, int] | None:
    """The (key, count, seconds) counter of ``ident`` under the scope's rate; None when it has none."""
    rate = _rates().get(scope)
    if not rate:
        return None
    most, seconds = parse_rate(rate)
    return f"throttle:{scope}:{ident}", most, seconds


class RateLimits(BaseThrottle):
    def get_ident(self, request) -> str:
        """The client's address as every per-address counter takes it (an IPv6 address's /64)."""
        return client_key(request)

    def _limits(self, request, view) -> list[tuple[str, int, int]]:
        rates = _rates()
        ip = self.get_ident(request)
        user = request.user if request.user and request.user.is_authenticated else None
        limits: list[tuple[str, object, str]] = []
        if user is not None and (rate := rates.get("user")):
            limits.append(("user", user.pk, rate))
        if rate := rates.get("ip"):
            limits.append(("ip", ip, rate))
        scope = getattr(view, "throttle_scope", None)
        if scope and (rate := rates.get(scope)):
            limits.append((scope, user.pk if user is not None else f"ip:{ip}", rate))
        out = []
        for scope, ident, rate in limits:
            count, seconds = parse_rate(rate)
            out.append((f"throttle:{scope}:{ident}", count, seconds))
        return out

    def allow_request(self, request, view) -> bool:
        limits = self._limits(request, view)
        self._wait = count(limits) if limits else None
        return self._wait is None

    def wait(self) -> float | None:
        return self._wait
