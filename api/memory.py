"""The memory store's face in the JSON API (SPEC §10): facts, truth, conflicts, outcomes.

Each operation checks its input, calls one action or selector and shapes the
answer; authorization lives in the actions (404 for anything outside the
caller's scopes, 403 for a member attempting a steward action). Every error
is rendered by ``api.errors``.

The Fact shape carries each fact's admission status, and recall serves only
admitted ``system`` facts: both come from ``admissions``, which this face
stands above.
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.contrib.auth.models import User
from django.core import signing
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import register_converter
from django.utils import timezone
from ninja import Query, Router
from ninja.responses import Status

from admissions import status as fold
from admissions.search import check_predicate
from admissions.selectors import ShownFact, fact_statuses, recall, share_percent, shown_fact
from api.schemas import (
    READ_ERRORS,
    WRITE_ERRORS,
    AnswerEncoder,
    AssertOut,
    AtQuery,
    ConflictOut,
    ConflictPage,
    ConflictQuery,
    FactIn,
    FactOut,
    InvalidateIn,
    InvalidateOut,
    OutcomeIn,
    OutcomeOut,
    Page,
    PlanChangedOut,
    ResolveIn,
    TruthOut,
    TruthQuery,
    WithdrawalOut,
    WithdrawIn,
)
from memories.core.decisions import ConfidenceClamp
from memories.reads.contested import ContestedSlot, contested_slots, what_contested_slot_shows
from memories.reads.search import refuse_unknown_subject
from memories.store.errors import NotFound, Rejected
from memories.store.lookups import scope_named
from memories.store.models import Bucket, Conflict, Fact, Outcome, Scope
from memories.store.roles import reads_scope
from memories.write.actions import (
    AssertResult,
    InvalidateResult,
    assert_fact,
    invalidate_fact,
    record_outcome,
    resolve_conflict,
)
from memories.write.episodes import PlanChanged, WithdrawalPlan, withdraw_episode

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

# --- admission status in the Fact shape ---------------------------------------------


@dataclass(frozen=True)
class Admission:
    status: str | None
    explanation: str


USER_BUCKET_EXPLANATION = "a user bucket fact is private to its author and needs no admission"


def admissions_of(facts: Sequence[Fact]) -> dict[UUID, Admission]:
    """Each fact's admission (status None for the ``user`` bucket), in one statement."""
    found = fact_statuses(facts)
    return {
        fact.pk: Admission(status=found[fact.pk].status, explanation=found[fact.pk].explanation)
        if fact.pk in found
        else Admission(status=None, explanation=USER_BUCKET_EXPLANATION)
        for fact in facts
    }


def admission_of_new(fact: Fact) -> Admission:
    """The admission of a fact written this instant, which no record names yet."""
    if fact.bucket == Bucket.USER:
        return Admission(status=None, explanation=USER_BUCKET_EXPLANATION)
    # No records yet: rule 1 alone decides, and A does not enter into it.
    status = fold.judge(fact.pk, (), admitted_count=0, share_percent=share_percent())
    return Admission(status=status.status, explanation=status.explanation)


# --- presenting facts ---------------------------------------------------------------


def caller(request: HttpRequest) -> User:
    """The account behind the request's token (never the session's user)."""
    return request.auth.user  # type: ignore[attr-defined]


def present_facts(
    facts: Sequence[Fact], *, at: datetime, disputed: set[UUID] | None = None
) -> list[dict[str, Any]]:
    """The Fact shape of each fact: two queries for the lot, whatever its size.

    ``disputed``: the ids of the disputed facts among them, when the caller
    read them already (as disputed now, the Fact shape's sense); else one
    more query reads them.
    """
    if not facts:
        return []
    statuses = admissions_of(facts)
    if disputed is None:
        disputed = set(
            Fact.objects.filter(
                scope_id__in={fact.scope_id for fact in facts}, pk__in=[fact.pk for fact in facts]
            )
            .disputed()
            .order_by()
            .values_list("pk", flat=True)
        )
    return [
        _fact_body(fact, at=at, admission=statuses[fact.pk], disputed=fact.pk in disputed)
        for fact in facts
    ]


