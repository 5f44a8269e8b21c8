"""The memory store's face in the JSON API (SPEC §10): facts, truth, conflicts, outcomes.

Each operation checks its input, calls one action or selector and shapes the
answer; authorization lives in the actions (404 for anything outside the
caller's scopes, 403 for a member attempting a steward action). Every error
is rendered by ``claimgraph_site.api``.

memories stands below admissions, yet the Fact shape carries an admission
status and recall serves only admitted system facts. The site that mounts
both routers hands that knowledge down through :func:`install_admission_gate`
rather than this module importing the layer above it.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from django.core import signing
from django.core.exceptions import ImproperlyConfigured
from django.db.models import Exists, OuterRef, Q
from django.http import HttpRequest
from django.urls import register_converter
from django.utils import timezone
from ninja import Field, Query, Router, Schema
from ninja.responses import Status
from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Strict,
    StrictBool,
    StrictStr,
    WithJsonSchema,
)

from memories.actions import (
    AssertResult,
    assert_fact,
    invalidate_fact,
    readable_fact,
    record_outcome,
    resolve_conflict,
)
from memories.contested import ContestedSlot, contested_slots
from memories.episodes import WithdrawalPlan, withdraw_episode
from memories.errors import NotFound, Rejected
from memories.models import Conflict, ConflictMember, Fact, Scope
from memories.roles import is_global_steward, steward_scope_ids
from memories.selectors import TruthEntry

router = Router(tags=["memories"])


class _EpisodeConverter:
    """An episode name in a path: any text, slashes and line breaks included."""

    # Django's own "path" converter stops at a line break (".+"), and the
    # request would miss the API altogether.
    regex = r"[\s\S]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(_EpisodeConverter, "episode")

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 200

# --- the admission gate, handed down by the site -----------------------------------


@dataclass(frozen=True)
class Admission:
    status: str | None
    explanation: str


@dataclass(frozen=True)
class AdmissionGate:
    """What the admissions layer adds to this API.

    ``statuses`` answers the admission of each fact (status None for the
    ``user`` bucket); ``recall`` is the current truth with the admission gate
    applied, with the signature of ``memories.selectors.current_truth``.
    """

    statuses: Callable[[Sequence[Fact]], Mapping[Any, Admission]]
    recall: Callable[..., Sequence[TruthEntry]]


_gate: AdmissionGate | None = None


def install_admission_gate(gate: AdmissionGate) -> None:
    global _gate
    _gate = gate


def admission_gate() -> AdmissionGate:
    # Failing loudly beats serving unadmitted facts as truth.
    if _gate is None:
        raise ImproperlyConfigured("mount memories.api through claimgraph_site.api")
    return _gate


# --- input types -------------------------------------------------------------------


def _no_nul(value: str) -> str:
    # PostgreSQL text cannot hold NUL; refuse it as bad input, never a 500.
    if "\x00" in value:
        raise ValueError("must not contain a NUL character")
    return value


def _instant(value: Any) -> datetime:
    if not isinstance(value, str):
        raise ValueError("must be an ISO 8601 time, as a string")
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError("is not an ISO 8601 time") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        # Year 1 at +05:00 is a valid string but no instant PostgreSQL (or
        # Python, in UTC) can hold.
        return parsed.astimezone(UTC)
    except OverflowError:
        raise ValueError("is out of range") from None


Text = Annotated[StrictStr, AfterValidator(_no_nul)]
# Parsed here rather than by pydantic, whose datetime also takes numbers and
# other spellings the OpenAPI document does not promise.
Instant = Annotated[
    datetime,
    BeforeValidator(_instant),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
# Strict: a JSON integer is a number, a string or a boolean is not.
Number = Annotated[float, Strict()]


class Body(Schema):
    """An input body: unknown fields are refused, types are not coerced."""

    model_config = ConfigDict(extra="forbid")


class EvidenceItem(Body):
    ref: Text = Field(max_length=2_000)
    quote: Text | None = Field(None, max_length=2_000)


# An evidence item is {ref, quote}; a bare string is taken as a ref.
EvidenceIn = EvidenceItem | Annotated[Text, Field(max_length=2_000)]


class FactIn(Body):
    scope: Text = Field(max_length=100)
    subject: Text = Field(max_length=500)
    predicate: Text = Field(max_length=200)
    object: Text = Field(max_length=2_000)
    object_kind: Literal["literal", "entity"] | None = None
    epistemic: Literal["observation", "preference", "commitment"] | None = None
    source_type: Text = Field(max_length=100)
    confidence: Number | None = Field(None, allow_inf_nan=False)
    t_valid: Instant | None = None
    t_invalid: Instant | None = None
    episode: Text | None = Field(None, max_length=200)
    statement: Text | None = Field(None, max_length=20_000)
    evidence: list[EvidenceIn] | None = Field(None, max_length=100)
    bucket: Literal["system", "user"] | None = None


class InvalidateIn(Body):
    reason: Text = Field(max_length=5_000)


class OutcomeIn(Body):
    fact_ids: list[UUID] = Field(min_length=1, max_length=1_000)
    outcome: Literal["accepted"] = "accepted"


class ResolveIn(Body):
    action: Literal["keep", "coexist", "dismiss"]
    keep: list[UUID] | None = Field(None, max_length=1_000)
    reason: Text = Field(max_length=5_000)


class WithdrawIn(Body):
    scope: Text = Field(max_length=100)
    reason: Text = Field(max_length=5_000)
    dry_run: StrictBool = False


class QueryParameters(Schema):
    """Query parameters; an unknown one is refused, so a typo never widens a read."""

    @classmethod
    def refuse_unknown(cls, request: HttpRequest) -> None:
        # django-ninja passes only the declared names on to validation, so
        # extra="forbid" would never see the others: they are checked here.
        for name in request.GET:
            if name not in cls.model_fields:
                raise Rejected(name or "query", "is not a parameter of this operation")


class Page(QueryParameters):
    cursor: Text | None = Field(None, max_length=1_000, description="`next` of the page before.")
    limit: int = Field(DEFAULT_PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE)


class AtQuery(QueryParameters):
    at: Instant | None = Field(None, description="Effective confidence at this time (now).")


class TruthQuery(Page):
    scope: Text = Field(max_length=100)
    subject: Text | None = Field(None, max_length=500)
    predicate: Text | None = Field(None, max_length=200)
    as_of: Instant | None = Field(None, description="Valid time (default now).")
    known_at: Instant | None = Field(None, description="Transaction time: what the store knew.")
    contested: bool = Field(False, description="Add each slot's disputed values and why.")


class ConflictQuery(Page):
    scope: Text | None = Field(None, max_length=100)
    status: Literal["open", "resolved"] | None = None


# --- output shapes -----------------------------------------------------------------


class ErrorOut(Schema):
    code: str
    message: str
    field: str | None = None


class AdmissionOut(Schema):
    status: Literal["candidate", "admitted", "rejected", "suspended"] | None
    explanation: str


class EvidenceOut(Schema):
    ref: str
    quote: str


class FactOut(Schema):
    id: UUID
    scope: str
    subject: str
    predicate: str
    object: str
    object_kind: Literal["literal", "entity"]
    epistemic: str
    source_type: str
    confidence: float
    effective_confidence: float
    t_valid: datetime
    t_invalid: datetime | None
    recorded_at: datetime
    last_reinforced_at: datetime
    superseded_by: UUID | None
    disputed: bool
    bucket: Literal["system", "user"]
    author: str
    episode: str
    statement: str
    evidence: list[EvidenceOut]
    admission: AdmissionOut


class AssertOut(Schema):
    status: Literal["created", "reinforced", "superseded", "flagged"]
    reason: str | None
    fact: FactOut
    candidates: list[FactOut]
    superseded: list[UUID]
    conflict: UUID | None


class InvalidateOut(Schema):
    status: Literal["invalidated"]
    fact_id: UUID
    at: datetime


class DisputeOut(Schema):
    conflict: UUID
    kind: str
    opened_at: datetime
    candidates: list[UUID] = Field(description="The standing facts the value collided with.")


class ContestedValueOut(Schema):
    fact: FactOut
    disputes: list[DisputeOut]


class ContestedSlotOut(Schema):
    subject: str
    predicate: str
    values: list[ContestedValueOut]


class TruthOut(Schema):
    results: list[FactOut]
    next: str | None
    as_of: datetime
    known_at: datetime | None
    contested: list[ContestedSlotOut] | None = Field(
        description="With contested=true, on the first page: every disputed value in the query."
    )


class OutcomeOut(Schema):
    id: UUID
    outcome: str
    fact_ids: list[UUID]
    reported_at: datetime


class ConflictFactOut(FactOut):
    role: Literal["incoming", "existing"]


class ConflictOut(Schema):
    id: UUID
    scope: str
    kind: str
    status: Literal["open", "resolved"]
    facts: list[ConflictFactOut]
    opened_at: datetime
    resolution: str | None
    resolved_by: str | None
    resolved_at: datetime | None
    reason: str


class ConflictPage(Schema):
    results: list[ConflictOut]
    next: str | None


class FactRefOut(Schema):
    id: UUID
    subject: str
    predicate: str
    object: str


class NotReinstatedOut(Schema):
    fact: FactRefOut
    why: str


class WithdrawalOut(Schema):
    episode: str
    scope: str
    dry_run: bool
    withdrawal: UUID | None
    withdrawn: list[FactRefOut]
    reinstated: list[FactRefOut]
    not_reinstated: list[NotReinstatedOut]
    closed_conflicts: list[UUID]


READ_ERRORS: dict[int, type[Schema]] = {400: ErrorOut, 401: ErrorOut, 404: ErrorOut}
WRITE_ERRORS: dict[int, type[Schema]] = {
    400: ErrorOut,
    401: ErrorOut,
    403: ErrorOut,
    404: ErrorOut,
    409: ErrorOut,
    413: ErrorOut,
    429: ErrorOut,
}


# --- presenting facts ---------------------------------------------------------------


def caller(request: HttpRequest):
    """The account behind the request's token (never the session's user)."""
    return request.auth.user  # type: ignore[attr-defined]


def present_facts(facts: Sequence[Fact], *, at: datetime) -> list[dict[str, Any]]:
    """The Fact shape of each fact: two queries for the lot, whatever its size."""
    if not facts:
        return []
    statuses = admission_gate().statuses(facts)
    disputed = set(
        ConflictMember.objects.filter(
            fact_id__in=[fact.pk for fact in facts],
            disputes=True,
            conflict__resolved_at__isnull=True,
        ).values_list("fact_id", flat=True)
    )
    return [
        _fact_body(fact, at=at, admission=statuses[fact.pk], disputed=fact.pk in disputed)
        for fact in facts
    ]


def present_fact(fact: Fact, *, at: datetime) -> dict[str, Any]:
    return present_facts([fact], at=at)[0]


def _fact_body(fact: Fact, *, at: datetime, admission: Admission, disputed: bool) -> dict:
    return {
        "id": fact.pk,
        "scope": fact.scope.name,
        "subject": fact.subject.name,
        "predicate": fact.predicate.name,
        "object": fact.object_display,
        "object_kind": fact.object_kind,
        "epistemic": fact.epistemic,
        "source_type": fact.source_type.name,
        "confidence": fact.confidence,
        "effective_confidence": fact.effective_confidence(at),
        "t_valid": fact.t_valid,
        "t_invalid": fact.t_invalid,
        "recorded_at": fact.recorded_at,
        "last_reinforced_at": fact.last_reinforced_at,
        "superseded_by": fact.superseded_by_id,
        "disputed": disputed,
        "bucket": fact.bucket,
        "author": fact.author.get_username(),
        "episode": fact.episode,
        "statement": fact.statement,
        "evidence": [
            {"ref": item.get("ref", ""), "quote": item.get("quote") or ""}
            for item in fact.evidence or []
        ],
        "admission": {"status": admission.status, "explanation": admission.explanation},
    }


def present_assert(result: AssertResult) -> Status:
    """The Assert result: 201 when a fact was created, 200 when one was reinforced."""
    now = timezone.now()
    facts = present_facts([result.fact, *result.candidates], at=now)
    body = {
        "status": result.status,
        "reason": result.reason,
        "fact": facts[0],
        "candidates": facts[1:],
        "superseded": result.superseded,
        "conflict": result.conflict.pk if result.conflict else None,
    }
    return Status(200 if result.status == "reinforced" else 201, body)


# --- cursors -------------------------------------------------------------------------

_CURSOR_SALT = "claimgraph.api.cursor"


def encode_cursor(position: list[Any]) -> str:
    """An opaque, signed cursor: a client can hand it back but not forge a position."""
    return signing.dumps(position, salt=_CURSOR_SALT, compress=True)


def decode_cursor(cursor: str | None) -> list[Any] | None:
    if cursor is None:
        return None
    try:
        position = signing.loads(cursor, salt=_CURSOR_SALT)
    except signing.BadSignature:
        raise Rejected("cursor", "is not a cursor this API issued") from None
    if not isinstance(position, list):
        raise Rejected("cursor", "is not a cursor this API issued")
    return position


def keyset_page(rows, page: Page, *, fields: tuple[str, str]) -> tuple[list, str | None]:
    """One page of ``rows`` ordered by ``fields`` (a time, then the id), after the cursor."""
    time_field, id_field = fields
    position = decode_cursor(page.cursor)
    if position is not None:
        try:
            after_time = datetime.fromisoformat(position[0])
            after_id = UUID(position[1])
        except (IndexError, TypeError, ValueError):
            raise Rejected("cursor", "is not a cursor this API issued") from None
        rows = rows.filter(
            Q(**{f"{time_field}__gt": after_time})
            | Q(**{time_field: after_time, f"{id_field}__gt": after_id})
        )
    batch = list(rows.order_by(time_field, id_field)[: page.limit + 1])
    if len(batch) <= page.limit:
        return batch, None
    batch = batch[: page.limit]
    last = batch[-1]
    return batch, encode_cursor([getattr(last, time_field).isoformat(), str(last.pk)])


# --- facts -------------------------------------------------------------------------


@router.post("/facts", response={200: AssertOut, 201: AssertOut, **WRITE_ERRORS})
def post_fact(request: HttpRequest, payload: FactIn):
    """Assert a fact through the write path (SPEC §2): 201 created, 200 reinforced."""
    data = payload.model_dump(exclude_unset=True)
    result = assert_fact(actor=caller(request), data=data)
    return present_assert(result)


@router.get("/facts/{fact_id}", response={200: FactOut, **READ_ERRORS})
def get_fact(request: HttpRequest, fact_id: str, query: Query[AtQuery]):
    """One fact with its effective confidence (now, or at ``at``) and admission status."""
    AtQuery.refuse_unknown(request)
    fact = readable_fact(caller(request), fact_id)
    return present_fact(fact, at=query.at or timezone.now())


@router.post("/facts/{fact_id}/invalidate", response={200: InvalidateOut, **WRITE_ERRORS})
def post_invalidation(request: HttpRequest, fact_id: str, payload: InvalidateIn):
    """Close a fact's valid interval (its author or a steward); 409 when already invalid."""
    result = invalidate_fact(actor=caller(request), fact_id=fact_id, reason=payload.reason)
    return {"status": "invalidated", "fact_id": result.fact.pk, "at": result.at}


