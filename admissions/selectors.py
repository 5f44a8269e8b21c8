"""Reading admission statuses from the database (SPEC §5, §6).

The status of a fact is defined by the pure fold in ``admissions.status``.
Folding a whole scope's history in Python for every read would make a read
cost as much as the history is long, and the history only grows. So
PostgreSQL keeps three small pieces of derived state, maintained by a trigger
in the same transaction as each record insert (``admissions/sql/state.sql``):

* ``FactVerdict`` — each fact's latest admission record (rule 1);
* ``OpenChallenge`` — challenges no refutation names, flagged if evidenced (rules 3, 4);
* ``ScopeTally`` — A, the scope's count of admitted facts (rule 6);

and a view, ``admissions_challenge_rank`` (``ChallengeRank``), ranks each
account's open evidenced challenges against admitted facts for the cap.

Their size follows the *state* of the store, not its history: a read below
costs the same at a million records as at a hundred thousand. Reads that
look back in time (``known_at``) fold the records themselves, since the
derived state only knows the present.

Every read here that produces a :class:`~admissions.status.Status` feeds the
same ``status.judge`` the fold uses, with the two numbers of rule 6 computed
in SQL; the tests check on random histories that both paths agree.
"""

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import (
    Case,
    CharField,
    Exists,
    F,
    Model,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Coalesce

from admissions import status as fold
from admissions.models import ChallengeRank, FactVerdict, OpenChallenge, Record, Role
from admissions.status import AccountUsage, PlainRecord, Status, StatusName
from memories.reads.selectors import TruthEntry, rank, truth_facts
from memories.store.errors import NotFound, Rejected
from memories.store.lookups import find_entity, hot_cursor
from memories.store.models import (
    FACT_DISPLAY_RELATIONS,
    Bucket,
    Conflict,
    ConflictMember,
    Entity,
    Fact,
    Predicate,
    Scope,
    SourceType,
)
from memories.store.roles import readable_scope_ids, reads_scope, steward_scope_ids


def share_percent() -> int:
    return settings.CLAIMGRAPH_CHALLENGE_SHARE_PERCENT


# --- one fact ---------------------------------------------------------------------

# Both reads are single statements, so what they read comes from one snapshot,
# and database functions (``admissions/sql/status.sql``), so their plans are made
# once per session rather than on every call.
_FACT_STATUS_SQL = "SELECT * FROM admissions_fact_status(%s, %s)"
_FACT_STATE_SQL = "SELECT * FROM admissions_fact_state(%s, %s)"


def fact_status(fact: Fact, *, explain: bool = True) -> Status | None:
    """The derived status of one fact; None for a ``user`` fact.

    With ``explain`` (the default) the status carries its findings, which
    read the fact's whole record history. Without it, only the derived
    state is read — the latest verdict, the fact's open evidenced challenges
    and the rank counts of rule 6 — so the cost does not grow with the
    history: use it wherever only the status is shown.
    """
    if fact.bucket != Bucket.SYSTEM:
        return None
    if not explain:
        return _fact_state(fact)
    with connection.cursor() as cursor:
        cursor.execute(_FACT_STATUS_SQL, [fact.pk, fact.scope_id])
        return _judged(fact, cursor.fetchall())


def _judged(fact: Fact, rows: list[tuple]) -> Status:
    """The status with its explanation from ``admissions_fact_status``'s rows for ``fact``."""
    records = []
    earlier: dict[int, int] = {}
    for _, *columns, earlier_count in rows:
        if columns[0] is None:  # the empty side of the LEFT JOIN: no records yet
            continue
        record = _plain(fact.pk, *columns)
        records.append(record)
        if earlier_count is not None:
            earlier[record.author_id] = earlier_count
    return fold.judge(
        fact.pk,
        records,
        admitted_count=rows[0][0],
        share_percent=share_percent(),
        earlier=earlier,
    )


# Several facts' statuses in one statement: the function's rows for each, by position.
_FACT_STATUSES_SQL = """
SELECT t.position, s.*
  FROM unnest(%s::uuid[], %s::integer[]) WITH ORDINALITY AS t (fact_id, scope_id, position)
 CROSS JOIN LATERAL admissions_fact_status(t.fact_id, t.scope_id) AS s
"""


def fact_statuses(facts: Iterable[Fact]) -> dict[UUID, Status]:
    """The status, with its explanation, of each ``system`` fact among ``facts``.

    The same as ``fact_status`` for each, read in one statement: for a page
    that shows a handful of facts' statuses.
    """
    facts = list(facts)
    query = statuses_query(facts)
    if query is None:
        return {}
    # Prepared: the statement is the same whatever the number of facts.
    with hot_cursor() as cursor:
        cursor.execute(*query, prepare=True)
        return statuses_from_rows(facts, cursor.fetchall())


def statuses_query(facts: list[Fact]) -> tuple[str, list] | None:
    """The statement of ``fact_statuses`` and its values; None without a system fact."""
    system = [fact for fact in facts if fact.bucket == Bucket.SYSTEM]
    if not system:
        return None
    return _FACT_STATUSES_SQL, [[f.pk for f in system], [f.scope_id for f in system]]


def statuses_from_rows(facts: list[Fact], found: list[tuple]) -> dict[UUID, Status]:
    """``fact_statuses(facts)`` from the rows of ``statuses_query(facts)``."""
    system = [fact for fact in facts if fact.bucket == Bucket.SYSTEM]
    rows: dict[int, list[tuple]] = {}
    for position, *row in found:
        rows.setdefault(position, []).append(tuple(row))
    return {fact.pk: _judged(fact, rows[index]) for index, fact in enumerate(system, start=1)}


# The status's rows, each record with the two columns the status does not
# read and the fact page shows: its ground and its evidence.
_FACT_STATUS_AND_RECORDS_SQL = """
SELECT s.*, r.ground, r.evidence
  FROM admissions_fact_status(%s, %s) AS s
  LEFT JOIN admissions_record r ON r.id = s.id
"""


_RECORD_SHOWN = [
    "id",
    "scope_id",
    "fact_id",
    "role",
    "verdict",
    "ground",
    "evidence",
    "challenge_id",
    "author_id",
    "inserted_at",
]


def fact_status_and_records(fact: Fact) -> tuple[Status | None, list[Record]]:
    """``fact_status(fact)`` and the fact's records oldest first, from one statement.

    Each record carries its author (the username only) and every column the
    fact page shows; its scope, fact and challenge are ids.
    """
    if fact.bucket != Bucket.SYSTEM:
        return None, []
    with connection.cursor() as cursor:
        cursor.execute(_FACT_STATUS_AND_RECORDS_SQL, [fact.pk, fact.scope_id])
        found = cursor.fetchall()
    status = _judged(fact, [row[:-2] for row in found])
    evidence = Record._meta.get_field("evidence")
    records = []
    for row in found:
        _, record_id, role, verdict, _, challenge_id, author_id, username, inserted_at, _ = row[:-2]
        if record_id is None:
            continue
        ground, evidence_text = row[-2:]
        record = Record.from_db(
            connection.alias,
            _RECORD_SHOWN,
            [
                record_id,
                fact.scope_id,
                fact.pk,
                role,
                verdict,
                ground,
                evidence.from_db_value(evidence_text, None, connection),
                challenge_id,
                author_id,
                inserted_at,
            ],
        )
        record.author = get_user_model().from_db(
            connection.alias, ["id", "username"], [author_id, username]
        )
        records.append(record)
    records.sort(key=lambda record: (record.inserted_at, record.pk))
    return status, records


def _fact_state(fact: Fact) -> Status:
    with connection.cursor() as cursor:
        cursor.execute(_FACT_STATE_SQL, [fact.pk, fact.scope_id])
        rows = cursor.fetchall()
    records = []
    earlier: dict[int, int] = {}
    for _, record_id, role, verdict, author_id, inserted_at, earlier_count in rows:
        if record_id is None:  # no verdict and no open evidenced challenge
            continue
        records.append(
            PlainRecord(
                id=record_id,
                fact_id=fact.pk,
                role=role,
                author_id=author_id,
                inserted_at=inserted_at,
                verdict=verdict,
                evidenced=role == Role.CHALLENGE,
            )
        )
        if earlier_count is not None:
            earlier[author_id] = earlier_count
    return fold.judge(
        fact.pk,
        records,
        admitted_count=rows[0][0],
        share_percent=share_percent(),
        earlier=earlier,
        explain=False,
    )


def _plain(
    fact_id: UUID,
    record_id: UUID,
    role: str,
    verdict: str | None,
    evidenced: bool,
    challenge_id: UUID | None,
    author_id: int,
    author_name: str,
    inserted_at: datetime,
) -> PlainRecord:
    return PlainRecord(
        id=record_id,
        fact_id=fact_id,
        role=role,  # type: ignore[arg-type]
        author_id=author_id,
        inserted_at=inserted_at,
        verdict=verdict,  # type: ignore[arg-type]
        evidenced=evidenced,
        challenge_id=challenge_id,
        author_name=author_name,
    )


def fact_records(fact: Fact) -> QuerySet[Record]:
    """The fact's whole record history, oldest first: the argument behind its status."""
    return Record.objects.filter(fact=fact).select_related("author", "challenge").history_order()


# --- one fact as an agent reads it -------------------------------------------------


@dataclass(frozen=True)
class ShownFact:
    """A fact with what its display reads, its status (None for ``user``) and its dispute."""

    fact: Fact
    status: Status | None
    disputed: bool


def _columns(alias: str, model: type[Model]) -> list[str]:
    return [f"{alias}.{field.column}" for field in model._meta.concrete_fields]


# What the Fact shape shows of one fact, in one prepared statement: the fact
# with the rows ``FactQuerySet.for_display`` joins, whether it is disputed now
# (``FactQuerySet.with_disputed``), the rows of ``admissions_fact_status``,
# and who may read it (``FactQuerySet.readable_by``, with the ids of
# ``memories.store.roles``). tests/admissions/test_shown_fact.py holds it to those
# ORM reads. The agents' most frequent read: through the ORM, building and
# planning the join took ten times what running it does.
_SHOWN_RELATIONS = (
    ("s", "scope", Scope, "JOIN"),
    ("sub", "subject", Entity, "JOIN"),
    ("p", "predicate", Predicate, "JOIN"),
    ("ob", "object_ref", Entity, "LEFT JOIN"),
    ("st", "source_type", SourceType, "JOIN"),
    ("u", "author", get_user_model(), "JOIN"),
)
assert tuple(name for _, name, _, _ in _SHOWN_RELATIONS) == FACT_DISPLAY_RELATIONS
_SHOWN_FACT_SQL = f"""
SELECT {", ".join(_columns("f", Fact))},
       {", ".join(", ".join(_columns(alias, model)) for alias, _, model, _ in _SHOWN_RELATIONS)},
       disputed.yes IS NOT NULL,
       status.*
  FROM {Fact._meta.db_table} f
  {
    " ".join(
        f"{join} {model._meta.db_table} {alias} ON {alias}.id = f.{name}_id"
        for alias, name, model, join in _SHOWN_RELATIONS
    )
}
  -- A probe of the fact's own memberships: as an EXISTS, PostgreSQL may hash
  -- every disputed membership of the store instead.
  LEFT JOIN LATERAL (
      SELECT true AS yes FROM {ConflictMember._meta.db_table} m
        JOIN {Conflict._meta.db_table} c ON c.id = m.conflict_id AND c.scope_id = m.scope_id
       WHERE m.scope_id = f.scope_id AND m.fact_id = f.id AND m.disputes
         AND c.resolved_at IS NULL
       LIMIT 1
  ) AS disputed ON true
  LEFT JOIN LATERAL admissions_fact_status(f.id, f.scope_id::integer) AS status
         ON f.bucket = 'system'
 WHERE f.id = %(fact)s
   AND (%(everything)s OR (
           f.scope_id = ANY(%(readable)s)
           AND (f.bucket = 'system' OR f.author_id = %(user)s OR f.scope_id = ANY(%(stewarded)s))
       ))
"""


def shown_fact(actor, fact_id: UUID | str) -> ShownFact:
    """The fact ``actor`` may read (as ``readable_fact`` finds it) with its status and
    dispute, in one statement; else :class:`NotFound`."""
    try:
        fact_uuid = UUID(str(fact_id))
    except ValueError:
        raise NotFound("fact") from None
    readable = readable_scope_ids(actor)
    parameters = {
        "fact": fact_uuid,
        "everything": readable is None,
        "readable": readable or [],
        "user": actor.pk,
        "stewarded": steward_scope_ids(actor),
    }
    with hot_cursor() as cursor:
        cursor.execute(_SHOWN_FACT_SQL, parameters, prepare=True)
        rows = cursor.fetchall()
    if not rows:
        raise NotFound("fact")
    values = iter(rows[0])
    fact = _from_row(Fact, values)
    for _, name, model, _ in _SHOWN_RELATIONS:
        setattr(fact, name, _from_row(model, values))
    disputed = next(values)
    status = None
    if fact.bucket == Bucket.SYSTEM:
        status = _judged(fact, [row[-len(_STATUS_COLUMNS) :] for row in rows])
    return ShownFact(fact=fact, status=status, disputed=disputed)


# The columns of ``admissions_fact_status`` (admissions/sql/status.sql).
_STATUS_COLUMNS = (
    "admitted",
    "id",
    "role",
    "verdict",
    "evidenced",
    "challenge_id",
    "author_id",
    "username",
    "inserted_at",
    "earlier",
)


def fact_from_row(values: Iterator[Any]) -> Fact:
    """A fact and the relations a page shows of it, from the next of ``values``
    (the columns ``_SHOWN_RELATIONS`` selects, in its order); what follows stays."""
    fact = _from_row(Fact, values)
    for _, name, model, _ in _SHOWN_RELATIONS:
        setattr(fact, name, _from_row(model, values))
    return fact


def _from_row(model: type[Model], values: Iterator[Any]) -> Any:
    """An instance of ``model`` from the next of ``values``, in its concrete fields' order;
    None for the empty side of an outer join."""
    fields = model._meta.concrete_fields
    found = [next(values) for _ in fields]
    if found[0] is None:
        return None
    for index, field in enumerate(fields):
        if hasattr(field, "from_db_value") and found[index] is not None:
            found[index] = field.from_db_value(found[index], None, connection)
    return model.from_db(connection.alias, [field.attname for field in fields], found)


# --- a whole scope ------------------------------------------------------------------


class StatusMap(Mapping[UUID | str, StatusName]):
    """A scope's statuses by fact id (a UUID or its text); a fact without a verdict is a candidate.

    Iterating yields the text ids of the facts that have a verdict. Keys are
    kept as text because the ids arrive as text: building 100,000 UUID
    objects would cost more than the whole query.
    """

    def __init__(self, by_id: dict[str, StatusName]) -> None:
        self._by_id = by_id

    def __getitem__(self, fact_id: UUID | str) -> StatusName:
        return self._by_id.get(str(fact_id), "candidate")

    def __contains__(self, fact_id: object) -> bool:
        return str(fact_id) in self._by_id

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_id)

    def __len__(self) -> int:
        return len(self._by_id)

    def counts(self) -> dict[str, int]:
        """How many facts have each status (candidates without a verdict are not counted)."""
        counted: dict[str, int] = {}
        for value in self._by_id.values():
            counted[value] = counted.get(value, 0) + 1
        return counted


