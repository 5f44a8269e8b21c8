"""The memory store's actions: every write to facts and conflicts goes through here.

Each action checks who may act before it reads the row it names, gathers its
inputs under the lock it needs, calls the pure core and applies the result in
one transaction. Views, the API, management commands and tasks call these; no
other code writes facts or conflicts.

Locking: a write takes a transaction-scoped advisory lock on its *slot*,
(scope, subject, exclusion group or predicate), before it reads the clock and
the slot's standing facts, so concurrent writers to one slot serialize and
each decides on what the previous one committed. Writers to different slots
take different locks and never wait for each other.
"""

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import connection, transaction
from django.db.models import JSONField
from django.utils import timezone
from psycopg.rows import dict_row

from memories.audit import fact_state, record_audit
from memories.core import decisions
from memories.core.decisions import (
    Assertion,
    Evidence,
    Rejected,
    StandingFact,
)
from memories.core.normalize import value_key
from memories.core.text import required_reason
from memories.errors import Forbidden, NotFound, StateConflict
from memories.lookups import (
    entity_from_row,
    get_or_create_entity,
    hot_cursor,
    readable_fact,
    visible_conflict,
    writable_scope,
)
from memories.models import (
    Bucket,
    Conflict,
    ConflictMember,
    Entity,
    Fact,
    InvalidationKind,
    MemberRole,
    ObjectKind,
    Outcome,
    Resolution,
    Scope,
)
from memories.roles import is_steward_of
from memories.slots import LOCK_SQL, lock_predicate_slot
from memories.vocabulary import LoadedVocabulary, load_vocabulary

# --- assert -----------------------------------------------------------------------


@dataclass
class AssertResult:
    status: str
    fact: Fact
    reason: str | None = None
    candidates: list[Fact] = field(default_factory=list)
    superseded: list[UUID] = field(default_factory=list)
    conflict: Conflict | None = None


def assert_fact(
    *,
    actor,
    data: Mapping[str, Any],
    now: datetime | None = None,
    vocabulary: LoadedVocabulary | None = None,
) -> AssertResult:
    """Weigh one assertion against the store and record the outcome (SPEC §2).

    Raises :class:`Rejected` for bad input and :class:`NotFound` for a scope
    that is absent or not writable by ``actor``; in both cases nothing is
    written.
    """
    vocab = vocabulary or load_vocabulary(data)
    assertion = decisions.parse_assertion(data, vocab.spec, now=now or timezone.now())
    if not actor.is_authenticated or not actor.is_active:
        raise NotFound("scope")
    with transaction.atomic():
        scope, subject, standing = _open_slot(actor, assertion, vocab)
        return _assert_in_scope(
            actor, scope, assertion, vocab, now, subject=subject, standing=standing
        )


def _open_slot(
    actor, assertion: Assertion, vocab: LoadedVocabulary
) -> tuple[Scope, Entity | None, list[StandingFact] | None]:
    """Authorize, find the subject, lock its slot and read it: one round trip when it can.

    The common case of every assertion — a member writing about a subject
    known by its name — is one call of the SQL function
    ``claimgraph_open_slot`` (memories/sql/slots.sql): the scope joined to the
    caller's membership (nothing comes back for a caller who may not write),
    the subject by its key, the slot's advisory lock, and then, in a statement
    of its own whose snapshot follows the lock, the slot's facts that can
    matter.

    Returns the scope, the subject when found by name (else None: the caller
    resolves it by alias or creates it), and the standing facts when the slot
    was locked and read (else None: the caller locks and reads). A steward
    who is not a member goes through ``writable_scope``.
    """
    literal = assertion.object_kind == ObjectKind.LITERAL
    with hot_cursor() as cursor:
        cursor.execute(
            "SELECT * FROM claimgraph_open_slot(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [
                actor.pk,
                assertion.scope,
                value_key(assertion.subject),
                vocab.spec.slot_name(assertion.predicate),
                *_slot_read_arguments(
                    actor, assertion, vocab, value_key(assertion.object) if literal else None
                ),
            ],
            prepare=True,
        )
        row = cursor.fetchone()
    if row is None:
        return writable_scope(actor, assertion.scope), None, None
    scope = Scope(id=row[0], name=row[1], description=row[2], created_at=row[3])
    *entity_row, standing = row[4:]
    subject = entity_from_row(entity_row)
    if standing is None:
        return scope, subject, None
    if isinstance(standing, str):
        standing = json.loads(standing)
    return scope, subject, [_standing_fact(vocab, fact) for fact in standing]