# --- truth -------------------------------------------------------------------------


def readable_scope(actor, name: str) -> Scope:
    scope = Scope.objects.visible_to(actor).filter(name=name).first()
    if scope is None:
        raise NotFound("scope")
    return scope


@router.get("/truth", response={200: TruthOut, **READ_ERRORS})
def get_truth(request: HttpRequest, query: Query[TruthQuery]):
    """Current truth (SPEC §5), ranked by effective confidence.

    A cursor pins the moment of the first page (``as_of``, and ``known_at``
    defaulting to that moment), so later pages read the same snapshot even
    while writes go on.
    """
    TruthQuery.refuse_unknown(request)
    actor = caller(request)
    scope = readable_scope(actor, query.scope)
    position = decode_cursor(query.cursor)
    if position is None:
        as_of = query.as_of or timezone.now()
        known_at, offset = query.known_at, 0
        pinned_known_at = known_at or as_of
    else:
        try:
            as_of = datetime.fromisoformat(position[0])
            pinned_known_at = datetime.fromisoformat(position[1])
            known_at, offset = pinned_known_at, int(position[2])
        except (IndexError, TypeError, ValueError):
            raise Rejected("cursor", "is not a cursor this API issued") from None
    entries = admission_gate().recall(
        viewer=actor,
        scope=scope,
        subject=query.subject,
        predicate=query.predicate,
        as_of=as_of,
        known_at=known_at,
    )
    window = list(entries[offset : offset + query.limit])
    more = len(entries) > offset + query.limit
    cursor = (
        encode_cursor([as_of.isoformat(), pinned_known_at.isoformat(), offset + query.limit])
        if more
        else None
    )
    contested = None
    if query.contested and position is None:
        slots = contested_slots(
            viewer=actor,
            scope=scope,
            subject=query.subject,
            predicate=query.predicate,
            as_of=as_of,
            known_at=known_at,
        )
        contested = _present_contested(slots, at=as_of)
    return {
        "results": present_facts([entry.fact for entry in window], at=as_of),
        "next": cursor,
        "as_of": as_of,
        "known_at": known_at,
        "contested": contested,
    }


