"""Throttles: every request per signed-in user and per client address; views with a
``throttle_scope`` (task requests, game uploads, password logins) also get DRF's scoped limit.
Counters live in the default cache (Redis in production, so that every worker shares them). Rates
are settings (``SENTE_THROTTLE_*``)."""

from __future__ import annotations

from rest_framework.throttling import SimpleRateThrottle


class UserRateThrottle(SimpleRateThrottle):
    """Every request of a signed-in user, across all their clients."""

    scope = "user"

    def get_cache_key(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.user.pk}


class IPRateThrottle(SimpleRateThrottle):
    """Every request from one client address, signed in or not."""

    scope = "ip"

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