# One row per status with its fact ids joined into one text: the scope's
# statuses cross the wire as four strings instead of 100,000 rows.
_SCOPE_STATUSES_SQL = """
WITH suspended AS (
    SELECT DISTINCT fact_id
    FROM admissions_challenge_rank
    WHERE scope_id = %(scope)s AND position * 100 <= admitted * %(share)s + 99
)
SELECT
    CASE WHEN s.fact_id IS NULL THEN v.verdict ELSE 'suspended' END,
    string_agg(v.fact_id::text, ' ')
FROM admissions_factverdict v
LEFT JOIN suspended s ON s.fact_id = v.fact_id
WHERE v.scope_id = %(scope)s
GROUP BY 1
"""


def scope_statuses(scope: Scope) -> StatusMap:
    """Every status in the scope: facts with a verdict are listed, the rest are candidates.

    Reads one row per fact with a verdict and one per open evidenced
    challenge; the records themselves are not scanned.
    """
    with connection.cursor() as cursor:
        cursor.execute(_SCOPE_STATUSES_SQL, {"scope": scope.pk, "share": share_percent()})
        by_id: dict[str, StatusName] = {}
        for value, ids in cursor.fetchall():
            by_id.update(dict.fromkeys(ids.split(" "), value))
    return StatusMap(by_id)