def _assert_in_scope(
    actor,
    scope: Scope,
    assertion: Assertion,
    vocab: LoadedVocabulary,
    now: datetime | None,
    *,
    subject: Entity | None = None,
    standing: list[StandingFact] | None = None,
) -> AssertResult:
    subject = subject or get_or_create_entity(scope, assertion.subject)
    object_ref = None
    if assertion.object_kind == ObjectKind.ENTITY:
        object_ref = get_or_create_entity(scope, assertion.object)
        object_key = str(object_ref.pk)
    else:
        object_key = value_key(assertion.object)

    if standing is None:
        standing = _standing_facts(actor, scope, subject, assertion, object_key, vocab)
    # The clock is read under the lock: a time read before it could be older
    # than a fact a previous holder of the lock just committed.
    now = now or timezone.now()
    t_valid = assertion.t_valid or now
    if assertion.t_invalid is not None and assertion.t_invalid <= t_valid:
        raise Rejected("t_invalid", "must be after t_valid")
    incoming = decisions.incoming_from(assertion, object_key, t_valid=t_valid)
    decision = decisions.decide(
        incoming,
        standing,
        vocab.spec,
        now=now,
        trusted_rank=settings.CLAIMGRAPH_TRUSTED_RANK,
    )

    if decision.status == "reinforced":
        reinforcement = decision.reinforcement
        assert reinforcement is not None
        Fact.objects.filter(pk=reinforcement.fact_id).update(
            last_reinforced_at=now,
            confidence=reinforcement.confidence,
            source_type=vocab.sources[reinforcement.source_type],
            evidence=[item.as_dict() for item in reinforcement.evidence],
        )
        return AssertResult("reinforced", Fact.objects.for_display().get(pk=reinforcement.fact_id))

    fact = Fact(
        scope=scope,
        subject=subject,
        predicate=vocab.predicates[assertion.predicate],
        object_kind=assertion.object_kind,
        object_ref=object_ref,
        object_lit=assertion.object if object_ref is None else None,
        object_key=object_key,
        epistemic=assertion.epistemic,
        source_type=vocab.sources[assertion.source_type],
        confidence=decision.confidence,
        episode=assertion.episode,
        statement=assertion.statement,
        evidence=[item.as_dict() for item in assertion.evidence],
        author=actor,
        bucket=assertion.bucket,
        t_valid=t_valid,
        t_invalid=assertion.t_invalid,
        recorded_at=now,
        last_reinforced_at=now,
    )
    if decision.supersedes:
        # Close first: an escalation replaces a fact with the same value, and
        # the one-live-fact index would refuse the new row while the old one
        # is open. The foreign key to the new row is checked at commit.
        _close(
            decision.supersedes,
            at=t_valid,
            now=now,
            actor=actor,
            kind=InvalidationKind.SUPERSEDED,
            reason=decision.rationale,
            superseded_by=fact.pk,
        )
    _insert_fact(fact)

    conflict = None
    if decision.status == "flagged":
        conflict = Conflict.objects.create(
            scope=scope,
            kind=decision.reason,
            subject=subject,
            predicate_id=fact.predicate_id,
            opened_at=now,
        )
        ConflictMember.objects.bulk_create(
            [ConflictMember(conflict=conflict, fact=fact, role=MemberRole.INCOMING, disputes=True)]
            + [
                ConflictMember(
                    conflict=conflict, fact_id=fact_id, role=MemberRole.EXISTING, disputes=False
                )
                for fact_id in decision.candidates
            ]
        )
        record_audit(
            at=now,
            actor=actor,
            scope_id=scope.pk,
            action="opened-conflict",
            target=conflict,
            after={
                "kind": conflict.kind,
                "incoming": str(fact.pk),
                "candidates": [str(c) for c in decision.candidates],
            },
            rule=f"write path: {decision.reason}",
            reason=decision.rationale,
        )
    if decision.supersedes:
        for old_id in decision.supersedes:
            record_audit(
                at=now,
                actor=actor,
                scope_id=scope.pk,
                action="superseded",
                target=fact,
                before={"fact": str(old_id), "t_invalid": None},
                after={
                    "fact": str(old_id),
                    "t_invalid": t_valid.isoformat(),
                    "superseded_by": str(fact.pk),
                },
                rule="write path: supersede",
                reason=decision.rationale,
            )
        close_moot_conflicts(decision.supersedes, now=now)

    # Every relation of the new row is already in memory (scope, entities,
    # vocabulary rows, author): no need to read the row back.
    candidates = (
        list(Fact.objects.for_display().filter(pk__in=decision.candidates))
        if decision.candidates
        else []
    )
    return AssertResult(
        status=decision.status,
        fact=fact,
        reason=decision.reason,
        candidates=candidates,
        superseded=[UUID(str(fact_id)) for fact_id in decision.supersedes],
        conflict=conflict,
    )


