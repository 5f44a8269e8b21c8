"""Search over the facts a caller may read (issue 31 §1), ranked by PostgreSQL, grouped by slot.

Here rather than in ``memories.reads`` because two of its filters are
admission statuses (``admitted``, ``candidate``), which this app defines;
what it asks the database is ``memories.reads.search``'s.

Authorization comes first, inside the SQL: every statement reads only the
scopes the caller may read (``Fact.objects.readable_by``, and the same scope
ids for the entities that lend their names), so a foreign scope's rows
change no rank and no count. A match's disputed values are shown as recall
shows them (``memories.reads.contested.contested_values``): apart, with the
conflicts that dispute them, never as the slot's truth.

Queries, whatever the store's size: the entities named (one), the page of
facts with the count of every match (one), and, only when the page holds
disputed values, their conflicts (two); the faces add the facts' admission
statuses. When nothing matches, one more names the nearest entities.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, get_args

from django.db.models import Count, Window

from admissions.selectors import with_admission_status
from memories.core.decisions import UnknownName, nearest_names
from memories.reads.contested import Dispute, contested_values
from memories.reads.search import fact_matches, named_entities, ranked
from memories.reads.search import nearest_names as nearest_entity_names
from memories.store.errors import Rejected
from memories.store.models import Fact, Scope
from memories.store.roles import readable_scope_ids
from memories.store.vocabulary import load_vocabulary

SearchStatus = Literal["live", "disputed", "admitted", "candidate"]
STATUSES: tuple[str, ...] = get_args(SearchStatus)
DEFAULT_LIMIT = 20
MAX_LIMIT = 100
MAX_QUERY_LENGTH = 500


@dataclass(frozen=True)
class Hit:
    """One matching fact: ``ts_rank`` of its text, and pg_trgm's similarity of its names."""

    fact: Fact
    rank: float
    similarity: float


@dataclass(frozen=True)
class ContestedHit:
    """A matching fact that is disputed, with the conflicts that dispute it (as recall shows)."""

    hit: Hit
    disputes: tuple[Dispute, ...]


@dataclass(frozen=True)
class SlotHits:
    """The matches on one slot: its undisputed values, then its disputed ones."""

    scope: str
    subject: str
    predicate: str
    values: tuple[Hit, ...]
    contested: tuple[ContestedHit, ...]


@dataclass(frozen=True)
class SearchResult:
    slots: list[SlotHits]
    # Every match the filters let through, beyond the page too.
    count: int
    as_of: datetime
    # For a search that found nothing: the entity names nearest to the text.
    did_you_mean: list[str]


def check_predicate(predicate: str | None) -> None:
    """Refuse a predicate outside the vocabulary, naming the nearest valid ones."""
    if predicate is None:
        return
    names = load_vocabulary({"predicate": predicate}).predicates
    if predicate not in names:
        raise UnknownName(
            "predicate",
            f"unknown predicate {predicate!r}",
            did_you_mean=nearest_names(predicate, names),
        )


def search(
    *,
    viewer,
    text: str,
    scope: Scope | None = None,
    predicate: str | None = None,
    status: SearchStatus = "live",
    as_of: datetime,
    limit: int = DEFAULT_LIMIT,
) -> SearchResult:
    """The facts valid at ``as_of`` that ``viewer`` may read and whose text matches ``text``.

    A fact matches when its literal object, statement or evidence matches
    ``text`` as a web-search query, or when its subject or entity object is
    named so (full-text, or a near-miss by pg_trgm). ``scope``, already
    checked readable by the caller, narrows to one scope. ``status``: every
    valid fact (``live``), or only the ``disputed``, ``admitted`` or
    ``candidate`` ones. At most ``limit`` facts, best ranked first,
    grouped by slot in the order of each slot's best.
    """
    text = text.strip()
    if not text:
        raise Rejected("q", "must not be empty")
    if len(text) > MAX_QUERY_LENGTH:
        raise Rejected("q", f"must be at most {MAX_QUERY_LENGTH} characters")
    if status not in STATUSES:
        raise Rejected("status", f"must be one of {', '.join(STATUSES)}")
    if not 1 <= limit <= MAX_LIMIT:
        raise Rejected("limit", f"must be between 1 and {MAX_LIMIT}")
    check_predicate(predicate)

    scope_ids = [scope.pk] if scope is not None else readable_scope_ids(viewer)
    if scope_ids is not None and not scope_ids:
        return SearchResult(slots=[], count=0, as_of=as_of, did_you_mean=[])
    facts = Fact.objects.readable_by(viewer).valid_at(as_of)
    if scope is not None:
        facts = facts.in_scope(scope)
    if predicate is not None:
        facts = facts.filter(predicate__name=predicate)
    if status == "disputed":
        facts = facts.disputed()
    elif status in ("admitted", "candidate"):
        facts = with_admission_status(facts).filter(admission_status=status)

    matching = fact_matches(facts, text, named_entities(scope_ids, text))
    # The count of every match rides on the page's rows (a window runs before
    # the LIMIT): one statement fewer to build and send.
    page = list(
        ranked(matching.with_disputed(), text)
        .annotate(matches=Window(Count("*")))
        .for_display()[:limit]
    )
    if not page:
        return SearchResult(
            slots=[],
            count=0,
            as_of=as_of,
            did_you_mean=nearest_entity_names(scope_ids, text),
        )
    return SearchResult(slots=_by_slot(page), count=page[0].matches, as_of=as_of, did_you_mean=[])


def _by_slot(page: list[Fact]) -> list[SlotHits]:
    disputed = [fact for fact in page if fact.disputed]
    disputes = {
        value.fact.pk: value.disputes
        for slot in (contested_values(disputed, known_at=None) if disputed else ())
        for value in slot.values
    }
    values: dict[tuple[int, int, int], list[Hit]] = {}
    contested: dict[tuple[int, int, int], list[ContestedHit]] = {}
    first: dict[tuple[int, int, int], Fact] = {}
    for fact in page:
        slot = (fact.scope_id, fact.subject_id, fact.predicate_id)
        first.setdefault(slot, fact)
        hit = Hit(fact=fact, rank=fact.rank, similarity=fact.similarity)
        if fact.disputed:
            contested.setdefault(slot, []).append(ContestedHit(hit, disputes.get(fact.pk, ())))
        else:
            values.setdefault(slot, []).append(hit)
    return [
        SlotHits(
            scope=fact.scope.name,
            subject=fact.subject.name,
            predicate=fact.predicate.name,
            values=tuple(values.get(slot, ())),
            contested=tuple(contested.get(slot, ())),
        )
        for slot, fact in first.items()
    ]
