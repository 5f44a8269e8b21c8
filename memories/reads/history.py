"""Every version of one slot, current and past, and how each one ended (SPEC §10).

A slot is what the write path weighs an assertion against and locks
(``memories.store.slots``): a scope, a subject, and a predicate or, for a predicate
in an exclusion group, every predicate of that group. Its history is every
fact ever recorded on it that the viewer may read, live or not, oldest
recorded first: nothing is ever deleted, so the history only grows.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Literal
from uuid import UUID

from django.db.models import Case, F, Q, Value, When, Window
from django.db.models.functions import Concat, RowNumber

from memories.store.lookups import find_entity
from memories.store.models import (
    Bucket,
    Entity,
    Fact,
    FactQuerySet,
    InvalidationKind,
    Predicate,
    Scope,
)

Ending = Literal["live", "bounded", "superseded", "invalidated", "withdrawn"]


def slot_predicates(name: str):
    """The predicates that share a slot with the predicate ``name``: itself, or its group."""
    group = Predicate.objects.filter(name=name, exclusion_group__gt="").values("exclusion_group")
    return Predicate.objects.filter(Q(name=name) | Q(exclusion_group__in=group))


def slot_history(*, viewer, scope: Scope, subject: str, predicate: str) -> FactQuerySet:
    """The slot's facts ``viewer`` may read, any validity, with what a version shows.

    The caller orders and pages it (by ``recorded_at``, then ``id``). An
    unknown subject or predicate has an empty history, as it has no truth.
    The viewer's right to read ``scope`` is the caller's to check first.
    """
    entity = find_entity(scope, subject)
    if entity is None:
        return Fact.objects.none()
    return (
        Fact.objects.readable_by(viewer)
        .in_scope(scope)
        .filter(subject=entity, predicate__in=slot_predicates(predicate))
        .for_display()
        .select_related("invalidated_by")
    )


def slot_of(*, viewer, fact: Fact, limit: int) -> list[Fact]:
    """The newest ``limit`` versions of ``fact``'s slot that ``viewer`` may read, oldest first.

    The slot as the write path weighs it: the fact's scope, subject and
    predicate (or exclusion group), in its bucket, and for a ``user`` bucket
    fact its author's own. ``fact`` itself is always among them, however old.
    The viewer's right to read ``fact`` is the caller's to check first.
    """
    versions = (
        Fact.objects.readable_by(viewer)
        .filter(
            scope_id=fact.scope_id,
            subject_id=fact.subject_id,
            predicate__in=slot_predicates(fact.predicate.name),
            bucket=fact.bucket,
        )
        .with_disputed()
        .for_display()
        .select_related("invalidated_by")
    )
    if fact.bucket == Bucket.USER:
        versions = versions.filter(author_id=fact.author_id)
    newest = list(versions.order_by("-recorded_at", "-id")[:limit])
    if all(version.pk != fact.pk for version in newest):
        newest[-1:] = [fact]
    return sorted(newest, key=lambda version: (version.recorded_at, str(version.pk)))


def slots_of_entity(*, viewer, entity: Entity, per_slot: int) -> FactQuerySet:
    """Every slot of ``entity``: the newest ``per_slot`` versions of each, in one query.

    Each fact is annotated with its ``slot`` (``group:<exclusion group>`` or
    ``predicate:<name>``, as the slot lock is named) and ``owner`` (a ``user``
    bucket fact's author, else 0): a slot is one (slot, bucket, owner); and
    ``disputed`` (``FactQuerySet.with_disputed``). Ordered
    slot by slot, each oldest first, so a page can group them in one pass.
    """
    slot = Case(
        When(
            ~Q(predicate__exclusion_group=""),
            then=Concat(Value("group:"), F("predicate__exclusion_group")),
        ),
        default=Concat(Value("predicate:"), F("predicate__name")),
    )
    owner = Case(When(bucket=Bucket.USER, then=F("author_id")), default=Value(0))
    return (
        Fact.objects.readable_by(viewer)
        .in_scope(entity.scope)
        .filter(subject=entity)
        .annotate(slot=slot, owner=owner)
        .annotate(
            newness=Window(
                RowNumber(),
                partition_by=[F("slot"), F("bucket"), F("owner")],
                order_by=[F("recorded_at").desc(), F("id").desc()],
            )
        )
        .filter(newness__lte=per_slot)
        .with_disputed()
        .for_display()
        .select_related("invalidated_by")
        .order_by("slot", "bucket", "owner", "recorded_at", "id")
    )


@dataclass(frozen=True)
class End:
    """How one version of a slot ended, or that it has not."""

    how: Ending
    # When its valid time ends (t_invalid) and when the store learned it did.
    at: datetime | None
    recorded_at: datetime | None
    by: str | None
    superseded_by: UUID | None
    reason: str


def ending(fact: Fact) -> End:
    """How ``fact`` ended: still live, bounded when asserted, superseded, invalidated, withdrawn.

    A fact asserted with its own ``t_invalid`` is *bounded*: nobody ended it,
    its valid time simply has an end.
    """
    if fact.t_invalid is None:
        return End("live", None, None, None, None, "")
    how: Ending = {
        InvalidationKind.SUPERSEDED: "superseded",
        InvalidationKind.INVALIDATED: "invalidated",
        InvalidationKind.WITHDRAWN: "withdrawn",
    }.get(fact.invalidation_kind, "bounded")
    return End(
        how=how,
        at=fact.t_invalid,
        recorded_at=fact.invalidated_at,
        by=fact.invalidated_by.get_username() if fact.invalidated_by else None,
        superseded_by=fact.superseded_by_id,
        reason=fact.invalidation_reason,
    )