def _standing_facts(
    actor,
    scope: Scope,
    subject: Entity,
    assertion: Assertion,
    object_key: str,
    vocab: LoadedVocabulary,
) -> list[StandingFact]:
    """Lock the slot, then read its facts that can matter (see ``decisions.decide``).

    The longer way, when ``_open_slot`` could not: a subject found by alias,
    created, or merged into another, or an entity object. PostgreSQL takes the
    read's snapshot when the read starts, after the lock is granted, so it
    sees what the previous holder of the lock committed.
    """
    with hot_cursor() as cursor:
        cursor.execute(
            LOCK_SQL,
            [scope.pk, subject.pk, vocab.spec.slot_name(assertion.predicate)],
            prepare=True,
        )
        cursor.row_factory = dict_row
        cursor.execute(
            "SELECT * FROM claimgraph_slot_facts(%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [scope.pk, subject.pk, *_slot_read_arguments(actor, assertion, vocab, object_key)],
            prepare=True,
        )
        return [_standing_fact(vocab, row) for row in cursor.fetchall()]


def _slot_read_arguments(
    actor, assertion: Assertion, vocab: LoadedVocabulary, object_key: str | None
) -> list[Any]:
    """What ``claimgraph_slot_facts`` needs to read only the facts that can matter.

    Narrower than the whole slot on purpose: a busy ``many`` slot can hold
    hundreds of live values, and only a ``one`` predicate or a low-trust
    writer (the revenant rule) needs to see the other values.
    """
    predicate = vocab.spec.predicates[assertion.predicate]
    low_trust = (
        vocab.spec.sources[assertion.source_type].trust_rank < settings.CLAIMGRAPH_TRUSTED_RANK
    )
    group = vocab.spec.slot_predicates(assertion.predicate) if predicate.exclusion_group else ()
    return [
        assertion.bucket,
        actor.pk if assertion.bucket == Bucket.USER else None,
        vocab.predicates[assertion.predicate].pk,
        assertion.object_kind,
        object_key,
        (predicate.cardinality == "one" and not predicate.event_like) or low_trust,
        [vocab.predicates[name].pk for name in group if name != assertion.predicate],
    ]


def _standing_fact(vocab: LoadedVocabulary, row: Mapping[str, Any]) -> StandingFact:
    """A row of ``claimgraph_slot_facts`` (as columns, or as JSON) as the decision sees it."""
    evidence = row["evidence"]
    if isinstance(evidence, str):
        evidence = json.loads(evidence)
    return StandingFact(
        id=UUID(str(row["id"])),
        predicate=vocab.predicate_names[row["predicate_id"]],
        object_kind=row["object_kind"],
        object_key=row["object_key"],
        epistemic=row["epistemic"],
        source_type=vocab.source_names[row["source_type_id"]],
        confidence=row["confidence"],
        t_valid=_timestamp(row["t_valid"]),
        t_invalid=_timestamp(row["t_invalid"]),
        evidence=tuple(Evidence(**item) for item in evidence),
    )


def _timestamp(value: datetime | str | None) -> datetime | None:
    # JSON carries timestamps as ISO 8601 text with their offset.
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def _insert_fact(fact: Fact) -> None:
    """INSERT one fact row without the ORM's per-call compilation (the write path's hot spot).

    psycopg adapts every column's Python value natively (UUID, aware datetime,
    text, number, None); only the JSON column goes through its field's
    preparation.
    """
    fields = Fact._meta.concrete_fields
    sql = _INSERT_FACT_SQL.get("sql")
    if sql is None:
        columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
        sql = _INSERT_FACT_SQL.setdefault(
            "sql",
            f"INSERT INTO {Fact._meta.db_table} ({columns})"
            f" VALUES ({', '.join(['%s'] * len(fields))})",
        )
    values = [
        f.get_db_prep_save(getattr(fact, f.attname), connection)
        if isinstance(f, JSONField)
        else getattr(fact, f.attname)
        for f in fields
    ]
    with hot_cursor() as cursor:
        cursor.execute(sql, values, prepare=True)
    fact._state.adding = False
    fact._state.db = connection.alias


