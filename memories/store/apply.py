"""The one place :class:`~memories.core.effects.Effects` become rows.

Two back ends take the same values:

- :func:`do_apply`, one write at a time in the current transaction: the
  actions (``assert_fact``, ``invalidate_fact``, ``resolve_conflict``,
  withdrawals) and background maintenance.
- :class:`SetApplier`, for the import: it folds each line's Effects into the
  batch's in-memory copy of its slots (so line N+1 is decided on what line N
  did) and writes the batch's end state set-wise: one UPDATE for the
  standing facts that changed, a COPY each for new facts, conflicts, members
  and audit entries.

(:func:`do_apply_many` is the first one's set-wise twin for background
maintenance: many decisions on distinct slots, written a statement per kind
of change.)

They differ in one thing: where the moot check reads a conflict's members.
:func:`do_apply` reads the open conflicts of the ``check_moot`` facts from the
database, locked, since a single write has nothing else in hand. The
set-wise back end weighs its in-memory conflict states, loaded (and locked)
with the batch's slots, because its writes reach the database only at the
end of the batch: a read in between would see none of them. Both close a
moot conflict with the same :func:`~memories.core.effects.moot_effects`.

Both also name every truth slot their effects touch (``Applied.touched``,
``SetApplier.touched``), and leave it to the caller to have those recomputed
once the transaction commits (``memories.store.touched.recompute_on_commit``): the
recompute itself acts through this module, so it must not be enqueued from
here.
"""

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from memories.core.decisions import Evidence, StandingFact
from memories.core.effects import (
    AuditNote,
    Change,
    ClearDecay,
    CloseConflict,
    CloseInterval,
    Effects,
    MarkDecayed,
    MoveConflicts,
    MoveFact,
    NewFact,
    OpenConflict,
    PointAt,
    Reinforce,
    Reopen,
    ReopenConflict,
    moot_effects,
)
from memories.store.lookups import hot_cursor
from memories.store.models import AuditEntry, Conflict, ConflictMember, Fact
from memories.store.vocabulary import LoadedVocabulary

Slot = tuple[int, int, int]  # scope, subject, predicate ids

# --- one write at a time -------------------------------------------------------------


@dataclass
class Applied:
    """What :func:`do_apply` wrote that its caller may show: conflicts opened, closed as moot.

    ``touched``: the truth slots its changes touched, for the caller to have
    recomputed on commit.
    """

    opened: list[Conflict] = field(default_factory=list)
    closed_moot: list[UUID] = field(default_factory=list)
    touched: set[Slot] = field(default_factory=set)


def do_apply(effects: Effects) -> Applied:
    """Write ``effects`` in order in the current transaction, then close what became moot.

    The caller holds the locks its decision was taken under (the slot's).
    """
    applied = Applied()
    with hot_cursor() as cursor:
        for change in effects.changes:
            _apply_one(cursor, change, applied, applied.touched)
    if effects.check_moot:
        _close_moot(effects.check_moot, effects.now, applied, applied.touched)
    return applied


