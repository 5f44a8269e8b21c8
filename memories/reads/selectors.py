"""The current-truth view (SPEC §5): what the store believes, ranked; a fact's supersession chain.

A read too large for one QuerySet method: it filters by valid time and
knowledge time, drops disputed facts, keeps ``user`` facts for their author
only, and ranks by effective confidence, which is computed from the clock and
so cannot be an ORDER BY. The admission gate for ``system`` facts (SPEC §6)
sits one layer up, in ``admissions.selectors.recall``, which narrows
``truth_facts`` before ranking.
"""

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from django.db.models import Q
from django.db.models.expressions import RawSQL

from memories.store.lookups import find_entity
from memories.store.models import Bucket, Fact, Predicate, Scope


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
    """Order by effective confidence at ``at``, highest first; ties by recorded time, then id."""
    entries = [TruthEntry(fact, fact.effective_confidence(at)) for fact in facts]
    entries.sort(
        key=lambda entry: (-entry.effective_confidence, entry.fact.recorded_at, entry.fact.pk)
    )
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


# --- the supersession chain -----------------------------------------------------------

# The ids of the chain through one fact, at most ``limit`` links each way:
# forward along superseded_by; backward to the fact each link superseded (of
# several, the first recorded). A walk of unknown length is recursion, which
# the ORM cannot say; read link by link it costs a query per link.
_CHAIN_SQL = """
WITH RECURSIVE following (id, next, depth) AS (
    SELECT f.id, f.superseded_by_id, 0 FROM memories_fact f WHERE f.id = %s
  UNION ALL
    SELECT f.id, f.superseded_by_id, following.depth + 1
      FROM following
      JOIN memories_fact f ON f.id = following.next
     WHERE following.depth < %s
), previous (id, depth) AS (
    SELECT %s::uuid, 0
  UNION ALL
    SELECT earlier.id, previous.depth + 1
      FROM previous
     CROSS JOIN LATERAL (
        SELECT f.id FROM memories_fact f
         WHERE f.superseded_by_id = previous.id
         ORDER BY f.recorded_at, f.id
         LIMIT 1
     ) AS earlier
     WHERE previous.depth < %s
)
SELECT id FROM following UNION SELECT id FROM previous
"""


def supersession_chain(fact: Fact, *, limit: int) -> list[Fact]:
    """The supersession chain through ``fact``, oldest first, in one statement.

    Forward, each link is the fact the one before it is ``superseded_by``;
    backward, each is the first recorded of the facts the one after it
    superseded. At most ``limit`` links each way, with ``fact`` itself (the
    instance given) between them. The other links have their object entity
    and source type loaded.
    """
    links = (
        Fact.objects.filter(pk__in=RawSQL(_CHAIN_SQL, [fact.pk, limit, fact.pk, limit]))
        .exclude(pk=fact.pk)
        .select_related("object_ref", "source_type")
        .order_by("recorded_at", "id")
    )
    by_id: dict[UUID, Fact] = {}
    first_replaced: dict[UUID | None, Fact] = {}  # by the id of the fact that superseded it
    for link in links:
        by_id[link.pk] = link
        first_replaced.setdefault(link.superseded_by_id, link)
    after: list[Fact] = []
    current = fact
    while len(after) < limit and current.superseded_by_id in by_id:
        current = by_id[current.superseded_by_id]
        after.append(current)
    before: list[Fact] = []
    current = fact
    while len(before) < limit and current.pk in first_replaced:
        current = first_replaced[current.pk]
        before.insert(0, current)
    return [*before, fact, *after]
