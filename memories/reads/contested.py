"""Contested state at recall (SPEC §12): the disputed values of each slot, and why.

Current truth leaves disputed facts out; an agent that asks for the contested
state gets them back beside the truth, grouped by slot, each with the open
conflicts that dispute it (their kind, and the standing facts the value
collided with), so it can answer "unknown — disputed" instead of guessing.
A disputed value is reported whatever its admission status; its Fact shape
says that status.

What such a slot shows (which value is current, which contest it, whether
the answer is "unknown") is ``memories.core.contested``'s rule, one for
recall, search and the digest: :func:`what_contested_slot_shows` applies it
to a slot read here and what the reader's recall serves.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from django.db.models import Q

from memories.core.contested import Member, OpenConflict, Shown, Slot, what_slot_shows
from memories.store.lookups import find_entity
from memories.store.models import Bucket, ConflictMember, Fact, Predicate, Scope

# A whole-scope query on a store under attack could dispute thousands of
# values; the answer stays bounded, and narrowing by subject or predicate
# shows the rest.
MAX_CONTESTED_VALUES = 500


@dataclass(frozen=True)
class Dispute:
    conflict_id: UUID
    kind: str
    opened_at: datetime
    # The conflict's other members: what the disputed value collided with.
    candidates: tuple[UUID, ...]
    # Every member (this value included), by recorded time, with whether the
    # conflict disputes it: what the rule of ``memories.core.contested`` reads.
    members: tuple[Member, ...] = ()


@dataclass(frozen=True)
class ContestedValue:
    fact: Fact
    disputes: tuple[Dispute, ...]


@dataclass(frozen=True)
class ContestedSlot:
    subject: str
    predicate: str
    values: tuple[ContestedValue, ...]


def contested_slots(
    *,
    viewer,
    scope: Scope,
    subject: str | None = None,
    predicate: str | None = None,
    as_of: datetime,
    known_at: datetime | None = None,
) -> list[ContestedSlot]:
    """Disputed facts valid at ``as_of`` (as known at ``known_at``), by slot.

    Slots come in subject, then predicate order; values within a slot by
    recorded time, so no value is favoured by its position.
    """
    facts = (
        Fact.objects.in_scope(scope)
        .valid_at(as_of, known_at=known_at)
        .with_disputed(known_at=known_at)
        .filter(disputed=True)
        .filter(Q(bucket=Bucket.SYSTEM) | Q(bucket=Bucket.USER, author=viewer))
    )
    if subject is not None:
        entity = find_entity(scope, subject)
        if entity is None:
            return []
        facts = facts.filter(subject=entity)
    if predicate is not None:
        facts = facts.filter(predicate__in=Predicate.objects.filter(name=predicate))
    facts = list(
        facts.for_display().order_by("subject__key", "predicate__name", "recorded_at", "id")[
            :MAX_CONTESTED_VALUES
        ]
    )
    return contested_values(facts, known_at=known_at)


def contested_values(facts: list[Fact], *, known_at: datetime | None) -> list[ContestedSlot]:
    """Disputed ``facts`` (loaded for display), by slot in their order, each with its disputes.

    What recall shows of a disputed value, for any read that found some (recall
    itself, search): two queries, whatever the number of facts.
    """
    disputes = _disputes([fact.pk for fact in facts], known_at=known_at)

    slots: dict[tuple[str, str], list[ContestedValue]] = {}
    for fact in facts:
        slots.setdefault((fact.subject.name, fact.predicate.name), []).append(
            ContestedValue(fact=fact, disputes=tuple(disputes.get(fact.pk, ())))
        )
    return [
        ContestedSlot(subject=subject_name, predicate=predicate_name, values=tuple(values))
        for (subject_name, predicate_name), values in slots.items()
    ]


def _disputes(fact_ids: list[UUID], *, known_at: datetime | None) -> dict[UUID, list[Dispute]]:
    """For each fact, the conflicts (open then) in which it is a disputed member."""
    disputing = ConflictMember.objects.filter(fact_id__in=fact_ids, disputes=True)
    if known_at is None:
        disputing = disputing.filter(conflict__resolved_at__isnull=True)
    else:
        disputing = disputing.filter(
            Q(conflict__resolved_at__isnull=True) | Q(conflict__resolved_at__gt=known_at),
            conflict__opened_at__lte=known_at,
        )
    disputing = list(disputing.select_related("conflict").order_by("conflict__opened_at"))
    members: dict[UUID, list[UUID]] = {}
    described: dict[UUID, list[Member]] = {}
    for conflict_id, fact_id, recorded_at, disputes in (
        ConflictMember.objects.filter(conflict_id__in={m.conflict_id for m in disputing})
        .order_by("fact__recorded_at", "fact_id")
        .values_list("conflict_id", "fact_id", "fact__recorded_at", "disputes")
    ):
        members.setdefault(conflict_id, []).append(fact_id)
        described.setdefault(conflict_id, []).append(
            Member(id=str(fact_id), recorded_at=recorded_at, disputed=disputes)
        )

    found: dict[UUID, list[Dispute]] = {}
    for member in disputing:
        conflict = member.conflict
        found.setdefault(member.fact_id, []).append(
            Dispute(
                conflict_id=conflict.pk,
                kind=conflict.kind,
                opened_at=conflict.opened_at,
                candidates=tuple(
                    fact_id for fact_id in members[conflict.pk] if fact_id != member.fact_id
                ),
                members=tuple(described[conflict.pk]),
            )
        )
    return found


def what_contested_slot_shows(slot: ContestedSlot, *, believed: Iterable[UUID]) -> Shown:
    """What ``slot`` shows a reader whose recall serves ``believed`` (in its rank order).

    The one rule (``memories.core.contested.what_slot_shows``) on a slot read
    by :func:`contested_slots`: ``believed`` is the same reader's recall at
    the same moment (any part of it; values no conflict of the slot names are
    simply current). Ids in the answer are strings of the facts' UUIDs.
    """
    conflicts: dict[UUID, OpenConflict] = {}
    for value in slot.values:
        for dispute in value.disputes:
            conflicts.setdefault(
                dispute.conflict_id,
                OpenConflict(
                    id=str(dispute.conflict_id),
                    kind=dispute.kind,
                    opened_at=dispute.opened_at,
                    members=dispute.members,
                ),
            )
    return what_slot_shows(
        Slot(
            believed=tuple(str(fact_id) for fact_id in believed),
            conflicts=tuple(conflicts.values()),
        )
    )
