"""``GET /api/v1/search`` (issue 31 §1): find facts by what they say, grouped by slot.

The MCP tool ``search`` answers with the same body (``search_answer``). The
read is ``admissions.search.search``; each fact is in the Fact shape, with its
``rank`` (PostgreSQL's ``ts_rank``) and ``similarity`` (pg_trgm's, of its
subject's or object's names); a slot's disputed values come apart, with
their conflicts, as recall's ``contested`` shows them.
"""

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from django.http import HttpRequest
from django.utils import timezone
from ninja import Field, Query, Router
from pydantic import BaseModel

from admissions.search import DEFAULT_LIMIT, MAX_LIMIT, MAX_QUERY_LENGTH, SearchStatus, search
from api.memory import caller, present_facts, readable_scope
from api.schemas import READ_ERRORS, DisputeOut, FactOut, Instant, QueryParameters, Text

router = Router(tags=["search"])


class SearchParameters(QueryParameters):
    q: Text = Field(
        max_length=MAX_QUERY_LENGTH,
        description="Words to find, as in a web search: a word of a value, a statement or"
        ' evidence, or a subject\'s name or alias (a typo is forgiven); "quoted phrase",'
        " `or`, `-word`.",
    )
    scope: Text | None = Field(
        None, max_length=100, description="Only this scope (default: every scope you may read)."
    )
    predicate: Text | None = Field(
        None,
        max_length=200,
        description="Only this predicate (the vocabulary tool, GET /vocabulary, lists them).",
    )
    status: SearchStatus = Field(
        "live",
        description="live: every fact valid at as_of; disputed: only values in an open"
        " conflict; admitted: only admitted shared facts; candidate: only shared facts"
        " awaiting a steward's verdict.",
    )
    as_of: Instant | None = Field(None, description="Valid time to search at (default now).")
    limit: int = Field(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="At most this many facts.")


class HitOut(FactOut):
    rank: float = Field(description="PostgreSQL's ts_rank of the fact's text for q.")
    similarity: float = Field(
        description="pg_trgm's word similarity of q to the subject's or object's names (0..1)."
    )


class ContestedHitOut(BaseModel):
    fact: HitOut
    disputes: list[DisputeOut]


class SlotOut(BaseModel):
    scope: str
    subject: str
    predicate: str
    values: list[HitOut] = Field(description="Matching values of the slot that are undisputed.")
    contested: list[ContestedHitOut] = Field(
        description="Matching values that are disputed, with the conflicts disputing them:"
        " show them beside the slot's current values, never pick one."
    )
    showing: Literal["settled", "contested", "unknown"] = Field(
        description="What recall says of the slot: `settled` when no match is disputed;"
        " `contested` when its current values stand while conflicts dispute them (they are"
        " in `standing`); `unknown` when nothing in a dispute is current: answer"
        ' "unknown — disputed".'
    )
    standing: list[UUID] = Field(
        description="The slot's current values that its open conflicts dispute (matched or"
        " not): recall serves them, and `contested` contests them."
    )


class SearchOut(BaseModel):
    results: list[SlotOut] = Field(description="Slots in the order of their best match.")
    count: int = Field(description="Every fact that matches, beyond this page too.")
    as_of: datetime
    did_you_mean: list[str] = Field(
        description="When nothing matched: the entity names nearest to q in your scopes."
    )


@router.get("/search", response={200: SearchOut, **READ_ERRORS})
def get_search(request: HttpRequest, query: Query[SearchParameters]):
    """Facts you may read whose value, statement, evidence or names match ``q``, best first."""
    SearchParameters.refuse_unknown(request)
    return search_answer(caller(request), query)


def search_answer(actor, query: SearchParameters) -> dict[str, Any]:
    """The body of ``GET /search`` for ``actor`` (also MCP's ``search``)."""
    scope = readable_scope(actor, query.scope) if query.scope is not None else None
    at = query.as_of or timezone.now()
    found = search(
        viewer=actor,
        text=query.q,
        scope=scope,
        predicate=query.predicate,
        status=query.status,
        as_of=at,
        limit=query.limit,
    )
    hits = [hit for slot in found.slots for hit in slot.values] + [
        contested.hit for slot in found.slots for contested in slot.contested
    ]
    disputed = {contested.hit.fact.pk for slot in found.slots for contested in slot.contested}
    bodies = {
        body["id"]: body
        for body in present_facts([hit.fact for hit in hits], at=at, disputed=disputed)
    }

    def hit_body(hit) -> dict[str, Any]:
        return {**bodies[hit.fact.pk], "rank": hit.rank, "similarity": hit.similarity}

    return {
        "results": [
            {
                "scope": slot.scope,
                "subject": slot.subject,
                "predicate": slot.predicate,
                "values": [hit_body(hit) for hit in slot.values],
                "contested": [
                    {
                        "fact": hit_body(contested.hit),
                        "disputes": [
                            {
                                "conflict": dispute.conflict_id,
                                "kind": dispute.kind,
                                "opened_at": dispute.opened_at,
                                "candidates": list(dispute.candidates),
                            }
                            for dispute in contested.disputes
                        ],
                    }
                    for contested in slot.contested
                ],
                "showing": slot.showing.value,
                "standing": list(slot.standing),
            }
            for slot in found.slots
        ],
        "count": found.count,
        "as_of": at,
        "did_you_mean": found.did_you_mean,
    }
