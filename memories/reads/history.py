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

from django.db.models import Q

from memories.store.lookups import find_entity
from memories.store.models import Fact, FactQuerySet, InvalidationKind, Predicate, Scope

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
