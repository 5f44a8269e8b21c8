"""Entity merges: a steward says two entities name the same thing (SPEC §12).

A merge is a record, never an edit: ``EntityMerge`` rows are only inserted. A
merge is *in force* while no later record names it in ``undoes``; undoing it
inserts that later record. That rule is stated once, in SQL
(``memories/sql/merges.sql``), and read here through
``EntityMerge.objects.in_force()``. While a merge is in force the write
path's entity lookup answers with the entity merged *into*, so new writes
naming either spelling land on one slot.

The facts of the entity merged away move to the surviving entity in the
merge's transaction, and the facts naming it as their object point at the
surviving entity instead, so its slot history and recall hold them and no
fact is left naming something nothing resolves to. A live fact is weighed as
the write path weighs a write (``write.actions.do_move_fact``: the same
``decide``, under the surviving slot's lock), so a contradiction opens a
conflict, a supersession closes what it replaces, and a duplicate reinforces
the standing fact instead of standing twice. Facts already closed move as
they are, and conflicts that named the old entity name the surviving one.
An undo ends the name's resolution; the facts moved stay where the merge put
them.

Chains are refused rather than followed: an entity already merged cannot be
merged again, nor can anything be merged into it, and an entity that others
are merged into cannot itself be merged away. One hop is then always enough,
and an undo never leaves a dangling chain behind it.
"""

from datetime import datetime

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memories.core.effects import Effects, MoveConflicts, MoveFact, merge_effects
from memories.core.text import required_reason
from memories.store.apply import do_apply
from memories.store.errors import Forbidden, NotFound, Rejected, StateConflict
from memories.store.models import Entity, EntityMerge, Fact, Scope
from memories.store.roles import is_steward_of
from memories.store.slots import lock_entity_against_writes, lock_slots
from memories.store.touched import recompute_on_commit
from memories.store.vocabulary import load_vocabulary
from memories.write.actions import do_move_fact


def visible_entity(actor: User, entity_id: int | str) -> Entity:
    """An entity in one of ``actor``'s scopes; anything else is :class:`NotFound`."""
    try:
        pk = int(entity_id)
    except (TypeError, ValueError):
        raise NotFound("entity") from None
    entity = (
        Entity.objects.filter(pk=pk, scope__in=Scope.objects.visible_to(actor))
        .select_related("scope")
        .first()
    )
    if entity is None:
        raise NotFound("entity")
    return entity


def merge_entities(
    *,
    actor: User,
    entity_id: int | str,
    into_id: int | str,
    reason: str,
    now: datetime | None = None,
) -> EntityMerge:
    """Record that ``entity`` names the same thing as ``into``; steward of the scope only."""
    entity = visible_entity(actor, entity_id)
    if not is_steward_of(actor, entity.scope):
        raise Forbidden("only a steward of the scope may merge entities")
    try:
        into = visible_entity(actor, into_id)
    except NotFound:
        raise Rejected("into", "no such entity in this scope") from None
    if into.scope_id != entity.scope_id:
        raise Rejected("into", "entities of different scopes are never merged")
    if into.pk == entity.pk:
        raise Rejected("into", "an entity cannot be merged into itself")
    reason = required_reason(reason, "reason")

    with transaction.atomic():
        # Lock both rows in id order: two stewards merging the same pair in
        # opposite directions must not both succeed, nor deadlock.
        list(Entity.objects.filter(pk__in=[entity.pk, into.pk]).order_by("pk").select_for_update())
        # Writes under way on the entity merged away finish first (their facts
        # then move with the rest); later ones see the merge once it commits.
        lock_entity_against_writes(entity.scope_id, entity.pk)
        now = now or timezone.now()
        in_force = EntityMerge.objects.in_force().filter(entity_id__in=[entity.pk, into.pk])
        for merge in in_force:
            which = "entity" if merge.entity_id == entity.pk else "into"
            raise StateConflict(f"{which}: already merged into another entity; undo that first")
        if EntityMerge.objects.in_force().filter(into_id=entity.pk).exists():
            raise StateConflict("entity: others are merged into it; merge them directly instead")
        merge = EntityMerge.objects.create(
            scope_id=entity.scope_id,
            entity=entity,
            into=into,
            actor=actor,
            at=now,
            reason=reason,
        )
        applied = do_apply(
            merge_effects(
                merge.pk,
                entity.scope_id,
                "merged-entity",
                entity.name,
                was=entity.name,
                now_resolves_to=into.name,
                reason=reason,
                now=now,
                actor_id=actor.pk,
            )
        )
        recompute_on_commit(applied.touched)
        _move_facts(entity, into, actor=actor, now=now)
    return merge