def _present_contested(slots: Sequence[ContestedSlot], *, at: datetime) -> list[dict]:
    facts = [value.fact for slot in slots for value in slot.values]
    bodies = {body["id"]: body for body in present_facts(facts, at=at)}
    return [
        {
            "subject": slot.subject,
            "predicate": slot.predicate,
            "values": [
                {
                    "fact": bodies[value.fact.pk],
                    "disputes": [
                        {
                            "conflict": dispute.conflict_id,
                            "kind": dispute.kind,
                            "opened_at": dispute.opened_at,
                            "candidates": list(dispute.candidates),
                        }
                        for dispute in value.disputes
                    ],
                }
                for value in slot.values
            ],
        }
        for slot in slots
    ]


# --- outcomes ----------------------------------------------------------------------


@router.post("/outcomes", response={201: OutcomeOut, **WRITE_ERRORS})
def post_outcome(request: HttpRequest, payload: OutcomeIn):
    """Report facts used in accepted work: their disuse clock resets (SPEC §4)."""
    outcome = record_outcome(
        actor=caller(request), fact_ids=payload.fact_ids, outcome=payload.outcome
    )
    return Status(
        201,
        {
            "id": outcome.pk,
            "outcome": outcome.outcome,
            "fact_ids": [fact.pk for fact in outcome.facts.all()],
            "reported_at": outcome.reported_at,
        },
    )