def present_fact(fact: Fact, *, at: datetime) -> dict[str, Any]:
    return present_facts([fact], at=at)[0]


def present_shown_fact(shown: ShownFact, *, at: datetime) -> dict[str, Any]:
    """The Fact shape of a fact read with its status and dispute (``shown_fact``)."""
    fact = shown.fact
    if shown.status is None:
        admission = Admission(status=None, explanation=USER_BUCKET_EXPLANATION)
    else:
        admission = Admission(status=shown.status.status, explanation=shown.status.explanation)
    return _fact_body(fact, at=at, admission=admission, disputed=shown.disputed)


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


def present_assert(result: AssertResult, *, untouched: bool = True) -> Status:
    """The Assert result: 201 when a fact was created, 200 when one was reinforced.

    ``untouched``: nothing but the write itself has happened to a fact it
    created (a correction, which records a verdict on it, says False).
    """
    now = timezone.now()
    if result.status == "reinforced" or not untouched:
        fact = present_fact(result.fact, at=now)
    else:
        # A fact created by this very write has no records and is disputed
        # exactly when the write was flagged: no need to read either back.
        fact = _fact_body(
            result.fact,
            at=now,
            admission=admission_of_new(result.fact),
            disputed=result.status == "flagged",
        )
    body = {
        "status": result.status,
        "reason": result.reason,
        "fact": fact,
        "candidates": present_facts(result.candidates, at=now),
        "superseded": result.superseded,
        "conflict": result.conflict.pk if result.conflict else None,
        "look_alikes": [
            {"role": alike.role, "given": alike.given, "entity": alike.entity_name}
            for alike in result.look_alikes
        ],
        "confidence_clamped": _clamp_body(result.confidence_clamped),
    }
    return Status(200 if result.status == "reinforced" else 201, body)


def _clamp_body(clamp: ConfidenceClamp | None) -> dict[str, Any] | None:
    if clamp is None:
        return None
    return {"asked": clamp.asked, "ceiling": clamp.ceiling, "ceiling_of": clamp.ceiling_of}


# --- cursors -------------------------------------------------------------------------

_CURSOR_SALT = "claimgraph.api.cursor"
_NOT_OURS = "is not a cursor of this list: hand back the `next` of its page before"


def encode_cursor(position: list[Any], *, listing: str) -> str:
    """An opaque, signed cursor: a client can hand it back but not forge a position.

    ``listing`` names the list that issued it (its path, and the fact whose
    records it pages): the signature covers the name, so a cursor from
    another list is refused rather than read as a position in this one.
    """
    return signing.dumps(position, salt=f"{_CURSOR_SALT}:{listing}", compress=True)


def decode_cursor(cursor: str | None, *, listing: str) -> list[Any] | None:
    if cursor is None:
        return None
    try:
        position = signing.loads(cursor, salt=f"{_CURSOR_SALT}:{listing}")
    except signing.BadSignature:
        raise Rejected("cursor", _NOT_OURS) from None
    if not isinstance(position, list):
        raise Rejected("cursor", _NOT_OURS)
    return position


def keyset_page(
    rows: QuerySet, page: Page, *, fields: tuple[str, str], listing: str
) -> tuple[list, str | None]:
    """One page of ``rows`` ordered by ``fields`` (a time, then the id), after the cursor."""
    time_field, id_field = fields
    position = decode_cursor(page.cursor, listing=listing)
    if position is not None:
        try:
            after_time = datetime.fromisoformat(position[0])
            after_id = UUID(position[1])
        except (IndexError, TypeError, ValueError):
            raise Rejected("cursor", _NOT_OURS) from None
        rows = rows.filter(
            Q(**{f"{time_field}__gt": after_time})
            | Q(**{time_field: after_time, f"{id_field}__gt": after_id})
        )
    batch = list(rows.order_by(time_field, id_field)[: page.limit + 1])
    if len(batch) <= page.limit:
        return batch, None
    batch = batch[: page.limit]
    last = batch[-1]
    position = [getattr(last, time_field).isoformat(), str(last.pk)]
    return batch, encode_cursor(position, listing=listing)


