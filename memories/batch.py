"""One batch of an import, decided in memory and written set-wise (see ``memories.ingest``).

The batch loads every fact its lines can collide with (and the open
conflicts those facts are in) once, after ``memories.ingest`` has taken the
slot locks; then it runs ``decisions.decide`` line by line, folding each
outcome into its copy of the slots exactly as a commit would, so the tenth
line of a slot sees what the ninth wrote; then it writes the end state: one
UPDATE for standing facts that changed, a COPY for new facts, then
conflicts, members and audit entries, the same rows and entries
``actions.assert_fact`` would have written one line at a time.
"""

import json
import os
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from django.conf import settings

from memories import batch_writes as writes
from memories.core import decisions
from memories.core.decisions import Assertion, Evidence, StandingFact
from memories.lookups import hot_cursor
from memories.models import (
    Conflict,
    ConflictMember,
    Fact,
    MemberRole,
    Resolution,
)
from memories.vocabulary import LoadedVocabulary


class LineOutcome(NamedTuple):
    """What became of one line. A named tuple: a large import makes one per line and
    sends each from a worker process, and a tuple is the cheapest to build and send."""

    line: int
    status: str  # created | reinforced | superseded | flagged | rejected
    reason: str | None = None
    fact_id: UUID | None = None
    candidates: tuple[UUID, ...] = ()
    superseded: tuple[UUID, ...] = ()
    conflict_id: UUID | None = None
    field: str | None = None


def rejected(number: int, field_name: str, message: str) -> LineOutcome:
    return LineOutcome(line=number, status="rejected", reason=message, field=field_name)


# --- per-line state ------------------------------------------------------------------


@dataclass
class Line:
    number: int
    assertion: Assertion
    scope_id: int
    now: datetime
    subject_id: int = 0
    object_ref_id: int | None = None
    object_key: str = ""

    # A worker process is sent its lines as plain tuples: pickling the
    # dataclasses costs several times more than building them again.

    def as_tuple(self) -> tuple:
        a = self.assertion
        return (
            self.number,
            self.scope_id,
            self.now,
            self.subject_id,
            self.object_ref_id,
            self.object_key,
            a.scope,
            a.subject,
            a.predicate,
            a.object,
            a.object_kind,
            a.epistemic,
            a.epistemic_stated,
            a.source_type,
            a.confidence,
            a.t_valid,
            a.t_invalid,
            a.episode,
            a.statement,
            tuple((item.ref, item.quote) for item in a.evidence),
            a.bucket,
        )

    @classmethod
    def from_tuple(cls, values: tuple) -> "Line":
        (number, scope_id, now, subject_id, object_ref_id, object_key, *fields) = values
        fields[13] = tuple(Evidence(ref, quote) for ref, quote in fields[13])
        return cls(number, Assertion(*fields), scope_id, now, subject_id, object_ref_id, object_key)


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
    new: bool = False
    changed: bool = False
    # Only for new facts (written whole) and for closing standing ones.
    row: dict[str, Any] | None = None
    invalidated_at: datetime | None = None
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
        )
        return self.seen


@dataclass
class ConflictState:
    id: UUID
    scope_id: int
    opened_at: datetime
    members: list[tuple[str, UUID]]  # (role, fact id)
    new: bool = False
    row: dict[str, Any] | None = None
    closed_at: datetime | None = None


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
        self.live_by_predicate[base].remove(fact)

    def standing_for(self, line: Line, vocab: LoadedVocabulary, actor) -> list[StandingFact]:
        """The facts ``decide`` needs for this line: what ``actions._standing_facts`` reads."""
        a = line.assertion
        base = (line.scope_id, line.subject_id, a.bucket)
        spec = vocab.spec.predicates[a.predicate]

        def mine(fact: FactState) -> bool:
            return a.bucket != "user" or fact.author_id == actor.pk

        found: dict[UUID, FactState] = {}
        for fact in self.by_value.get((*base, a.predicate, a.object_kind, line.object_key), ()):
            found[fact.id] = fact
        low_trust = vocab.spec.sources[a.source_type].trust_rank < settings.CLAIMGRAPH_TRUSTED_RANK
        if (spec.cardinality == "one" and not spec.event_like) or low_trust:
            for fact in self.live_by_predicate.get((*base, a.predicate), ()):
                found[fact.id] = fact
        if spec.exclusion_group:
            for name in vocab.spec.slot_predicates(a.predicate):
                for fact in self.by_value.get((*base, name, a.object_kind, line.object_key), ()):
                    if fact.t_invalid is None:
                        found[fact.id] = fact
        return [fact.standing() for fact in found.values() if mine(fact)]