def in_effect(ranks: QuerySet[ChallengeRank] | None = None) -> QuerySet[ChallengeRank]:
    """The ranked challenges within their author's cap: ``position <= ceil(share% * A)``.

    ``position * 100 <= A * share + 99`` is the same comparison in integers.
    """
    ranks = ranks if ranks is not None else ChallengeRank.objects.all()
    return ranks.alias(scaled=F("position") * 100).filter(
        scaled__lte=F("admitted") * share_percent() + 99
    )


def suspended_fact_ids(scopes: Iterable[Scope] | QuerySet[Scope] | None = None) -> QuerySet:
    """A subquery of the ids of suspended facts (in ``scopes``, if given)."""
    ranks = ChallengeRank.objects.all()
    if scopes is not None:
        ranks = ranks.filter(scope__in=scopes)
    return in_effect(ranks).values("fact_id")


def with_admission_status(
    facts: QuerySet[Fact], scopes: Iterable[Scope] | None = None
) -> QuerySet[Fact]:
    """Annotate ``admission_status`` on each fact (null for ``user`` facts), in one query.

    Filter on it like any field: ``with_admission_status(qs).filter(admission_status="suspended")``.
    ``scopes``, when the caller knows every fact is in one of them, ranks the
    challenges of those scopes alone (a page about one entity) instead of
    every open challenge of the store.
    """
    verdict = FactVerdict.objects.filter(fact=OuterRef("pk")).values("verdict")[:1]
    return facts.annotate(
        admission_status=Case(
            When(bucket=Bucket.USER, then=Value(None)),
            When(pk__in=suspended_fact_ids(scopes), then=Value("suspended")),
            default=Coalesce(Subquery(verdict), Value("candidate")),
            output_field=CharField(),
        )
    )


