"""Search over the facts a caller may read (issue 31 §1), ranked by PostgreSQL, grouped by slot.

Here rather than in ``memories.reads`` because two of its filters are
admission statuses (``admitted``, ``candidate``), which this app defines;
what it asks the database is ``memories.reads.search``'s.

Authorization comes first, inside the SQL: every statement reads only the
scopes the caller may read (``Fact.objects.readable_by``, and the same scope
ids for the entities that lend their names), so a foreign scope's rows
change no rank and no count. A match's disputed values are shown as recall
shows them (``memories.reads.contested.contested_values``): apart, with the
conflicts that dispute them, never as the slot's truth; and the slot says
what recall says of it (``showing``, by ``memories.core.contested``'s rule).

Queries, whatever the store's size: the entities named (one), the page of
facts with the count of every match (one), and, only when the page holds
disputed values, their conflicts (two) and what the caller's recall serves
on their slots (one); the faces add the facts' admission
statuses. When nothing matches, one more names the nearest entities.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, get_args
from uuid import UUID

from django.db import transaction
from django.db.models import Count, Window

from admissions.selectors import (
    _SHOWN_RELATIONS,
    SlotKey,
    _columns,
    believed_on_slots,
    fact_from_row,
    with_admission_status,
)
from memories.core.contested import Showing, Shown
from memories.core.decisions import UnknownName, nearest_names
from memories.reads.contested import (
    ContestedSlot,
    Dispute,
    contested_values,
    what_contested_slot_shows,
)
from memories.reads.search import (
    CONFIG,
    MAX_NAMED_ENTITIES,
    fact_matches,
    named_entities,
    ranked,
)
from memories.reads.search import nearest_names as nearest_entity_names
from memories.store.errors import Rejected
from memories.store.lookups import hot_cursor
from memories.store.models import Conflict, ConflictMember, Entity, Fact, Predicate, Scope
from memories.store.roles import readable_scope_ids, steward_scope_ids
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
    """The matches on one slot: its undisputed values, then its disputed ones.

    ``showing`` and ``standing`` are what recall says of the slot
    (``memories.core.contested.what_slot_shows``): ``settled`` when none of
    its matches is disputed; else ``contested`` (``standing`` holds the
    current values the conflicts dispute, matched or not) or ``unknown``.
    """

    scope: str
    subject: str
    predicate: str
    values: tuple[Hit, ...]
    contested: tuple[ContestedHit, ...]
    showing: Showing = Showing.SETTLED
    standing: tuple[UUID, ...] = ()


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
    if status in ("live", "disputed"):
        page = _prepared_page(viewer, text, scope_ids, predicate, status, as_of, limit)
    else:
        page = search_page_through_orm(
            viewer=viewer,
            text=text,
            scope=scope,
            scope_ids=scope_ids,
            predicate=predicate,
            status=status,
            as_of=as_of,
            limit=limit,
        )
    if not page:
        return SearchResult(
            slots=[],
            count=0,
            as_of=as_of,
            did_you_mean=nearest_entity_names(scope_ids, text),
        )
    return SearchResult(
        slots=_by_slot(viewer, page, as_of=as_of),
        count=page[0].matches,
        as_of=as_of,
        did_you_mean=[],
    )


def search_page_through_orm(
    *,
    viewer,
    text: str,
    scope: Scope | None,
    scope_ids: list[int] | None,
    predicate: str | None,
    status: SearchStatus,
    as_of: datetime,
    limit: int,
) -> list[Fact]:
    """One page of matches through the QuerySets: the search's definition.

    Each fact loaded for display, annotated with ``rank``, ``similarity``,
    ``disputed`` and ``matches`` (the count of every match, a window run
    before the LIMIT). The admission filters read here; the default ones
    (``live``, ``disputed``) run as ``_SEARCH_SQL``, held to this by
    tests/admissions/test_search_statement.py.
    """
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
    return list(
        ranked(matching.with_disputed(), text)
        .annotate(matches=Window(Count("*")))
        .for_display()[:limit]
    )


# ``search_page_through_orm`` for the default filters, in one prepared
# statement: the entities named (``named_entities``) as an array the fact
# indexes are asked with, the facts matching (``fact_matches``) that the viewer
# may read (``FactQuerySet.readable_by``) valid at ``as_of``, ranked
# (``ranked``), each with the rows ``for_display`` joins, whether it is
# disputed now and the count of every match. Through the ORM, building and
# planning the query took several times what running it does (bench/search.py).
_QUERY = f"websearch_to_tsquery('{CONFIG}'::regconfig, %(text)s)"
_SEARCH_SQL = f"""
SELECT {", ".join(_columns("f", Fact))},
       {", ".join(", ".join(_columns(alias, model)) for alias, _, model, _ in _SHOWN_RELATIONS)},
       ts_rank(f.search_vector || sub.search_vector || coalesce(ob.search_vector, ''::tsvector),
               {_QUERY}) AS rank,
       greatest(word_similarity(%(text)s, sub.search_names),
                coalesce(word_similarity(%(text)s, ob.search_names), 0)) AS similarity,
       disputed.yes IS NOT NULL AS disputed,
       count(*) OVER () AS matches
  FROM {Fact._meta.db_table} f
  {
    " ".join(
        f"{join} {model._meta.db_table} {alias} ON {alias}.id = f.{name}_id"
        for alias, name, model, join in _SHOWN_RELATIONS
    )
}
  -- A probe of the fact's own memberships: as an EXISTS, PostgreSQL hashes
  -- every disputed membership of the store instead, a cost that grows with it.
  LEFT JOIN LATERAL (
      SELECT true AS yes FROM {ConflictMember._meta.db_table} m
        JOIN {Conflict._meta.db_table} c ON c.id = m.conflict_id AND c.scope_id = m.scope_id
       WHERE m.scope_id = f.scope_id AND m.fact_id = f.id AND m.disputes
         AND c.resolved_at IS NULL
       LIMIT 1
  ) AS disputed ON true
 WHERE f.scope_id = ANY(%(scopes)s)
   AND (f.bucket = 'system' OR f.author_id = %(user)s OR f.scope_id = ANY(%(stewarded)s))
   AND (f.t_invalid IS NULL OR f.t_invalid > %(at)s) AND f.t_valid <= %(at)s
   AND (
           f.search_vector @@ {_QUERY}
           OR f.subject_id = ANY(ARRAY(SELECT id FROM named))
           OR f.object_ref_id = ANY(ARRAY(SELECT id FROM named))
       )
