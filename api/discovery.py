"""Discovery (issue 31 §2): the scopes a caller may use and the vocabulary it may write.

An agent should never learn a valid value by being refused. ``GET /scopes``
answers the caller's scopes with its role in each, the source types that
role may claim there, and what waits in each (live facts, open conflicts,
candidates awaiting a verdict); ``GET /vocabulary`` answers the predicates,
source types and epistemic classes, read from the vocabulary's one home
(``memories.store.vocabulary``). MCP serves both as the tools
``list_scopes`` and ``vocabulary`` (``api.mcp.server``), with these bodies.

Counts are read for the caller's readable scopes only, and in a fixed
number of statements whatever the number of scopes: one per kind of count,
grouped by scope.
"""

from typing import Any, Literal

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import Count, Exists, OuterRef
from django.http import HttpRequest
from ninja import Query, Router
from pydantic import BaseModel, Field

from admissions.models import FactVerdict
from api.memory import caller, decode_cursor, encode_cursor
from api.schemas import READ_ERRORS, Page, QueryParameters
from memories.core.decisions import BUCKETS, EPISTEMIC_STRENGTH, OBJECT_KINDS
from memories.store.errors import Rejected
from memories.store.models import Bucket, Conflict, Fact, Scope
from memories.store.permissions import claimable_source_types
from memories.store.roles import is_steward_of
from memories.store.vocabulary import EPISTEMIC_CLASSES, load_vocabulary

router = Router(tags=["discovery"])

# --- shapes ------------------------------------------------------------------------


class ScopesQuery(Page):
    """A page of the caller's scopes, by name."""


class VocabularyQuery(QueryParameters):
    """No parameters: the whole vocabulary, which is small."""


class ScopeCountsOut(BaseModel):
    live_facts: int = Field(
        description="Facts valid now that you may read (shared ones, and your own private ones)."
    )
    open_conflicts: int = Field(description="Conflicts waiting for a steward's ruling.")
    waiting_candidates: int = Field(
        description="Live shared facts awaiting a steward's verdict (admission status candidate)."
    )


class ScopeOut(BaseModel):
    name: str = Field(description="The scope's name: what `scope` means in every other call.")
    description: str = Field(description="What the scope is for, as its admin wrote it.")
    role: Literal["member", "steward"] = Field(
        description="Your role here: a steward also rules on candidates, conflicts and challenges."
    )
    source_types: list[str] = Field(
        description=(
            "The source types your role may claim when writing here, most trusted first;"
            " any other is refused with 403 source_type_not_allowed."
        )
    )
    counts: ScopeCountsOut = Field(description="What the scope holds and what waits in it now.")


class ScopePage(BaseModel):
    results: list[ScopeOut] = Field(description="Your scopes, by name.")
    next: str | None = Field(description="Cursor of the next page; null on the last one.")


class PredicateOut(BaseModel):
    name: str = Field(description="What `predicate` takes, e.g. core/has-version.")
    cardinality: Literal["one", "many"] = Field(
        description="one: a subject has one current value; many: values coexist."
    )
    exclusion_group: str | None = Field(
        description=(
            "Predicates of one group contradict each other for the same subject and object"
            " (e.g. stance: prefers, decided-against, avoids); null when in none."
        )
    )
    policy: Literal["supersede", "parallel", "review"] = Field(
        description=(
            "A contradiction no trust or commitment rule decides: supersede (the newer value"
            " replaces the older), parallel (both stand), review (flagged for a human)."
        )
    )
    default_epistemic: Literal["observation", "preference", "commitment"] = Field(
        description="The epistemic class a fact gets when the assertion names none."
    )
    event_like: bool = Field(description="Events never conflict across objects.")
    description: str = Field(description="What the predicate means, as its admin wrote it.")


class SourceTypeOut(BaseModel):
    name: str = Field(description="What `source_type` takes, e.g. agent-note.")
    trust_rank: int = Field(
        description="Higher is more trusted: a less trusted source never quietly ends a fact."
    )
    low_trust: bool = Field(
        description="Below the trusted rank: its writes bringing back a retired value are flagged."
    )
    confidence_ceiling: float = Field(
        description="The highest base confidence a fact from this source is born with."
    )
    decays: bool = Field(description="Whether facts from it lose effective confidence with disuse.")


class EpistemicClassOut(BaseModel):
    name: Literal["observation", "preference", "commitment"] = Field(
        description="What `epistemic` takes."
    )
    strength: int = Field(
        description=(
            "How hard it binds (higher binds harder); a re-assertion stating a stronger class"
            " supersedes the standing fact."
        )
    )
    description: str = Field(description="When to use it.")


