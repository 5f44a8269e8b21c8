"""One batch of an import, decided in memory and written set-wise (see ``memories.write.ingest``).

The batch loads every fact its lines can collide with (and the open
conflicts those facts are in) once, after ``memories.write.ingest`` has taken the
slot locks; then it runs ``decisions.decide`` line by line, folding each
outcome into its copy of the slots exactly as a commit would, so the tenth
line of a slot sees what the ninth wrote. Each line's decision becomes
Effects (``memories.core.effects``), the values ``actions.assert_fact``
applies one write at a time; here ``apply.SetApplier`` folds them into the
batch's copy and writes its end state set-wise, the same rows and entries.
"""

import os
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from django.conf import settings

from memories.core import decisions
from memories.core.decisions import Assertion, Evidence, StandingFact
from memories.core.effects import (
    Effects,
    LookAlike,
    NewFact,
    reinforce_effects,
    with_look_alikes,
    write_effects,
)
from memories.store.apply import ConflictState, FactState, SetApplier, Slots
from memories.store.lookups import hot_cursor
from memories.store.models import AdmittedFact, Conflict, ConflictMember, Fact
from memories.store.roles import stewards_scope_id
from memories.store.touched import recompute_on_commit
from memories.store.vocabulary import LoadedVocabulary


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


@dataclass(slots=True)
class Line:
    number: int
    assertion: Assertion
    scope_id: int
    now: datetime
    subject_id: int = 0
    object_ref_id: int | None = None
    object_key: str = ""
    # The names that resolved to an existing entity by their look only.
    look_alikes: tuple[LookAlike, ...] = ()

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
            tuple(tuple(alike) for alike in self.look_alikes),
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
        (number, scope_id, now, subject_id, object_ref_id, object_key, alikes, *fields) = values
        fields[13] = tuple(Evidence(ref, quote) for ref, quote in fields[13])
        look_alikes = tuple(LookAlike(*alike) for alike in alikes)
        return cls(
            number,
            Assertion(*fields),
            scope_id,
            now,
            subject_id,
            object_ref_id,
            object_key,
            look_alikes,
        )


def standing_for(slots: Slots, line: Line, vocab: LoadedVocabulary, actor) -> list[StandingFact]:
    """The facts ``decide`` needs for this line: what ``actions._standing_facts`` reads."""
    a = line.assertion
    base = (line.scope_id, line.subject_id, a.bucket)
    spec = vocab.spec.predicates[a.predicate]

    def mine(fact: FactState) -> bool:
        return a.bucket != "user" or fact.author_id == actor.pk

    found: dict[UUID, FactState] = {}
    for fact in slots.by_value.get((*base, a.predicate, a.object_kind, line.object_key), ()):
        found[fact.id] = fact
    low_trust = vocab.spec.sources[a.source_type].trust_rank < settings.CLAIMGRAPH_TRUSTED_RANK
    if (spec.cardinality == "one" and not spec.event_like) or low_trust:
        for fact in slots.live_by_predicate.get((*base, a.predicate), ()):
            found[fact.id] = fact
    if spec.exclusion_group:
        for name in vocab.spec.slot_predicates(a.predicate):
            for fact in slots.by_value.get((*base, name, a.object_kind, line.object_key), ()):
                if fact.t_invalid is None:
                    found[fact.id] = fact
    return [fact.standing() for fact in found.values() if mine(fact)]


def do_decide_and_write(lines: list["Line"], *, actor, vocab: LoadedVocabulary):
    """Decide ``lines`` in order against the store (under their slot locks) and write the result.

    Returns each line's outcome, and whether any line was refused only now
    (its interval ending before the time it was read at).
    """
    slots = load_slots(lines, vocab)
    conflicts, ended_elsewhere = load_open_conflicts(slots)
    applier = SetApplier(
        vocab=vocab, slots=slots, conflicts=conflicts, ended_elsewhere=ended_elsewhere
    )
    decider = BatchDecider(actor=actor, vocab=vocab, applier=applier)
    outcomes = [(line.number, decider.decide(line)) for line in lines]
    applier.flush()
    recompute_on_commit(applier.touched)
    return outcomes, decider.rejected_late


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
        " f.evidence::text, f.bucket, f.author_id, f.last_reinforced_at, f.recorded_at,"
        # As claimgraph_slot_facts answers it (memories/sql/slots.sql).
        " f.bucket = 'system' AND NOT EXISTS (SELECT 1 FROM"
        f" {AdmittedFact._meta.db_table} a WHERE a.scope_id = f.scope_id AND a.fact_id = f.id)"
        " AS candidate"
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
                    candidate=row[16],
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


