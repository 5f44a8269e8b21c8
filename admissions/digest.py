"""The context digest's inputs (SPEC §10): recall, and the open conflicts with their candidates.

Gathers plain values and hands them to the pure ``memories.core.digest``.
The truth comes through the admission gate exactly as recall serves it
(``admissions.selectors.recall``): only admitted ``system`` facts and the
viewer's own ``user`` facts. The open conflicts come with every member the
viewer may read, whatever its admission status; which of them is current
and which is shown contesting it is ``memories.core.contested``'s rule,
applied in ``memories.core.digest``, as for recall's contested state.
"""

from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

from admissions.selectors import recall
from memories.core.digest import Candidate, Digest, Dispute, Line, render
from memories.reads.contested import contested_slots
from memories.store.models import Epistemic, Fact, Scope

DEFAULT_BUDGET = 8_000
MIN_BUDGET = 200
MAX_BUDGET = 100_000


@dataclass
class _OpenConflict:
    kind: str
    opened_at: datetime
    subject: str
    predicate: str
    # Each member once, with whether it is the disputed one.
    members: dict[UUID, tuple[Fact, bool]] = field(default_factory=dict)


def context_digest(
    *, viewer, scope: Scope, subject: str | None = None, at: datetime, budget: int
) -> Digest:
    """The digest of ``scope`` (or one subject in it) for ``viewer`` at ``at``.

    A constant number of queries, whatever the number of facts: the truth,
    the disputed values with their conflicts, and the standing candidates.
    """
    entries = recall(viewer=viewer, scope=scope, subject=subject, as_of=at)
    slots = contested_slots(viewer=viewer, scope=scope, subject=subject, as_of=at)

    disputed = {value.fact.pk: value for slot in slots for value in slot.values}
    standing_ids = {
        fact_id
        for value in disputed.values()
        for dispute in value.disputes
        for fact_id in dispute.candidates
        if fact_id not in disputed
    }
    standing = {
        fact.pk: fact
        for fact in Fact.objects.readable_by(viewer).filter(pk__in=standing_ids).for_display()
    }

    conflicts: dict[UUID, _OpenConflict] = {}
    for value in disputed.values():
        for dispute in value.disputes:
            found = conflicts.setdefault(
                dispute.conflict_id,
                _OpenConflict(
                    kind=dispute.kind,
                    opened_at=dispute.opened_at,
                    subject=value.fact.subject.name,
                    predicate=value.fact.predicate.name,
                ),
            )
            found.members[value.fact.pk] = (value.fact, True)
            for fact_id in dispute.candidates:
                # A member may be standing here and disputed by another conflict.
                other = standing.get(fact_id) or getattr(disputed.get(fact_id), "fact", None)
                if other is not None:
                    found.members.setdefault(fact_id, (other, False))

    def line(fact: Fact) -> Line:
        return Line(
            id=str(fact.pk),
            subject=fact.subject.name,
            predicate=fact.predicate.name,
            object=fact.object_display,
            source_type=fact.source_type.name,
            confidence=fact.effective_confidence(at),
            recorded_at=fact.recorded_at,
        )

    truth = [line(entry.fact) for entry in entries]
    return render(
        scope=scope.name,
        subject=subject,
        at=at,
        commitments=[
            item
            for item, entry in zip(truth, entries, strict=True)
            if entry.fact.epistemic == Epistemic.COMMITMENT
        ],
        truth=[
            item
            for item, entry in zip(truth, entries, strict=True)
            if entry.fact.epistemic != Epistemic.COMMITMENT
        ],
        disputes=[
            Dispute(
                conflict_id=str(conflict_id),
                kind=found.kind,
                opened_at=found.opened_at,
                subject=found.subject,
                predicate=found.predicate,
                candidates=tuple(
                    Candidate(fact=line(fact), disputed=is_disputed)
                    for fact, is_disputed in found.members.values()
                ),
            )
            for conflict_id, found in conflicts.items()
        ],
        budget=budget,
    )
