"""Recognising a presented token and charging its writes (SPEC §10).

Both run on every API request. A read costs one indexed statement; a write
costs one too, recognising the token and charging its allowance together.
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


@dataclass(frozen=True)
class RateLimited(Exception):
    """The account spent its writes for now; it may try again after ``retry_after`` seconds."""

    retry_after: int


_WINDOW = timedelta(minutes=1)


def token_for_secret(secret: str, *, writes_per_minute: int = 0) -> ApiToken | None:
    """The active token whose secret this is, with its account, or None.

    With ``writes_per_minute`` above 0 the request is a write, charged to the
    allowance as :func:`spend_write` charges it, in the same
    statement, to the token's account (every token of an account shares one
    allowance): :class:`RateLimited` when the account has no write left. An
    unknown, revoked or deactivated token is charged nothing.
    """
    if not secret or len(secret) > MAX_SECRET_LENGTH:
        return None
    digest = digest_of(secret)
    with _prepared_cursor() as cursor:
        if writes_per_minute > 0:
            interval = _WINDOW / writes_per_minute
            parameters = {"digest": digest, "interval": interval, "window": _WINDOW}
            cursor.execute(_charge(_TOKEN_AND_SPEND_SQL), parameters, prepare=True)
        else:
            cursor.execute(_ACTIVE_TOKEN, {"digest": digest}, prepare=True)
        row = cursor.fetchone()
    if row is None:
        return None
    token_end = len(_TOKEN_FIELDS)
    user_end = token_end + len(_USER_FIELDS)
    token = ApiToken.from_db(connection.alias, _TOKEN_FIELDS, row[:token_end])
    token.user = _User.from_db(connection.alias, _USER_FIELDS, row[token_end:user_end])
    # The lookup is by an index on the digest, which an attacker cannot steer
    # byte by byte; the constant-time comparison is belt and braces.
    if not hmac.compare_digest(token.digest, digest):
        return None
    if writes_per_minute > 0:
        allowed, wait = row[user_end:]
        if not allowed:
            raise RateLimited(retry_after=_retry_after(wait))
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


def spend_write(token: ApiToken, *, per_minute: int) -> None:
    """Charge one write to ``token``'s account; raise :class:`RateLimited` when it has none left.

    ``per_minute`` 0 turns the limit off. Runs outside any transaction the
    write itself opens, so a refused or failed write still counts and the
    allowance row is locked only for this one statement.
    """
    if per_minute <= 0:
        return
    interval = _WINDOW / per_minute
    with _prepared_cursor() as cursor:
        cursor.execute(
            _charge(_SPEND_SQL),
            {"account": token.user_id, "interval": interval, "window": _WINDOW},
            prepare=True,
        )
        allowed, wait = cursor.fetchone()
    if not allowed:
        raise RateLimited(retry_after=_retry_after(wait))


def _charge(statement: dict[bool, str]) -> str:
    # A charge made in a transaction of its own (the API's, before the write
    # opens one) commits without waiting for its WAL to reach the disk: a
    # crash may forget the last fraction of a second of charges, so a token
    # gets a few writes back, which a rate limit can afford; the wait for
    # the disk cost more than the rest of the request's overhead together.
    # Inside a caller's transaction the statement leaves its commit alone.
    return statement[not connection.in_atomic_block]


def _retry_after(wait) -> int:
    return max(1, math.ceil(float(wait or 1)))


@contextmanager
def _prepared_cursor() -> Iterator[psycopg.Cursor]:
    # These statements run on every API request: on a psycopg cursor (on
    # Django's connection) they are prepared once per connection and planned
    # once, rather than quoted and planned on each request.
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        yield cursor


_User = get_user_model()
_TOKEN_FIELDS = [f.attname for f in ApiToken._meta.concrete_fields]
_USER_FIELDS = [f.attname for f in _User._meta.concrete_fields]
_TOKEN_TABLE = ApiToken._meta.db_table
_ALLOWANCE_TABLE = WriteAllowance._meta.db_table
# The allowance is the account's, shared by all its tokens.
_TOKEN_ACCOUNT = ApiToken._meta.get_field("user").column
# The token's columns, then its account's, each under a name of its own so
# that the statement below can keep them in a CTE (both tables have an "id").
_TOKEN_COLUMNS = ", ".join(
    [f"t.{f.column} AS t_{f.column}" for f in ApiToken._meta.concrete_fields]
    + [f"u.{f.column} AS u_{f.column}" for f in _User._meta.concrete_fields]
)
_ACTIVE_TOKEN = (
    f"SELECT {_TOKEN_COLUMNS} FROM {_TOKEN_TABLE} t"
    f" JOIN {_User._meta.db_table} u ON u.id = t.user_id"
    " WHERE t.digest = %(digest)s AND t.revoked_at IS NULL AND u.is_active"
)

# Spend one write if the allowance has room. ``statement_timestamp()`` is
# PostgreSQL's clock, shared by every worker on every machine.
_UPSERT = f"""
INSERT INTO {_ALLOWANCE_TABLE} AS a (user_id, busy_until)
{{source}}
ON CONFLICT (user_id) DO UPDATE
    SET busy_until = GREATEST(a.busy_until, statement_timestamp()) + %(interval)s
    WHERE GREATEST(a.busy_until, statement_timestamp()) + %(interval)s
          <= statement_timestamp() + %(window)s
RETURNING 1
"""
# Read in the statement's snapshot, which the UPSERT above does not change:
# when the write was refused, how long until the allowance has room again.
_WAIT = (
    "(SELECT EXTRACT(EPOCH FROM busy_until + %(interval)s - %(window)s - statement_timestamp())"
    f" FROM {_ALLOWANCE_TABLE} WHERE user_id = {{account}})"
)

_NEXT_BUSY = "statement_timestamp() + %(interval)s"
# Each charge twice: as it is, and (True) also making the statement's own
# transaction commit asynchronously (``_charge``). set_config(..., true)
# lasts until that transaction ends; the CTE is joined so that it runs.
_ASYNC = "quick AS (SELECT set_config('synchronous_commit', 'off', true)), "
_SPEND = """
WITH {quick}spent AS ({upsert})
SELECT EXISTS (SELECT 1 FROM spent), {wait}{from_quick}
"""
_SPEND_SQL = {
    quick: _SPEND.format(
        quick=_ASYNC if quick else "",
        upsert=_UPSERT.format(source=f"VALUES (%(account)s, {_NEXT_BUSY})"),
        wait=_WAIT.format(account="%(account)s"),
        from_quick=" FROM quick" if quick else "",
    )
    for quick in (False, True)
}

# A write's one statement: recognise the token and, only if it is active,
# charge it. A token that is unknown, revoked or deactivated yields no row,
# so the INSERT has nothing to insert.
_TOKEN_AND_SPEND = """
WITH {quick}token AS ({token}),
spent AS ({upsert})
SELECT token.*, EXISTS (SELECT 1 FROM spent), {wait}
  FROM token{and_quick}
"""
_TOKEN_AND_SPEND_SQL = {
    quick: _TOKEN_AND_SPEND.format(
        quick=_ASYNC if quick else "",
        token=_ACTIVE_TOKEN,
        upsert=_UPSERT.format(source=f"SELECT t_{_TOKEN_ACCOUNT}, {_NEXT_BUSY} FROM token"),
        wait=_WAIT.format(account=f"token.t_{_TOKEN_ACCOUNT}"),
        and_quick=", quick" if quick else "",
    )
    for quick in (False, True)
}