def _apply_one(cursor, change: Change, applied: Applied, slots: set[Slot]) -> None:
    kind = type(change)
    if kind is NewFact:
        cursor.execute(_INSERT_FACT, _fact_values(change), prepare=True)
        slots.add((change.scope_id, change.subject_id, change.predicate_id))
    elif kind is Reinforce:
        cursor.execute(
            _REINFORCE,
            [
                change.last_reinforced_at,
                change.confidence,
                change.source_type_id,
                Jsonb([item.as_dict() for item in change.evidence]),
                change.fact_id,
            ],
            prepare=True,
        )
        slots.update(cursor.fetchall())
    elif kind is CloseInterval:
        cursor.execute(_CLOSE, [*change[1:], change.fact_id], prepare=True)
        slots.update(cursor.fetchall())
    elif kind is MoveFact:
        # Both slots change: the one the fact leaves and the one it joins.
        slots.update(Fact.objects.filter(pk=change.fact_id).values_list(*_SLOT_COLUMNS.split(", ")))
        cursor.execute(
            _MOVE, [change.subject_id, change.object_ref_id, change.object_key, change.fact_id]
        )
        slots.update(cursor.fetchall())
    elif kind is MoveConflicts:
        Conflict.objects.filter(scope_id=change.scope_id, subject_id=change.subject_id).update(
            subject_id=change.into_id
        )
    elif kind is PointAt:
        cursor.execute(_POINT_AT, [change.superseded_by, change.fact_id])
    elif kind is Reopen:
        cursor.execute(_REOPEN, [change.fact_id])
        slots.update(cursor.fetchall())
    elif kind is MarkDecayed:
        # An annotation: the fact's values and interval are untouched, so its
        # truth slot has nothing to recompute.
        cursor.execute(_MARK_DECAYED, [change.at, change.fact_id])
    elif kind is OpenConflict:
        conflict = Conflict.objects.create(
            id=change.id,
            scope_id=change.scope_id,
            kind=change.kind,
            subject_id=change.subject_id,
            predicate_id=change.predicate_id,
            opened_at=change.opened_at,
        )
        ConflictMember.objects.bulk_create(
            ConflictMember(
                conflict=conflict,
                fact_id=m.fact_id,
                scope_id=change.scope_id,
                role=m.role,
                disputes=m.disputes,
            )
            for m in change.members
        )
        applied.opened.append(conflict)
    elif kind is CloseConflict:
        Conflict.objects.filter(pk=change.id).update(
            resolution=change.resolution,
            resolved_at=change.at,
            resolved_by_id=change.resolved_by,
            reason=change.reason,
        )
        if change.kept is not None:
            members = list(ConflictMember.objects.filter(conflict_id=change.id))
            for member in members:
                member.kept = member.fact_id in change.kept
            ConflictMember.objects.bulk_update(members, ["kept"])
    elif kind is AuditNote:
        AuditEntry.objects.create(**change._asdict())
    elif kind is ClearDecay:
        # Like a mark, an annotation: no truth slot to recompute.
        Fact.objects.filter(pk=change.fact_id).update(decayed_at=None, decay_reverted_at=change.at)
    elif kind is ReopenConflict:
        Conflict.objects.filter(pk=change.id).update(
            resolution="", resolved_at=None, resolved_by=None, reason="", reopened_at=change.at
        )
        ConflictMember.objects.filter(conflict_id=change.id).update(kept=None)
        # Its members are disputed again: the slot's current truth changes.
        slots.update(
            Conflict.objects.filter(pk=change.id).values_list(
                "scope_id", "subject_id", "predicate_id"
            )
        )
    else:
        raise TypeError(f"not an effect: {change!r}")


def _close_moot(
    fact_ids: tuple[UUID, ...], now: datetime | None, applied: Applied, slots: set[Slot]
) -> None:
    """Close, at ``now``, the open conflicts of these facts that lost a side (read locked)."""
    conflicts = list(
        Conflict.objects.open()
        .filter(pk__in=ConflictMember.objects.filter(fact_id__in=list(fact_ids)).values("conflict"))
        .select_for_update()
        .prefetch_related("members__fact")
        .order_by("opened_at", "id")
    )
    with hot_cursor() as cursor:
        for conflict in conflicts:
            members = [(m.role, m.fact.is_live) for m in conflict.members.all()]
            closing = moot_effects(conflict.pk, conflict.scope_id, members, now=now)
            for change in closing:
                _apply_one(cursor, change, applied, slots)
            if closing:
                applied.closed_moot.append(conflict.pk)


def _fact_values(fact: NewFact) -> list[Any]:
    values = list(fact)
    values[_EVIDENCE] = Jsonb([item.as_dict() for item in fact.evidence])
    return values


