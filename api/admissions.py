"""The admissions face of the JSON API (SPEC §6, §10): verdicts, challenges, refutations,
corrections and each fact's record history.
"""

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from django.http import HttpRequest
from ninja import Field, Query, Router
from ninja.responses import Status
from pydantic import BaseModel

from admissions.actions import correct_fact, file_challenge, record_verdict, refute_challenge
from admissions.challenge_effects import challenge_effects
from admissions.models import Record
from api.memory import caller, keyset_page, present_assert
from api.schemas import (
    READ_ERRORS,
    WRITE_ERRORS,
    AssertOut,
    Body,
    Confidence,
    EpistemicClass,
    EvidenceIn,
    Instant,
    ObjectKind,
    Page,
    Text,
)
from memories.store.lookups import readable_fact

router = Router(tags=["admissions"])

# --- shapes ------------------------------------------------------------------------


class VerdictIn(Body):
    verdict: Literal["admitted", "rejected"]
    ground: Text = Field(max_length=5_000)


class ChallengeIn(Body):
    ground: Text = Field(max_length=5_000)
    evidence: list[EvidenceIn] | None = Field(
        None,
        max_length=100,
        description="Evidence refs; leave it out for none (an explicit empty list is refused).",
    )


class RefutationIn(Body):
    ground: Text = Field(max_length=5_000)


class CorrectionIn(Body):
    """The replacement's fields; any not given are taken from the corrected fact."""

    ground: Text = Field(max_length=5_000)
    subject: Text | None = Field(None, max_length=500)
    predicate: Text | None = Field(None, max_length=200)
    object: Text | None = Field(None, max_length=2_000)
    object_kind: ObjectKind | None = None
    epistemic: EpistemicClass | None = None
    source_type: Text | None = Field(None, max_length=100)
    confidence: Confidence | None = None
    t_valid: Instant | None = None
    t_invalid: Instant | None = None
    episode: Text | None = Field(None, max_length=200)
    statement: Text | None = Field(None, max_length=20_000)
    evidence: list[EvidenceIn] | None = Field(None, max_length=100)


class EvidenceOut(BaseModel):
    ref: str
    quote: str


class RecordOut(BaseModel):
    id: UUID
    fact: UUID
    role: Literal["admission", "challenge", "refutation"]
    verdict: Literal["admitted", "rejected"] | None
    ground: str
    evidence: list[EvidenceOut] | None
    challenge: UUID | None
    author: str
    inserted_at: datetime


class ChallengeOut(RecordOut):
    """The challenge just filed, with what it does to its fact now (SPEC §6 rules 2, 3, 6)."""

    effect: Literal["suspended", "queued", "dormant", "none"] = Field(
        description=(
            "What the challenge does now. suspended: it suspends the fact until a steward"
            " refutes it. queued: it has no effect because your open evidenced challenges"
            " already suspend as many facts as your flood cap in the scope allows; it takes"
            " effect when one of them is refuted or more facts are admitted. dormant: the fact"
            " is not admitted (a candidate or rejected), so it changes nothing until a steward"
            " admits it. none: it has no evidence, so it is on the record and never suspends."
        )
    )
    effect_reason: str = Field(
        description=(
            "What it does and why, in words for the challenger: the flood cap, what it counts"
            " and when it frees up."
        )
    )
    flood_cap: int = Field(
        description="Your flood cap in the scope now: at most this many facts suspended at once."
    )


class RecordPage(BaseModel):
    results: list[RecordOut]
    next: str | None


class CorrectionOut(AssertOut):
    corrected: UUID
    refutations: list[UUID]
    admission: UUID | None


def present_record(record: Record) -> dict[str, Any]:
    return {
        "id": record.pk,
        "fact": record.fact_id,
        "role": record.role,
        "verdict": record.verdict,
        "ground": record.ground,
        "evidence": (
            None
            if record.evidence is None
            else [
                {"ref": item.get("ref", ""), "quote": item.get("quote") or ""}
                for item in record.evidence
            ]
        ),
        "challenge": record.challenge_id,
        "author": record.author.get_username(),
        "inserted_at": record.inserted_at,
    }


