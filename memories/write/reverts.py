"""A steward reverts an automatic change (SPEC §12), itself a record.

:func:`revert_automatic_change` reads the audit entry of the change and the
present state of what it touched, under the lock of the slot it is on, asks
the pure core (``memories.core.reverts``, whose docstring says what each
kind of revert restores and when it refuses) for the effects, and applies
them through the one ``memories.store.apply.do_apply``. The revert's own audit entry
names the steward, the reason, and the state before and after.
"""

from datetime import datetime
from uuid import UUID, uuid4

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from memories.core.reverts import (
    SUPERSESSION,
    ConflictNow,
    Entry,
    FactNow,
    NotRevertible,
    Target,
    revert_effects,
    revert_kind,
)
from memories.core.text import required_reason
from memories.store.apply import do_apply
from memories.store.errors import Forbidden, NotFound, StateConflict
from memories.store.models import AuditEntry, Bucket, Conflict, Fact
from memories.store.roles import is_steward_of
from memories.store.slots import lock_predicate_slot
from memories.store.touched import recompute_on_commit
from memories.store.vocabulary import load_vocabulary


def visible_change(actor: User, entry_id: int | str) -> AuditEntry:
    """An automatic change ``actor`` may read, with its scope; else :class:`NotFound`."""
    try:
        pk = int(str(entry_id))
    except ValueError:
        raise NotFound("change") from None
    entry = (
        AuditEntry.objects.visible_to(actor)
        .automatic()
        .select_related("scope")
        .filter(pk=pk)
        .first()
    )
    if entry is None:
        raise NotFound("change")
    return entry


def why_not_revertible(entry: AuditEntry) -> str | None:
    """Why no revert is defined for ``entry``'s kind of change, or None if one is.

    Asks the core's one rule (:func:`memories.core.reverts.revert_kind`), so a
    page can leave out a revert form that could only be refused. Whether the
    state has since moved on is known only when the revert is tried.
    """
    try:
        revert_kind(_entry_value(entry))
    except NotRevertible as refusal:
        return str(refusal)
    return None


def revert_automatic_change(
    *, actor: User, entry_id: int | str, reason: str, now: datetime | None = None
) -> AuditEntry:
    """Undo the automatic change recorded as ``entry_id``; the revert's audit entry.

    Stewards of the entry's scope only (others who can read it:
    :class:`Forbidden`). A blank reason is :class:`Rejected`; a change that
    cannot be reverted now (already reverted, or the state moved on) is
    :class:`StateConflict` naming why. Nothing is written on a refusal.
    """
    entry = visible_change(actor, entry_id)
    if not is_steward_of(actor, entry.scope):
        raise Forbidden("only a steward of the scope may revert an automatic change")
    reason = required_reason(reason, "reason")
    value = _entry_value(entry)
    try:
        target = revert_kind(value)
        with transaction.atomic():
            subject_id, predicate_id, predicate = _slot_of(target)
            lock_predicate_slot(entry.scope_id, subject_id, predicate)
            now = now or timezone.now()
            # Two stewards reverting one change queue here; the second finds the first's record.
            AuditEntry.objects.select_for_update().filter(pk=entry.pk).first()
            if AuditEntry.objects.reverts_of([entry.pk]).exists():
                raise StateConflict("this change was already reverted")
            conflict = _conflict_now(target.conflict_id)
            member_ids = tuple(fact_id for fact_id, _ in conflict.members) if conflict else ()
            effects = revert_effects(
                value,
                target,
                facts=_facts_now({*target.fact_ids, *member_ids}),
                conflict=conflict,
                values_compete=_values_compete(predicate),
                rivals=_live_beside(target.fact_ids[0]) if target.kind == SUPERSESSION else (),
                slot=(subject_id, predicate_id),
                new_conflict_id=uuid4(),
                reason=reason,
                actor_id=actor.pk,
                now=now,
            )
            try:
                recompute_on_commit(do_apply(effects).touched)
            except IntegrityError:
                # The one-revert constraint, should a revert slip past the row lock.
                raise StateConflict("this change was already reverted") from None
    except NotRevertible as refusal:
        raise StateConflict(str(refusal)) from None
    return AuditEntry.objects.reverts_of([entry.pk]).get()