# --- facts -------------------------------------------------------------------------


@router.post("/facts", response={200: AssertOut, 201: AssertOut, **WRITE_ERRORS})
def post_fact(request: HttpRequest, payload: FactIn, response: HttpResponse):
    """Assert a fact through the write path (SPEC §2): 201 created, 200 reinforced."""
    data = payload.model_dump(exclude_unset=True)
    answer = present_assert(assert_fact(actor=caller(request), data=data))
    # The agents' hot path: the answer is rendered as it is, not validated
    # against AssertOut field by field first. present_assert builds it from
    # the model's typed columns in the schema's own order, and the tests hold
    # every kind of answer to AssertOut byte for byte. ``response`` is the
    # one django-ninja made for this request, with the API's content type.
    response.content = json.dumps(answer.value, cls=AnswerEncoder)
    response.status_code = answer.status_code
    return response


@router.get("/facts/{fact_id}", response={200: FactOut, **READ_ERRORS})
def get_fact(request: HttpRequest, fact_id: str, query: Query[AtQuery]):
    """One fact with its effective confidence (now, or at ``at``) and admission status."""
    AtQuery.refuse_unknown(request)
    shown = shown_fact(caller(request), fact_id)
    return present_shown_fact(shown, at=query.at or timezone.now())


@router.post("/facts/{fact_id}/invalidate", response={200: InvalidateOut, **WRITE_ERRORS})
def post_invalidation(request: HttpRequest, fact_id: str, payload: InvalidateIn):
    """Close a fact's valid interval (its author or a steward); 409 when already invalid."""
    result = invalidate_fact(actor=caller(request), fact_id=fact_id, reason=payload.reason)
    return present_invalidation(result)


def present_invalidation(result: InvalidateResult) -> dict[str, Any]:
    return {"status": "invalidated", "fact_id": result.fact.pk, "at": result.at}


# --- truth -------------------------------------------------------------------------


def readable_scope(actor: User, name: str) -> Scope:
    """The scope named ``name``; 404 when it is missing or ``actor`` may not read it."""
    scope = scope_named(name)
    if scope is None or not reads_scope(actor, scope):
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
    return truth_answer(caller(request), query)


