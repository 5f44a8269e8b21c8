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

import logging
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

logger = logging.getLogger(__name__)

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
    # The body is not validated yet: only names that are text can be looked up.
    names = {key: data.get(key) for key in ("predicate", "source_type")}
    known = {key: value for key, value in names.items() if isinstance(value, str)}
    try:
        parse_assertion(data, load_vocabulary(known).spec, now=datetime.now(UTC))
    except Rejected as refused:
        return refused.problems
    except Exception:
        # The schema has refused this body already; a defect in adding to
        # that refusal must not turn the 400 into a 500.
        logger.exception("could not list the write path's problems with a refused body")
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
    status: ConflictStatus | None = Field(
        None, description="Only open or only resolved conflicts (default both)."
    )


# --- output shapes -----------------------------------------------------------------


class AnswerEncoder(DjangoJSONEncoder):
    """JSON for every answer: Django's encoder, with times to the microsecond."""

    def default(self, o: Any) -> Any:
        # Django's encoder cuts times to milliseconds; an agent that sends a
        # fact's t_valid back as `as_of` must get exactly that instant.
        if isinstance(o, datetime):
            return o.isoformat()
        return super().default(o)


class FieldErrorOut(BaseModel):
    field: str | None = Field(None, description="The field at fault (a dotted path into the body).")
    code: Literal["required", "unknown_field", "unknown_name", "invalid"] = Field(
        description=(
            "required (missing), unknown_field (not a field of this operation), unknown_name"
            " (a predicate or source type the vocabulary does not have) or invalid."
        )
    )
    message: str = Field(description="For a human: what is wrong with it, naming the field.")
    did_you_mean: list[str] | None = Field(
        None,
        description="For an unknown predicate or source type: the valid names nearest to the"
        " one given, nearest first.",
    )


class ErrorOut(BaseModel):
    code: str = Field(
        description="Machine-readable: invalid, not_found, forbidden, state_conflict, ..."
    )
    message: str
    field: str | None = None
    did_you_mean: list[str] | None = Field(
        None,
        description="For an unknown subject, predicate or source type: the valid names nearest"
        " to the one given, nearest first.",
    )
    errors: list[FieldErrorOut] | None = Field(
        None,
        description="Set when several fields are at fault: every one of them, in one answer.",
    )


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
    status: AssertStatus = Field(
        description="created (stored), reinforced (already known: nothing new), superseded (it"
        " replaced the slot's previous value) or flagged (stored as disputed)."
    )
    reason: FlagReason | None = Field(
        description="For flagged: why (commitment, backdated, outranked, revenant,"
        " contradiction); null otherwise."
    )
    fact: FactOut = Field(description="The fact written, or the standing fact reinforced.")
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
    showing: Literal["contested", "unknown"] = Field(
        description=(
            "What the slot shows: `contested` when a value its conflicts dispute is current"
            " (listed in `standing` and among the results; the disputed values contest it and"
            " none is chosen), `unknown` when one of its conflicts has no current member: say"
            " 'unknown — disputed', never pick one."
        )
    )
    standing: list[UUID] = Field(
        description=(
            "The current facts (in `results`) that this slot's disputed values contest;"
            " empty when none of them is current."
        )
    )
    values: list[ContestedValueOut] = Field(description="The disputed values, none chosen.")


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


# --- descriptions ----------------------------------------------------------------------
# Every property of every schema the API and MCP publish has a description
# (issue 31 §2). A name means the same in every shape, so most are written
# once here by name; a shape whose field means something of its own says so
# in its own ``Field(description=...)`` or, where the model is shared, in
# ``SHAPE_NOTES`` by (shape, name). ``describe`` fills them into a document.

# Predicates and source types are edited by admins at run time: no enum, and
# the description points to discovery instead of listing today's names.
VOCABULARY_POINTER = (
    "the vocabulary tool (GET /api/v1/vocabulary) lists them; an admin may add more at any time"
)

