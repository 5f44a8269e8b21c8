"""The JSON shapes of the memory store's API (SPEC §10): what comes in, what goes out.

Input bodies refuse unknown fields and do not coerce types (a number is a
JSON number, never a string that looks like one); text may not hold what
PostgreSQL cannot store (a NUL, a lone surrogate); times are ISO 8601
strings. What the schema cannot say (an unknown predicate, an interval that
ends before it starts) the actions refuse, also with a 400 naming the field.

Bodies and answers are plain pydantic models rather than django-ninja's
``Schema``: that class reads every value through a wrapper made for ORM
objects (and validates a body that refuses unknown fields twice, once
without the wrapper and once with it), while every body here is parsed JSON
and every answer a dict. The OpenAPI document is the same either way. Query
parameters stay a ``Schema``, which is how django-ninja reads them.
"""

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest
from ninja import Field, Schema
from ninja.errors import ValidationError as InvalidInput
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Strict,
    StrictBool,
    StrictStr,
    Tag,
    ValidationError,
    WithJsonSchema,
    model_validator,
)

from memories.core.decisions import (
    BUCKETS,
    EPISTEMIC_STRENGTH,
    OBJECT_KINDS,
    Reason,
    Status,
    parse_assertion,
    unstorable,
)
from memories.store.errors import Rejected
from memories.store.models import ConflictKind as ConflictKindChoices
from memories.store.models import Resolution as ResolutionChoices
from memories.store.vocabulary import load_vocabulary

# The closed sets of the API's shapes, each taken from its one home (the
# write path's checks, the models' choices), so every schema that names one
# carries its ``enum`` and the two cannot drift apart. Predicates and source
# types are not among them: an admin edits those at run time, so a schema
# describes them and points to discovery (GET /vocabulary) instead.
ObjectKind = Literal[OBJECT_KINDS]  # type: ignore[valid-type]
EpistemicClass = Literal[tuple(EPISTEMIC_STRENGTH)]  # type: ignore[valid-type]
BucketName = Literal[BUCKETS]  # type: ignore[valid-type]
AdmissionStatus = Literal["candidate", "admitted", "rejected", "suspended"]
AssertStatus = Status
FlagReason = Reason
ConflictKind = Literal[tuple(ConflictKindChoices.values)]  # type: ignore[valid-type]
ConflictStatus = Literal["open", "resolved"]
Resolution = Literal[tuple(ResolutionChoices.values)]  # type: ignore[valid-type]

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 200

# --- input -------------------------------------------------------------------


def _storable(value: Any) -> Any:
    # Text PostgreSQL cannot store (NUL, a lone surrogate) is bad input,
    # never a 500. Checked before pydantic's own string checks, whose words
    # for a surrogate ("unable to parse raw data") say nothing to a client;
    # anything but a string is left for the type check to refuse.
    if isinstance(value, str):
        problem = unstorable(value)
        if problem is not None:
            raise ValueError(problem)
    return value


def _instant(value: Any) -> datetime:
    if not isinstance(value, str):
        raise ValueError("must be an ISO 8601 time, as a string")
    _storable(value)
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