CANDIDATE_FILTERS = ("scope", "source_type", "predicate")


def candidates(scope_ids: Iterable[int] | QuerySet, filters: Mapping[str, Any] | None = None):
    """Live system facts awaiting a verdict in these scopes, oldest first (the Candidates queue).

    ``filters`` may name a ``scope``, ``source_type`` or ``predicate`` (by
    name); an empty value is ignored.
    """
    filters = filters or {}
    unknown = sorted(set(filters) - set(CANDIDATE_FILTERS))
    if unknown:
        raise Rejected(unknown[0], "is not a filter of the candidates queue")
    facts = Fact.objects.filter(
        scope_id__in=scope_ids, bucket=Bucket.SYSTEM, t_invalid__isnull=True
    ).filter(~Exists(FactVerdict.objects.filter(fact=OuterRef("pk"))))
    if filters.get("scope"):
        facts = facts.filter(scope__name=filters["scope"])
    if filters.get("source_type"):
        facts = facts.filter(source_type__name=filters["source_type"])
    if filters.get("predicate"):
        facts = facts.filter(predicate__name=filters["predicate"])
    return facts.for_display().order_by("recorded_at", "id")


# --- challenges ---------------------------------------------------------------------


def open_challenges(
    scope_ids: Iterable[int] | QuerySet | None = None,
    *,
    fact: Fact | None = None,
    author=None,
) -> QuerySet[Record]:
    """Challenges no refutation names, oldest first, with their fact and author loaded."""
    records = Record.objects.open()
    if scope_ids is not None:
        records = records.filter(scope_id__in=scope_ids)
    if fact is not None:
        records = records.filter(fact=fact)
    if author is not None:
        records = records.filter(author=author)
    return records.select_related(
        "author", "fact__subject", "fact__predicate", "fact__object_ref", "scope"
    ).history_order()