_EVIDENCE = NewFact._fields.index("evidence")
_FACTS = Fact._meta.db_table
# Prepared once per connection: the write path's hot INSERT. The columns not
# named take their defaults: a new fact is not closed by anyone yet.
_INSERT_FACT = (
    f"INSERT INTO {_FACTS} ({', '.join(NewFact._fields)}, invalidated_at, invalidated_by_id,"
    " invalidation_kind, invalidation_reason, superseded_by_id)"
    f" VALUES ({', '.join(['%s'] * len(NewFact._fields))}, NULL, NULL, '', '', NULL)"
)
_SLOT_COLUMNS = "scope_id, subject_id, predicate_id"
_REINFORCE = (
    f"UPDATE {_FACTS} SET last_reinforced_at = %s, confidence = %s, source_type_id = %s,"
    f" evidence = %s WHERE id = %s RETURNING {_SLOT_COLUMNS}"
)
# Only a live fact closes: a fact already ended keeps the end it has.
_CLOSE = (
    f"UPDATE {_FACTS} SET t_invalid = %s, invalidated_at = %s, invalidation_kind = %s,"
    " invalidation_reason = %s, superseded_by_id = %s, invalidated_by_id = %s"
    f" WHERE id = %s AND t_invalid IS NULL RETURNING {_SLOT_COLUMNS}"
)
# A later mark replaces an earlier one: the fact was reinforced in between.
_MARK_DECAYED = f"UPDATE {_FACTS} SET decayed_at = %s WHERE id = %s"
_MOVE = (
    f"UPDATE {_FACTS} SET subject_id = %s, object_ref_id = %s, object_key = %s"
    f" WHERE id = %s RETURNING {_SLOT_COLUMNS}"
)
_POINT_AT = f"UPDATE {_FACTS} SET superseded_by_id = %s WHERE id = %s"
_REOPEN = (
    f"UPDATE {_FACTS} SET t_invalid = NULL, invalidated_at = NULL, invalidated_by_id = NULL,"
    " invalidation_kind = '', invalidation_reason = '', superseded_by_id = NULL"
    f" WHERE id = %s RETURNING {_SLOT_COLUMNS}"
)


# --- many independent decisions at once ---------------------------------------------


def do_apply_many(batch: Iterable[Effects]) -> Applied:
    """Write the effects of many independent decisions set-wise: :func:`do_apply`'s end state.

    For background maintenance (the crawler), whose decisions are each on a
    slot of their own, taken under that slot's lock (held by the caller), so
    no change of one can meet another's. The decay marks and the closed
    intervals are one UPDATE each; the new conflicts, their members and the
    audit entries one COPY each, in the batch's order. Then, as
    :func:`do_apply` does, the open conflicts of the facts that stopped being
    live are weighed and closed if moot (their audit entries come after the
    batch's). Only the kinds such decisions make: any other raises
    ``TypeError``.
    """
    marks: list[MarkDecayed] = []
    closes: list[CloseInterval] = []
    conflicts: list[OpenConflict] = []
    notes: list[AuditNote] = []
    moot: dict[datetime | None, list[UUID]] = {}
    by_kind: dict[type, list] = {
        MarkDecayed: marks,
        CloseInterval: closes,
        OpenConflict: conflicts,
        AuditNote: notes,
    }
    for effects in batch:
        for change in effects.changes:
            wanted = by_kind.get(type(change))
            if wanted is None:
                raise TypeError(f"apply_many does not apply {change!r}")
            wanted.append(change)
        if effects.check_moot:
            moot.setdefault(effects.now, []).extend(effects.check_moot)
    applied = Applied()
    with hot_cursor() as cursor:
        if marks:
            ids = [mark.fact_id for mark in marks]
            cursor.execute(_MARK_DECAYED_MANY, [ids, [mark.at for mark in marks], ids])
        if closes:
            ids = [close.fact_id for close in closes]
            cursor.execute(
                _CLOSE_MANY,
                [ids, *([getattr(c, name) for c in closes] for name in _CLOSE_FIELDS), ids],
            )
            applied.touched.update(cursor.fetchall())
    _copy_conflicts([(c, None) for c in conflicts])
    applied.opened.extend(
        Conflict(
            id=c.id,
            kind=c.kind,
            scope_id=c.scope_id,
            subject_id=c.subject_id,
            predicate_id=c.predicate_id,
            opened_at=c.opened_at,
        )
        for c in conflicts
    )
    _insert_audit(notes)
    for now, fact_ids in moot.items():
        _close_moot(tuple(fact_ids), now, applied, applied.touched)
    return applied


