"""Bulk import: many assertions, the write path's exact outcomes, a fraction of its cost.

Each line of a JSONL file is one assertion with the fields of ``POST /facts``.
Importing a file must end exactly where calling ``assert_fact`` once per line
would: the same statuses, facts, supersessions, conflicts and audit entries.
Only the cost differs. Lines are taken in batches; for each batch the
importer

1. checks every line with ``decisions.parse_assertion`` (a bad line is
   rejected with its number and reason, and the rest go on);
2. resolves every entity the batch names with one query per scope (name,
   then alias, then an entity merge, as ``actions._find_entity`` does), and
   creates the missing ones with one INSERT;
3. takes the advisory locks of all the batch's slots in one statement
   (``actions.lock_slots``: a shared order, so concurrent batches cannot
   deadlock, and ``assert_fact`` callers on those slots wait their turn);
4. reads the clock under the locks and loads every fact that can matter to
   any line of the batch with one query, plus the open conflicts they are in;
5. decides each line in file order with ``decisions.decide``, folding each
   decision into its in-memory copy of the slot, so a later line sees what
   an earlier one wrote exactly as it would have after a commit;
6. writes the end state set-wise: one UPDATE for the standing facts that
   changed, a COPY for the new facts, then conflicts, members and audit
   entries.

Each line gets its own clock reading, a microsecond after the previous
line's, as if the lines had been asserted one after another; without that,
two versions of one value in one file would look simultaneous and the
second would be flagged as backdated instead of superseding the first.

A batch that the database refuses as a whole (which the checks above should
make impossible) is retried one line at a time through ``assert_fact``, so a
single bad line can never take the rest of the file with it.
"""

import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import psycopg
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone
from psycopg.types.json import Jsonb

from memories import decisions
from memories.actions import (
    LoadedVocabulary,
    assert_fact,
    load_vocabulary,
    lock_slots,
    writable_scope,
)
from memories.decisions import Assertion, Evidence, Rejected, StandingFact
from memories.errors import NotFound
from memories.models import (
    AuditEntry,
    Conflict,
    ConflictMember,
    Entity,
    EntityMerge,
    Fact,
    InvalidationKind,
    MemberRole,
    ObjectKind,
    Resolution,
    Scope,
)
from memories.normalize import value_key

BATCH_SIZE = 1_000
TICK = timedelta(microseconds=1)
MOOT_REASON = "closed by itself: a side of it is no longer live"


@dataclass(frozen=True)
class LineOutcome:
    line: int
    status: str  # created | reinforced | superseded | flagged | rejected
    reason: str | None = None
    fact_id: UUID | None = None
    candidates: tuple[UUID, ...] = ()
    superseded: tuple[UUID, ...] = ()
    conflict_id: UUID | None = None
    field: str | None = None


@dataclass
class ImportReport:
    outcomes: list[LineOutcome] = field(default_factory=list)

    @property
    def counts(self) -> Counter:
        return Counter(outcome.status for outcome in self.outcomes)

    @property
    def rejected(self) -> list[LineOutcome]:
        return [outcome for outcome in self.outcomes if outcome.status == "rejected"]