def open_challenge_entries(
    scope_ids: Iterable[int] | QuerySet, *, scope: Scope | None = None, author_name: str = ""
) -> QuerySet[OpenChallenge]:
    """Open challenges in filing order, read from ``OpenChallenge`` (which holds exactly them).

    A list of them, its bounded count and its oldest cost what the open
    challenges do, however many were refuted: the count reads the small table
    alone and a page walks its filing-order index, loading each entry's
    ``challenge`` record with what the Challenges list shows. The facts they
    challenge come in a query of their own, named (``FactQuerySet.named``):
    joined in, PostgreSQL took longer to plan the eight tables than to run them
    (docs/bench-log/2026-12-02-console-pages.md).
    """
    entries = OpenChallenge.objects.filter(scope_id__in=scope_ids)
    if scope is not None:
        entries = entries.filter(scope=scope)
    if author_name:
        entries = entries.filter(author__username=author_name)
    return (
        entries.select_related("challenge__scope", "challenge__author")
        .prefetch_related(Prefetch("challenge__fact", queryset=Fact.objects.named()))
        .order_by("inserted_at", "challenge_id")
    )


_ACCOUNT_SQL = """
SELECT
    o.scope_id,
    o.author_id,
    u.username,
    count(*) AS open_evidenced,
    -- fact_admitted is the fact's verdict as the record trigger keeps it
    -- (admissions/sql/state.sql): no verdict is read per challenge.
    count(DISTINCT o.fact_id) FILTER (WHERE NOT o.fact_admitted) AS dormant,
    coalesce(t.admitted, 0) AS admitted
FROM admissions_openchallenge o
JOIN auth_user u ON u.id = o.author_id
LEFT JOIN admissions_scopetally t ON t.scope_id = o.scope_id
WHERE o.scope_id = ANY(%(scopes)s) AND o.evidenced
GROUP BY o.scope_id, o.author_id, u.username, t.admitted
"""


