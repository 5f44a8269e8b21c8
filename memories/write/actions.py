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
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID, uuid4

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.utils import timezone
from psycopg.rows import dict_row

from memories.core import decisions
from memories.core.decisions import (
    Assertion,
    Decision,
    Evidence,
    Rejected,
    StandingFact,
)
from memories.core.effects import (
    Effects,
    LookAlike,
    MemberState,
    NewFact,
    invalidation_effects,
    move_effects,
    resolution_effects,
    with_look_alikes,
    write_effects,
)
from memories.core.normalize import name_skeleton, value_key
from memories.core.text import required_reason
from memories.store.apply import Applied, do_apply
from memories.store.audit import fact_state, record_audit
from memories.store.errors import Forbidden, NotFound, StateConflict
from memories.store.lookups import (
    Named,
    hold_entity,
    hot_cursor,
    named_from_row,
    readable_fact,
    visible_conflict,
    writable_scope,
)
from memories.store.models import (
    Bucket,
    Conflict,
    Entity,
    Fact,
    InvalidationKind,
    ObjectKind,
    Outcome,
    Scope,
)
from memories.store.permissions import check_source_type, may_end, may_resolve
from memories.store.roles import is_steward_of
from memories.store.slots import LOCK_SQL, lock_predicate_slot
from memories.store.touched import recompute_on_commit
from memories.store.vocabulary import LoadedVocabulary, load_vocabulary
from memories.write.claims import end_claims

# --- assert -----------------------------------------------------------------------


@dataclass
class AssertResult:
    status: str
    fact: Fact
    reason: str | None = None
    candidates: list[Fact] = field(default_factory=list)
    superseded: list[UUID] = field(default_factory=list)
    conflict: Conflict | None = None
    # The names given that resolved to an existing entity by their look only.
    look_alikes: list[LookAlike] = field(default_factory=list)
    # A stated confidence above the source type's ceiling, capped to it.
    confidence_clamped: decisions.ConfidenceClamp | None = None


