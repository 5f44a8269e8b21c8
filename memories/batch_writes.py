"""Writing one batch's end state set-wise (see ``memories.batch``).

Standing facts first (one UPDATE): a supersession closes the old fact before
the new one with the same value may be live, and the unique live-value index
checks each row as it is written. Then the new facts (one COPY), whose
``superseded_by`` may point at a fact later in the COPY: that foreign key is
checked at commit. Then conflicts and their members.

Every statement runs on ``lookups.hot_cursor`` (Django's connection, so the
batch's transaction, with parameters bound by the server): Django's own
cursors would quote every element of the batch's thousand-id arrays into the
SQL text. The arrays go as ``%b`` (binary), which psycopg writes several times
faster than a text array, whose every element it checks for quoting.
"""

import json
from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple

from memories.core.decisions import Evidence
from memories.lookups import hot_cursor
from memories.models import (
    AuditEntry,
    Conflict,
    ConflictMember,
    Fact,
    InvalidationKind,
    MemberRole,
    Resolution,
)
from memories.vocabulary import LoadedVocabulary

if TYPE_CHECKING:
    from memories.batch import ConflictState, FactState

MOOT_REASON = "closed by itself: a side of it is no longer live"


def update_standing(facts: list["FactState"], *, actor, vocab: LoadedVocabulary) -> None:
    """One UPDATE for every standing fact the batch reinforced or superseded."""
    if not facts:
        return
    source_ids = {name: row.pk for name, row in vocab.sources.items()}
    # Only the batch's own supersessions close a standing fact.
    closed = [f.superseded_by is not None for f in facts]
    with hot_cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE {Fact._meta.db_table} AS f SET
                last_reinforced_at = u.last_reinforced_at,
                confidence = u.confidence,
                source_type_id = u.source_type_id,
                evidence = u.evidence::jsonb,
                t_invalid = u.t_invalid,
                invalidated_at = u.invalidated_at,
                invalidated_by_id = CASE WHEN u.closed THEN %s ELSE f.invalidated_by_id END,
                invalidation_kind = CASE WHEN u.closed THEN %s ELSE f.invalidation_kind END,
                invalidation_reason = u.invalidation_reason,
                superseded_by_id = u.superseded_by_id
              FROM unnest(%b::uuid[], %b::timestamptz[], %b::float8[], %b::bigint[],
                          %b::text[], %b::timestamptz[], %b::timestamptz[], %b::text[],
                          %b::uuid[], %b::bool[])
                AS u(id, last_reinforced_at, confidence, source_type_id, evidence,
                     t_invalid, invalidated_at, invalidation_reason, superseded_by_id,
                     closed)
             WHERE f.id = u.id AND f.id = ANY(%b::uuid[])
            """,
            [
                actor.pk,
                InvalidationKind.SUPERSEDED,
                [f.id for f in facts],
                [f.last_reinforced_at for f in facts],
                [f.confidence for f in facts],
                [source_ids[f.source_type] for f in facts],
                [_evidence_json(f.evidence) for f in facts],
                [f.t_invalid for f in facts],
                [f.invalidated_at for f in facts],
                [f.invalidation_reason for f in facts],
                [f.superseded_by for f in facts],
                closed,
                # The ids again, as a condition on the table itself: PostgreSQL
                # then finds the rows by primary key. Joined only to the unnest,
                # it scanned the whole table whenever its statistics were stale
                # (as in the middle of a large import): 17 of the 28 ms of one
                # batch's UPDATE at 44,000 facts, growing with the table.
                [f.id for f in facts],
            ],
        )


def insert_new(facts: list["FactState"], *, actor, vocab: LoadedVocabulary) -> None:
    """One COPY for every fact the batch created, in its end state."""
    if not facts:
        return
    predicate_ids = {name: row.pk for name, row in vocab.predicates.items()}
    source_ids = {name: row.pk for name, row in vocab.sources.items()}
    author = actor.pk
    with hot_cursor() as cursor, cursor.copy(_COPY_FACTS) as copy:
        # Declared once, so each value is not looked at to find how to send it.
        copy.set_types(_FACT_TYPES)
        for f in facts:
            closed = f.superseded_by is not None
            copy.write_row(
                (
                    f.id,
                    f.scope_id,
                    f.subject_id,
                    predicate_ids[f.predicate],
                    f.object_kind,
                    f.row["object_ref_id"],
                    f.row["object_lit"],
                    f.object_key,
                    f.epistemic,
                    source_ids[f.source_type],
                    f.confidence,
                    f.row["episode"],
                    f.row["statement"],
                    [item.as_dict() for item in f.evidence],
                    author,
                    f.bucket,
                    f.t_valid,
                    f.t_invalid,
                    f.row["recorded_at"],
                    f.last_reinforced_at,
                    f.invalidated_at,
                    author if closed else None,
                    InvalidationKind.SUPERSEDED if closed else "",
                    f.invalidation_reason,
                    f.superseded_by,
                )
            )


class AuditRow(NamedTuple):
    """One audit entry, in the column order of the COPY that writes it."""

    at: datetime
    actor_id: int | None
    scope_id: int
    action: str
    target_type: str
    target_id: str
    before: dict | None
    after: dict | None
    reason: str
    rule: str


def insert_audit(rows: list[AuditRow]) -> None:
    """One COPY for the batch's audit entries, in the order they happened (ids follow it)."""
    if not rows:
        return
    with hot_cursor() as cursor, cursor.copy(_COPY_AUDIT) as copy:
        copy.set_types(_AUDIT_TYPES)
        for row in rows:
            copy.write_row(row)