# --- conflicts ---------------------------------------------------------------------


def visible_conflicts(actor):
    """Conflicts in the caller's scopes; one among ``user`` facts only for their author."""
    scopes = Scope.objects.visible_to(actor)
    conflicts = Conflict.objects.filter(scope__in=scopes)
    if is_global_steward(actor):
        return conflicts
    others_private = ConflictMember.objects.filter(
        Q(fact__bucket="user") & ~Q(fact__author=actor), conflict=OuterRef("pk")
    )
    return conflicts.filter(Q(scope_id__in=steward_scope_ids(actor)) | ~Exists(others_private))


@router.get("/conflicts", response={200: ConflictPage, **READ_ERRORS})
def get_conflicts(request: HttpRequest, query: Query[ConflictQuery]):
    """Conflicts with their candidates, oldest first."""
    ConflictQuery.refuse_unknown(request)
    actor = caller(request)
    conflicts = visible_conflicts(actor).select_related("scope", "resolved_by")
    if query.scope is not None:
        conflicts = conflicts.filter(scope=readable_scope(actor, query.scope))
    if query.status == "open":
        conflicts = conflicts.open()
    elif query.status == "resolved":
        conflicts = conflicts.resolved()
    batch, cursor = keyset_page(conflicts, query, fields=("opened_at", "id"))
    return {"results": present_conflicts(batch), "next": cursor}