def import_lines(
    lines: Iterable[str],
    *,
    actor,
    episode: str | None = None,
    now: datetime | None = None,
    batch_size: int = BATCH_SIZE,
    on_progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Assert each JSONL line as ``actor``; ``episode`` fills in lines that name none.

    With ``now`` given, line *i* (counting every non-blank line from 0) is
    asserted at ``now + i µs``, which is what a test comparing this with
    one-by-one ``assert_fact`` calls needs. Without it each batch reads the
    clock under its locks.
    """
    report = ImportReport()
    clock = _Clock(now)
    batch: list[tuple[int, str]] = []
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        batch.append((number, text))
        if len(batch) >= batch_size:
            report.outcomes += _import_batch(batch, actor=actor, episode=episode, clock=clock)
            if on_progress:
                on_progress(len(batch))
            batch = []
    if batch:
        report.outcomes += _import_batch(batch, actor=actor, episode=episode, clock=clock)
        if on_progress:
            on_progress(len(batch))
    return report


class _Clock:
    """Hands each line its own instant, strictly after every earlier line's."""

    def __init__(self, start: datetime | None) -> None:
        self.fixed = start is not None
        self.next = start

    def batch_start(self) -> datetime:
        if self.fixed:
            assert self.next is not None
            return self.next
        # Read under the batch's locks, and never before the previous batch.
        read = timezone.now()
        return read if self.next is None or read > self.next else self.next

    def take(self, start: datetime, count: int) -> list[datetime]:
        stamps = [start + TICK * i for i in range(count)]
        self.next = start + TICK * count
        return stamps


# --- per-line state ------------------------------------------------------------------


@dataclass
class _Line:
    number: int
    assertion: Assertion
    scope: Scope
    now: datetime
    subject_id: int = 0
    object_ref_id: int | None = None
    object_key: str = ""


@dataclass(slots=True)
class _FactState:
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
    evidence: tuple[Evidence, ...]
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

    def standing(self) -> StandingFact:
        return StandingFact(
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


@dataclass
class _ConflictState:
    id: UUID
    scope_id: int
    opened_at: datetime
    members: list[tuple[str, UUID]]  # (role, fact id)
    new: bool = False
    row: dict[str, Any] | None = None
    closed_at: datetime | None = None


class _Slots:
    """The batch's facts indexed the ways the decision needs them."""

    def __init__(self) -> None:
        self.by_value: dict[tuple, list[_FactState]] = {}
        self.live_by_predicate: dict[tuple, list[_FactState]] = {}
        self.facts: dict[UUID, _FactState] = {}

    def add(self, fact: _FactState) -> None:
        self.facts[fact.id] = fact
        base = (fact.scope_id, fact.subject_id, fact.bucket)
        key = (*base, fact.predicate, fact.object_kind, fact.object_key)
        self.by_value.setdefault(key, []).append(fact)
        if fact.t_invalid is None:
            self.live_by_predicate.setdefault((*base, fact.predicate), []).append(fact)

    def close(self, fact: _FactState) -> None:
        base = (fact.scope_id, fact.subject_id, fact.bucket, fact.predicate)
        self.live_by_predicate[base].remove(fact)

    def standing_for(self, line: _Line, vocab: LoadedVocabulary, actor) -> list[StandingFact]:
        """The facts ``decide`` needs for this line: what ``actions._standing_facts`` reads."""
        a = line.assertion
        base = (line.scope.pk, line.subject_id, a.bucket)
        spec = vocab.spec.predicates[a.predicate]

        def mine(fact: _FactState) -> bool:
            return a.bucket != "user" or fact.author_id == actor.pk

        found: dict[UUID, _FactState] = {}
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


# --- one batch -----------------------------------------------------------------------


def _import_batch(
    batch: list[tuple[int, str]], *, actor, episode: str | None, clock: _Clock
) -> list[LineOutcome]:
    start = clock.batch_start()
    stamps = clock.take(start, len(batch))
    outcomes: dict[int, LineOutcome] = {}
    raws: list[tuple[int, dict[str, Any], datetime]] = []
    for (number, text), stamp in zip(batch, stamps, strict=True):
        try:
            raws.append((number, _json_object(text, episode), stamp))
        except Rejected as refused:
            outcomes[number] = _rejected(number, refused.field, refused.message)
    vocab = _vocabulary_for(raw for _, raw, _ in raws)
    lines: list[_Line] = []
    scopes: dict[str, Scope | None] = {}
    for number, raw, stamp in raws:
        try:
            line = _parse(number, raw, actor, vocab, scopes, now=stamp)
        except Rejected as refused:
            outcomes[number] = _rejected(number, refused.field, refused.message)
            continue
        lines.append(line)
    try:
        with transaction.atomic():
            outcomes.update(_apply_batch(lines, actor=actor, vocab=vocab, clock=clock))
    except DatabaseError:
        # Should never happen; if it does, no line of the batch was written.
        # Assert them one by one so one bad line costs only itself.
        for line in lines:
            outcomes[line.number] = _one_by_one(line, actor=actor, batch=batch)
    return [outcomes[number] for number, _ in batch]


def _rejected(number: int, field_name: str, message: str) -> LineOutcome:
    return LineOutcome(line=number, status="rejected", reason=message, field=field_name)


def _json_object(text: str, episode: str | None) -> dict[str, Any]:
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError):
        raise Rejected("line", "is not valid JSON") from None
    if not isinstance(raw, dict):
        raise Rejected("line", "must be a JSON object")
    if episode and not raw.get("episode"):
        raw["episode"] = episode
    return raw


def _vocabulary_for(raws: Iterable[Mapping[str, Any]]) -> LoadedVocabulary:
    """The vocabulary, read afresh if a line names a predicate or source the cached copy lacks."""
    vocab = load_vocabulary()
    for raw in raws:
        predicate, source = raw.get("predicate"), raw.get("source_type")
        if (isinstance(predicate, str) and predicate not in vocab.predicates) or (
            isinstance(source, str) and source not in vocab.sources
        ):
            return load_vocabulary({"predicate": predicate, "source_type": source})
    return vocab


def _parse(number, raw, actor, vocab, scopes, *, now: datetime) -> _Line:
    assertion = decisions.parse_assertion(raw, vocab.spec, now=now)
    for name in ("t_valid", "t_invalid"):
        value = getattr(assertion, name)
        if value is not None:
            try:
                value.astimezone(UTC)
            except OverflowError:
                raise Rejected(name, "is out of range") from None
    if assertion.scope not in scopes:
        try:
            scopes[assertion.scope] = writable_scope(actor, assertion.scope)
        except NotFound:
            scopes[assertion.scope] = None
    scope = scopes[assertion.scope]
    if scope is None:
        raise Rejected("scope", "not found")
    return _Line(number=number, assertion=assertion, scope=scope, now=now)


def _one_by_one(line: _Line, *, actor, batch) -> LineOutcome:
    text = dict(batch)[line.number]
    data = json.loads(text)
    if line.assertion.episode and not data.get("episode"):
        data["episode"] = line.assertion.episode
    try:
        result = assert_fact(actor=actor, data=data, now=line.now)
    except Rejected as refused:
        return _rejected(line.number, refused.field, refused.message)
    except NotFound:
        return _rejected(line.number, "scope", "not found")
    except (DatabaseError, psycopg.Error) as error:
        # psycopg's own errors too: the write path runs some queries on raw cursors.
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        return _rejected(line.number, "line", f"the database refused it: {reason}")
    return LineOutcome(
        line=line.number,
        status=result.status,
        reason=result.reason,
        fact_id=result.fact.pk,
        candidates=tuple(fact.pk for fact in result.candidates),
        superseded=tuple(result.superseded),
        conflict_id=result.conflict.pk if result.conflict else None,
    )


def _apply_batch(
    lines: list[_Line], *, actor, vocab: LoadedVocabulary, clock: _Clock
) -> Iterator[tuple[int, LineOutcome]]:
    if not lines:
        return iter(())
    created_entities = _resolve_entities(lines)
    lock_slots(
        (line.scope.pk, line.subject_id, vocab.spec.slot_name(line.assertion.predicate))
        for line in lines
    )
    if not clock.fixed:
        # The clock is read under the locks (see actions.assert_fact): the
        # stamps handed out before are moved past anything a previous holder
        # of one of these locks just committed.
        start = clock.batch_start()
        for line, stamp in zip(lines, clock.take(start, len(lines)), strict=False):
            line.now = stamp
    slots = _load_slots(lines, vocab)
    conflicts, ended_elsewhere = _load_open_conflicts(slots)
    writer = _BatchWriter(
        actor=actor, vocab=vocab, slots=slots, conflicts=conflicts, ended=ended_elsewhere
    )
    outcomes = [(line.number, writer.decide(line)) for line in lines]
    writer.flush()
    if writer.rejected_late:
        _drop_unused_entities(created_entities)
    return iter(outcomes)


# --- entities ------------------------------------------------------------------------

_ENTITY_LOOKUP = f"""
SELECT wanted.key,
       COALESCE(
           (SELECT m.into_id FROM {EntityMerge._meta.db_table} m
             WHERE m.entity_id = found.id AND m.undoes_id IS NULL
               AND NOT EXISTS (SELECT 1 FROM {EntityMerge._meta.db_table} u
                                WHERE u.undoes_id = m.id)
             ORDER BY m.at, m.id LIMIT 1),
           found.id)
  FROM unnest(%(keys)s::varchar[]) AS wanted(key)
  CROSS JOIN LATERAL (
      SELECT id FROM (
          (SELECT id, 0 AS by_alias FROM {Entity._meta.db_table}
            WHERE scope_id = %(scope)s AND key = wanted.key)
          UNION ALL
          (SELECT id, 1 FROM {Entity._meta.db_table}
            WHERE scope_id = %(scope)s AND alias_keys @> ARRAY[wanted.key]::varchar[]
            ORDER BY id LIMIT 1)
      ) AS candidates ORDER BY by_alias LIMIT 1
  ) AS found
"""


def _resolve_entities(lines: list[_Line]) -> list[int]:
    """Set each line's subject and entity object; return the ids of entities created."""
    # The first mention of a new name gives the entity its spelling, as the
    # first of one-by-one assertions would.
    wanted: dict[int, dict[str, str]] = {}
    for line in lines:
        names = wanted.setdefault(line.scope.pk, {})
        a = line.assertion
        names.setdefault(value_key(a.subject), a.subject.strip())
        if a.object_kind == ObjectKind.ENTITY:
            names.setdefault(value_key(a.object), a.object.strip())

    ids: dict[tuple[int, str], int] = {}
    created: list[int] = []
    with connection.cursor() as cursor:
        for scope_id, names in wanted.items():
            found = _lookup_entities(cursor, scope_id, list(names))
            missing = sorted(key for key in names if key not in found)
            if missing:
                # Sorted, so two imports creating overlapping names take the
                # unique index's row locks in one order.
                cursor.execute(
                    f"""
                    INSERT INTO {Entity._meta.db_table}
                        (scope_id, name, key, type, aliases, alias_keys, created_at)
                    SELECT %s, name, key, '', '{{}}', '{{}}', now()
                      FROM unnest(%s::varchar[], %s::varchar[]) AS new(name, key)
                    ON CONFLICT (scope_id, key) DO NOTHING
                    RETURNING id
                    """,
                    [scope_id, [names[key] for key in missing], missing],
                )
                created += [row[0] for row in cursor.fetchall()]
                found.update(_lookup_entities(cursor, scope_id, missing))
            ids.update({(scope_id, key): entity for key, entity in found.items()})

    for line in lines:
        a = line.assertion
        line.subject_id = ids[(line.scope.pk, value_key(a.subject))]
        if a.object_kind == ObjectKind.ENTITY:
            line.object_ref_id = ids[(line.scope.pk, value_key(a.object))]
            line.object_key = str(line.object_ref_id)
        else:
            line.object_key = value_key(a.object)
    return created


def _lookup_entities(cursor, scope_id: int, keys: list[str]) -> dict[str, int]:
    cursor.execute(_ENTITY_LOOKUP, {"keys": keys, "scope": scope_id})
    return dict(cursor.fetchall())


def _drop_unused_entities(created: list[int]) -> None:
    """Entities this batch created only for lines rejected under the lock: not written."""
    if not created:
        return
    fact_table = Fact._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            DELETE FROM {Entity._meta.db_table} e WHERE e.id = ANY(%s)
               AND NOT EXISTS (SELECT 1 FROM {fact_table} f WHERE f.subject_id = e.id)
               AND NOT EXISTS (SELECT 1 FROM {fact_table} f WHERE f.object_ref_id = e.id)
            """,
            [created],
        )


# --- loading the slots -----------------------------------------------------------------


def _load_slots(lines: list[_Line], vocab: LoadedVocabulary) -> _Slots:
    """Every fact of the batch's slots that can matter: the live ones and earlier equal values."""
    subject_ids = sorted({line.subject_id for line in lines})
    predicate_ids = sorted(
        {
            vocab.predicates[name].pk
            for line in lines
            for name in vocab.spec.slot_predicates(line.assertion.predicate)
        }
    )
    keys = sorted({line.object_key for line in lines})
    slots = _Slots()
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT id, scope_id, subject_id, predicate_id, object_kind, object_key, epistemic,
                   source_type_id, confidence, t_valid, t_invalid, evidence, bucket, author_id,
                   last_reinforced_at
              FROM {Fact._meta.db_table}
             WHERE subject_id = ANY(%s) AND predicate_id = ANY(%s)
               AND (t_invalid IS NULL OR object_key = ANY(%s))
             ORDER BY recorded_at, id
            """,
            [subject_ids, predicate_ids, keys],
        )
        for row in cursor.fetchall():
            evidence = row[11]
            if isinstance(evidence, str):
                evidence = json.loads(evidence)
            slots.add(
                _FactState(
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
                    evidence=tuple(Evidence(**item) for item in evidence or ()),
                    bucket=row[12],
                    author_id=row[13],
                    last_reinforced_at=row[14],
                )
            )
    return slots


def _load_open_conflicts(slots: _Slots) -> tuple[dict[UUID, _ConflictState], set[UUID]]:
    """Open conflicts with a live member among the loaded facts, locked as assert_fact would.

    Also answers which of their members outside the loaded facts are no
    longer live, so closing a conflict as moot can weigh every member.
    """
    live = [fact.id for fact in slots.facts.values() if fact.t_invalid is None]
    conflicts: dict[UUID, _ConflictState] = {}
    ended_elsewhere: set[UUID] = set()
    if not live:
        return conflicts, ended_elsewhere
    member_table = ConflictMember._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT c.id, c.scope_id, c.opened_at FROM {Conflict._meta.db_table} c
             WHERE c.resolved_at IS NULL
               AND c.id IN (SELECT conflict_id FROM {member_table} WHERE fact_id = ANY(%s))
             ORDER BY c.id
               FOR UPDATE
            """,
            [live],
        )
        for conflict_id, scope_id, opened_at in cursor.fetchall():
            conflicts[conflict_id] = _ConflictState(conflict_id, scope_id, opened_at, [])
        if not conflicts:
            return conflicts, ended_elsewhere
        cursor.execute(
            f"""
            SELECT m.conflict_id, m.role, m.fact_id, f.t_invalid IS NULL
              FROM {member_table} m JOIN {Fact._meta.db_table} f ON f.id = m.fact_id
             WHERE m.conflict_id = ANY(%s)
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


class _BatchWriter:
    """Decides the batch's lines in order and collects the rows that record them."""

    def __init__(
        self,
        *,
        actor,
        vocab: LoadedVocabulary,
        slots: _Slots,
        conflicts: dict[UUID, _ConflictState],
        ended: set[UUID],
    ) -> None:
        self.actor = actor
        self.ended_elsewhere = ended
        self.vocab = vocab
        self.slots = slots
        self.conflicts = conflicts
        self.new_conflicts: list[_ConflictState] = []
        self.audit: list[AuditEntry] = []
        self.rejected_late = False
        self.trusted_rank = settings.CLAIMGRAPH_TRUSTED_RANK

    def decide(self, line: _Line) -> LineOutcome:
        a = line.assertion
        now = line.now
        t_valid = a.t_valid or now
        if a.t_invalid is not None and a.t_invalid <= t_valid:
            self.rejected_late = True
            return _rejected(line.number, "t_invalid", "must be after t_valid")
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
            candidates=tuple(UUID(str(c)) for c in decision.candidates),
            superseded=tuple(UUID(str(s)) for s in decision.supersedes),
            conflict_id=conflict_id,
        )

    def _reinforce(self, line: _Line, reinforcement) -> LineOutcome:
        fact = self.slots.facts[reinforcement.fact_id]
        fact.last_reinforced_at = line.now
        fact.confidence = reinforcement.confidence
        fact.source_type = reinforcement.source_type
        fact.evidence = reinforcement.evidence
        fact.changed = True
        return LineOutcome(line=line.number, status="reinforced", fact_id=fact.id)

    def _new_fact(self, line: _Line, decision, t_valid: datetime) -> _FactState:
        a = line.assertion
        fact = _FactState(
            id=uuid4(),
            scope_id=line.scope.pk,
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
            author_id=self.actor.pk,
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

    def _close(self, old: _FactState, line, decision, new: _FactState, t_valid) -> None:
        self.slots.close(old)
        old.t_invalid = t_valid
        old.invalidated_at = line.now
        old.invalidation_reason = decision.rationale
        old.superseded_by = new.id
        old.changed = True
        self._audit(
            line.now,
            line.scope.pk,
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

    def _open_conflict(self, line: _Line, decision, fact: _FactState) -> UUID:
        conflict = _ConflictState(
            id=uuid4(),
            scope_id=line.scope.pk,
            opened_at=line.now,
            members=[(MemberRole.INCOMING, fact.id)]
            + [(MemberRole.EXISTING, UUID(str(c))) for c in decision.candidates],
            new=True,
        )
        conflict.row = {
            "kind": decision.reason,
            "subject_id": line.subject_id,
            "predicate_id": self.vocab.predicates[line.assertion.predicate].pk,
        }
        self.conflicts[conflict.id] = conflict
        self.new_conflicts.append(conflict)
        self._audit(
            line.now,
            line.scope.pk,
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

    def _close_moot(self, fact_ids, now: datetime) -> None:
        ids = {UUID(str(fact_id)) for fact_id in fact_ids}
        affected = [
            conflict
            for conflict in self.conflicts.values()
            if conflict.closed_at is None and any(fid in ids for _, fid in conflict.members)
        ]
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
        self.audit.append(
            AuditEntry(
                at=at,
                actor=actor,
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
        self._update_standing([f for f in facts if f.changed and not f.new])
        self._insert_new([f for f in facts if f.new])
        self._write_conflicts()
        AuditEntry.objects.bulk_create(self.audit)

    def _update_standing(self, facts: list[_FactState]) -> None:
        if not facts:
            return
        source_ids = {name: row.pk for name, row in self.vocab.sources.items()}
        # Only the batch's own supersessions close a standing fact.
        closed = [f.superseded_by is not None for f in facts]
        with connection.cursor() as cursor:
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
                  FROM unnest(%s::uuid[], %s::timestamptz[], %s::float8[], %s::bigint[],
                              %s::text[], %s::timestamptz[], %s::timestamptz[], %s::text[],
                              %s::uuid[], %s::bool[])
                    AS u(id, last_reinforced_at, confidence, source_type_id, evidence,
                         t_invalid, invalidated_at, invalidation_reason, superseded_by_id,
                         closed)
                 WHERE f.id = u.id
                """,
                [
                    self.actor.pk,
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
                ],
            )

    def _insert_new(self, facts: list[_FactState]) -> None:
        if not facts:
            return
        predicate_ids = {name: row.pk for name, row in self.vocab.predicates.items()}
        source_ids = {name: row.pk for name, row in self.vocab.sources.items()}
        # COPY goes to psycopg directly; its errors are made Django's, like any query's.
        with (
            connection.wrap_database_errors,
            connection.cursor() as cursor,
            cursor.copy(_COPY_FACTS) as copy,
        ):
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
                        Jsonb([item.as_dict() for item in f.evidence]),
                        self.actor.pk,
                        f.bucket,
                        f.t_valid,
                        f.t_invalid,
                        f.row["recorded_at"],
                        f.last_reinforced_at,
                        f.invalidated_at,
                        self.actor.pk if closed else None,
                        InvalidationKind.SUPERSEDED if closed else "",
                        f.invalidation_reason,
                        f.superseded_by,
                    )
                )

    def _write_conflicts(self) -> None:
        if self.new_conflicts:
            Conflict.objects.bulk_create(
                [
                    Conflict(
                        id=c.id,
                        scope_id=c.scope_id,
                        kind=c.row["kind"],
                        subject_id=c.row["subject_id"],
                        predicate_id=c.row["predicate_id"],
                        opened_at=c.opened_at,
                        resolved_at=c.closed_at,
                        resolution=Resolution.MOOT if c.closed_at else "",
                        reason=MOOT_REASON if c.closed_at else "",
                    )
                    for c in self.new_conflicts
                ]
            )
            ConflictMember.objects.bulk_create(
                [
                    ConflictMember(
                        conflict_id=c.id,
                        fact_id=fact_id,
                        role=role,
                        disputes=role == MemberRole.INCOMING,
                    )
                    for c in self.new_conflicts
                    for role, fact_id in c.members
                ]
            )
        for conflict in self.conflicts.values():
            if not conflict.new and conflict.closed_at:
                Conflict.objects.filter(pk=conflict.id).update(
                    resolution=Resolution.MOOT, resolved_at=conflict.closed_at, reason=MOOT_REASON
                )


def _evidence_json(evidence: tuple[Evidence, ...]) -> str:
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
_COPY_FACTS = f"COPY {Fact._meta.db_table} ({', '.join(_FACT_COLUMNS)}) FROM STDIN"


def read_lines(path: str) -> Iterator[str]:
    """The lines of a JSONL file (``-`` for standard input), decoded as UTF-8."""
    if path == "-":
        yield from sys.stdin
        return
    with open(path, encoding="utf-8", errors="strict") as handle:
        yield from handle
