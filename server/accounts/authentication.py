"""``Authorization: Token <key>`` for API clients."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

from django.conf import settings
from django.utils import timezone
from rest_framework import authentication, exceptions

from server.accounts.models import ClientToken, hash_token

# last_used_at is written at most this often per token, not on every request.
LAST_USED_RESOLUTION = timedelta(minutes=5)

# Tokens a worker checked lately: key hash -> (checked at, token with its user). A token revoked, or
# a user disabled, elsewhere is refused by every worker within SENTE_TOKEN_CACHE_SECONDS.
_SEEN: dict[str, tuple[float, ClientToken]] = {}
_SEEN_LOCK = threading.Lock()
_SEEN_MAX = 10_000


def _lookup(key_hash: str) -> ClientToken | None:
    ttl = settings.SENTE_TOKEN_CACHE_SECONDS
    now = time.monotonic()
    seen = _SEEN.get(key_hash)
    if seen is not None and now - seen[0] < ttl:
        return seen[1]
    try:
        token = ClientToken.objects.select_related("user").get(key_hash=key_hash)
    except ClientToken.DoesNotExist:
        return None
    if ttl > 0:
        with _SEEN_LOCK:
            if len(_SEEN) >= _SEEN_MAX:
                _SEEN.clear()
            _SEEN[key_hash] = (now, token)
    return token


def forget_token(key_hash: str) -> None:
    _SEEN.pop(key_hash, None)


class ClientTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Token"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("the Authorization header must be 'Token <key>'")
        try:
            key = header[1].decode()
        except UnicodeError:
            raise exceptions.AuthenticationFailed("the token holds characters a token never has") from None
        token = _lookup(hash_token(key))
        if token is None or not token.active:
            raise exceptions.AuthenticationFailed(
                "unknown or revoked token: get a new one with your username and password "
                "(POST /api/v1/auth/token/) or on the website's token page")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("this account is disabled")
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            token.last_used_at = now
            ClientToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request):
        return self.keyword