def present_conflicts(conflicts: Sequence[Conflict]) -> list[dict[str, Any]]:
    members = list(
        ConflictMember.objects.filter(conflict__in=conflicts)
        .select_related(
            "fact__scope",
            "fact__subject",
            "fact__predicate",
            "fact__object_ref",
            "fact__source_type",
            "fact__author",
        )
        .order_by("conflict_id", "fact__recorded_at", "fact_id")
    )
    now = timezone.now()
    bodies = {body["id"]: body for body in present_facts([m.fact for m in members], at=now)}
    by_conflict: dict[UUID, list[dict]] = {}
    for member in members:
        by_conflict.setdefault(member.conflict_id, []).append(
            {**bodies[member.fact_id], "role": member.role}
        )
    return [
        {
            "id": conflict.pk,
            "scope": conflict.scope.name,
            "kind": conflict.kind,
            "status": "open" if conflict.is_open else "resolved",
            "facts": by_conflict.get(conflict.pk, []),
            "opened_at": conflict.opened_at,
            "resolution": conflict.resolution or None,
            "resolved_by": conflict.resolved_by.get_username() if conflict.resolved_by else None,
            "resolved_at": conflict.resolved_at,
            "reason": conflict.reason,
        }
        for conflict in conflicts
    ]


@router.post("/conflicts/{conflict_id}/resolve", response={200: ConflictOut, **WRITE_ERRORS})
def post_resolution(request: HttpRequest, conflict_id: str, payload: ResolveIn):
    """A steward's ruling: keep some candidates, let all coexist, or dismiss (SPEC §3)."""
    conflict = resolve_conflict(
        actor=caller(request),
        conflict_id=conflict_id,
        action=payload.action,
        keep=payload.keep or (),
        reason=payload.reason,
    )
    conflict = Conflict.objects.select_related("scope", "resolved_by").get(pk=conflict.pk)
    return present_conflicts([conflict])[0]