def _move_facts(entity: Entity, into: Entity, *, actor: User, now: datetime) -> None:
    """Move every fact naming ``entity`` (subject or object) to ``into``; live ones as writes."""
    vocabulary = load_vocabulary()

    def naming_it() -> list[Fact]:
        return list(
            Fact.objects.filter(Q(subject=entity) | Q(object_ref=entity), scope_id=entity.scope_id)
            .select_related("scope", "predicate", "source_type", "author", "object_ref")
            .order_by("t_valid", "recorded_at", "id")
        )

    def moved_to(other: Entity | None) -> Entity | None:
        return into if other is not None and other.pk == entity.pk else other

    facts = naming_it()
    # The slots the facts leave and join, as the write path names them: a
    # write that resolved the old name before the merge record was seen waits here.
    lock_slots(
        (entity.scope_id, subject, vocabulary.spec.slot_name(fact.predicate.name))
        for fact in facts
        for subject in {fact.subject_id, moved_to(fact.subject).pk}
    )
    facts = naming_it()
    closed = [fact for fact in facts if not fact.is_live]
    moves = []
    for fact in closed:
        target = moved_to(fact.object_ref)
        moves.append(
            MoveFact(
                fact.pk,
                moved_to(fact.subject).pk,
                None if target is None else target.pk,
                fact.object_key if target is None else str(target.pk),
            )
        )
    moves.append(MoveConflicts(entity.scope_id, entity.pk, into.pk))
    moved = do_apply(Effects(tuple(moves), now=now))
    recompute_on_commit(moved.touched)
    live = [fact for fact in facts if fact.is_live]
    siblings = frozenset(fact.pk for fact in live)
    for fact in live:
        applied = do_move_fact(
            fact,
            moved_to(fact.subject),
            moved_to(fact.object_ref),
            vocabulary,
            actor=actor,
            now=now,
            siblings=siblings,
        )
        recompute_on_commit(applied.touched)


def undo_merge(
    *,
    actor: User,
    merge_id: int | str,
    reason: str,
    now: datetime | None = None,
) -> EntityMerge:
    """Reverse an active merge by a later record naming it; steward of the scope only."""
    try:
        pk = int(merge_id)
    except (TypeError, ValueError):
        raise NotFound("merge") from None
    merge = (
        EntityMerge.objects.filter(pk=pk, scope__in=Scope.objects.visible_to(actor))
        .select_related("scope", "entity", "into")
        .first()
    )
    if merge is None:
        raise NotFound("merge")
    if not is_steward_of(actor, merge.scope):
        raise Forbidden("only a steward of the scope may undo a merge")
    reason = required_reason(reason, "reason")

    with transaction.atomic():
        Entity.objects.select_for_update().get(pk=merge.entity_id)
        now = now or timezone.now()
        if merge.undoes_id is not None:
            raise StateConflict("this record is itself an undo; merge the entities again instead")
        if EntityMerge.objects.filter(undoes=merge).exists():
            raise StateConflict("this merge was already undone")
        undo = EntityMerge.objects.create(
            scope_id=merge.scope_id,
            entity_id=merge.entity_id,
            into_id=merge.into_id,
            undoes=merge,
            actor=actor,
            at=now,
            reason=reason,
        )
        applied = do_apply(
            merge_effects(
                undo.pk,
                merge.scope_id,
                "unmerged-entity",
                merge.entity.name,
                was=merge.into.name,
                now_resolves_to=merge.entity.name,
                reason=reason,
                now=now,
                actor_id=actor.pk,
            )
        )
        recompute_on_commit(applied.touched)
    return undo


def merge_target_id(entity_id: int) -> int | None:
    """The entity ``entity_id`` is merged into, if a merge of it is in force."""
    merges = EntityMerge.objects.in_force().filter(entity_id=entity_id)
    return merges.values_list("into_id", flat=True).first()