"""
_NAMED_SQL = f"""
WITH named AS (
    SELECT e.id FROM {Entity._meta.db_table} e
     WHERE e.scope_id = ANY(%(scopes)s)
       AND (e.search_vector @@ {_QUERY} OR e.search_names %%> %(text)s)
     ORDER BY word_similarity(%(text)s, e.search_names) DESC, e.id
     LIMIT {MAX_NAMED_ENTITIES}
)"""
_SEARCH_OF_PREDICATE = (
    f" AND f.predicate_id IN (SELECT id FROM {Predicate._meta.db_table} WHERE name = %(predicate)s)"
)
_SEARCH_DISPUTED = " AND disputed.yes IS NOT NULL"
_SEARCH_ORDER = " ORDER BY rank DESC, similarity DESC, f.recorded_at, f.id LIMIT %(limit)s"


def _prepared_page(
    viewer,
    text: str,
    scope_ids: list[int] | None,
    predicate: str | None,
    status: SearchStatus,
    as_of: datetime,
    limit: int,
) -> list[Fact]:
    """``search_page_through_orm`` for ``live`` and ``disputed``, as ``_SEARCH_SQL``."""
    sql = _NAMED_SQL + _SEARCH_SQL
    if predicate is not None:
        sql += _SEARCH_OF_PREDICATE
    if status == "disputed":
        sql += _SEARCH_DISPUTED
    sql += _SEARCH_ORDER
    stewarded = steward_scope_ids(viewer)
    if readable_scope_ids(viewer) is None:
        # A global steward reads every scope (named, so the indexes serve) and
        # every private fact in them.
        if scope_ids is None:
            scope_ids = list(Scope.objects.values_list("pk", flat=True))
        stewarded = scope_ids
    parameters = {
        "text": text,
        "scopes": scope_ids,
        "user": viewer.pk,
        "stewarded": stewarded,
        "at": as_of,
        "predicate": predicate,
        "limit": limit,
    }
    with transaction.atomic(), hot_cursor() as cursor:
        # Left to choose, PostgreSQL plans this statement afresh on every call
        # (its generic plan looks dearer than the custom ones): planning cost
        # five times running it at 200,000 facts (bench/search.py). The
        # generic plan asks the same indexes whatever the words. Not knowing
        # the words, it guesses thousands of matching rows on a large store
        # and runs in parallel; the index finds a handful, and starting the
        # workers took 14 of the 18 ms the statement took at 1,000,000 facts.
        cursor.execute(
            "SELECT set_config('plan_cache_mode', 'force_generic_plan', true),"
            " set_config('max_parallel_workers_per_gather', '0', true)"
        )
        cursor.execute(sql, parameters, prepare=True)
        rows = cursor.fetchall()
    page = []
    for row in rows:
        values = iter(row)
        fact = fact_from_row(values)
        fact.rank, fact.similarity, fact.disputed, fact.matches = values
        page.append(fact)
    return page


def _by_slot(viewer, page: list[Fact], *, as_of: datetime) -> list[SlotHits]:
    """The page's facts by slot, each slot with disputed matches shown as recall shows it.

    Two queries for the disputes (``contested_values``) and one for what the
    reader's recall serves on those slots, only when the page holds a
    disputed value.
    """
    contested_slots = (
        contested_values([fact for fact in page if fact.disputed], known_at=None)
        if any(fact.disputed for fact in page)
        else []
    )
    disputes = {value.fact.pk: value.disputes for slot in contested_slots for value in slot.values}
    believed = believed_on_slots(
        viewer=viewer,
        slots=[_slot_of(value.fact) for slot in contested_slots for value in slot.values],
        as_of=as_of,
    )
    shown: dict[SlotKey, Shown] = {}
    for slot in contested_slots:
        # contested_values groups by names; a search spans scopes, so by key here.
        for key in dict.fromkeys(_slot_of(value.fact) for value in slot.values):
            one = ContestedSlot(
                subject=slot.subject,
                predicate=slot.predicate,
                values=tuple(value for value in slot.values if _slot_of(value.fact) == key),
            )
            shown[key] = what_contested_slot_shows(one, believed=believed[key])

    values: dict[SlotKey, list[Hit]] = {}
    contested: dict[SlotKey, list[ContestedHit]] = {}
    first: dict[SlotKey, Fact] = {}
    for fact in page:
        slot = _slot_of(fact)
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
            **_showing(shown.get(slot)),
        )
        for slot, fact in first.items()
    ]


def _slot_of(fact: Fact) -> SlotKey:
    return (fact.scope_id, fact.subject_id, fact.predicate_id)


def _showing(shown: Shown | None) -> dict:
    if shown is None:
        return {}
    standing = tuple(UUID(fact_id) for contest in shown.contests for fact_id in contest.standing)
    return {"showing": shown.showing, "standing": standing}