Text = Annotated[StrictStr, BeforeValidator(_storable)]
# Parsed here rather than by pydantic, whose datetime also takes numbers and
# other spellings the OpenAPI document does not promise.
Instant = Annotated[
    datetime,
    BeforeValidator(_instant),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
# Strict: a JSON integer is a number, a string or a boolean is not.
Number = Annotated[float, Strict()]
# Stated in the schema for a client to read; checked by the write path
# (``parse_confidence``), whose refusal names the field with the others.
Confidence = Annotated[
    float,
    Strict(),
    Field(allow_inf_nan=False),
    WithJsonSchema({"type": "number", "minimum": 0, "maximum": 1}),
]


class Body(BaseModel):
    """An input body: unknown fields are refused, types are not coerced."""

    model_config = ConfigDict(extra="forbid")


class EvidenceItem(Body):
    ref: Text = Field(max_length=2_000)
    quote: Text | None = Field(None, max_length=2_000)


def _evidence_kind(value: Any) -> str:
    return "ref" if isinstance(value, str) else EvidenceItem.__name__


# An evidence item is {ref, quote}; a bare string is taken as a ref. Told
# apart by the value's type, so a refusal speaks of the kind that was sent
# (a bare ref's surrogate, not "should be a valid dictionary").
EvidenceIn = Annotated[
    Annotated[EvidenceItem, Tag(EvidenceItem.__name__)]
    | Annotated[Text, Field(max_length=2_000), Tag("ref")],
    Discriminator(_evidence_kind),
]


class FactIn(Body):
    scope: Text = Field(max_length=100)
    subject: Text = Field(max_length=500)
    predicate: Text = Field(max_length=200)
    object: Text = Field(max_length=2_000)
    object_kind: ObjectKind | None = None
    epistemic: EpistemicClass | None = None
    source_type: Text = Field(max_length=100)
    confidence: Confidence | None = None
    t_valid: Instant | None = None
    t_invalid: Instant | None = None
    episode: Text | None = Field(None, max_length=200)
    statement: Text | None = Field(None, max_length=20_000)
    evidence: list[EvidenceIn] | None = Field(None, max_length=100)
    bucket: BucketName | None = None

    @model_validator(mode="wrap")
    @classmethod
    def _every_problem(cls, data: Any, handler: Any) -> "FactIn":
        """Refused with every problem at once: the schema's and the write path's together.

        The schema checks types and closed sets, the write path
        (``parse_assertion``) what only the vocabulary knows (an unknown
        predicate or source type). A body the schema refuses never reaches
        the write path, so its problems are asked for here too: an agent
        gets one answer listing all that is wrong, not one a field.
        """
        try:
            return handler(data)
        except ValidationError as refused:
            if not isinstance(data, dict):
                raise
            found = refused.errors(include_url=False, include_context=False, include_input=False)
            at_fault = {str(error["loc"][0]) for error in found if error["loc"]}
            problems = [{**error, "loc": ("body", *error["loc"])} for error in found]
            for problem in assertion_problems(data):
                if problem.field not in at_fault:
                    problems.append(
                        {
                            "loc": ("body", problem.field),
                            "msg": problem.message,
                            "type": problem.code,
                            "code": problem.code,
                        }
                    )
            # Raised as the API's own refusal rather than pydantic's: pydantic
            # cannot carry another checker's problems, and both faces (the
            # API's handler, MCP's tool call) answer this one alike.
            raise InvalidInput(problems) from refused


def assertion_problems(data: dict[str, Any]) -> tuple[Rejected, ...]:
    """What the write path would refuse in ``data``, every field of it; empty when nothing."""
    try:
        parse_assertion(data, load_vocabulary(data).spec, now=datetime.now(UTC))
    except Rejected as refused:
        return refused.problems
    return ()


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
    confirm: Text | None = Field(
        None,
        max_length=100,
        description="To withdraw: the token of the dry run being confirmed (required).",
    )


class QueryParameters(Schema):
    """Query parameters; an unknown one is refused, so a typo never widens a read."""

    @classmethod
    def refuse_unknown(cls, request: HttpRequest) -> None:
        # django-ninja passes only the declared names on to validation, so
        # extra="forbid" would never see the others: they are checked here.
        cls.refuse_unknown_names(request.GET)

    @classmethod
    def refuse_unknown_names(cls, names: Iterable[str]) -> None:
        for name in names:
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
    status: ConflictStatus | None = None


# --- output shapes -----------------------------------------------------------------


class AnswerEncoder(DjangoJSONEncoder):
    """JSON for every answer: Django's encoder, with times to the microsecond."""

    def default(self, o: Any) -> Any:
        # Django's encoder cuts times to milliseconds; an agent that sends a
        # fact's t_valid back as `as_of` must get exactly that instant.
        if isinstance(o, datetime):
            return o.isoformat()
        return super().default(o)


class ErrorOut(BaseModel):
    code: str
    message: str
    field: str | None = None


class AdmissionOut(BaseModel):
    status: AdmissionStatus | None
    explanation: str


class EvidenceOut(BaseModel):
    ref: str
    quote: str


class FactOut(BaseModel):
    id: UUID
    scope: str
    subject: str
    predicate: str
    object: str
    object_kind: ObjectKind
    epistemic: EpistemicClass
    source_type: str
    confidence: float
    effective_confidence: float
    t_valid: datetime
    t_invalid: datetime | None
    recorded_at: datetime
    last_reinforced_at: datetime
    superseded_by: UUID | None
    disputed: bool
    bucket: BucketName
    author: str
    episode: str
    statement: str
    evidence: list[EvidenceOut]
    admission: AdmissionOut


class LookAlikeOut(BaseModel):
    role: Literal["subject", "object"]
    given: str = Field(description="The name as the assertion spelled it.")
    entity: str = Field(description="The existing entity it resolved to, by its own name.")


class ConfidenceClampOut(BaseModel):
    asked: float = Field(description="The confidence the assertion stated.")
    ceiling: float = Field(description="The source type's ceiling, which the assertion counted as.")
    ceiling_of: str = Field(description="The source type whose ceiling capped it.")


class AssertOut(BaseModel):
    status: AssertStatus
    reason: FlagReason | None
    fact: FactOut
    candidates: list[FactOut]
    superseded: list[UUID]
    conflict: UUID | None
    look_alikes: list[LookAlikeOut] = Field(
        description=(
            "Names given that are not an entity's name or alias but look like one (the same"
            " Unicode confusable skeleton, UTS #39): the fact names that existing entity."
        )
    )
    confidence_clamped: ConfidenceClampOut | None = Field(
        description=(
            "Set when the stated confidence was above the source type's ceiling and was"
            " capped to it; null otherwise. fact.confidence is what the store holds."
        )
    )


class InvalidateOut(BaseModel):
    status: Literal["invalidated"]
    fact_id: UUID
    at: datetime


class DisputeOut(BaseModel):
    conflict: UUID
    kind: ConflictKind
    opened_at: datetime
    candidates: list[UUID] = Field(description="The standing facts the value collided with.")


class ContestedValueOut(BaseModel):
    fact: FactOut
    disputes: list[DisputeOut]


class ContestedSlotOut(BaseModel):
    subject: str
    predicate: str
    values: list[ContestedValueOut]


class TruthOut(BaseModel):
    results: list[FactOut]
    next: str | None
    as_of: datetime
    known_at: datetime | None
    contested: list[ContestedSlotOut] | None = Field(
        description="With contested=true, on the first page: every disputed value in the query."
    )


class OutcomeOut(BaseModel):
    id: UUID
    outcome: Literal["accepted"]
    fact_ids: list[UUID]
    reported_at: datetime


class ConflictFactOut(FactOut):
    role: Literal["incoming", "existing"]


class ConflictOut(BaseModel):
    id: UUID
    scope: str
    kind: ConflictKind
    status: ConflictStatus
    facts: list[ConflictFactOut]
    opened_at: datetime
    resolution: Resolution | None
    resolved_by: str | None
    resolved_at: datetime | None
    reason: str


class ConflictPage(BaseModel):
    results: list[ConflictOut]
    next: str | None


class FactRefOut(BaseModel):
    id: UUID
    subject: str
    predicate: str
    object: str


class NotReinstatedOut(BaseModel):
    fact: FactRefOut
    why: str


class WithdrawalOut(BaseModel):
    episode: str
    scope: str
    dry_run: bool
    withdrawal: UUID | None
    withdrawn: list[FactRefOut]
    reinstated: list[FactRefOut]
    not_reinstated: list[NotReinstatedOut]
    left_for_steward: list[NotReinstatedOut]
    closed_conflicts: list[UUID]
    token: str


class PlanChangedOut(ErrorOut):
    """409 to a confirmation that no longer matches its dry run: the new dry run."""

    dry_run: WithdrawalOut


# --- automatic changes (api.changes) ------------------------------------------


class ChangesQuery(Page):
    scope: Text | None = Field(None, max_length=100)
    rule: Text | None = Field(
        None, max_length=100, description="Only changes whose rule starts with this text."
    )


class RevertIn(Body):
    reason: Text = Field(max_length=5_000)


class RevertedOut(BaseModel):
    revert: int = Field(description="The id of the revert's own audit entry.")
    by: str
    at: datetime
    reason: str


class ChangeOut(BaseModel):
    id: int
    at: datetime
    scope: str
    rule: str = Field(description="The rule that decided: `write path: ...`, `crawler: ...`, ...")
    action: str
    target_type: str
    target_id: str
    triggered_by: str | None = Field(
        description="The account whose write triggered it (a write-path change), else null."
    )
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    rationale: str
    reverted: RevertedOut | None


class ChangePage(BaseModel):
    results: list[ChangeOut]
    next: str | None


READ_ERRORS: dict[int, type[BaseModel]] = {400: ErrorOut, 401: ErrorOut, 404: ErrorOut}
WRITE_ERRORS: dict[int, type[BaseModel]] = {
    400: ErrorOut,
    401: ErrorOut,
    403: ErrorOut,
    404: ErrorOut,
    409: ErrorOut,
    413: ErrorOut,
    415: ErrorOut,
    429: ErrorOut,
}
