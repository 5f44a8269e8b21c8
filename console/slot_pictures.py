"""The console's pictures of slots and of decay, from facts: the shell around ``console.timeline``.

``console.timeline`` is pure geometry on plain values; this module turns
facts into those values (with the decay settings) for the three pages that
draw them: the conflict page and the fact page (a slot's timeline, full
size), the subject page (every slot of the entity, compact, on one time axis)
and the fact page's decay chart. The markup is one set of template includes
(``console/includes/timeline_svg.html``, ``slot_timeline.html``,
``decay_chart.html``).
"""

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

from console import timeline
from memories.core.confidence import fact_decays
from memories.store.models import Bucket, Fact


def spans(
    facts: Iterable[Fact],
    *,
    across_group: bool,
    in_conflict: Collection = (),
    disputed: Collection = (),
    current=None,
) -> list[timeline.Span]:
    """Each fact as a span; across an exclusion group a lane is the predicate and the value."""
    return [
        timeline.Span(
            fact_id=str(fact.pk),
            value=f"{fact.predicate.name} {fact.object_display}"
            if across_group
            else fact.object_display,
            start=fact.t_valid,
            end=fact.t_invalid,
            ended_as=fact.invalidation_kind if fact.t_invalid else "",
            superseded_by=str(fact.superseded_by_id) if fact.superseded_by_id else None,
            in_conflict=fact.pk in in_conflict,
            disputed=fact.pk in disputed,
            recorded_at=fact.recorded_at,
            confidence=fact.confidence,
            last_reinforced_at=fact.last_reinforced_at,
            decays=fact_decays(fact.epistemic, fact.source_type.decays),
            source=fact.source_type.name,
            current=fact.pk == current,
        )
        for fact in facts
    ]


def draw(
    drawn: list[timeline.Span],
    *,
    now: datetime,
    conflict_opened_at: datetime | None = None,
    compact: bool = False,
    axis: tuple[datetime, datetime] | None = None,
) -> timeline.Timeline:
    return timeline.layout(
        drawn,
        now=now,
        conflict_opened_at=conflict_opened_at,
        half_life_days=settings.CLAIMGRAPH_HALF_LIFE_DAYS,
        floor=settings.CLAIMGRAPH_CONFIDENCE_FLOOR,
        compact=compact,
        axis=axis,
    )


def decay_of(fact: Fact, *, now: datetime) -> timeline.DecayChart:
    """The fact's confidence over time; projected past now only while it is still valid."""
    return timeline.decay_chart(
        base=fact.confidence,
        last_reinforced_at=fact.last_reinforced_at,
        decays=fact_decays(fact.epistemic, fact.source_type.decays),
        now=now,
        half_life_days=settings.CLAIMGRAPH_HALF_LIFE_DAYS,
        floor=settings.CLAIMGRAPH_CONFIDENCE_FLOOR,
        projected=fact.is_live,
    )


@dataclass(frozen=True)
class SlotPicture:
    """One slot of a subject, as the subject page's small multiple shows it."""

    key: str
    # The predicate, or the exclusion group's predicates, that name the slot.
    name: str
    across_group: bool
    private_to: str | None
    facts: tuple[Fact, ...]
    timeline: timeline.Timeline
    # The fact the card's heading links to: the newest still valid, else the newest.
    lead: Fact
    # The versions valid now (the slot's values; several in a parallel slot or a conflict).
    live: tuple[Fact, ...]


def subject_slots(facts: Iterable[Fact], *, now: datetime) -> list[SlotPicture]:
    """Group ``facts`` (``memories.reads.history.slots_of_entity``, in its order) by slot
    and draw each compact, every slot on one time axis so the cards line up."""
    groups: dict[tuple, list[Fact]] = {}
    for fact in facts:
        groups.setdefault((fact.slot, fact.bucket, fact.owner), []).append(fact)
    if not groups:
        return []
    moments = [fact.t_valid for group in groups.values() for fact in group]
    moments += [fact.t_invalid for group in groups.values() for fact in group if fact.t_invalid]
    axis = (min(moments), max(moments))
    pictures = []
    for (key, bucket, _), group in groups.items():
        across_group = key.startswith("group:")
        live = [fact for fact in group if fact.is_live]
        names = sorted({fact.predicate.name for fact in group})
        pictures.append(
            SlotPicture(
                key=key,
                name=" / ".join(names),
                across_group=across_group,
                private_to=group[0].author.username if bucket == Bucket.USER else None,
                facts=tuple(group),
                timeline=draw(
                    spans(group, across_group=across_group, disputed=disputed_of(group)),
                    now=now,
                    compact=True,
                    axis=axis,
                ),
                lead=(live or group)[-1],
                live=tuple(live),
            )
        )
    # By name; a private slot after the shared slot of the same name.
    return sorted(pictures, key=lambda p: (p.name, p.private_to is not None, p.private_to or ""))


def disputed_of(facts: Iterable[Fact]) -> set:
    """The ids of the facts annotated as disputed (``FactQuerySet.with_disputed``)."""
    return {fact.pk for fact in facts if getattr(fact, "disputed", False)}