def challenge_summary(scope: Scope) -> list[AccountUsage]:
    """Each challenger's open evidenced challenges against the flood cap, by account name."""
    return challenge_summaries([scope.pk])[scope.pk]


def challenge_summaries(scope_ids: Iterable[int]) -> dict[int, list[AccountUsage]]:
    """``challenge_summary`` of each of these scopes, in two queries whatever their number."""
    share = share_percent()
    ids = sorted(set(scope_ids))
    ranked: dict[tuple[int, int], list[UUID]] = {}
    for scope_id, author_id, challenge_id in (
        ChallengeRank.objects.filter(scope_id__in=ids)
        .order_by("scope_id", "author_id", "position")
        .values_list("scope_id", "author_id", "challenge_id")
    ):
        ranked.setdefault((scope_id, author_id), []).append(challenge_id)
    with connection.cursor() as cursor:
        cursor.execute(_ACCOUNT_SQL, {"scopes": ids})
        accounts = cursor.fetchall()
    summaries: dict[int, list[AccountUsage]] = {scope_id: [] for scope_id in ids}
    for scope_id, author_id, name, count, dormant, admitted in accounts:
        cap = fold.challenge_cap(admitted, share)
        in_effect, queued = fold.split_by_cap(ranked.get((scope_id, author_id), []), cap)
        summaries[scope_id].append(
            AccountUsage(
                author_id=author_id,
                author_name=name,
                cap=cap,
                in_effect=in_effect,
                queued=queued,
                dormant=dormant,
                open_evidenced=count,
            )
        )
    for usages in summaries.values():
        usages.sort(key=lambda usage: usage.author_name)
    return summaries


# --- history ------------------------------------------------------------------------


def fold_as_known_at(scope: Scope, known_at: datetime | None = None) -> fold.Fold:
    """The pure fold over the scope's records inserted at or before ``known_at`` (all if None).

    "Admitted as known at T" means: the statuses the records written by T
    derive. This reads the scope's history, so it is for look-backs and
    checks, not for the hot path.
    """
    return fold.derive(scope_records(scope, known_at), share_percent=share_percent())