class BatchDecider:
    """Decides the batch's lines in order, folding each one's effects into the applier."""

    def __init__(self, *, actor, vocab: LoadedVocabulary, applier: SetApplier) -> None:
        self.actor = actor
        self.actor_id = actor.pk
        self.vocab = vocab
        self.applier = applier
        self.slots = applier.slots
        self.predicate_ids = {name: row.pk for name, row in vocab.predicates.items()}
        self.source_ids = vocab.source_ids
        self.rejected_late = False
        self.trusted_rank = settings.CLAIMGRAPH_TRUSTED_RANK
        self._random = b""
        self._taken = 0
        self._stewards: dict[int, bool] = {}

    def _new_id(self) -> UUID:
        """A random (version 4) UUID, as ``uuid4()`` makes, from one read of the OS's
        randomness per 256 ids instead of one per id."""
        if self._taken >= len(self._random):
            self._random, self._taken = os.urandom(16 * 256), 0
        chunk = self._random[self._taken : self._taken + 16]
        self._taken += 16
        return UUID(bytes=chunk, version=4)

    def _with_look_alikes(self, effects: Effects, line: Line, fact_id: Any) -> Effects:
        """The line's look-alike names in the audit feed, as the write path records them."""
        if not line.look_alikes:
            return effects
        return with_look_alikes(
            effects,
            line.look_alikes,
            fact_id=UUID(str(fact_id)),
            scope_id=line.scope_id,
            actor_id=self.actor_id,
            at=line.now,
        )

    def decide(self, line: Line) -> LineOutcome:
        a = line.assertion
        now = line.now
        t_valid = a.t_valid or now
        if a.t_invalid is not None and a.t_invalid <= t_valid:
            self.rejected_late = True
            return rejected(line.number, "t_invalid", "must be after t_valid")
        standing = standing_for(self.slots, line, self.vocab, self.actor)
        # A steward's line is not held up by a candidate (decisions, rule 3).
        by_steward = self._stewards.get(line.scope_id)
        if by_steward is None:
            by_steward = self._stewards[line.scope_id] = stewards_scope_id(
                self.actor, line.scope_id
            )
        incoming = decisions.incoming_from(
            a, line.object_key, t_valid=t_valid, by_steward=by_steward
        )
        decision = decisions.decide(
            incoming, standing, self.vocab.spec, now=now, trusted_rank=self.trusted_rank
        )
        if decision.status == "reinforced":
            assert decision.reinforcement is not None
            effects = reinforce_effects(decision, now=now, source_ids=self.source_ids)
            self.applier.fold(self._with_look_alikes(effects, line, decision.reinforcement.fact_id))
            return LineOutcome(
                line=line.number, status="reinforced", fact_id=decision.reinforcement.fact_id
            )
        row = NewFact(
            self._new_id(),
            line.scope_id,
            line.subject_id,
            self.predicate_ids[a.predicate],
            a.object_kind,
            line.object_ref_id,
            a.object if line.object_ref_id is None else None,
            line.object_key,
            a.epistemic,
            self.source_ids[a.source_type],
            a.confidence,
            a.episode,
            a.statement,
            a.evidence,
            self.actor_id,
            a.bucket,
            t_valid,
            a.t_invalid,
            now,
            now,
        )
        conflict_id = self._new_id() if decision.status == "flagged" else None
        effects = write_effects(decision, row, conflict_id=conflict_id, source_ids=self.source_ids)
        self.applier.fold(self._with_look_alikes(effects, line, row.id))
        return LineOutcome(
            line=line.number,
            status=decision.status,
            reason=decision.reason,
            fact_id=row.id,
            candidates=tuple(decision.candidates),
            superseded=tuple(decision.supersedes),
            conflict_id=conflict_id,
        )