# The ids again as a condition on the table itself, so that PostgreSQL finds
# the rows by primary key (as in _update_standing below).
_MARK_DECAYED_MANY = (
    f"UPDATE {_FACTS} AS f SET decayed_at = u.at"
    " FROM unnest(%b::uuid[], %b::timestamptz[]) AS u(id, at)"
    " WHERE f.id = u.id AND f.id = ANY(%b::uuid[])"
)
_CLOSE_FIELDS = ("at", "now", "kind", "reason", "superseded_by", "invalidated_by")
# Only a live fact closes, as in _CLOSE.
_CLOSE_MANY = (
    f"UPDATE {_FACTS} AS f SET t_invalid = u.at, invalidated_at = u.now,"
    " invalidation_kind = u.kind, invalidation_reason = u.reason,"
    " superseded_by_id = u.superseded_by, invalidated_by_id = u.invalidated_by"
    " FROM unnest(%b::uuid[], %b::timestamptz[], %b::timestamptz[], %b::text[], %b::text[],"
    "             %b::uuid[], %b::int4[])"
    "   AS u(id, at, now, kind, reason, superseded_by, invalidated_by)"
    " WHERE f.id = u.id AND f.id = ANY(%b::uuid[]) AND f.t_invalid IS NULL"
    " RETURNING f.scope_id, f.subject_id, f.predicate_id"
)


# --- set-wise ------------------------------------------------------------------------


@dataclass(slots=True)
class FactState:
    """A fact of a batch's slots as the batch sees it, loaded or written by it."""

    id: UUID
    scope_id: int
    subject_id: int
    predicate: str
    object_kind: str
    object_key: str
    epistemic: str
    source_type: str
    confidence: float
    t_valid: datetime
    t_invalid: datetime | None
    # A loaded fact's evidence stays JSON text until a line needs it.
    evidence: tuple[Evidence, ...] | str
    bucket: str
    author_id: int
    last_reinforced_at: datetime
    # A system fact no steward has admitted (decisions.StandingFact.candidate).
    candidate: bool = False
    new: bool = False
    changed: bool = False
    # Only for new facts: the row as created (written whole, in its end state).
    row: NewFact | None = None
    invalidated_at: datetime | None = None
    invalidated_by: int | None = None
    invalidation_kind: str = ""
    invalidation_reason: str = ""
    superseded_by: UUID | None = None
    seen: StandingFact | None = None

    def standing(self) -> StandingFact:
        """The decision's view of this fact, built once until the fact changes."""
        if self.seen is not None:
            return self.seen
        if isinstance(self.evidence, str):
            self.evidence = tuple(Evidence(**item) for item in json.loads(self.evidence))
        self.seen = StandingFact(
            id=self.id,
            predicate=self.predicate,
            object_kind=self.object_kind,
            object_key=self.object_key,
            epistemic=self.epistemic,
            source_type=self.source_type,
            confidence=self.confidence,
            t_valid=self.t_valid,
            t_invalid=self.t_invalid,
            evidence=self.evidence,
            candidate=self.candidate,
        )
        return self.seen


@dataclass
class ConflictState:
    id: UUID
    scope_id: int
    opened_at: datetime
    members: list[tuple[str, UUID]]  # (role, fact id)
    new: bool = False
    row: OpenConflict | None = None
    closed: CloseConflict | None = None


class Slots:
    """The batch's facts indexed the ways the decision needs them."""

    def __init__(self) -> None:
        self.by_value: dict[tuple, list[FactState]] = {}
        self.live_by_predicate: dict[tuple, list[FactState]] = {}
        self.facts: dict[UUID, FactState] = {}

    def add(self, fact: FactState) -> None:
        self.facts[fact.id] = fact
        base = (fact.scope_id, fact.subject_id, fact.bucket)
        key = (*base, fact.predicate, fact.object_kind, fact.object_key)
        self.by_value.setdefault(key, []).append(fact)
        if fact.t_invalid is None:
            self.live_by_predicate.setdefault((*base, fact.predicate), []).append(fact)

    def close(self, fact: FactState) -> None:
        base = (fact.scope_id, fact.subject_id, fact.bucket, fact.predicate)
        live = self.live_by_predicate.get(base)
        if live is not None and fact in live:
            live.remove(fact)


