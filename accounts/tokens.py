"""Recognising a presented token and charging its writes (SPEC §10).

Both run on every API request, so each is one indexed statement.
"""

import hmac
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

import psycopg
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from accounts.actions import digest_of
from accounts.models import ApiToken, WriteAllowance

# Recording every use would turn each read into a write; a minute's
# resolution is plenty to tell a live token from a forgotten one.
LAST_USED_RESOLUTION = timedelta(minutes=1)
MAX_SECRET_LENGTH = 200


def token_for_secret(secret: str) -> ApiToken | None:
    """The active token whose secret this is, with its account, or None."""
    if not secret or len(secret) > MAX_SECRET_LENGTH:
        return None
    digest = digest_of(secret)
    with _prepared_cursor() as cursor:
        cursor.execute(_TOKEN_SQL, [digest], prepare=True)
        row = cursor.fetchone()
    if row is None:
        return None
    token_values, user_values = row[: len(_TOKEN_FIELDS)], row[len(_TOKEN_FIELDS) :]
    token = ApiToken.from_db(connection.alias, _TOKEN_FIELDS, token_values)
    token.user = _User.from_db(connection.alias, _USER_FIELDS, user_values)
    # The lookup is by an index on the digest, which an attacker cannot steer
    # byte by byte; the constant-time comparison is belt and braces.
    if not hmac.compare_digest(token.digest, digest):
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


@contextmanager
def _prepared_cursor() -> Iterator[psycopg.Cursor]:
    # Both statements here run on every API request: on a psycopg cursor
    # (on Django's connection) they are prepared once per connection and
    # planned once, rather than quoted and planned on each request.
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        yield cursor


_User = get_user_model()
_TOKEN_FIELDS = [f.attname for f in ApiToken._meta.concrete_fields]
_USER_FIELDS = [f.attname for f in _User._meta.concrete_fields]
_TOKEN_SQL = (
    "SELECT "
    + ", ".join(f"t.{f.column}" for f in ApiToken._meta.concrete_fields)
    + ", "
    + ", ".join(f"u.{f.column}" for f in _User._meta.concrete_fields)
    + f" FROM {ApiToken._meta.db_table} t JOIN {_User._meta.db_table} u ON u.id = t.user_id"
    " WHERE t.digest = %s AND t.revoked_at IS NULL AND u.is_active"
)


@dataclass(frozen=True)
class RateLimited(Exception):
    """The token spent its writes for now; it may try again after ``retry_after`` seconds."""

    retry_after: int


_WINDOW = timedelta(minutes=1)

# One statement: spend one write if the allowance has room, and in the same
# snapshot read how long until it has room again. ``statement_timestamp()``
# is PostgreSQL's clock, shared by every worker on every machine.
_SPEND_SQL = f"""
WITH spent AS (
    INSERT INTO {WriteAllowance._meta.db_table} AS a (token_id, busy_until)
    VALUES (%(token)s, statement_timestamp() + %(interval)s)
    ON CONFLICT (token_id) DO UPDATE
        SET busy_until = GREATEST(a.busy_until, statement_timestamp()) + %(interval)s
        WHERE GREATEST(a.busy_until, statement_timestamp()) + %(interval)s
              <= statement_timestamp() + %(window)s
    RETURNING 1
)
SELECT
    EXISTS (SELECT 1 FROM spent),
    (SELECT EXTRACT(EPOCH FROM busy_until + %(interval)s - %(window)s - statement_timestamp())
       FROM {WriteAllowance._meta.db_table} WHERE token_id = %(token)s)
"""


def spend_write(token: ApiToken, *, per_minute: int) -> None:
    """Charge one write to ``token``; raise :class:`RateLimited` when it has none left.

    ``per_minute`` 0 turns the limit off. Runs outside any transaction the
    write itself opens, so a refused or failed write still counts and the
    allowance row is locked only for this one statement.
    """
    if per_minute <= 0:
        return
    interval = _WINDOW / per_minute
    with _prepared_cursor() as cursor:
        cursor.execute(
            _SPEND_SQL, {"token": token.pk, "interval": interval, "window": _WINDOW}, prepare=True
        )
        allowed, wait = cursor.fetchone()
    if not allowed:
        raise RateLimited(retry_after=max(1, math.ceil(float(wait or 1))))
