"""What the actions raise when they refuse. Each face maps them to its own answer.

``Rejected`` (bad input, 400) lives in the pure core, ``memories.core.decisions``,
because input checking is part of the decision; it is re-exported here so the
faces import every refusal from one place.
"""

import psycopg
from django.db import InterfaceError, OperationalError

from memories.core.decisions import Rejected, UnknownName


class NotFound(Exception):
    """Absent, or outside what the caller may see: the two are indistinguishable (404)."""

    def __init__(self, what: str = "object") -> None:
        super().__init__(f"{what} not found")
        self.what = what


class UnknownEntity(NotFound):
    """A name no entity of the scope answers to, with the nearest names a reader may see (404)."""

    def __init__(self, field: str, did_you_mean: list[str]) -> None:
        super().__init__(field)
        self.field = field
        self.did_you_mean = tuple(did_you_mean)


class Forbidden(Exception):
    """Visible to the caller but not theirs to do (403)."""

    code = "forbidden"
    field: str | None = None


class SourceTypeNotAllowed(Forbidden):
    """A source type the account's role in the scope may not claim (issue 29 item 8)."""

    code = "source_type_not_allowed"
    field = "source_type"

    def __init__(self, source_type: str, allowed: tuple[str, ...] | None) -> None:
        may = ", ".join(allowed) if allowed else "none"
        super().__init__(
            f"source type {source_type!r} is not one your role in this scope may claim;"
            f" you may claim: {may}"
        )
        self.source_type = source_type
        self.allowed = allowed


class StateConflict(Exception):
    """The object is not in a state that allows this (409)."""

    code = "state_conflict"


class ChallengeAlreadyOpen(StateConflict):
    """The account already has an open challenge on the fact (issue 30 item 7): one at a time."""

    code = "challenge_already_open"

    def __init__(self, challenge_id) -> None:
        super().__init__(
            f"you already have an open challenge on this fact (challenge {challenge_id}):"
            " a second is refused until a steward refutes that one; nothing was written"
        )
        self.challenge_id = challenge_id


# The database unreachable (SPEC §11): Django's classes, and psycopg's in case a
# statement ever runs outside Django's wrapping. An OperationalError is, by the
# DB-API's definition, an error of the database's operation rather than of the
# program or its input (a lost connection, a server shutting down, too many
# connections, a cancelled statement): each is worth retrying, so every face
# answers 503. IntegrityError, DataError and ProgrammingError are not outages.
OUTAGE_ERRORS: tuple[type[Exception], ...] = (
    OperationalError,
    InterfaceError,
    psycopg.OperationalError,
    psycopg.InterfaceError,
)

# A restarted server accepts connections again within seconds; a client that
# waits this long before retrying does not add to the load of a failover.
RETRY_AFTER_SECONDS = 10
UNAVAILABLE_MESSAGE = (
    f"the database cannot be reached just now; try again in {RETRY_AFTER_SECONDS} s"
)

# Of those, the database busy rather than gone: a statement cancelled by
# statement_timeout (57014) or a lock not granted within lock_timeout (55P03),
# the bounds a web request runs under (settings). Same 503, its own code.
BUSY_SQLSTATES = frozenset({"57014", "55P03"})
BUSY_MESSAGE = (
    f"the database is busy and the request was cancelled, nothing written; "
    f"try again in {RETRY_AFTER_SECONDS} s"
)


def outage_code(exception: BaseException | None) -> tuple[str, str]:
    """The code and message of the 503 that answers ``exception``, an outage error."""
    cause = exception
    while cause is not None:
        if getattr(cause, "sqlstate", None) in BUSY_SQLSTATES:
            return "database_busy", BUSY_MESSAGE
        cause = cause.__cause__
    return "unavailable", UNAVAILABLE_MESSAGE


__all__ = [
    "BUSY_MESSAGE",
    "BUSY_SQLSTATES",
    "OUTAGE_ERRORS",
    "RETRY_AFTER_SECONDS",
    "UNAVAILABLE_MESSAGE",
    "ChallengeAlreadyOpen",
    "Forbidden",
    "NotFound",
    "Rejected",
    "SourceTypeNotAllowed",
    "StateConflict",
    "UnknownEntity",
    "UnknownName",
    "outage_code",
]
