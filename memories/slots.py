"""Slot locks: how writers to one slot queue and writers to different slots do not.

A *slot* is (scope, subject, exclusion group or else predicate): the facts that
can contradict each other. Every write to a slot takes a transaction-scoped
advisory lock named after it, so concurrent writers to one slot serialize and
each decides on what the previous one committed.
"""

from collections.abc import Iterable

from django.db import connection

from memories.lookups import hot_cursor
from memories.models import Fact

LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"


def slot_key(scope_id: int, subject_id: int, slot_name: str) -> str:
    """The name of a slot's advisory lock (hashed to the lock's 64-bit id by PostgreSQL)."""
    return f"claimgraph:slot:{scope_id}:{subject_id}:{slot_name}"


def lock_slot(scope_id: int, subject_id: int, slot_name: str) -> None:
    with hot_cursor() as cursor:
        cursor.execute(LOCK_SQL, [slot_key(scope_id, subject_id, slot_name)], prepare=True)


def lock_slots(slots: Iterable[tuple[int, int, str]]) -> None:
    """Take many slot locks in one statement (batch import, withdrawal).

    Locks are taken in the order of their lock ids, the same for every
    caller, so two transactions locking overlapping sets can never each hold
    what the other waits for. (PostgreSQL evaluates a volatile function in
    the select list after the ORDER BY.) Single-slot writers take one lock and
    cannot take part in such a cycle.
    """
    keys = sorted({slot_key(scope, subject, name) for scope, subject, name in slots})
    if not keys:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(lock_id) FROM"
            " (SELECT DISTINCT hashtextextended(key, 0) AS lock_id FROM unnest(%s::text[]) AS key)"
            " AS wanted ORDER BY lock_id",
            [keys],
        )


def lock_fact_slot(fact: Fact) -> None:
    """Take the slot lock of an existing fact (for actions that end or re-point it)."""
    group = fact.predicate.exclusion_group
    slot = f"group:{group}" if group else f"predicate:{fact.predicate.name}"
    lock_slot(fact.scope_id, fact.subject_id, slot)