class SetApplier:
    """Folds many Effects into a batch's in-memory state, then writes it set-wise.

    ``slots`` and ``conflicts`` are what the batch loaded under its locks:
    every fact its lines can meet and the open conflicts those are in;
    ``ended_elsewhere``: members of those conflicts, outside the loaded facts,
    that are no longer live.
    """

    def __init__(
        self,
        *,
        vocab: LoadedVocabulary,
        slots: Slots,
        conflicts: dict[UUID, ConflictState],
        ended_elsewhere: set[UUID],
    ) -> None:
        self.vocab = vocab
        self.slots = slots
        self.conflicts = conflicts
        self.ended_elsewhere = ended_elsewhere
        self.conflicts_of: dict[UUID, list[ConflictState]] = {}
        for conflict in conflicts.values():
            self._index(conflict)
        self.new_conflicts: list[ConflictState] = []
        self.audit: list[AuditNote] = []
        self.touched: set[Slot] = set()

    def fold(self, effects: Effects) -> None:
        """Apply ``effects`` to the in-memory state, as :func:`do_apply` would to the rows."""
        for change in effects.changes:
            self._fold_one(change)
        if effects.check_moot:
            self._close_moot(effects.check_moot, effects.now)

    def _fold_one(self, change: Change) -> None:
        kind = type(change)
        if kind is NewFact:
            self._new_fact(change)
        elif kind is AuditNote:
            self.audit.append(change)
        elif kind is CloseInterval:
            fact = self.slots.facts[change.fact_id]
            if fact.t_invalid is not None:
                return
            self.slots.close(fact)
            fact.t_invalid = change.at
            fact.invalidated_at = change.now
            fact.invalidation_kind = change.kind
            fact.invalidation_reason = change.reason
            fact.superseded_by = change.superseded_by
            fact.invalidated_by = change.invalidated_by
            self._changed(fact)
        elif kind is Reinforce:
            fact = self.slots.facts[change.fact_id]
            fact.last_reinforced_at = change.last_reinforced_at
            fact.confidence = change.confidence
            fact.source_type = self.vocab.source_names[change.source_type_id]
            fact.evidence = change.evidence
            self._changed(fact)
        elif kind is OpenConflict:
            conflict = ConflictState(
                change.id,
                change.scope_id,
                change.opened_at,
                [(m.role, m.fact_id) for m in change.members],
                new=True,
                row=change,
            )
            self.conflicts[conflict.id] = conflict
            self.new_conflicts.append(conflict)
            self._index(conflict)
        elif kind is CloseConflict:
            if change.kept is not None:
                raise ValueError("the set-wise back end does not record kept members")
            self.conflicts[change.id].closed = change
        else:
            # Reopen, PointAt, MarkDecayed: withdrawals, corrections and the
            # crawler, never batched.
            raise TypeError(f"the set-wise back end does not apply {change!r}")

    def _new_fact(self, row: NewFact) -> None:
        self.slots.add(
            FactState(
                id=row.id,
                scope_id=row.scope_id,
                subject_id=row.subject_id,
                predicate=self.vocab.predicate_names[row.predicate_id],
                object_kind=row.object_kind,
                object_key=row.object_key,
                epistemic=row.epistemic,
                source_type=self.vocab.source_names[row.source_type_id],
                confidence=row.confidence,
                t_valid=row.t_valid,
                t_invalid=row.t_invalid,
                evidence=row.evidence,
                bucket=row.bucket,
                author_id=row.author_id,
                last_reinforced_at=row.last_reinforced_at,
                # Written just now, so no verdict admits it yet.
                candidate=row.bucket == "system",
                new=True,
                row=row,
            )
        )
        self.touched.add((row.scope_id, row.subject_id, row.predicate_id))

    def _changed(self, fact: FactState) -> None:
        fact.changed = True
        fact.seen = None
        if not fact.new:
            predicate_id = self.vocab.predicates[fact.predicate].pk
            self.touched.add((fact.scope_id, fact.subject_id, predicate_id))

    def _index(self, conflict: ConflictState) -> None:
        for _, fact_id in conflict.members:
            self.conflicts_of.setdefault(fact_id, []).append(conflict)

    def _close_moot(self, fact_ids: Iterable[UUID], now: datetime | None) -> None:
        affected = {
            conflict.id: conflict
            for fact_id in fact_ids
            for conflict in self.conflicts_of.get(fact_id, ())
            if conflict.closed is None
        }.values()
        for conflict in sorted(affected, key=lambda c: (c.opened_at, str(c.id))):
            members = [(role, self._live(fact_id)) for role, fact_id in conflict.members]
            for change in moot_effects(conflict.id, conflict.scope_id, members, now=now):
                self._fold_one(change)

    def _live(self, fact_id: UUID) -> bool:
        fact = self.slots.facts.get(fact_id)
        if fact is None:
            return fact_id not in self.ended_elsewhere
        return fact.t_invalid is None

    def flush(self) -> None:
        """Write the batch's end state (its slots are in ``touched`` for the caller).

        Standing facts first (one UPDATE): a supersession closes the old fact
        before the new one with the same value may be live, and the unique
        live-value index checks each row as it is written. Then the new facts
        (one COPY), whose ``superseded_by`` may point at a fact later in the
        COPY: that foreign key is checked at commit. Then conflicts and their
        members, then the audit entries in the order they happened.
        """
        facts = list(self.slots.facts.values())
        _update_standing([f for f in facts if f.changed and not f.new], self.vocab)
        _insert_new([f for f in facts if f.new], self.vocab)
        _write_conflicts(
            self.new_conflicts,
            [c for c in self.conflicts.values() if not c.new and c.closed is not None],
        )
        _insert_audit(self.audit)