FIELD_NOTES: dict[str, str] = {
    "id": "Its id.",
    "scope": "The scope (project), by name: list yours with list_scopes (GET /api/v1/scopes).",
    "subject": "The entity the fact is about, by name or alias (case-insensitive).",
    "predicate": f"The relation, by name (e.g. core/has-version): {VOCABULARY_POINTER}.",
    "object": "The value: a literal, or an entity's name with object_kind 'entity'.",
    "object_kind": "literal (the default): the object is a value; entity: it names an entity.",
    "epistemic": "observation for how things are; preference for likes and dislikes;"
    " commitment only for a decision actually made (never overruled silently).",
    "source_type": f"How the fact is known, which sets how far it is trusted and its confidence"
    f" ceiling:"
    f" {VOCABULARY_POINTER}; list_scopes says which ones your role may claim in each scope.",
    "confidence": "Base confidence, from 0 to 1 (default 0.8); a value above the source"
    " type's ceiling is capped to it and the answer says so; outside [0, 1] is refused.",
    "effective_confidence": "The base confidence after decay for disuse, at the time asked about.",
    "t_valid": "When it became true in the world (ISO 8601 with offset).",
    "t_invalid": "When it stopped (or stops) being true (ISO 8601); null while it holds.",
    "recorded_at": "When the store recorded it (transaction time).",
    "last_reinforced_at": "When it was last asserted again or used in accepted work.",
    "superseded_by": "The fact that replaced it; null when none did.",
    "disputed": "Whether it is the disputed member of an open conflict (left out of recall).",
    "bucket": "system (shared in the scope, reviewed by stewards; the default) or user"
    " (private to its author).",
    "author": "The account that wrote it, by username.",
    "episode": "The session or run that produced it, so a steward can withdraw it whole.",
    "statement": "The sentence the fact was extracted from.",
    "evidence": "Refs backing it: {ref, quote} objects (a bare string is a ref).",
    "admission": "Its admission status (null for the user bucket) and why.",
    "explanation": "Why the status is what it is: which records, which rule, which cap.",
    "ref": "Where the evidence is: a URL, a path, a document's id.",
    "quote": "The words quoted from it, if any.",
    "reason": "Why, in words a steward will read.",
    "ground": "Why, in words a steward will read.",
    "results": "This page's items, in the list's stable order.",
    "next": "Pass it as `cursor` for the next page; null on the last page.",
    "cursor": "`next` from the page before.",
    "limit": "Page size.",
    "fact": "The fact.",
    "fact_id": "The fact's id, as answered by assert_fact or recall.",
    "fact_ids": "The ids of the facts the accepted work relied on (one scope).",
    "conflict_id": "The conflict's id, as list_conflicts answers it.",
    "challenge_id": "The challenge's id: a record of role challenge.",
    "entry_id": "The automatic change's id, as GET /changes answers it.",
    "candidates": "The standing facts it collided with: show them side by side to a human"
    " and do not pick a winner.",
    "superseded": "The ids of the facts whose valid time this write closed.",
    "conflict": "The conflict's id; null when there is none.",
    "kind": "What kind of conflict: commitment, backdated, outranked, revenant or contradiction"
    " (opened by a write), crawler (found among standing facts) or reverted (a steward's revert).",
    "opened_at": "When the conflict was opened.",
    "facts": "The conflict's facts side by side, each with its role; equal weight, no winner.",
    "resolution": "kept (the kept facts stand, the others were invalidated), coexist,"
    " dismissed (a false positive) or moot (its members stopped being live); null while open.",
    "resolved_by": "The steward who resolved it; null while open or when it closed by itself.",
    "resolved_at": "When it was resolved; null while open.",
    "action": "keep (the facts in `keep` stand, the others are invalidated), coexist (all"
    " stand and stop being disputed) or dismiss (a false positive: all stay as they are).",
    "keep": "With action keep: the ids of the candidates that stand.",
    "outcome": "accepted: the work these facts shaped was accepted.",
    "reported_at": "When the outcome was reported.",
    "at": "When.",
    "as_of": "Valid time to read at (ISO 8601; default now).",
    "known_at": "Transaction time: answer as the store knew it then (ISO 8601).",
    "contested": "Also return each slot's disputed values and why they are disputed.",
    "budget": "The digest's length limit in characters.",
    "values": "The slot's disputed values, each with the conflicts that dispute it.",
    "disputes": "The open conflicts that dispute it.",
    "verdict": "admitted or rejected.",
    "challenge": "For a refutation: the challenge it answers; null otherwise.",
    "inserted_at": "When the record was written.",
    "corrected": "The corrected fact, which now points at the replacement.",
    "refutations": "The refutations a steward's correction filed, one per open challenge.",
    "dry_run": "Only say what would change; write nothing.",
    "confirm": "To withdraw: the token of the dry run being confirmed (required).",
    "token": "Hand it back as `confirm` to carry out exactly this plan.",
    "withdrawal": "The withdrawal's id; null for a dry run.",
    "withdrawn": "The facts the episode wrote that are (or would be) withdrawn.",
    "reinstated": "The facts they had superseded that are (or would be) valid again.",
    "not_reinstated": "Facts they had superseded that stay ended, with why.",
    "left_for_steward": "What a steward must settle by hand, with why.",
    "closed_conflicts": "The conflicts closed because their members were withdrawn.",
    "why": "Why, in words.",
    "rule": "Only changes whose rule starts with this text.",
    "markdown": "The digest itself, in Markdown.",
    "shown": "What the digest shows, by section.",
    "commitments": "Commitments.",
    "conflicts": "Open conflicts, as unknown — disputed.",
    "code": "A machine-readable code.",
    "message": "For a human: what is wrong.",
    "field": "The field at fault, when there is one.",
    "errors": "When several fields are at fault: each with its field, code and message.",
    "how": "How its validity ended.",
    "ended": "Whether and how it stopped being valid.",
    "by": "The account that did it.",
    "before": "What the target looked like before.",
    "after": "What it looked like after.",
    "rationale": "The rule's own account of why.",
    "reverted": "The steward's revert, if any; null otherwise.",
    "revert": "The id of the revert's own audit entry.",
    "target_type": "What kind of row it changed (fact, conflict).",
    "target_id": "That row's id.",
    "triggered_by": "The account whose write triggered it (a write-path change), else null.",
    # health
    "healthy": "Whether the background work is healthy (the answer is 503 when not).",
    "checked_at": "When this was checked.",
    "problems": "What is wrong, in words; empty when healthy.",
    "stale_after_seconds": "A worker whose heartbeat is older than this is dead.",
    "heartbeat": "The freshest worker heartbeat; null when none ever beat.",
    "workers": "Every worker that has beaten recently.",
    "failed_tasks": "Background tasks that failed.",
    "queue": "Tasks waiting to run.",
    "last_crawler_run": "The maintenance crawler's last run; null before the first.",
    "periodic_jobs": "Each periodic job with its recent runs.",
    "last_doctor_run": "The consistency doctor's last run; null before the first.",
    "worker_id": "The worker's id.",
    "host": "The machine it runs on.",
    "pid": "Its process id.",
    "started_at": "When it started.",
    "finished_at": "When it finished; null while running.",
    "beat_at": "Its last heartbeat.",
    "age_seconds": "Seconds since its last heartbeat.",
    "stopped_at": "When it stopped cleanly; null while running.",
    "alive": "Whether its heartbeat is fresh.",
    "count": "How many.",
    "latest": "The most recent ones.",
    "task_path": "The task's function, by dotted path.",
    "exception": "The exception it failed with.",
    "depth": "How many tasks wait.",
    "oldest_age_seconds": "Age of the oldest waiting task; null when none waits.",
    "counts": "Counts per kind.",
    "report": "The run's full report (global stewards only); null otherwise.",
    "name": "Its name.",
    "every_seconds": "How often it runs.",
    "runs": "Its recent runs, newest first.",
    "period_start": "The period this run was for.",
    "enqueued_at": "When it was queued.",
    "task_id": "The queued task's id; null when none was queued.",
    "duration_seconds": "How long it ran; null while not finished.",
    "capped": "The checks that stopped at their limit of findings.",
    "violations": "What the checks found (global stewards only); null otherwise.",
    "check": "Which check.",
    "what": "What is inconsistent.",
    "ids": "The rows concerned.",
    "todo": "What to do about it.",
}