# --- episodes ----------------------------------------------------------------------


@router.post(
    "/episodes/{episode:episode}/withdraw",
    response={200: WithdrawalOut, 201: WithdrawalOut, **WRITE_ERRORS},
)
def post_withdrawal(request: HttpRequest, episode: str, payload: WithdrawIn):
    """Withdraw everything one episode wrote (steward), or with dry_run see what would change."""
    plan = withdraw_episode(
        actor=caller(request),
        scope=payload.scope,
        episode=episode,
        reason=payload.reason,
        dry_run=payload.dry_run,
    )
    return Status(200 if plan.dry_run else 201, present_withdrawal(plan))


def present_withdrawal(plan: WithdrawalPlan) -> dict[str, Any]:
    def ref(fact: Fact) -> dict[str, Any]:
        return {
            "id": fact.pk,
            "subject": fact.subject.name,
            "predicate": fact.predicate.name,
            "object": fact.object_display,
        }

    return {
        "episode": plan.episode,
        "scope": plan.scope.name,
        "dry_run": plan.dry_run,
        "withdrawal": plan.withdrawal.pk if plan.withdrawal else None,
        "withdrawn": [ref(fact) for fact in plan.withdrawn],
        "reinstated": [ref(fact) for fact in plan.reinstated],
        "not_reinstated": [{"fact": ref(kept.fact), "why": kept.why} for kept in plan.kept_closed],
        "closed_conflicts": list(plan.closed_conflicts),
    }
