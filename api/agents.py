"""What agents ask a memory for beyond single facts (SPEC §10): a slot's history, a digest.

``GET /slots/history`` lists every version of one slot, current and past,
with how each ended; ``GET /context`` is a compact Markdown digest of what a
scope believes, for an agent's prompt at the start of a session. The MCP
tools ``slot_history`` and ``context`` answer with the same bodies
(``history_answer``, ``context_answer``).
"""

from dataclasses import asdict
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from django.http import HttpRequest
from django.utils import timezone
from ninja import Field, Query, Router
from pydantic import BaseModel

from admissions.digest import DEFAULT_BUDGET, MAX_BUDGET, MIN_BUDGET, context_digest
from admissions.search import check_predicate
from api.memory import caller, keyset_page, present_facts, readable_scope
from api.schemas import READ_ERRORS, FactOut, Instant, Page, QueryParameters, Text
from memories.reads.history import ending, slot_history
from memories.reads.search import refuse_unknown_subject

router = Router(tags=["agents"])

# --- shapes ------------------------------------------------------------------------


class SlotHistoryQuery(Page):
    scope: Text = Field(max_length=100)
    subject: Text = Field(max_length=500)
    predicate: Text = Field(
        max_length=200,
        description="The slot's predicate; a predicate in an exclusion group brings the group."
        " The vocabulary tool (GET /api/v1/vocabulary) lists the predicates.",
    )


class EndedOut(BaseModel):
    how: Literal["live", "bounded", "superseded", "invalidated", "withdrawn"] = Field(
        description="live: still valid; bounded: asserted with an end to its valid time;"
        " superseded, invalidated, withdrawn: closed by someone, see `by` and `reason`."
    )
    at: datetime | None = Field(description="When its valid time ends (its t_invalid).")
    recorded_at: datetime | None = Field(description="When the store recorded that it ended.")
    by: str | None = Field(description="The account whose action (or write) ended it.")
    superseded_by: UUID | None
    reason: str


class SlotVersionOut(FactOut):
    ended: EndedOut


class SlotHistoryPage(BaseModel):
    results: list[SlotVersionOut]
    next: str | None


class ContextQuery(QueryParameters):
    scope: Text = Field(max_length=100)
    subject: Text | None = Field(None, max_length=500)
    budget: int = Field(
        DEFAULT_BUDGET, ge=MIN_BUDGET, le=MAX_BUDGET, description="At most this many characters."
    )
    as_of: Instant | None = Field(None, description="Valid time (default now).")


class CountsOut(BaseModel):
    commitments: int
    facts: int
    conflicts: int


class ContextOut(BaseModel):
    scope: str
    subject: str | None
    as_of: datetime
    budget: int
    markdown: str
    shown: CountsOut
    omitted: CountsOut = Field(description="What the budget left out, by section.")


# --- operations --------------------------------------------------------------------


@router.get("/slots/history", response={200: SlotHistoryPage, **READ_ERRORS})
def get_slot_history(request: HttpRequest, query: Query[SlotHistoryQuery]):
    """Every version of one slot, current and past, oldest recorded first, with how each ended."""
    SlotHistoryQuery.refuse_unknown(request)
    return history_answer(caller(request), query)


def history_answer(actor, query: SlotHistoryQuery) -> dict[str, Any]:
    """The body of ``GET /slots/history`` for ``actor``."""
    scope = readable_scope(actor, query.scope)
    versions = slot_history(
        viewer=actor, scope=scope, subject=query.subject, predicate=query.predicate
    )
    # A cursor pages one slot's history only.
    listing = f"slots/history/{scope.pk}/{query.subject}/{query.predicate}"
    batch, cursor = keyset_page(versions, query, fields=("recorded_at", "id"), listing=listing)
    if not batch and query.cursor is None:
        # Nothing found: say so if a name given is unknown, with the nearest ones.
        check_predicate(query.predicate)
        refuse_unknown_subject(scope, query.subject)
    bodies = present_facts(batch, at=timezone.now())
    return {
        "results": [
            {**body, "ended": asdict(ending(fact))}
            for body, fact in zip(bodies, batch, strict=True)
        ],
        "next": cursor,
    }


@router.get("/context", response={200: ContextOut, **READ_ERRORS})
def get_context(request: HttpRequest, query: Query[ContextQuery]):
    """A Markdown digest for a prompt: commitments, then current truth, then open conflicts."""
    ContextQuery.refuse_unknown(request)
    return context_answer(caller(request), query)


def context_answer(actor, query: ContextQuery) -> dict[str, Any]:
    """The body of ``GET /context`` for ``actor``."""
    scope = readable_scope(actor, query.scope)
    at = query.as_of or timezone.now()
    digest = context_digest(
        viewer=actor, scope=scope, subject=query.subject, at=at, budget=query.budget
    )
    return {
        "scope": scope.name,
        "subject": query.subject,
        "as_of": at,
        "budget": query.budget,
        "markdown": digest.markdown,
        "shown": asdict(digest.shown),
        "omitted": asdict(digest.omitted),
    }