# --- operations --------------------------------------------------------------------


@router.post("/facts/{fact_id}/admissions", response={201: RecordOut, **WRITE_ERRORS})
def post_admission(request: HttpRequest, fact_id: str, payload: VerdictIn):
    """A steward's verdict on a system fact: admitted or rejected, with a ground."""
    recorded = record_verdict(
        actor=caller(request), fact_id=fact_id, verdict=payload.verdict, ground=payload.ground
    )
    return Status(201, present_record(recorded.record))


@router.post("/facts/{fact_id}/challenges", response={201: ChallengeOut, **WRITE_ERRORS})
def post_challenge(request: HttpRequest, fact_id: str, payload: ChallengeIn):
    """Anyone's challenge of an admitted fact; with evidence it suspends the fact (SPEC §6).

    The answer says what it does (``effect``, ``effect_reason``): within the
    caller's flood cap it suspends the fact, beyond it it is queued with no
    effect. A second open challenge by the same account on the same fact is
    refused with 409 ``challenge_already_open``, naming the open one.
    """
    return Status(201, challenge_answer(caller(request), fact_id, payload))


def challenge_answer(actor, fact_id: str, payload: ChallengeIn) -> dict[str, Any]:
    """File the challenge ``payload`` against a fact as ``actor``; the new record's body
    with its effect (the JSON API's answer and the MCP tool's)."""
    evidence = (
        None
        if payload.evidence is None
        else [
            item if isinstance(item, str) else item.model_dump(exclude_none=True)
            for item in payload.evidence
        ]
    )
    record = file_challenge(actor=actor, fact_id=fact_id, ground=payload.ground, evidence=evidence)
    effect = challenge_effects([record])[record.pk]
    return {
        **present_record(record),
        "effect": effect.effect,
        "effect_reason": effect.reason,
        "flood_cap": effect.cap,
    }


@router.post("/challenges/{challenge_id}/refutations", response={201: RecordOut, **WRITE_ERRORS})
def post_refutation(request: HttpRequest, challenge_id: str, payload: RefutationIn):
    """A steward's answer to one named challenge, restoring its target."""
    record = refute_challenge(
        actor=caller(request), challenge_id=challenge_id, ground=payload.ground
    )
    return Status(201, present_record(record))


@router.post("/facts/{fact_id}/corrections", response={201: CorrectionOut, **WRITE_ERRORS})
def post_correction(request: HttpRequest, fact_id: str, payload: CorrectionIn):
    """Replace a fact (its author or a steward) through the write path."""
    changes = payload.model_dump(exclude_unset=True, exclude={"ground"})
    correction = correct_fact(
        actor=caller(request), fact_id=fact_id, changes=changes, ground=payload.ground
    )
    answer = present_assert(correction.result, untouched=False)
    body = {
        **answer.value,
        "corrected": UUID(str(fact_id)),
        "refutations": [record.pk for record in correction.refutations],
        "admission": correction.admission.pk if correction.admission else None,
    }
    return Status(201, body)


@router.get("/facts/{fact_id}/records", response={200: RecordPage, **READ_ERRORS})
def get_records(request: HttpRequest, fact_id: str, page: Query[Page]):
    """The fact's records, oldest first (by ``(inserted_at, id)``, the order every rule uses)."""
    Page.refuse_unknown(request)
    fact = readable_fact(caller(request), fact_id)
    records = Record.objects.filter(fact=fact).select_related("author")
    batch, cursor = keyset_page(
        records, page, fields=("inserted_at", "id"), listing=f"facts/{fact.pk}/records"
    )
    return {"results": [present_record(record) for record in batch], "next": cursor}
