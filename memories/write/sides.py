"""Closing the open conflicts a person's act left without two sides.

A conflict closes by itself when a side stops being live (SPEC §3): the write
path weighs that after every change it applies (``memories.store.apply``).
A layer above can also take a live fact out of the question: a steward who
rejects a candidate (SPEC §6) says it will never be served as truth, so a
conflict between it and the fact it collided with asks nothing any more.
This layer cannot know what a verdict is (nothing here imports
``admissions``); the caller says which facts are no longer sides, and the
rule that decides whether what is left is still a conflict is the same
``conflict_is_moot`` the write path uses.
"""

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from django.contrib.auth.models import User
from django.db.models import Prefetch, QuerySet

from memories.core.effects import MOOT, Effects, restore_effects, set_aside_effects
from memories.store.apply import do_apply
from memories.store.models import Conflict, ConflictMember
from memories.store.touched import recompute_on_commit
from memories.write.claims import end_claims


@dataclass
class SetAside:
    """What :func:`do_close_set_aside` found: the conflicts it closed and those still open."""

    closed: list[Conflict] = field(default_factory=list)
    still_open: list[Conflict] = field(default_factory=list)


def open_conflicts_of(fact_id: UUID, scope_id: int, *, lock: bool = True) -> "list[Conflict]":
    """The open conflicts ``fact_id`` (of scope ``scope_id``) is a member of, oldest first,
    with their members and the members' facts.

    With ``lock`` the conflicts are locked (``FOR UPDATE``): call inside the
    transaction that will act on them. Every statement names the scope
    (docs/scale-out.md).
    """
    return _with_members(Conflict.objects.open(), fact_id, scope_id, lock=lock)


def member_fact_ids(conflicts: Iterable[Conflict]) -> set[UUID]:
    """Every member fact of these conflicts (as loaded by :func:`open_conflicts_of`)."""
    return {member.fact_id for conflict in conflicts for member in conflict.members.all()}


def do_close_set_aside(
    *,
    actor: User,
    conflicts: Iterable[Conflict],
    set_aside: frozenset[UUID],
    reason: str,
    cause: Mapping[str, Any],
    now: datetime,
) -> SetAside:
    """Close each of ``conflicts`` that has fewer than two sides once ``set_aside`` is out.

    ``conflicts`` as :func:`open_conflicts_of` loaded them, under the lock of
    their slot, which the caller holds (the name says so). A member is still a
    side while its fact is live and not in ``set_aside``. A closed conflict is
    resolved as ``moot`` by ``actor`` with ``reason``, and audited as their
    action, ``cause`` joining its after-state. A conflict that keeps two
    sides stays open, the set-aside members in it, shown as what they are.
    """
    result = SetAside()
    touched: set[tuple[int, int, int]] = set()
    closed_ids: list[UUID] = []
    scope_ids: set[int] = set()
    for conflict in conflicts:
        scope_ids.add(conflict.scope_id)
        sides = _sides(conflict, set_aside)
        changes = set_aside_effects(
            conflict.pk,
            conflict.scope_id,
            sides,
            now=now,
            reason=reason,
            actor_id=actor.pk,
            cause=cause,
        )
        if not changes:
            result.still_open.append(conflict)
            continue
        touched |= do_apply(Effects(changes, now=now)).touched
        # Closing a conflict ends its members' disputes: their slots' truth changes.
        touched |= {
            (m.fact.scope_id, m.fact.subject_id, m.fact.predicate_id)
            for m in conflict.members.all()
        }
        closed_ids.append(conflict.pk)
        result.closed.append(conflict)
    if closed_ids:
        # One fact's conflicts share its scope; the statements name it.
        (scope_id,) = scope_ids
        end_claims(conflict_ids=closed_ids, scope_id=scope_id)
        recompute_on_commit(touched)
        result.closed = list(
            Conflict.objects.filter(scope_id=scope_id, pk__in=closed_ids).order_by(
                "opened_at", "id"
            )
        )
    return result


def closed_by_people(fact_id: UUID, scope_id: int, *, lock: bool = False) -> "list[Conflict]":
    """The conflicts of ``fact_id`` that a person's act closed as moot (:func:`do_close_set_aside`),
    oldest first, loaded as :func:`open_conflicts_of` loads open ones."""
    found = Conflict.objects.filter(resolution=MOOT, resolved_by__isnull=False)
    return _with_members(found, fact_id, scope_id, lock=lock)


def do_reopen_set_aside(
    *,
    actor: User,
    conflicts: Iterable[Conflict],
    set_aside: frozenset[UUID],
    reason: str,
    cause: Mapping[str, Any],
    now: datetime,
) -> list[Conflict]:
    """Reopen each of ``conflicts`` (closed by :func:`do_close_set_aside`) that has two
    sides again with only ``set_aside`` out; the ones reopened.

    Under the lock of their slot, held by the caller. Audited as ``actor``'s act.
    """
    touched: set[tuple[int, int, int]] = set()
    reopened: list[UUID] = []
    scope_ids: set[int] = set()
    for conflict in conflicts:
        sides = _sides(conflict, set_aside)
        changes = restore_effects(
            conflict.pk,
            conflict.scope_id,
            sides,
            now=now,
            reason=reason,
            actor_id=actor.pk,
            cause=cause,
        )
        if changes:
            touched |= do_apply(Effects(changes, now=now)).touched
            reopened.append(conflict.pk)
            scope_ids.add(conflict.scope_id)
    if not reopened:
        return []
    recompute_on_commit(touched)
    (scope_id,) = scope_ids
    return list(
        Conflict.objects.filter(scope_id=scope_id, pk__in=reopened).order_by("opened_at", "id")
    )


def _sides(conflict: Conflict, set_aside: Collection[UUID]) -> list[tuple[str, bool]]:
    # Each member's role, and whether it is still a side: live and not set aside.
    return [
        (member.role, member.fact.is_live and member.fact_id not in set_aside)
        for member in conflict.members.all()
    ]


def _with_members(
    conflicts: "QuerySet[Conflict]", fact_id: UUID, scope_id: int, *, lock: bool
) -> "list[Conflict]":
    # Those of ``conflicts`` that ``fact_id`` is a member of, oldest first, each
    # with its members (and their facts) by recorded time. Ordered by the
    # members' own columns: the default order joins the conflict by id alone,
    # which names no scope.
    members = ConflictMember.objects.filter(scope_id=scope_id, fact__scope_id=scope_id).order_by(
        "fact__recorded_at", "fact_id"
    )
    found = (
        conflicts.filter(
            scope_id=scope_id,
            pk__in=ConflictMember.objects.filter(scope_id=scope_id, fact_id=fact_id).values(
                "conflict"
            ),
        )
        .prefetch_related(Prefetch("members", queryset=members.select_related("fact")))
        .order_by("opened_at", "id")
    )
    if lock:
        found = found.select_for_update(of=("self",))
    return list(found)