def decide_and_write(lines: list["Line"], *, actor, vocab: LoadedVocabulary):
    """Decide ``lines`` in order against the store (under their slot locks) and write the result.

    Returns each line's outcome, and whether any line was refused only now
    (its interval ending before the time it was read at).
    """
    slots = load_slots(lines, vocab)
    conflicts, ended_elsewhere = load_open_conflicts(slots)
    writer = BatchWriter(
        actor=actor, vocab=vocab, slots=slots, conflicts=conflicts, ended=ended_elsewhere
    )
    outcomes = [(line.number, writer.decide(line)) for line in lines]
    writer.flush()
    return outcomes, writer.rejected_late


# --- loading the slots -----------------------------------------------------------------


def load_slots(lines: list[Line], vocab: LoadedVocabulary) -> Slots:
    """Every fact any line of the batch can meet, as ``actions._standing_facts`` reads them.

    For each line: the facts with its value under its predicate or another
    of its exclusion group, live or not; and every live value of its
    predicate when that predicate holds one value at a time (or the writer is
    low-trust, for the revenant rule). A busy ``many`` slot's other values
    are not read: no rule looks at them.
    """
    settings_rank = settings.CLAIMGRAPH_TRUSTED_RANK
    predicate_ids = {name: row.pk for name, row in vocab.predicates.items()}
    values: set[tuple[int, int, int, str, str]] = set()
    every_value: set[tuple[int, int, int]] = set()
    for line in lines:
        a = line.assertion
        scope_id = line.scope_id
        for name in vocab.spec.slot_predicates(a.predicate):
            values.add(
                (
                    scope_id,
                    line.subject_id,
                    predicate_ids[name],
                    a.object_kind,
                    line.object_key,
                )
            )
        spec = vocab.spec.predicates[a.predicate]
        low_trust = vocab.spec.sources[a.source_type].trust_rank < settings_rank
        if (spec.cardinality == "one" and not spec.event_like) or low_trust:
            every_value.add((scope_id, line.subject_id, predicate_ids[a.predicate]))

    slots = Slots()
    columns = (
        "f.id, f.scope_id, f.subject_id, f.predicate_id, f.object_kind, f.object_key,"
        " f.epistemic, f.source_type_id, f.confidence, f.t_valid, f.t_invalid,"
        " f.evidence::text, f.bucket, f.author_id, f.last_reinforced_at, f.recorded_at"
    )
    value_rows, slot_rows = sorted(values), sorted(every_value)
    with hot_cursor() as cursor:
        # One probe of the (scope, subject, predicate) index per wanted key,
        # whatever the table's statistics say: OFFSET 0 keeps each LATERAL
        # subquery from being flattened into a join that PostgreSQL may turn
        # into a scan of the whole table when its estimates are stale (as
        # they are in the middle of a large import). A fact both parts find
        # comes twice and is kept once below.
        cursor.execute(
            f"""
            SELECT * FROM (
                SELECT f.* FROM unnest(%b::bigint[], %b::bigint[], %b::bigint[], %b::text[],
                                       %b::text[])
                       AS w(scope_id, subject_id, predicate_id, object_kind, object_key)
                 CROSS JOIN LATERAL (
                       SELECT {columns} FROM {Fact._meta.db_table} f
                        WHERE f.scope_id = w.scope_id AND f.subject_id = w.subject_id
                          AND f.predicate_id = w.predicate_id
                          AND f.object_kind = w.object_kind AND f.object_key = w.object_key
                       OFFSET 0) AS f
                UNION ALL
                SELECT f.* FROM unnest(%b::bigint[], %b::bigint[], %b::bigint[])
                       AS w(scope_id, subject_id, predicate_id)
                 CROSS JOIN LATERAL (
                       SELECT {columns} FROM {Fact._meta.db_table} f
                        WHERE f.scope_id = w.scope_id AND f.subject_id = w.subject_id
                          AND f.predicate_id = w.predicate_id AND f.t_invalid IS NULL
                       OFFSET 0) AS f
            ) AS found
            ORDER BY recorded_at, id
            """,
            [
                *([row[k] for row in value_rows] for k in range(5)),
                *([row[k] for row in slot_rows] for k in range(3)),
            ],
        )
        for row in cursor.fetchall():
            if row[0] in slots.facts:
                continue
            slots.add(
                FactState(
                    id=row[0],
                    scope_id=row[1],
                    subject_id=row[2],
                    predicate=vocab.predicate_names[row[3]],
                    object_kind=row[4],
                    object_key=row[5],
                    epistemic=row[6],
                    source_type=vocab.source_names[row[7]],
                    confidence=row[8],
                    t_valid=row[9],
                    t_invalid=row[10],
                    evidence=row[11],
                    bucket=row[12],
                    author_id=row[13],
                    last_reinforced_at=row[14],
                )
            )
    return slots