def truth_answer(actor, query: TruthQuery) -> dict[str, Any]:
    """The body of ``GET /truth`` for ``actor`` (also MCP's ``recall``)."""
    scope = readable_scope(actor, query.scope)
    position = decode_cursor(query.cursor, listing="truth")
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
            raise Rejected("cursor", _NOT_OURS) from None
    entries = recall(
        viewer=actor,
        scope=scope,
        subject=query.subject,
        predicate=query.predicate,
        as_of=as_of,
        known_at=known_at,
    )
    if not entries:
        # Nothing found: say so if a name given is unknown, with the nearest ones.
        check_predicate(query.predicate)
        if query.subject is not None:
            refuse_unknown_subject(scope, query.subject)
    window = list(entries[offset : offset + query.limit])
    more = len(entries) > offset + query.limit
    cursor = (
        encode_cursor(
            [as_of.isoformat(), pinned_known_at.isoformat(), offset + query.limit],
            listing="truth",
        )
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
        believed = [entry.fact.pk for entry in entries]
        contested = _present_contested(slots, at=as_of, believed=believed)
    # Read as known now, the current truth holds no fact disputed now.
    undisputed = set() if known_at is None else None
    return {
        "results": present_facts([entry.fact for entry in window], at=as_of, disputed=undisputed),
        "next": cursor,
        "as_of": as_of,
        "known_at": known_at,
        "contested": contested,
    }


def _present_contested(
    slots: Sequence[ContestedSlot], *, at: datetime, believed: Sequence[UUID]
) -> list[dict]:
    facts = [value.fact for slot in slots for value in slot.values]
    bodies = {body["id"]: body for body in present_facts(facts, at=at)}
    shown = [what_contested_slot_shows(slot, believed=believed) for slot in slots]
    return [
        {
            "subject": slot.subject,
            "predicate": slot.predicate,
            "showing": showing.showing.value,
            "standing": [
                UUID(fact_id) for contest in showing.contests for fact_id in contest.standing
            ],
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
        for slot, showing in zip(slots, shown, strict=True)
    ]


# --- outcomes ----------------------------------------------------------------------


@router.post("/outcomes", response={201: OutcomeOut, **WRITE_ERRORS})
def post_outcome(request: HttpRequest, payload: OutcomeIn):
    """Report facts used in accepted work: their disuse clock resets (SPEC §4)."""
    outcome = record_outcome(
        actor=caller(request), fact_ids=payload.fact_ids, outcome=payload.outcome
    )
    return Status(201, present_outcome(outcome))


def present_outcome(outcome: Outcome) -> dict[str, Any]:
    return {
        "id": outcome.pk,
        "outcome": outcome.outcome,
        "fact_ids": [fact.pk for fact in outcome.facts.all()],
        "reported_at": outcome.reported_at,
    }


# --- conflicts ---------------------------------------------------------------------


@router.get("/conflicts", response={200: ConflictPage, **READ_ERRORS})
def get_conflicts(request: HttpRequest, query: Query[ConflictQuery]):
    """Conflicts with their candidates, oldest first."""
    ConflictQuery.refuse_unknown(request)
    return conflicts_answer(caller(request), query)


def conflicts_answer(actor: User, query: ConflictQuery) -> dict[str, Any]:
    """The body of ``GET /conflicts`` for ``actor`` (also MCP's ``list_conflicts``)."""
    conflicts = Conflict.objects.readable_by(actor).for_display()
    if query.scope is not None:
        conflicts = conflicts.filter(scope=readable_scope(actor, query.scope))
    if query.status == "open":
        conflicts = conflicts.open()
    elif query.status == "resolved":
        conflicts = conflicts.resolved()
    batch, cursor = keyset_page(conflicts, query, fields=("opened_at", "id"), listing="conflicts")
    return {"results": present_conflicts(batch), "next": cursor}


def present_conflicts(conflicts: Sequence[Conflict]) -> list[dict[str, Any]]:
    """The Conflict shape of each conflict (read with ``Conflict.objects.for_display()``).

    The members' facts are presented together, so their statuses and
    disputed flags are read once for the page, whatever its size.
    """
    members = {conflict.pk: list(conflict.members.all()) for conflict in conflicts}
    facts = [member.fact for page in members.values() for member in page]
    bodies = {body["id"]: body for body in present_facts(facts, at=timezone.now())}
    return [
        {
            "id": conflict.pk,
            "scope": conflict.scope.name,
            "kind": conflict.kind,
            "status": "open" if conflict.is_open else "resolved",
            "facts": [
                {**bodies[member.fact_id], "role": member.role} for member in members[conflict.pk]
            ],
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
    conflict = Conflict.objects.for_display().get(pk=conflict.pk)
    return present_conflicts([conflict])[0]


# --- episodes ----------------------------------------------------------------------


@router.post(
    "/episodes/{episode:episode}/withdraw",
    response={200: WithdrawalOut, 201: WithdrawalOut, **WRITE_ERRORS, 409: PlanChangedOut},
)
def post_withdrawal(request: HttpRequest, episode: str, payload: WithdrawIn):
    """Withdraw everything one episode wrote (steward), or with dry_run see what would change.

    Withdrawing confirms a dry run: ``confirm`` is its ``token``. If the
    withdrawal would now change anything else, it is refused (409) with the
    new dry run, whose token confirms that one.
    """
    try:
        plan = withdraw_episode(
            actor=caller(request),
            scope=payload.scope,
            episode=episode,
            reason=payload.reason,
            dry_run=payload.dry_run,
            confirm=payload.confirm,
        )
    except PlanChanged as changed:
        return Status(
            409,
            {
                "code": "state_conflict",
                "message": str(changed),
                "dry_run": present_withdrawal(changed.plan),
            },
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
        "left_for_steward": [
            {"fact": ref(kept.fact), "why": kept.why} for kept in plan.left_for_steward
        ],
        "closed_conflicts": list(plan.closed_conflicts),
        "token": plan.token,
    }
