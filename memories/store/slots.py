"""Slot locks: how writers to one slot queue and writers to different slots do not.

A *slot* is (scope, subject, exclusion group or else predicate): the facts
that can contradict each other. Every write to a slot takes a transaction-scoped
advisory lock named after it, so concurrent writers to one slot serialize and
each decides on what the previous one committed.

The slot's name comes from the pure ``Vocabulary.slot_name``; its lock id is
computed only by the SQL function ``claimgraph_slot_lock_id``
(``memories/sql/slots.sql``), which ``claimgraph_open_slot`` uses too.
"""

from collections.abc import Iterable

from memories.store.lookups import hot_cursor
from memories.store.vocabulary import load_vocabulary

LOCK_SQL = "SELECT pg_advisory_xact_lock(claimgraph_slot_lock_id(%s, %s, %s))"


def lock_slot(scope_id: int, subject_id: int, slot_name: str) -> None:
    """Take one slot's lock, by the slot's name (``Vocabulary.slot_name``)."""
    with hot_cursor() as cursor:
        cursor.execute(LOCK_SQL, [scope_id, subject_id, slot_name], prepare=True)


def lock_predicate_slot(scope_id: int, subject_id: int, predicate: str) -> None:
    """Take the lock of the slot that a fact of ``predicate`` about the subject is in.

    For actions that end or re-point facts already written (invalidation, a
    conflict's ruling).
    """
    vocabulary = load_vocabulary()
    if predicate not in vocabulary.predicates:  # newer than this process's copy
        vocabulary = load_vocabulary({"predicate": predicate})
    lock_slot(scope_id, subject_id, vocabulary.spec.slot_name(predicate))


def lock_slots(slots: Iterable[tuple[int, int, str]]) -> None:
    """Take many slot locks, each (scope id, subject id, slot name), in one statement.

    Locks are taken in the order of their lock ids, the same for every
    caller, so two transactions locking overlapping sets can never each hold
    what the other waits for. (PostgreSQL evaluates a volatile function in
    the select list after the ORDER BY.) Single-slot writers take one lock and
    cannot take part in such a cycle. For the batch import and withdrawal.
    """
    wanted = sorted(set(slots))
    if not wanted:
        return
    scopes, subjects, names = (list(column) for column in zip(*wanted, strict=True))
    # Bound by the server, the arrays in binary: quoted into the SQL text, a
    # batch's thousand slot names cost more than taking their locks.
    with hot_cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(lock_id) FROM"
            " (SELECT DISTINCT claimgraph_slot_lock_id(scope_id, subject_id, slot_name) AS lock_id"
            "    FROM unnest(%b::bigint[], %b::bigint[], %b::text[])"
            "      AS slot(scope_id, subject_id, slot_name)) AS wanted"
            " ORDER BY lock_id",
            [scopes, subjects, names],
        )


def lock_entity_against_writes(scope_id: int, entity_id: int) -> None:
    """Wait for the writes under way on ``entity_id``'s slots, and hold off new ones.

    The exclusive side of the lock ``claimgraph_open_slot`` takes shared on a
    subject (its slot lock id with an empty slot name, which no predicate has).
    For a merge: the writes that found the entity unmerged are committed when
    this returns, and the later ones re-check the merge once it commits.
    """
    with hot_cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(claimgraph_slot_lock_id(%s, %s, ''))",
            [scope_id, entity_id],
        )