def load_open_conflicts(slots: Slots) -> tuple[dict[UUID, ConflictState], set[UUID]]:
    """Open conflicts with a live member among the loaded facts, locked as assert_fact would.

    Also answers which of their members outside the loaded facts are no
    longer live, so closing a conflict as moot can weigh every member.
    """
    conflicts: dict[UUID, ConflictState] = {}
    ended_elsewhere: set[UUID] = set()
    member_table = ConflictMember._meta.db_table
    live = [fact.id for fact in slots.facts.values() if fact.t_invalid is None]
    if not live:
        return conflicts, ended_elsewhere
    with hot_cursor() as cursor:
        # Only a loaded live fact can be superseded by the batch, so only
        # its conflicts can become moot: their ids found first through the
        # members' fact index (an ARRAY subquery, so PostgreSQL cannot turn
        # it into a walk over every open conflict), then read by key.
        cursor.execute(
            f"""
            SELECT c.id, c.scope_id, c.opened_at FROM {Conflict._meta.db_table} c
             WHERE c.resolved_at IS NULL
               AND c.id = ANY(ARRAY(SELECT m.conflict_id FROM {member_table} m
                                     WHERE m.fact_id = ANY(%b::uuid[])))
             ORDER BY c.id
               FOR UPDATE
            """,
            [live],
        )
        for conflict_id, scope_id, opened_at in cursor.fetchall():
            conflicts[conflict_id] = ConflictState(conflict_id, scope_id, opened_at, [])
        if not conflicts:
            return conflicts, ended_elsewhere
        cursor.execute(
            f"""
            SELECT m.conflict_id, m.role, m.fact_id, f.t_invalid IS NULL
              FROM {member_table} m JOIN {Fact._meta.db_table} f ON f.id = m.fact_id
             WHERE m.conflict_id = ANY(%b)
             ORDER BY m.id
            """,
            [list(conflicts)],
        )
        for conflict_id, role, fact_id, is_live in cursor.fetchall():
            conflicts[conflict_id].members.append((role, fact_id))
            if fact_id not in slots.facts and not is_live:
                ended_elsewhere.add(fact_id)
    return conflicts, ended_elsewhere


# --- deciding and writing ---------------------------------------------------------------