def scope_records(scope: Scope, known_at: datetime | None = None) -> Iterator[PlainRecord]:
    """The scope's records inserted by ``known_at`` (all if None), as the fold takes them."""
    records = Record.objects.filter(scope=scope)
    if known_at is not None:
        records = records.filter(inserted_at__lte=known_at)
    rows = records.values_list(
        "id",
        "fact_id",
        "role",
        "verdict",
        "evidence",
        "challenge_id",
        "author_id",
        "author__username",
        "inserted_at",
    )
    for (
        record_id,
        fact_id,
        role,
        verdict,
        evidence,
        challenge_id,
        author_id,
        author_name,
        inserted_at,
    ) in rows.iterator():
        yield PlainRecord(
            id=record_id,
            fact_id=fact_id,
            role=role,
            author_id=author_id,
            inserted_at=inserted_at,
            verdict=verdict,
            evidenced=evidence is not None,
            challenge_id=challenge_id,
            author_name=author_name,
        )


# --- recall -------------------------------------------------------------------------


def recall(
    *,
    viewer,
    scope: Scope,
    subject: str | None = None,
    predicate: str | None = None,
    as_of: datetime,
    known_at: datetime | None = None,
) -> list[TruthEntry]:
    """The ranked current truth (SPEC §5) with system facts only when ``admitted``.

    ``as_of`` is valid time; ``known_at`` is transaction time: with it, both
    the facts and their admission statuses are as the store knew them then.
    A scope the viewer may not read answers like a missing one.

    As the store knows it now (the agents' recall), the read is one prepared
    statement (``_current_truth``); looking back, ``recall_through_orm``.
    """
    if not reads_scope(viewer, scope):
        raise NotFound("scope")
    if known_at is not None:
        return recall_through_orm(
            viewer=viewer,
            scope=scope,
            subject=subject,
            predicate=predicate,
            as_of=as_of,
            known_at=known_at,
        )
    entity = None
    if subject is not None:
        entity = find_entity(scope, subject)
        if entity is None:
            return []
    return rank(_current_truth(viewer, scope, entity, predicate, as_of=as_of), at=as_of)


def recall_through_orm(
    *,
    viewer,
    scope: Scope,
    subject: str | None = None,
    predicate: str | None = None,
    as_of: datetime,
    known_at: datetime | None = None,
) -> list[TruthEntry]:
    """``recall`` through the QuerySets: its definition, and its read at a past ``known_at``."""
    if not reads_scope(viewer, scope):
        raise NotFound("scope")
    facts = truth_facts(
        viewer=viewer,
        scope=scope,
        subject=subject,
        predicate=predicate,
        as_of=as_of,
        known_at=known_at,
    )
    if known_at is None:
        admitted = _in_effect_now([scope.pk])
    else:
        then = fold_as_known_at(scope, known_at)
        admitted = Q(
            pk__in=[
                fact_id for fact_id, status in then.statuses.items() if status.status == "admitted"
            ]
        )
    return rank(facts.filter(Q(bucket=Bucket.USER) | admitted), at=as_of)


def _in_effect_now(scope_ids: Iterable[int]) -> Q:
    """A shared fact recall serves as the store knows it now: admitted, and not suspended."""
    return Q(
        Exists(
            FactVerdict.objects.filter(
                fact=OuterRef("pk"), scope=OuterRef("scope_id"), verdict="admitted"
            )
        ),
        bucket=Bucket.SYSTEM,
    ) & ~Q(pk__in=suspended_fact_ids(scope_ids))


SlotKey = tuple[int, int, int]