# Every statement below runs on ``lookups.hot_cursor`` (Django's connection,
# so the batch's transaction, with parameters bound by the server): Django's
# own cursors would quote every element of the batch's thousand-id arrays into
# the SQL text. The arrays go as ``%b`` (binary), which psycopg writes without
# checking every element for quoting. The COPYs are binary for the same reason,
# both ways: neither side formats or parses UUIDs, timestamps and numbers as text.


def _update_standing(facts: list[FactState], vocab: LoadedVocabulary) -> None:
    """One UPDATE for every standing fact the batch reinforced or closed."""
    if not facts:
        return
    source_ids = {name: row.pk for name, row in vocab.sources.items()}
    with hot_cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE {_FACTS} AS f SET
                last_reinforced_at = u.last_reinforced_at,
                confidence = u.confidence,
                source_type_id = u.source_type_id,
                evidence = u.evidence::jsonb,
                t_invalid = u.t_invalid,
                invalidated_at = u.invalidated_at,
                invalidated_by_id = u.invalidated_by_id,
                invalidation_kind = u.invalidation_kind,
                invalidation_reason = u.invalidation_reason,
                superseded_by_id = u.superseded_by_id
              FROM unnest(%b::uuid[], %b::timestamptz[], %b::float8[], %b::bigint[],
                          %b::text[], %b::timestamptz[], %b::timestamptz[], %b::int4[],
                          %b::text[], %b::text[], %b::uuid[])
                AS u(id, last_reinforced_at, confidence, source_type_id, evidence,
                     t_invalid, invalidated_at, invalidated_by_id, invalidation_kind,
                     invalidation_reason, superseded_by_id)
             WHERE f.id = u.id AND f.id = ANY(%b::uuid[])
            """,
            [
                [f.id for f in facts],
                [f.last_reinforced_at for f in facts],
                [f.confidence for f in facts],
                [source_ids[f.source_type] for f in facts],
                [_evidence_json(f.evidence) for f in facts],
                [f.t_invalid for f in facts],
                [f.invalidated_at for f in facts],
                [f.invalidated_by for f in facts],
                [f.invalidation_kind for f in facts],
                [f.invalidation_reason for f in facts],
                [f.superseded_by for f in facts],
                # The ids again, as a condition on the table itself: PostgreSQL
                # then finds the rows by primary key. Joined only to the unnest,
                # it scans the whole table whenever its statistics are stale (as
                # in the middle of a large import).
                [f.id for f in facts],
            ],
        )


def _insert_new(facts: list[FactState], vocab: LoadedVocabulary) -> None:
    """One COPY for every fact the batch created, in its end state."""
    if not facts:
        return
    source_ids = {name: row.pk for name, row in vocab.sources.items()}
    with hot_cursor() as cursor, cursor.copy(_COPY_FACTS) as copy:
        # Declared once, so each value is not looked at to find how to send it.
        copy.set_types(_FACT_TYPES)
        for f in facts:
            row = f.row
            assert row is not None
            copy.write_row(
                (
                    *row[:9],
                    source_ids[f.source_type],
                    f.confidence,
                    row.episode,
                    row.statement,
                    [item.as_dict() for item in f.evidence],
                    row.author_id,
                    row.bucket,
                    row.t_valid,
                    f.t_invalid,
                    row.recorded_at,
                    f.last_reinforced_at,
                    f.invalidated_at,
                    f.invalidated_by,
                    f.invalidation_kind,
                    f.invalidation_reason,
                    f.superseded_by,
                )
            )


def _insert_audit(rows: list[AuditNote]) -> None:
    """One COPY for the batch's audit entries, in the order they happened (ids follow it)."""
    if not rows:
        return
    with hot_cursor() as cursor, cursor.copy(_COPY_AUDIT) as copy:
        copy.set_types(_AUDIT_TYPES)
        for row in rows:
            copy.write_row(row)