class BatchWriter:
    """Decides the batch's lines in order and collects the rows that record them."""

    def __init__(
        self,
        *,
        actor,
        vocab: LoadedVocabulary,
        slots: Slots,
        conflicts: dict[UUID, ConflictState],
        ended: set[UUID],
    ) -> None:
        self.actor = actor
        self.actor_id = actor.pk
        self.ended_elsewhere = ended
        self.conflicts_of: dict[UUID, list[ConflictState]] = {}
        for conflict in conflicts.values():
            self._index(conflict)
        self.vocab = vocab
        self.slots = slots
        self.conflicts = conflicts
        self.new_conflicts: list[ConflictState] = []
        self.audit: list[writes.AuditRow] = []
        self.rejected_late = False
        self.trusted_rank = settings.CLAIMGRAPH_TRUSTED_RANK
        self._random = b""
        self._taken = 0

    def _new_id(self) -> UUID:
        """A random (version 4) UUID, as ``uuid4()`` makes, from one read of the OS's
        randomness per 256 ids instead of one per id."""
        if self._taken >= len(self._random):
            self._random, self._taken = os.urandom(16 * 256), 0
        chunk = self._random[self._taken : self._taken + 16]
        self._taken += 16
        return UUID(bytes=chunk, version=4)

    def decide(self, line: Line) -> LineOutcome:
        a = line.assertion
        now = line.now
        t_valid = a.t_valid or now
        if a.t_invalid is not None and a.t_invalid <= t_valid:
            self.rejected_late = True
            return rejected(line.number, "t_invalid", "must be after t_valid")
        standing = self.slots.standing_for(line, self.vocab, self.actor)
        incoming = decisions.incoming_from(a, line.object_key, t_valid=t_valid)
        decision = decisions.decide(
            incoming, standing, self.vocab.spec, now=now, trusted_rank=self.trusted_rank
        )
        if decision.status == "reinforced":
            return self._reinforce(line, decision.reinforcement)

        fact = self._new_fact(line, decision, t_valid)
        conflict_id = None
        if decision.supersedes:
            for old_id in decision.supersedes:
                self._close(self.slots.facts[old_id], line, decision, fact, t_valid)
        self.slots.add(fact)
        if decision.status == "flagged":
            conflict_id = self._open_conflict(line, decision, fact)
        if decision.supersedes:
            self._close_moot(decision.supersedes, now)
        return LineOutcome(
            line=line.number,
            status=decision.status,
            reason=decision.reason,
            fact_id=fact.id,
            candidates=tuple(decision.candidates),
            superseded=tuple(decision.supersedes),
            conflict_id=conflict_id,
        )

    def _reinforce(self, line: Line, reinforcement) -> LineOutcome:
        fact = self.slots.facts[reinforcement.fact_id]
        fact.last_reinforced_at = line.now
        fact.confidence = reinforcement.confidence
        fact.source_type = reinforcement.source_type
        fact.evidence = reinforcement.evidence
        fact.changed = True
        fact.seen = None
        return LineOutcome(line=line.number, status="reinforced", fact_id=fact.id)

    def _new_fact(self, line: Line, decision, t_valid: datetime) -> FactState:
        a = line.assertion
        fact = FactState(
            id=self._new_id(),
            scope_id=line.scope_id,
            subject_id=line.subject_id,
            predicate=a.predicate,
            object_kind=a.object_kind,
            object_key=line.object_key,
            epistemic=a.epistemic,
            source_type=a.source_type,
            confidence=decision.confidence,
            t_valid=t_valid,
            t_invalid=a.t_invalid,
            evidence=a.evidence,
            bucket=a.bucket,
            author_id=self.actor_id,
            last_reinforced_at=line.now,
            new=True,
        )
        fact.row = {
            "object_ref_id": line.object_ref_id,
            "object_lit": a.object if line.object_ref_id is None else None,
            "episode": a.episode,
            "statement": a.statement,
            "recorded_at": line.now,
        }
        return fact

    def _close(self, old: FactState, line, decision, new: FactState, t_valid) -> None:
        self.slots.close(old)
        old.t_invalid = t_valid
        old.invalidated_at = line.now
        old.invalidation_reason = decision.rationale
        old.superseded_by = new.id
        old.changed = True
        old.seen = None
        self._audit(
            line.now,
            line.scope_id,
            "superseded",
            "fact",
            new.id,
            before={"fact": str(old.id), "t_invalid": None},
            after={
                "fact": str(old.id),
                "t_invalid": t_valid.isoformat(),
                "superseded_by": str(new.id),
            },
            rule="write path: supersede",
            reason=decision.rationale,
            actor=self.actor,
        )

    def _open_conflict(self, line: Line, decision, fact: FactState) -> UUID:
        conflict = ConflictState(
            id=self._new_id(),
            scope_id=line.scope_id,
            opened_at=line.now,
            members=[(MemberRole.INCOMING, fact.id)]
            + [(MemberRole.EXISTING, c) for c in decision.candidates],
            new=True,
        )
        conflict.row = {
            "kind": decision.reason,
            "subject_id": line.subject_id,
            "predicate_id": self.vocab.predicates[line.assertion.predicate].pk,
        }
        self.conflicts[conflict.id] = conflict
        self.new_conflicts.append(conflict)
        self._index(conflict)
        self._audit(
            line.now,
            line.scope_id,
            "opened-conflict",
            "conflict",
            conflict.id,
            after={
                "kind": decision.reason,
                "incoming": str(fact.id),
                "candidates": [str(c) for c in decision.candidates],
            },
            rule=f"write path: {decision.reason}",
            reason=decision.rationale,
            actor=self.actor,
        )
        return conflict.id

    def _index(self, conflict: ConflictState) -> None:
        for _, fact_id in conflict.members:
            self.conflicts_of.setdefault(fact_id, []).append(conflict)

    def _close_moot(self, fact_ids, now: datetime) -> None:
        affected = {
            conflict.id: conflict
            for fact_id in fact_ids
            for conflict in self.conflicts_of.get(fact_id, ())
            if conflict.closed_at is None
        }.values()
        for conflict in sorted(affected, key=lambda c: (c.opened_at, str(c.id))):
            states = [(role, self._live(fact_id)) for role, fact_id in conflict.members]
            if decisions.conflict_is_moot(states):
                conflict.closed_at = now
                self._audit(
                    now,
                    conflict.scope_id,
                    "closed-conflict",
                    "conflict",
                    conflict.id,
                    before={"status": "open"},
                    after={"status": "resolved", "resolution": Resolution.MOOT},
                    rule="moot: a side is no longer live",
                    actor=None,
                )

    def _live(self, fact_id: UUID) -> bool:
        fact = self.slots.facts.get(fact_id)
        if fact is None:
            return fact_id not in self.ended_elsewhere
        return fact.t_invalid is None

    def _audit(self, at, scope_id, action, target_type, target_id, *, actor, **fields) -> None:
        """An audit entry as ``memories.audit.record_audit`` would write it, kept for the COPY."""
        self.audit.append(
            writes.AuditRow(
                at=at,
                actor_id=actor.pk if actor is not None and actor.is_authenticated else None,
                scope_id=scope_id,
                action=action,
                target_type=target_type,
                target_id=str(target_id),
                before=fields.get("before"),
                after=fields.get("after"),
                reason=fields.get("reason", ""),
                rule=fields.get("rule", ""),
            )
        )

    # --- writing -----------------------------------------------------------------

    def flush(self) -> None:
        facts = list(self.slots.facts.values())
        writes.update_standing(
            [f for f in facts if f.changed and not f.new], actor=self.actor, vocab=self.vocab
        )
        writes.insert_new([f for f in facts if f.new], actor=self.actor, vocab=self.vocab)
        writes.write_conflicts(
            self.new_conflicts,
            [c for c in self.conflicts.values() if not c.new and c.closed_at],
        )
        writes.insert_audit(self.audit)