def write_conflicts(new: list["ConflictState"], closed: list["ConflictState"]) -> None:
    """The batch's new conflicts with their members, and the standing ones it made moot."""
    if new:
        # COPY rather than the ORM's bulk INSERT: the batch opens hundreds.
        with hot_cursor() as cursor:
            with cursor.copy(_COPY_CONFLICTS) as copy:
                copy.set_types(_CONFLICT_TYPES)
                for c in new:
                    copy.write_row(
                        (
                            c.id,
                            c.scope_id,
                            c.row["kind"],
                            c.row["subject_id"],
                            c.row["predicate_id"],
                            c.opened_at,
                            c.closed_at,
                            Resolution.MOOT if c.closed_at else "",
                            MOOT_REASON if c.closed_at else "",
                        )
                    )
            with cursor.copy(_COPY_MEMBERS) as copy:
                copy.set_types(_MEMBER_TYPES)
                for c in new:
                    for role, fact_id in c.members:
                        copy.write_row((c.id, fact_id, role, role == MemberRole.INCOMING))
    if closed:
        # One statement for all of them, each closed at its own line's instant.
        with hot_cursor() as cursor:
            cursor.execute(
                f"""
                UPDATE {Conflict._meta.db_table} AS c
                   SET resolution = %s, reason = %s, resolved_at = u.closed_at
                  FROM unnest(%b::uuid[], %b::timestamptz[]) AS u(id, closed_at)
                 WHERE c.id = u.id AND c.id = ANY(%b::uuid[])
                """,
                [
                    Resolution.MOOT,
                    MOOT_REASON,
                    [c.id for c in closed],
                    [c.closed_at for c in closed],
                    [c.id for c in closed],
                ],
            )


def _evidence_json(evidence: tuple[Evidence, ...] | str) -> str:
    if isinstance(evidence, str):  # loaded and never touched: as it was
        return evidence
    return json.dumps([item.as_dict() for item in evidence])


_FACT_COLUMNS = (
    "id",
    "scope_id",
    "subject_id",
    "predicate_id",
    "object_kind",
    "object_ref_id",
    "object_lit",
    "object_key",
    "epistemic",
    "source_type_id",
    "confidence",
    "episode",
    "statement",
    "evidence",
    "author_id",
    "bucket",
    "t_valid",
    "t_invalid",
    "recorded_at",
    "last_reinforced_at",
    "invalidated_at",
    "invalidated_by_id",
    "invalidation_kind",
    "invalidation_reason",
    "superseded_by_id",
)
_FACT_TYPES = [
    "uuid",  # id
    "int8",  # scope_id
    "int8",  # subject_id
    "int8",  # predicate_id
    "text",  # object_kind
    "int8",  # object_ref_id
    "text",  # object_lit
    "text",  # object_key
    "text",  # epistemic
    "int8",  # source_type_id
    "float8",  # confidence
    "text",  # episode
    "text",  # statement
    "jsonb",  # evidence
    "int4",  # author_id
    "text",  # bucket
    "timestamptz",  # t_valid
    "timestamptz",  # t_invalid
    "timestamptz",  # recorded_at
    "timestamptz",  # last_reinforced_at
    "timestamptz",  # invalidated_at
    "int4",  # invalidated_by_id
    "text",  # invalidation_kind
    "text",  # invalidation_reason
    "uuid",  # superseded_by_id
]
_COPY_FACTS = f"COPY {Fact._meta.db_table} ({', '.join(_FACT_COLUMNS)}) FROM STDIN"
_COPY_AUDIT = (
    f"COPY {AuditEntry._meta.db_table}"
    " (at, actor_id, scope_id, action, target_type, target_id, before, after, reason, rule)"
    " FROM STDIN"
)
_COPY_CONFLICTS = (
    f"COPY {Conflict._meta.db_table}"
    " (id, scope_id, kind, subject_id, predicate_id, opened_at, resolved_at, resolution, reason)"
    " FROM STDIN"
)
_CONFLICT_TYPES = [
    "uuid",  # id
    "int8",  # scope_id
    "text",  # kind
    "int8",  # subject_id
    "int8",  # predicate_id
    "timestamptz",  # opened_at
    "timestamptz",  # resolved_at
    "text",  # resolution
    "text",  # reason
]
_COPY_MEMBERS = (
    f"COPY {ConflictMember._meta.db_table} (conflict_id, fact_id, role, disputes) FROM STDIN"
)
_MEMBER_TYPES = ["uuid", "uuid", "text", "bool"]
_AUDIT_TYPES = [
    "timestamptz",
    "int4",
    "int8",
    "text",
    "text",
    "text",
    "jsonb",
    "jsonb",
    "text",
    "text",
]