_INSERT_FACT_SQL: dict[str, str] = {}


# --- ending facts -------------------------------------------------------------------


def _close(
    fact_ids: Iterable[UUID | str],
    *,
    at: datetime,
    now: datetime,
    actor,
    kind: str,
    reason: str,
    superseded_by: UUID | None = None,
) -> int:
    return Fact.objects.filter(pk__in=list(fact_ids), t_invalid__isnull=True).update(
        t_invalid=at,
        invalidated_at=now,
        invalidated_by=actor,
        invalidation_kind=kind,
        invalidation_reason=reason,
        superseded_by_id=superseded_by,
    )


def close_moot_conflicts(fact_ids: Iterable[UUID | str], *, now: datetime) -> list[Conflict]:
    """Close the open conflicts of these facts that no longer have two sides (SPEC §3)."""
    conflicts = list(
        Conflict.objects.open()
        .filter(pk__in=ConflictMember.objects.filter(fact_id__in=list(fact_ids)).values("conflict"))
        .select_for_update()
        .prefetch_related("members__fact")
    )
    closed = []
    for conflict in conflicts:
        members = [(m.role, m.fact.is_live) for m in conflict.members.all()]
        if decisions.conflict_is_moot(members):
            conflict.resolution = Resolution.MOOT
            conflict.resolved_at = now
            conflict.reason = "closed by itself: a side of it is no longer live"
            conflict.save(update_fields=["resolution", "resolved_at", "reason"])
            record_audit(
                at=now,
                actor=None,
                scope_id=conflict.scope_id,
                action="closed-conflict",
                target=conflict,
                before={"status": "open"},
                after={"status": "resolved", "resolution": Resolution.MOOT},
                rule="moot: a side is no longer live",
            )
            closed.append(conflict)
    return closed


@dataclass
class InvalidateResult:
    fact: Fact
    at: datetime
    status: str = "invalidated"


def may_end(actor, fact: Fact) -> bool:
    """The fact's author or a steward of its scope may invalidate or correct it."""
    return bool(actor.is_active and fact.author_id == actor.pk) or is_steward_of(actor, fact.scope)


def invalidate_fact(
    *,
    actor,
    fact_id: UUID | str,
    reason: str,
    at: datetime | None = None,
    now: datetime | None = None,
    kind: str = InvalidationKind.INVALIDATED,
) -> InvalidateResult:
    """Close a fact's valid interval (at ``at``, default now), recording who and why (SPEC §3).

    The fact's author or a steward of its scope may do it. An invalidated fact
    is never reopened: a later equal assertion creates a new fact.
    """
    fact = readable_fact(actor, fact_id)
    if not may_end(actor, fact):
        raise Forbidden("only the fact's author or a steward may invalidate it")
    reason = required_reason(reason, "reason")
    with transaction.atomic():
        lock_predicate_slot(fact.scope_id, fact.subject_id, fact.predicate.name)
        now = now or timezone.now()
        at = at or now
        fact = Fact.objects.select_for_update().get(pk=fact.pk)
        if not fact.is_live:
            raise StateConflict("the fact is already invalid")
        if at <= fact.t_valid:
            raise Rejected("t_invalid", "must be after the fact's t_valid")
        before = fact_state(fact)
        _close([fact.pk], at=at, now=now, actor=actor, kind=kind, reason=reason)
        fact.refresh_from_db()
        record_audit(
            at=now,
            actor=actor,
            scope_id=fact.scope_id,
            action=kind,
            target=fact,
            before=before,
            after=fact_state(fact),
            reason=reason,
        )
        close_moot_conflicts([fact.pk], now=now)
    return InvalidateResult(fact=Fact.objects.for_display().get(pk=fact.pk), at=at)


# --- conflicts --------------------------------------------------------------------


def may_resolve(actor, conflict: Conflict) -> bool:
    """Stewards of the scope; for a conflict among ``user`` facts, also their author."""
    if is_steward_of(actor, conflict.scope):
        return True
    authors = {
        (bucket, author)
        for bucket, author in conflict.members.values_list("fact__bucket", "fact__author_id")
    }
    return authors == {(Bucket.USER, actor.pk)}


RESOLVE_ACTIONS = ("keep", "coexist", "dismiss")