# Where one name means something of its own in one shape.
SHAPE_NOTES: dict[tuple[str, str], str] = {
    ("CorrectionOut", "admission"): "The admission record a steward's correction filed for"
    " the replacement; null for an author's own correction.",
    ("AdmissionOut", "status"): "candidate, admitted, rejected or suspended; null for a user"
    " bucket fact, which needs no admission.",
    ("InvalidateOut", "status"): "invalidated.",
    ("InvalidateOut", "at"): "When its valid interval closed.",
    ("ConflictOut", "status"): "open (waiting for a ruling) or resolved.",
    ("ConflictOut", "reason"): "The resolution's written reason; empty while open.",
    ("ConflictQuery", "scope"): "Only this scope's conflicts (default all of yours).",
    ("ConflictFactOut", "role"): "incoming (the write that raised the conflict) or existing"
    " (a standing fact it collided with).",
    ("RecordOut", "role"): "admission (a steward's verdict), challenge or refutation.",
    ("ChallengeOut", "role"): "challenge: the record just filed.",
    ("RecordOut", "fact"): "The fact the record is about.",
    ("RecordOut", "evidence"): "A challenge's evidence refs; null when it has none.",
    ("LookAlikeOut", "role"): "Which name of the assertion: its subject or its object.",
    ("DisputeOut", "conflict"): "The open conflict.",
    ("ContestedValueOut", "fact"): "The disputed value's fact.",
    ("ContestedSlotOut", "subject"): "The slot's subject.",
    ("NotReinstatedOut", "fact"): "The fact concerned.",
    ("TruthOut", "as_of"): "The valid time the answer is for.",
    ("TruthOut", "known_at"): "The transaction time it is for; null for now.",
    ("TruthOut", "results"): "The current truth, by effective confidence.",
    ("OutcomeOut", "id"): "The outcome's id.",
    ("PeriodicRunOut", "status"): "The task's status; null once its result is gone.",
    ("ChangeOut", "at"): "When the change happened.",
    ("ChangeOut", "scope"): "The scope it happened in.",
    ("ChangeOut", "action"): "What it did (e.g. supersede, resolve).",
    ("ChangesQuery", "scope"): "Only this scope's changes (default all of yours).",
    ("RevertedOut", "at"): "When it was reverted.",
    ("RevertedOut", "reason"): "The steward's reason.",
    ("EndedOut", "reason"): "Why it ended, as its ender wrote it; empty while live.",
    ("ContextOut", "scope"): "The scope digested.",
    ("ContextOut", "subject"): "The one subject digested; null for the whole scope.",
    ("ContextOut", "as_of"): "The valid time digested.",
    ("ContextOut", "budget"): "The length limit it was written within.",
    ("CountsOut", "facts"): "Facts of the current truth.",
    ("WithdrawalOut", "episode"): "The episode withdrawn.",
    ("WithdrawalOut", "scope"): "The scope it was withdrawn from.",
    ("WithdrawalOut", "dry_run"): "Whether this only says what would change.",
    ("WithdrawIn", "scope"): "The scope to withdraw the episode from.",
    ("CrawlerRunOut", "counts"): "How many of each action the run took.",
    ("DoctorRunOut", "counts"): "How many findings each check made.",
    ("CorrectionIn", "subject"): "The replacement's subject (default: the corrected fact's).",
    ("CorrectionIn", "ground"): "Why the fact is corrected, in words a steward will read.",
    ("SlotHistoryQuery", "subject"): "The slot's subject, by name or alias.",
    ("ContextQuery", "subject"): "Only this subject (default the whole scope).",
    ("TruthQuery", "subject"): "Only this subject (default all).",
    ("TruthQuery", "predicate"): f"Only this predicate (default all): {VOCABULARY_POINTER}.",
}


def describe(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (an OpenAPI document or a JSON schema) with every property described.

    A description the model gives itself stands; a property without one
    gets its shape's note, else its name's. Walks the whole document, so
    nested definitions (``$defs``, ``components``) are described too.
    """
    _describe_node(schema)
    return schema


def _describe_node(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _describe_node(item)
        return
    if not isinstance(node, dict):
        return
    shape = node.get("title")
    for name, field in (node.get("properties") or {}).items():
        if isinstance(field, dict) and "description" not in field:
            note = SHAPE_NOTES.get((shape, name)) or FIELD_NOTES.get(name)
            if note:
                field["description"] = note
    if node.get("in") in ("query", "path") and "description" not in node:
        note = FIELD_NOTES.get(node.get("name", ""))
        if note:
            node["description"] = note
    for value in node.values():
        _describe_node(value)