def believed_on_slots(
    *, viewer, slots: Iterable[SlotKey], as_of: datetime
) -> dict[SlotKey, list[UUID]]:
    """What recall serves ``viewer`` now on each slot (scope, subject, predicate ids), ranked.

    ``recall_through_orm``'s rule for several slots at once, in one query:
    what a read that found disputed values on these slots (search) hands to
    ``what_contested_slot_shows`` as the reader's believed values. The
    slots' scopes are the caller's to have checked readable.
    """
    slots = list(dict.fromkeys(slots))
    if not slots:
        return {}
    on_slots = Q()
    for scope_id, subject_id, predicate_id in slots:
        on_slots |= Q(scope_id=scope_id, subject_id=subject_id, predicate_id=predicate_id)
    facts = (
        Fact.objects.filter(on_slots)
        .valid_at(as_of)
        .undisputed()
        .filter(
            Q(bucket=Bucket.USER, author=viewer)
            | _in_effect_now({scope_id for scope_id, _, _ in slots})
        )
        .select_related("source_type")
    )
    believed: dict[SlotKey, list[UUID]] = {slot: [] for slot in slots}
    for entry in rank(facts, at=as_of):
        fact = entry.fact
        believed[(fact.scope_id, fact.subject_id, fact.predicate_id)].append(fact.pk)
    return believed


# ``recall_through_orm`` as known now, in one prepared statement: valid at
# ``as_of`` (``FactQuerySet.valid_at``), not disputed now (``undisputed``),
# a ``user`` fact only for its author, a ``system`` fact only when admitted
# and not suspended (``in_effect``), with the rows ``for_display`` joins.
# tests/admissions/test_recall_statement.py holds the two to the same answers.
# Not through the ORM: building and compiling the QuerySet took longer than
# running it (docs/bench-log/2026-12-01-reads.md).
_TRUTH_SQL = f"""
SELECT {", ".join(_columns("f", Fact))},
       {", ".join(", ".join(_columns(alias, model)) for alias, _, model, _ in _SHOWN_RELATIONS)}
  FROM {Fact._meta.db_table} f
  {
    " ".join(
        f"{join} {model._meta.db_table} {alias} ON {alias}.id = f.{name}_id"
        for alias, name, model, join in _SHOWN_RELATIONS
    )
}
 WHERE f.scope_id = %(scope)s
   AND (f.t_invalid IS NULL OR f.t_invalid > %(at)s) AND f.t_valid <= %(at)s
   AND NOT EXISTS (
           SELECT 1 FROM {ConflictMember._meta.db_table} m
             JOIN {Conflict._meta.db_table} c ON c.id = m.conflict_id AND c.scope_id = m.scope_id
            WHERE m.scope_id = f.scope_id AND m.fact_id = f.id AND m.disputes
              AND c.resolved_at IS NULL
       )
   AND (
           (f.bucket = 'user' AND f.author_id = %(viewer)s)
           OR (
               f.bucket = 'system'
               AND EXISTS (
                   SELECT 1 FROM {FactVerdict._meta.db_table} v
                    WHERE v.scope_id = f.scope_id AND v.fact_id = f.id AND v.verdict = 'admitted'
               )
               AND f.id NOT IN (
                   SELECT r.fact_id FROM {ChallengeRank._meta.db_table} r
                    WHERE r.scope_id = %(scope)s AND r.position * 100 <= r.admitted * %(share)s + 99
               )
           )
       )
"""
_TRUTH_OF_SUBJECT = " AND f.subject_id = %(subject)s"
_TRUTH_OF_PREDICATE = (
    f" AND f.predicate_id IN (SELECT id FROM {Predicate._meta.db_table} WHERE name = %(predicate)s)"
)


def _current_truth(
    viewer, scope: Scope, entity: Entity | None, predicate: str | None, *, as_of: datetime
) -> list[Fact]:
    """The facts of ``recall`` as known now, in the order of ``recorded_at``, then id."""
    sql = _TRUTH_SQL
    if entity is not None:
        sql += _TRUTH_OF_SUBJECT
    if predicate is not None:
        sql += _TRUTH_OF_PREDICATE
    parameters = {
        "scope": scope.pk,
        "at": as_of,
        "viewer": viewer.pk,
        "share": share_percent(),
        "subject": entity.pk if entity is not None else None,
        "predicate": predicate,
    }
    with hot_cursor() as cursor:
        cursor.execute(sql, parameters, prepare=True)
        rows = cursor.fetchall()
    facts = []
    for row in rows:
        fact = fact_from_row(iter(row))
        fact.disputed = False
        facts.append(fact)
    facts.sort(key=lambda fact: (fact.recorded_at, fact.pk))
    return facts
