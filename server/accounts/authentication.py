"""``Authorization: Token <key>`` for API clients.

Every request reads its token, with its user, from the database: a token revoked or an account
disabled is refused by the very next request, on every process of the server. The read is one
query through the token's unique index, its SQL and its values' conversions (the ones the ORM
applies, such as SQLite's dates) built once from the models: building the query with the ORM for
every request cost five times the query itself.
"""

from __future__ import annotations

import functools
from datetime import timedelta

from django.db import connection
from django.utils import timezone
from rest_framework import authentication, exceptions

from server.accounts.models import ClientToken, User, hash_token
from server.sql import quoted_column

# last_used_at is written at most this often per token, not on every request.
LAST_USED_RESOLUTION = timedelta(minutes=5)

_TOKEN_FIELDS = {"id", "user_id", "last_used_at", "revoked_at"}  # what authentication reads of the token


@functools.cache
def _fields() -> tuple[list, list]:
    """The token's fields read and the user's, each in its model's order (as from_db takes them)."""
    return (
        [f for f in ClientToken._meta.concrete_fields if f.attname in _TOKEN_FIELDS],
        list(User._meta.concrete_fields),
    )


@functools.cache
def _converters() -> list[tuple[int, object, list]]:
    """(column, its expression, the database's and the field's converters) where there are any."""
    token_fields, user_fields = _fields()
    columns = [f.get_col("t") for f in token_fields] + [f.get_col("u") for f in user_fields]
    found = []
    for i, column in enumerate(columns):
        converters = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
        if converters:
            found.append((i, column, converters))
    return found


@functools.cache
def _lookup_sql() -> str:
    quote = connection.ops.quote_name
    token_fields, user_fields = _fields()
    columns = [f"t.{quoted_column(f)}" for f in token_fields] + [f"u.{quoted_column(f)}" for f in user_fields]
    return (
        f"SELECT {', '.join(columns)} FROM {quote(ClientToken._meta.db_table)} t "
        f"JOIN {quote(User._meta.db_table)} u ON u.{quoted_column(User._meta.pk)} = t."
        f"{quoted_column(ClientToken._meta.get_field('user'))} "
        f"WHERE t.{quoted_column(ClientToken._meta.get_field('key_hash'))} = %s"
    )


def _lookup(key_hash: str) -> ClientToken | None:
    """The token of this key hash with its user (None if there is none)."""
    with connection.cursor() as cursor:
        cursor.execute(_lookup_sql(), [key_hash])
        row = cursor.fetchone()
    if row is None:
        return None
    row = list(row)
    for i, column, converters in _converters():
        for convert in converters:
            row[i] = convert(row[i], column, connection)
    token_fields, user_fields = _fields()
    n = len(token_fields)
    user = User.from_db(connection.alias, [f.attname for f in user_fields], row[n:])
    token = ClientToken.from_db(connection.alias, [f.attname for f in token_fields], row[:n])
    token.user = user
    return token


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
                "(POST /api/v1/auth/token/) or on the website's token page"
            )
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("this account is disabled")
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            token.last_used_at = now
            ClientToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request):
        return self.keyword