class VocabularyOut(BaseModel):
    predicates: list[PredicateOut] = Field(description="Every predicate, by name.")
    source_types: list[SourceTypeOut] = Field(
        description="Every source type, most trusted first. Which ones you may claim in a"
        " scope: list_scopes (GET /api/v1/scopes)."
    )
    epistemic_classes: list[EpistemicClassOut] = Field(
        description="The three classes, weakest first."
    )
    object_kinds: list[Literal["literal", "entity"]] = Field(
        description="What `object_kind` takes: literal (default) or entity (a named thing)."
    )
    buckets: list[Literal["system", "user"]] = Field(
        description="What `bucket` takes: system (shared, reviewed; default) or user (private)."
    )
    trusted_rank: int = Field(description="A source type below this rank is low-trust.")


# --- answers -----------------------------------------------------------------------


def _counts(model_rows, scope_ids: list[int]) -> dict[int, int]:
    rows = model_rows.filter(scope_id__in=scope_ids).order_by().values("scope_id")
    return {row["scope_id"]: row["n"] for row in rows.annotate(n=Count("pk"))}


def scopes_answer(actor: User, query: Page) -> dict[str, Any]:
    """The body of ``GET /scopes`` for ``actor`` (also MCP's ``list_scopes``)."""
    position = decode_cursor(query.cursor, listing="scopes")
    scopes = Scope.objects.visible_to(actor).order_by("name")
    if position is not None:
        if len(position) != 1 or not isinstance(position[0], str):
            raise Rejected("cursor", "is not a cursor of this list")
        scopes = scopes.filter(name__gt=position[0])
    batch = list(scopes[: query.limit + 1])
    cursor = None
    if len(batch) > query.limit:
        batch = batch[: query.limit]
        cursor = encode_cursor([batch[-1].name], listing="scopes")
    ids = [scope.pk for scope in batch]
    # Three grouped statements for the page, whatever its length: what the
    # caller may read of each kind, in these scopes only.
    live = _counts(Fact.objects.readable_by(actor).filter(t_invalid__isnull=True), ids)
    conflicts = _counts(Conflict.objects.readable_by(actor).open(), ids)
    waiting = _counts(
        Fact.objects.filter(bucket=Bucket.SYSTEM, t_invalid__isnull=True).filter(
            ~Exists(FactVerdict.objects.filter(fact=OuterRef("pk")))
        ),
        ids,
    )
    every_source = [source.name for source in _sources_by_trust()]
    results = []
    for scope in batch:
        claimable = claimable_source_types(actor, scope)
        results.append(
            {
                "name": scope.name,
                "description": scope.description,
                "role": "steward" if is_steward_of(actor, scope) else "member",
                "source_types": every_source
                if claimable is None
                else [name for name in every_source if name in claimable],
                "counts": {
                    "live_facts": live.get(scope.pk, 0),
                    "open_conflicts": conflicts.get(scope.pk, 0),
                    "waiting_candidates": waiting.get(scope.pk, 0),
                },
            }
        )
    return {"results": results, "next": cursor}


def _sources_by_trust():
    return sorted(
        load_vocabulary().sources.values(),
        key=lambda source: (-source.trust_rank, source.name),
    )


def vocabulary_answer(actor: User, query: QueryParameters | None = None) -> dict[str, Any]:
    """The body of ``GET /vocabulary`` (also MCP's ``vocabulary``); the same for every caller."""
    vocabulary = load_vocabulary()
    trusted = settings.CLAIMGRAPH_TRUSTED_RANK
    return {
        "predicates": [
            {
                "name": name,
                "cardinality": row.cardinality,
                "exclusion_group": row.exclusion_group or None,
                "policy": row.policy,
                "default_epistemic": row.default_epistemic,
                "event_like": row.event_like,
                "description": row.description,
            }
            for name, row in sorted(vocabulary.predicates.items())
        ],
        "source_types": [
            {
                "name": row.name,
                "trust_rank": row.trust_rank,
                "low_trust": row.trust_rank < trusted,
                "confidence_ceiling": row.confidence_ceiling,
                "decays": row.decays,
            }
            for row in _sources_by_trust()
        ],
        "epistemic_classes": [
            {"name": name, "strength": EPISTEMIC_STRENGTH[name], "description": description}
            for name, description in EPISTEMIC_CLASSES.items()
        ],
        "object_kinds": list(OBJECT_KINDS),
        "buckets": list(BUCKETS),
        "trusted_rank": trusted,
    }


# --- operations --------------------------------------------------------------------


@router.get("/scopes", response={200: ScopePage, **READ_ERRORS})
def get_scopes(request: HttpRequest, query: Query[ScopesQuery]):
    """Your scopes: your role, the source types you may claim, and what waits in each."""
    ScopesQuery.refuse_unknown(request)
    return scopes_answer(caller(request), query)


@router.get("/vocabulary", response={200: VocabularyOut, **READ_ERRORS})
def get_vocabulary(request: HttpRequest):
    """Predicates, source types and epistemic classes: every value a write may name."""
    VocabularyQuery.refuse_unknown(request)
    return vocabulary_answer(caller(request))