def _entry_value(entry: AuditEntry) -> Entry:
    return Entry(
        id=entry.pk,
        at=entry.at,
        scope_id=entry.scope_id,
        action=entry.action,
        target_type=entry.target_type,
        target_id=entry.target_id,
        before=entry.before,
        after=entry.after,
        rule=entry.rule,
    )


def _slot_of(target: Target) -> tuple[int, int, str]:
    """(subject id, predicate id, predicate name) of the slot the change is on."""
    if target.conflict_id is not None:
        rows = Conflict.objects.filter(pk=target.conflict_id)
    else:
        rows = Fact.objects.filter(pk=target.fact_ids[0])
    found = rows.values_list("subject_id", "predicate_id", "predicate__name").first()
    if found is None:
        raise NotRevertible("what the change touched is no longer in the store")
    return found


def _values_compete(predicate: str) -> bool:
    """Whether the predicate's slot holds one value at a time (one-valued, not event-like)."""
    vocabulary = load_vocabulary()
    if predicate not in vocabulary.predicates:  # newer than this process's copy
        vocabulary = load_vocabulary({"predicate": predicate})
    spec = vocabulary.spec.predicates[predicate]
    return spec.cardinality == "one" and not spec.event_like


def _conflict_now(conflict_id: UUID | None) -> ConflictNow | None:
    if conflict_id is None:
        return None
    conflict = Conflict.objects.select_for_update().filter(pk=conflict_id).first()
    if conflict is None:
        return None
    return ConflictNow(
        id=conflict.pk,
        subject_id=conflict.subject_id,
        predicate_id=conflict.predicate_id,
        resolved_at=conflict.resolved_at,
        resolved_by=conflict.resolved_by_id,
        resolution=conflict.resolution,
        members=tuple(conflict.members.values_list("fact_id", "role")),
    )


def _facts_now(fact_ids: set[UUID]) -> dict[UUID, FactNow]:
    """The facts as they stand, locked, each knowing whether its value is live as another."""
    facts = list(Fact.objects.select_for_update().filter(pk__in=fact_ids))
    if len(facts) != len(fact_ids):
        raise NotRevertible("a fact the change touched is no longer in the store")
    return {
        fact.pk: FactNow(
            id=fact.pk,
            t_invalid=fact.t_invalid,
            invalidated_at=fact.invalidated_at,
            invalidated_by=fact.invalidated_by_id,
            invalidation_kind=fact.invalidation_kind,
            superseded_by=fact.superseded_by_id,
            decayed_at=fact.decayed_at,
            last_reinforced_at=fact.last_reinforced_at,
            twin_live=not fact.is_live and _twin_live(fact),
        )
        for fact in facts
    }


def _twin_live(fact: Fact) -> bool:
    """Whether another live fact holds ``fact``'s value where the live-value index counts it."""
    return (
        _live_on_its_slot(fact)
        .filter(object_kind=fact.object_kind, object_key=fact.object_key)
        .exists()
    )


def _live_beside(fact_id: UUID) -> tuple[UUID, ...]:
    """The other facts live on ``fact_id``'s slot now, oldest first: what it would compete with.

    Read under the slot's lock, after the revert took it: a write that
    queued behind the revert comes after it and weighs what it reopened;
    one that went first is here.
    """
    fact = Fact.objects.get(pk=fact_id)
    return tuple(_live_on_its_slot(fact).order_by("recorded_at", "id").values_list("pk", flat=True))


def _live_on_its_slot(fact: Fact):
    """The live facts other than ``fact`` that the write path weighs it against (its
    scope, subject, predicate and bucket, and its author for a user fact)."""
    others = Fact.objects.filter(
        scope_id=fact.scope_id,
        subject_id=fact.subject_id,
        predicate_id=fact.predicate_id,
        bucket=fact.bucket,
        t_invalid__isnull=True,
    ).exclude(pk=fact.pk)
    if fact.bucket == Bucket.USER:
        others = others.filter(Q(author_id=fact.author_id))
    return others
