"""Recognising a presented token and charging its writes (SPEC §10).

Both run on every API request, so each is one indexed statement.
"""

import hmac
import math
from dataclasses import dataclass
from datetime import timedelta

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
    token = ApiToken.objects.active().select_related("user").filter(digest=digest).first()
    # The lookup is by an index on the digest, which an attacker cannot steer
    # byte by byte; the constant-time comparison is belt and braces.
    if token is None or not hmac.compare_digest(token.digest, digest):
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


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
    with connection.cursor() as cursor:
        cursor.execute(_SPEND_SQL, {"token": token.pk, "interval": interval, "window": _WINDOW})
        allowed, wait = cursor.fetchone()
    if not allowed:
        raise RateLimited(retry_after=max(1, math.ceil(float(wait or 1))))