def assert_fact(
    *,
    actor: User,
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
        # Refused before anything is decided; the transaction takes back the
        # subject the slot's opening may have created.
        check_source_type(actor, scope, assertion.source_type)
        result = _do_assert(actor, scope, assertion, vocab, now, subject=subject, standing=standing)
    result.confidence_clamped = decisions.confidence_clamp(assertion, vocab.spec)
    return result


@contextmanager
def _pipelined() -> Iterator[None]:
    """Send the statements inside together, waiting only for answers something reads.

    psycopg's pipeline mode sends each statement without waiting for its
    answer until a fetch or the end of the block, so the new fact's INSERT
    and its truth slot's mark (neither read back) cost one round trip, not
    two. The block ends inside the transaction, so an error in either
    arrives there, and the transaction's own exit (commit, or rollback and
    the error) is what it would be without the pipeline. Statements whose
    row count matters must stay out of it: psycopg knows a count only once
    its answer is fetched.
    """
    connection.ensure_connection()
    with connection.wrap_database_errors, connection.connection.pipeline():
        yield


def _open_slot(
    actor: User, assertion: Assertion, vocab: LoadedVocabulary
) -> tuple[Scope, Named | None, list[StandingFact] | None]:
    """Authorize, find or create the subject, lock its slot and read it: one round trip.

    One call of the SQL function ``claimgraph_open_slot``
    (memories/sql/slots.sql): the scope joined to the caller's membership
    (nothing comes back for a caller who may not write), the subject by name
    or alias or else created (``claimgraph_entity``), the slot's advisory
    lock, and then, in a statement of its own whose snapshot follows the
    lock, the slot's facts that can matter.

    Returns the scope, the subject (held against merges), and the standing
    facts when the slot was locked and read (else None: a subject merged
    into another, whose slot the caller locks and reads; or an entity
    object, which the caller holds before it locks the slot). A steward who
    is not a member goes through ``writable_scope`` (the subject is then
    None, and ``_do_assert`` holds it).
    """
    literal = assertion.object_kind == ObjectKind.LITERAL
    with hot_cursor() as cursor:
        cursor.execute(
            f"SELECT * FROM claimgraph_open_slot({', '.join(['%s'] * 13)})",
            [
                actor.pk,
                assertion.scope,
                assertion.subject.strip(),
                value_key(assertion.subject),
                name_skeleton(assertion.subject),
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
    scope = Scope.from_db(connection.alias, None, row[:_SCOPE_COLUMNS])
    *entity_row, standing = row[_SCOPE_COLUMNS:]
    subject = named_from_row(entity_row)
    if standing is None:
        return scope, subject, None
    if isinstance(standing, str):
        standing = json.loads(standing)
    return scope, subject, [_standing_fact(vocab, fact) for fact in standing]


# claimgraph_open_slot answers the scope's columns first, in the model's order.
_SCOPE_COLUMNS = len(Scope._meta.concrete_fields)


def _do_assert(
    actor: User,
    scope: Scope,
    assertion: Assertion,
    vocab: LoadedVocabulary,
    now: datetime | None,
    *,
    subject: Named | None = None,
    standing: list[StandingFact] | None = None,
) -> AssertResult:
    """Decide the assertion under its slot's lock, then apply the decision's effects.

    A subject or entity object named by a look-alike of an existing entity's
    name is that entity (memories/core/normalize.py): the answer lists it in
    ``look_alikes`` and the audit feed records it with the write.
    """
    # Every entity the fact names is held against merges before the slot's
    # lock is taken (lookups.hold_entity): a merge racing this write then
    # either moves the fact or is seen, and the fact names the survivor.
    named = subject or hold_entity(scope, assertion.subject)
    subject = named.entity
    look_alikes = _look_alikes("subject", assertion.subject, named)
    object_ref = None
    if assertion.object_kind == ObjectKind.ENTITY:
        named_object = hold_entity(scope, assertion.object)
        object_ref = named_object.entity
        look_alikes += _look_alikes("object", assertion.object, named_object)
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
    # A steward's write is not held up by a candidate (decisions, rule 3).
    incoming = decisions.incoming_from(
        assertion, object_key, t_valid=t_valid, by_steward=is_steward_of(actor, scope)
    )
    decision = decisions.decide(
        incoming, standing, vocab.spec, now=now, trusted_rank=settings.CLAIMGRAPH_TRUSTED_RANK
    )
    row = new_fact_row(
        assertion,
        fact_id=uuid4(),
        scope_id=scope.pk,
        subject_id=subject.pk,
        object_ref_id=object_ref.pk if object_ref else None,
        object_key=object_key,
        author_id=actor.pk,
        vocab=vocab,
        now=now,
    )
    conflict_id = uuid4() if decision.status == "flagged" else None
    effects = write_effects(decision, row, conflict_id=conflict_id, source_ids=vocab.source_ids)
    if look_alikes:
        reinforced = decision.reinforcement
        effects = with_look_alikes(
            effects,
            look_alikes,
            fact_id=UUID(str(reinforced.fact_id)) if reinforced else row.id,
            scope_id=scope.pk,
            actor_id=actor.pk,
            at=now,
        )
    with _pipelined():
        applied = do_apply(effects)
        recompute_on_commit(applied.touched)
    if decision.status == "reinforced":
        assert decision.reinforcement is not None
        fact_id = decision.reinforcement.fact_id
        fact = Fact.objects.for_display().get(pk=fact_id)
        return AssertResult("reinforced", fact, look_alikes=look_alikes)
    result = _assert_result(
        decision, _fact_in_memory(effects, scope, subject, object_ref, vocab, actor), applied
    )
    result.look_alikes = look_alikes
    return result


def _look_alikes(role: str, given: str, named: Named) -> list[LookAlike]:
    if not named.looked_alike:
        return []
    return [LookAlike(role, given.strip(), named.entity.pk, named.entity.name)]


def do_move_fact(
    fact: Fact,
    into: Entity,
    object_into: Entity | None,
    vocab: LoadedVocabulary,
    *,
    actor: User,
    now: datetime,
    siblings: frozenset[UUID] = frozenset(),
) -> Applied:
    """Move a live fact naming an entity merged away, weighed as a write is.

    ``into`` is the fact's subject after the move (the survivor, or its own
    subject when only its object was merged away); ``object_into`` its
    object entity after the move (None: the object is a value, kept as is).

    Trusts its caller (``merge_entities``) to have authorized the merge and
    to hold the entities' locks. Locks ``into``'s slot, reads what can matter
    there as the write path does (leaving out ``siblings``, the facts moving
    with it, which already stood side by side), and decides the fact with
    ``decisions.decide`` as if it were asserted again by its author: a
    contradiction opens a conflict, a supersession closes what it replaces,
    a duplicate reinforces the standing fact. ``core/effects.move_effects``
    turns the decision into effects; ``actor`` (the merging steward) is
    credited with what the move closed or opened.
    """
    assertion = Assertion(
        scope=fact.scope.name,
        subject=into.name,
        predicate=fact.predicate.name,
        object=fact.object_display if object_into is None else object_into.name,
        object_kind=fact.object_kind,
        epistemic=fact.epistemic,
        epistemic_stated=True,
        source_type=fact.source_type.name,
        confidence=fact.confidence,
        t_valid=fact.t_valid,
        t_invalid=None,
        episode=fact.episode,
        statement=fact.statement,
        evidence=tuple(Evidence(**item) for item in fact.evidence),
        bucket=fact.bucket,
    )
    object_key = fact.object_key if object_into is None else str(object_into.pk)
    standing = [
        other
        for other in _standing_facts(fact.author, fact.scope, into, assertion, object_key, vocab)
        if other.id not in siblings and other.id != fact.pk
    ]
    incoming = decisions.incoming_from(
        assertion,
        object_key,
        t_valid=fact.t_valid,
        by_steward=is_steward_of(fact.author, fact.scope),
    )
    decision = decisions.decide(
        incoming, standing, vocab.spec, now=now, trusted_rank=settings.CLAIMGRAPH_TRUSTED_RANK
    )
    row = NewFact(
        id=fact.pk,
        scope_id=fact.scope_id,
        subject_id=into.pk,
        predicate_id=fact.predicate_id,
        object_kind=fact.object_kind,
        object_ref_id=fact.object_ref_id if object_into is None else object_into.pk,
        object_lit=fact.object_lit,
        object_key=object_key,
        epistemic=fact.epistemic,
        source_type_id=fact.source_type_id,
        confidence=fact.confidence,
        episode=fact.episode,
        statement=fact.statement,
        evidence=assertion.evidence,
        author_id=actor.pk,
        bucket=fact.bucket,
        t_valid=fact.t_valid,
        t_invalid=None,
        recorded_at=now,
        last_reinforced_at=fact.last_reinforced_at,
    )
    conflict_id = uuid4() if decision.status == "flagged" else None
    effects = move_effects(decision, row, conflict_id=conflict_id, source_ids=vocab.source_ids)
    return do_apply(effects)


def new_fact_row(
    assertion: Assertion,
    *,
    fact_id: UUID,
    scope_id: int,
    subject_id: int,
    object_ref_id: int | None,
    object_key: str,
    author_id: int,
    vocab: LoadedVocabulary,
    now: datetime,
) -> NewFact:
    """The fact an assertion would create, before the decision sets its confidence."""
    return NewFact(
        fact_id,
        scope_id,
        subject_id,
        vocab.predicates[assertion.predicate].pk,
        assertion.object_kind,
        object_ref_id,
        assertion.object if object_ref_id is None else None,
        object_key,
        assertion.epistemic,
        vocab.sources[assertion.source_type].pk,
        assertion.confidence,
        assertion.episode,
        assertion.statement,
        assertion.evidence,
        author_id,
        assertion.bucket,
        assertion.t_valid or now,
        assertion.t_invalid,
        now,
        now,
    )


def _fact_in_memory(
    effects: Effects,
    scope: Scope,
    subject: Entity,
    object_ref: Entity | None,
    vocab: LoadedVocabulary,
    actor: User,
) -> Fact:
    """The created fact as a model, its relations from memory: no need to read it back.

    Built as a read builds a row (the columns in the model's order, no
    keyword to match per field), with its related rows in its cache.
    """
    row = next(change for change in effects.changes if type(change) is NewFact)
    evidence = [item.as_dict() for item in row.evidence]
    fact = Fact.from_db(
        connection.alias,
        None,
        (*row[:_EVIDENCE], evidence, *row[_EVIDENCE + 1 :], *_UNSET_WHEN_CREATED),
    )
    fact._state.fields_cache.update(
        scope=scope,
        subject=subject,
        predicate=vocab.predicates[vocab.predicate_names[row.predicate_id]],
        object_ref=object_ref,
        source_type=vocab.sources[vocab.source_names[row.source_type_id]],
        author=actor,
    )
    return fact


# A new fact's columns are NewFact's, in the model's order, then these, which
# only a later change sets: their defaults (tests/memories hold the order).
_EVIDENCE = NewFact._fields.index("evidence")
_UNSET_WHEN_CREATED = tuple(
    field.get_default() for field in Fact._meta.concrete_fields[len(NewFact._fields) :]
)


def _assert_result(decision: Decision, fact: Fact, applied: Applied) -> AssertResult:
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
        conflict=applied.opened[0] if applied.opened else None,
    )


def _standing_facts(
    actor: User,
    scope: Scope,
    subject: Entity,
    assertion: Assertion,
    object_key: str,
    vocab: LoadedVocabulary,
) -> list[StandingFact]:
    """Lock the slot, then read its facts that can matter (see ``decisions.decide``).

    The longer way, when ``_open_slot`` could not: a subject merged into
    another, an entity object, or a steward writing a scope they are not a
    member of. PostgreSQL takes the
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
    actor: User, assertion: Assertion, vocab: LoadedVocabulary, object_key: str | None
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
        candidate=row["candidate"],
    )


def _timestamp(value: datetime | str | None) -> datetime | None:
    # JSON carries timestamps as ISO 8601 text with their offset.
    return datetime.fromisoformat(value) if isinstance(value, str) else value


# --- ending facts -------------------------------------------------------------------


@dataclass
class InvalidateResult:
    fact: Fact
    at: datetime
    status: str = "invalidated"


def invalidate_fact(
    *,
    actor: User,
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
        applied = do_apply(
            invalidation_effects(
                fact.pk,
                fact.scope_id,
                fact_state(fact),
                at=at,
                now=now,
                kind=kind,
                reason=reason,
                actor_id=actor.pk,
            )
        )
        recompute_on_commit(applied.touched)
    return InvalidateResult(fact=Fact.objects.for_display().get(pk=fact.pk), at=at)


# --- conflicts --------------------------------------------------------------------


RESOLVE_ACTIONS = ("keep", "coexist", "dismiss")


def resolve_conflict(
    *,
    actor: User,
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
        members = [
            MemberState(m.fact_id, m.fact.is_live, m.fact.t_valid)
            for m in conflict.members.select_related("fact")
        ]
        if not keep_ids <= {m.fact_id for m in members}:
            raise Rejected("keep", "names a fact that is not a candidate of this conflict")
        effects = resolution_effects(
            conflict.pk,
            conflict.scope_id,
            members,
            action=action,
            keep=frozenset(keep_ids),
            reason=reason,
            now=now,
            actor_id=actor.pk,
        )
        applied = do_apply(effects)
        end_claims(conflict_ids=[conflict.pk, *applied.closed_moot])
        recompute_on_commit(applied.touched)
        conflict.refresh_from_db()
    return conflict


# --- outcomes ---------------------------------------------------------------------


def record_outcome(
    *,
    actor: User,
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