def _write_conflicts(new: list[ConflictState], closed: list[ConflictState]) -> None:
    """The batch's new conflicts with their members, and the standing ones it closed."""
    opened = []
    for c in new:
        assert c.row is not None
        opened.append((c.row, c.closed))
    _copy_conflicts(opened)
    if closed:
        # One statement for all of them, each closed at its own line's instant.
        with hot_cursor() as cursor:
            cursor.execute(
                f"""
                UPDATE {Conflict._meta.db_table} AS c
                   SET resolution = u.resolution, reason = u.reason,
                       resolved_at = u.resolved_at, resolved_by_id = u.resolved_by_id
                  FROM unnest(%b::uuid[], %b::timestamptz[], %b::int4[], %b::text[],
                              %b::text[])
                    AS u(id, resolved_at, resolved_by_id, resolution, reason)
                 WHERE c.id = u.id AND c.id = ANY(%b::uuid[])
                """,
                [
                    [c.id for c in closed],
                    *([getattr(c.closed, name) for c in closed] for name in _CLOSING),
                    [c.id for c in closed],
                ],
            )


_CLOSING = ("at", "resolved_by", "resolution", "reason")


def _copy_conflicts(opened: list[tuple[OpenConflict, CloseConflict | None]]) -> None:
    """One COPY for new conflicts (each closed already if its batch closed it), one for members.

    COPY rather than the ORM's bulk INSERT: an import batch opens hundreds.
    """
    if not opened:
        return
    with hot_cursor() as cursor:
        with cursor.copy(_COPY_CONFLICTS) as copy:
            copy.set_types(_CONFLICT_TYPES)
            for row, end in opened:
                copy.write_row(
                    (
                        *row[:6],
                        end.at if end else None,
                        end.resolved_by if end else None,
                        end.resolution if end else "",
                        end.reason if end else "",
                    )
                )
        with cursor.copy(_COPY_MEMBERS) as copy:
            copy.set_types(_MEMBER_TYPES)
            for row, _end in opened:
                for member in row.members:
                    copy.write_row((row.id, row.scope_id, *member))


def _evidence_json(evidence: tuple[Evidence, ...] | str) -> str:
    if isinstance(evidence, str):  # loaded and never touched: as it was
        return evidence
    return json.dumps([item.as_dict() for item in evidence])


_FACT_COLUMNS = (
    *NewFact._fields[:19],
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
_COPY_FACTS = f"COPY {_FACTS} ({', '.join(_FACT_COLUMNS)}) FROM STDIN (FORMAT BINARY)"
# In the field order of AuditNote, so a note is written as it is.
_COPY_AUDIT = (
    f"COPY {AuditEntry._meta.db_table} ({', '.join(AuditNote._fields)}) FROM STDIN (FORMAT BINARY)"
)
_AUDIT_TYPES = [
    "timestamptz",  # at
    "int8",  # scope_id
    "text",  # action
    "text",  # target_type
    "text",  # target_id
    "jsonb",  # before
    "jsonb",  # after
    "text",  # reason
    "text",  # rule
    "int4",  # actor_id
]
_COPY_CONFLICTS = (
    f"COPY {Conflict._meta.db_table} (id, kind, scope_id, subject_id, predicate_id, opened_at,"
    " resolved_at, resolved_by_id, resolution, reason) FROM STDIN (FORMAT BINARY)"
)
_CONFLICT_TYPES = [
    "uuid",  # id
    "text",  # kind
    "int8",  # scope_id
    "int8",  # subject_id
    "int8",  # predicate_id
    "timestamptz",  # opened_at
    "timestamptz",  # resolved_at
    "int4",  # resolved_by_id
    "text",  # resolution
    "text",  # reason
]
_COPY_MEMBERS = (
    f"COPY {ConflictMember._meta.db_table} (conflict_id, scope_id, fact_id, role, disputes)"
    " FROM STDIN (FORMAT BINARY)"
)
_MEMBER_TYPES = ["uuid", "int8", "uuid", "text", "bool"]
