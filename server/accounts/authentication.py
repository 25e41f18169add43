"""``Authorization: Token <key>`` for API clients."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from rest_framework import authentication, exceptions

from server.accounts.models import ClientToken, hash_token

# last_used_at is written at most this often per token, not on every request.
LAST_USED_RESOLUTION = timedelta(minutes=5)


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
        token = ClientToken.objects.select_related("user").filter(key_hash=hash_token(key)).first()
        if token is None or not token.active:
            raise exceptions.AuthenticationFailed(
                "unknown or revoked token: get a new one with your username and password "
                "(POST /api/v1/auth/token/) or on the website's token page")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("this account is disabled")
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            ClientToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request):
        return self.keyword