def resolve_conflict(
    *,
    actor,
    conflict_id: UUID | str,
    action: str,
    reason: str,
    keep: Sequence[UUID | str] = (),
    now: datetime | None = None,
) -> Conflict:
    """A human's ruling on an open conflict (SPEC §3); a reason is required.

    ``keep``: the named members stay, every other live member is invalidated
    with the reason. ``coexist``: all stay valid and stop being disputed.
    ``dismiss``: a false positive; everything stays as it is.
    """
    conflict = visible_conflict(actor, conflict_id)
    if not may_resolve(actor, conflict):
        raise Forbidden("only a steward of the scope may resolve this conflict")
    if action not in RESOLVE_ACTIONS:
        raise Rejected("action", f"must be one of {', '.join(RESOLVE_ACTIONS)}")
    reason = required_reason(reason, "reason")
    try:
        keep_ids = {UUID(str(fact_id)) for fact_id in keep}
    except ValueError:
        raise Rejected("keep", "must list fact ids") from None
    if action == "keep" and not keep_ids:
        raise Rejected("keep", "name at least one fact to keep")
    if action != "keep" and keep_ids:
        raise Rejected("keep", f"is only for the keep action, not {action}")

    with transaction.atomic():
        lock_predicate_slot(conflict.scope_id, conflict.subject_id, conflict.predicate.name)
        now = now or timezone.now()
        conflict = Conflict.objects.select_for_update().get(pk=conflict.pk)
        if not conflict.is_open:
            raise StateConflict("the conflict is already resolved")
        members = list(conflict.members.select_related("fact"))
        member_ids = {m.fact_id for m in members}
        if not keep_ids <= member_ids:
            raise Rejected("keep", "names a fact that is not a candidate of this conflict")
        ended = []
        if action == "keep":
            for member in members:
                member.kept = member.fact_id in keep_ids
                if not member.kept and member.fact.is_live:
                    if now <= member.fact.t_valid:
                        raise Rejected("keep", "a fact to end only becomes valid in the future")
                    ended.append(member.fact_id)
            ConflictMember.objects.bulk_update(members, ["kept"])
            _close(
                ended,
                at=now,
                now=now,
                actor=actor,
                kind=InvalidationKind.INVALIDATED,
                reason=reason,
            )
        conflict.resolution = {
            "keep": Resolution.KEPT,
            "coexist": Resolution.COEXIST,
            "dismiss": Resolution.DISMISSED,
        }[action]
        conflict.resolved_at = now
        conflict.resolved_by = actor
        conflict.reason = reason
        conflict.save(update_fields=["resolution", "resolved_at", "resolved_by", "reason"])
        record_audit(
            at=now,
            actor=actor,
            scope_id=conflict.scope_id,
            action="resolved-conflict",
            target=conflict,
            before={"status": "open"},
            after={
                "status": "resolved",
                "resolution": conflict.resolution,
                "kept": sorted(str(fact_id) for fact_id in keep_ids),
                "invalidated": sorted(str(fact_id) for fact_id in ended),
            },
            reason=reason,
        )
        if ended:
            close_moot_conflicts(ended, now=now)
    return conflict


# --- outcomes ---------------------------------------------------------------------


def record_outcome(
    *,
    actor,
    fact_ids: Sequence[UUID | str],
    outcome: str = "accepted",
    now: datetime | None = None,
) -> Outcome:
    """Report facts used in accepted work: their disuse clock resets (SPEC §4, §12)."""
    if outcome != "accepted":
        raise Rejected("outcome", "must be 'accepted'")
    if not fact_ids:
        raise Rejected("fact_ids", "name at least one fact")
    facts = [readable_fact(actor, fact_id) for fact_id in fact_ids]
    scopes = {fact.scope_id for fact in facts}
    if len(scopes) != 1:
        raise Rejected("fact_ids", "all facts of one outcome must be in one scope")
    with transaction.atomic():
        now = now or timezone.now()
        result = Outcome.objects.create(
            scope_id=scopes.pop(), outcome=outcome, reported_by=actor, reported_at=now
        )
        result.facts.set(facts)
        Fact.objects.filter(pk__in=[fact.pk for fact in facts]).update(last_reinforced_at=now)
        record_audit(
            at=now,
            actor=actor,
            scope_id=result.scope_id,
            action="reported-outcome",
            target=result,
            after={"outcome": outcome, "facts": [str(fact.pk) for fact in facts]},
        )
    return result
