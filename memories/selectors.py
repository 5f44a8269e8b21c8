"""The current-truth view (SPEC §5): what the store believes, ranked.

A read too large for one QuerySet method: it filters by valid time and
knowledge time, drops disputed facts, keeps ``user`` facts for their author
only, and ranks by effective confidence, which is computed from the clock and
so cannot be an ORDER BY. The admission gate for ``system`` facts (SPEC §6)
sits one layer up, in ``admissions.selectors.recall``, which narrows
``truth_facts`` before ranking.
"""

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q

from memories.lookups import find_entity
from memories.models import Bucket, Fact, Predicate, Scope


@dataclass(frozen=True)
class TruthEntry:
    fact: Fact
    effective_confidence: float


def truth_facts(
    *,
    viewer,
    scope: Scope,
    subject: str | None = None,
    predicate: str | None = None,
    as_of: datetime,
    known_at: datetime | None = None,
):
    """Facts valid at ``as_of`` (as known at ``known_at``), undisputed, visible to ``viewer``."""
    facts = (
        Fact.objects.in_scope(scope)
        .valid_at(as_of, known_at=known_at)
        .undisputed(known_at=known_at)
        .filter(Q(bucket=Bucket.SYSTEM) | Q(bucket=Bucket.USER, author=viewer))
    )
    if subject is not None:
        entity = find_entity(scope, subject)
        if entity is None:
            return facts.none()
        facts = facts.filter(subject=entity)
    if predicate is not None:
        facts = facts.filter(predicate__in=Predicate.objects.filter(name=predicate))
    return facts.for_display()


def rank(facts, *, at: datetime) -> list[TruthEntry]:
    """Order by effective confidence at ``at``, highest first; ties by recorded time."""
    entries = [TruthEntry(fact, fact.effective_confidence(at)) for fact in facts]
    entries.sort(key=lambda entry: (-entry.effective_confidence, entry.fact.recorded_at))
    return entries


def current_truth(
    *,
    viewer,
    scope: Scope,
    subject: str | None = None,
    predicate: str | None = None,
    as_of: datetime,
    known_at: datetime | None = None,
) -> list[TruthEntry]:
    """The store's belief, without the admission gate (see ``admissions.selectors``)."""
    facts = truth_facts(
        viewer=viewer,
        scope=scope,
        subject=subject,
        predicate=predicate,
        as_of=as_of,
        known_at=known_at,
    )
    return rank(facts, at=as_of)
