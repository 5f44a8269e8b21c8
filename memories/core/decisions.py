"""The write path's decision: how a new assertion meets what already stands (SPEC §2).

This module is the pure core. It reads no database, no clock and no settings:
callers pass the vocabulary, the standing facts of the slot and ``now``, and
get back a value saying what to do. ``memories.write.actions.assert_fact`` is the
shell that gathers those inputs under a lock and applies the decision.

``parse_assertion`` turns a raw mapping (a form, a JSON body, a JSONL line)
into a checked :class:`Assertion` or raises :class:`Rejected` naming the field;
text the database cannot store is bad input like any other (:func:`unstorable`).

``decide`` weighs one incoming fact against the standing facts of its slot.
The rules, in the order they are checked:

1. *rejected* — bad input never reaches ``decide``: ``parse_assertion``
   refuses it first, and nothing is written.
2. *duplicate* — a live fact with the same predicate and object stands:
   - *escalation*: the caller explicitly stated a class that binds harder
     (observation < preference < commitment) → the standing fact is
     superseded by the new one, so history reads "observation, then
     commitment". A class filled in from the predicate's default never
     escalates.
   - otherwise *reinforced*: no new fact; the disuse clock resets; the fact
     is re-sourced when the incoming source's ceiling is strictly higher;
     its base confidence becomes ``max(old, min(incoming, ceiling))`` and
     the incoming evidence joins its support.
3. *collisions* — live facts the incoming one contradicts (another object on
   a ``one`` predicate that is not event-like; the same object under another
   predicate of the exclusion group):
   - any commitment involved → flagged *commitment*. For a steward of the
     scope writing (``Incoming.by_steward``), only *admitted* colliding facts
     are weighed here: a candidate (a system fact whose latest verdict is not
     ``admitted``, ``StandingFact.candidate``; a suspended fact is still
     admitted) never holds up a steward's write, neither by
     its own class nor as what the steward's commitment would overrule. The
     candidate is then weighed by the rules below as an ordinary fact of its
     source, so a steward's write on a candidate commitment of equal or
     lower rank supersedes it (on a ``supersede`` predicate or in an
     exclusion group: audited as an automatic change, revertible) and is
     flagged *contradiction* under a ``review`` policy (issue 29 item 8);
   - the incoming ``t_valid`` is not after a colliding fact's → flagged
     *backdated* (closing the older interval there would leave it valid at
     no instant);
   - a colliding fact's source outranks the incoming one → flagged
     *outranked*;
   - an exclusion-group collision, or policy ``supersede`` → *superseded*:
     the colliding intervals close at the incoming ``t_valid``;
   - policy ``review`` → flagged *contradiction*;
   - policy ``parallel`` → the values coexist; go on to rule 4.
4. *revenant* — the same value was invalidated before on this slot, a live
   rival with another object stands, and the writer is low-trust → flagged
   *revenant* against the rivals.
5. *created* — otherwise.

An assertion that arrives with its interval already closed (``t_invalid``
given) is history, not a claim about now: it is never live, so it collides
with nothing and is created as it is.

A confidence outside [0, 1] is refused (``parse_confidence``); one above the
source's ceiling is clamped to it at birth (``confidence_clamp`` says when);
an assertion without one gets ``DEFAULT_CONFIDENCE``.
"""

import difflib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, Literal
from uuid import UUID

from memories.core.normalize import hidden_character, shown_form

DEFAULT_CONFIDENCE = 0.8
MAX_OBJECT_LENGTH = 2_000
MAX_NAME_LENGTH = 500
MAX_EPISODE_LENGTH = 200
MAX_STATEMENT_LENGTH = 20_000
MAX_EVIDENCE_ITEMS = 100
MAX_EVIDENCE_TEXT = 2_000

EPISTEMIC_STRENGTH = {"observation": 0, "preference": 1, "commitment": 2}
OBJECT_KINDS = ("literal", "entity")
BUCKETS = ("system", "user")

ASSERTION_FIELDS = frozenset(
    {
        "scope",
        "subject",
        "predicate",
        "object",
        "object_kind",
        "epistemic",
        "source_type",
        "confidence",
        "t_valid",
        "t_invalid",
        "episode",
        "statement",
        "evidence",
        "bucket",
    }
)

Status = Literal["created", "reinforced", "superseded", "flagged"]
Reason = Literal["commitment", "backdated", "outranked", "revenant", "contradiction"]


class Rejected(ValueError):
    """Invalid input: nothing is written. ``field`` names what is wrong.

    A refusal of several fields at once (``Rejected.every``) keeps the first
    one's ``field``, says the others in its ``message``, and lists each in
    ``problems``, for a face that answers them one by one.
    """

    def __init__(self, field: str, message: str, *, code: str = "invalid") -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        # What kind of problem, for a client's code: "required", "unknown_field",
        # "unknown_name" (not in the vocabulary), else "invalid".
        self.code = code
        self.problems: tuple[Rejected, ...] = (self,)

    @classmethod
    def every(cls, problems: Sequence["Rejected"]) -> "Rejected":
        """One refusal for ``problems`` (at least one), in the order they were found."""
        first = problems[0]
        if len(problems) == 1:
            return first
        # A reader of one message (an import's report) still learns them all.
        also = "; ".join(str(problem) for problem in problems[1:])
        combined = cls(first.field, f"{first.message}; also {also}", code=first.code)
        combined.problems = tuple(problems)
        return combined


class UnknownName(Rejected):
    """A name outside a closed vocabulary; ``did_you_mean`` names the valid ones nearest to it."""

    def __init__(self, field: str, message: str, *, did_you_mean: Sequence[str]) -> None:
        super().__init__(field, message, code="unknown_name")
        self.did_you_mean = tuple(did_you_mean)


# The vocabulary is a handful of names, so the nearest are always offered,
# however far: an agent learns the valid names from its first refusal.
NEAREST_NAMES = 3


def nearest_names(name: str, names: Iterable[str]) -> tuple[str, ...]:
    """The ``NEAREST_NAMES`` of ``names`` most like ``name`` (difflib's ratio), nearest first."""
    return tuple(difflib.get_close_matches(name, sorted(names), n=NEAREST_NAMES, cutoff=0.0))


# --- vocabulary ---------------------------------------------------------------


@dataclass(frozen=True)
class PredicateSpec:
    name: str
    cardinality: Literal["one", "many"]
    default_epistemic: str
    policy: Literal["supersede", "parallel", "review"]
    exclusion_group: str = ""
    event_like: bool = False


@dataclass(frozen=True)
class SourceSpec:
    name: str
    trust_rank: int
    confidence_ceiling: float
    decays: bool = True


@dataclass(frozen=True)
class Vocabulary:
    predicates: Mapping[str, PredicateSpec]
    sources: Mapping[str, SourceSpec]

    def slot_predicates(self, predicate: str) -> tuple[str, ...]:
        """The predicates whose facts can collide with one of ``predicate``."""
        group = self.predicates[predicate].exclusion_group
        if not group:
            return (predicate,)
        return self._groups[group]

    @cached_property
    def _groups(self) -> dict[str, tuple[str, ...]]:
        # Each exclusion group's predicates, sorted: asked twice per imported
        # line of a group, so found once per vocabulary, not once per line.
        groups: dict[str, list[str]] = {}
        for name, spec in self.predicates.items():
            if spec.exclusion_group:
                groups.setdefault(spec.exclusion_group, []).append(name)
        return {group: tuple(sorted(names)) for group, names in groups.items()}

    def slot_name(self, predicate: str) -> str:
        """What the slot lock is named after: the exclusion group, else the predicate."""
        group = self.predicates[predicate].exclusion_group
        return f"group:{group}" if group else f"predicate:{predicate}"


# --- input --------------------------------------------------------------------


# The values of one assertion's way through ``decide`` are slotted: a large
# import builds several of them per line (docs/bench-log/2026-12-02-import.md).
@dataclass(frozen=True, slots=True)
class Evidence:
    ref: str
    quote: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"ref": self.ref, "quote": self.quote}


@dataclass(frozen=True, slots=True)
class Assertion:
    """A checked assertion: every field present, typed and within bounds."""

    scope: str
    subject: str
    predicate: str
    object: str
    object_kind: Literal["literal", "entity"]
    epistemic: str
    epistemic_stated: bool
    source_type: str
    confidence: float
    # None when not given: the shell fills in the time it reads under the lock.
    t_valid: datetime | None
    t_invalid: datetime | None
    episode: str
    statement: str
    evidence: tuple[Evidence, ...]
    bucket: Literal["system", "user"]
    # Whether the caller gave ``confidence`` (else it is DEFAULT_CONFIDENCE).
    confidence_stated: bool = True


def parse_assertion(raw: Mapping[str, Any], vocabulary: Vocabulary, *, now: datetime) -> Assertion:
    """Check a raw assertion; raise :class:`Rejected` naming every bad field.

    Each field is checked on its own, so one refusal lists all that is wrong
    (``Rejected.problems``) and an agent corrects its call once, not once a
    field. A check that needs another field's value (the object's length
    needs its kind, the default class the predicate) uses that field's
    default when the field itself is bad.
    """
    problems: list[Rejected] = []

    def checked(check: Any, *args: Any, **kwargs: Any) -> Any:
        # The checked value, or None (with the problem noted) when refused.
        try:
            return check(*args, **kwargs)
        except Rejected as problem:
            problems.append(problem)
            return None

    for name in sorted(set(raw) - ASSERTION_FIELDS, key=repr):
        # A key is named as it was sent unless it is not text itself: the
        # refusal is printed and stored, and must survive both.
        if not isinstance(name, str) or unstorable(name) is not None:
            name = ascii(name)
        problems.append(Rejected(name, "is not a field of an assertion", code="unknown_field"))

    scope = checked(_required_text, raw, "scope", MAX_NAME_LENGTH)
    subject = checked(_shown_text, raw, "subject", MAX_NAME_LENGTH, line_breaks=False)
    predicate = checked(_known, raw, "predicate", vocabulary.predicates, "predicate")
    object_kind = checked(_choice, raw, "object_kind", OBJECT_KINDS, default="literal")
    limit = MAX_NAME_LENGTH if object_kind == "entity" else MAX_OBJECT_LENGTH
    obj = checked(_shown_text, raw, "object", limit, line_breaks=object_kind != "entity")
    source_type = checked(_known, raw, "source_type", vocabulary.sources, "source type")

    stated = raw.get("epistemic")
    epistemic = None
    if stated is None or stated == "":
        if predicate is not None:
            epistemic = vocabulary.predicates[predicate].default_epistemic
    elif not isinstance(stated, str) or stated not in EPISTEMIC_STRENGTH:
        problems.append(
            Rejected("epistemic", f"must be one of {', '.join(EPISTEMIC_STRENGTH)}, not {stated!r}")
        )
    else:
        epistemic = stated

    confidence = checked(parse_confidence, raw.get("confidence"))
    t_valid = checked(parse_time, raw.get("t_valid"), "t_valid")
    t_invalid = checked(parse_time, raw.get("t_invalid"), "t_invalid")
    t_valid_bad = "t_valid" in {problem.field for problem in problems}
    if t_invalid is not None and not t_valid_bad and t_invalid <= (t_valid or now):
        problems.append(Rejected("t_invalid", "must be after t_valid"))
    episode = checked(_optional_text, raw, "episode", MAX_EPISODE_LENGTH)
    statement = checked(_optional_text, raw, "statement", MAX_STATEMENT_LENGTH)
    evidence = checked(parse_evidence, raw.get("evidence"), "evidence")
    bucket = checked(_choice, raw, "bucket", BUCKETS, default="system")

    if problems:
        raise Rejected.every(problems)
    return Assertion(
        scope=scope,
        subject=subject,
        predicate=predicate,
        object=obj,
        object_kind=object_kind,
        epistemic=epistemic,  # type: ignore[arg-type]
        epistemic_stated=stated not in (None, ""),
        source_type=source_type,
        confidence=DEFAULT_CONFIDENCE if confidence is None else confidence,
        t_valid=t_valid,
        t_invalid=t_invalid,
        episode=episode,
        statement=statement,
        evidence=evidence,
        bucket=bucket,
        confidence_stated=confidence is not None,
    )


def parse_confidence(value: Any) -> float | None:
    """A confidence is a finite number from 0 to 1; None when not given.

    Out of range is refused, never clamped (issue 31 §3): 1.5 or -3 says the
    caller misunderstood the scale, and storing 0.95 or 0 for it would hide
    that. Clamping to the source type's ceiling is another matter: the value
    is on the scale, the source just cannot vouch for that much.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Rejected("confidence", f"must be a number, not {value!r}")
    # An integer is compared as it is: one too large for a float (a JSON
    # number of 400 digits) would make isfinite raise.
    if isinstance(value, float) and not math.isfinite(value):
        raise Rejected("confidence", "must be a finite number")
    if not 0 <= value <= 1:
        raise Rejected("confidence", f"must be between 0 and 1, not {value!r}")
    return float(value)


def _known(raw: Mapping[str, Any], field: str, names: Mapping[str, Any], what: str) -> str:
    value = _required_text(raw, field, MAX_NAME_LENGTH)
    if value not in names:
        raise UnknownName(
            field, f"unknown {what} {value!r}", did_you_mean=nearest_names(value, names)
        )
    return value


@dataclass(frozen=True)
class ConfidenceClamp:
    """An asked confidence above its source type's ceiling: what was asked, what capped it."""

    asked: float
    ceiling: float
    ceiling_of: str


def confidence_clamp(assertion: Assertion, vocabulary: Vocabulary) -> ConfidenceClamp | None:
    """The clamp applied to a stated confidence at the source's ceiling, or None.

    Only a confidence the caller stated is reported: the default (0.8)
    capped by a low source's ceiling is not something the caller asked for.
    """
    if not assertion.confidence_stated:
        return None
    ceiling = vocabulary.sources[assertion.source_type].confidence_ceiling
    if assertion.confidence <= ceiling:
        return None
    return ConfidenceClamp(
        asked=assertion.confidence, ceiling=ceiling, ceiling_of=assertion.source_type
    )


def parse_time(value: Any, field: str) -> datetime | None:
    """An ISO 8601 time (or a datetime); a time without offset is taken as UTC."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        # A NUL is refused as such, never mistaken for an absent time.
        problem = unstorable(value)
        if problem is not None:
            raise Rejected(field, problem)
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            raise Rejected(field, f"is not an ISO 8601 time: {value!r}") from None
    else:
        raise Rejected(field, f"must be an ISO 8601 time, not {value!r}")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        # Stored and compared in UTC; a time at the edge of the calendar can
        # fall outside it once its offset is applied.
        return parsed.astimezone(UTC)
    except OverflowError:
        raise Rejected(field, f"is outside the range of times: {value!r}") from None


EVIDENCE_KEYS = frozenset({"ref", "quote"})


def parse_evidence(value: Any, field: str) -> tuple[Evidence, ...]:
    """Evidence as a list of ``{ref, quote}`` objects (a bare string is a ref)."""
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise Rejected(field, "must be a list of {ref, quote} objects")
    if len(value) > MAX_EVIDENCE_ITEMS:
        raise Rejected(field, f"has more than {MAX_EVIDENCE_ITEMS} items")
    items = []
    for item in value:
        if isinstance(item, str):
            ref, quote = item, ""
        # dict first: the common case, and far cheaper to test than the Mapping ABC.
        elif isinstance(item, (dict, Mapping)):
            if not EVIDENCE_KEYS.issuperset(item):
                extra = sorted(set(item) - EVIDENCE_KEYS)
                raise Rejected(field, f"an evidence item has an unknown key {extra[0]!r}")
            ref, quote = item.get("ref"), item.get("quote", "")
            if quote is None:
                quote = ""
        else:
            raise Rejected(field, "each item must be a {ref, quote} object")
        if not isinstance(ref, str) or not ref.strip():
            raise Rejected(field, "each item needs a non-empty ref")
        if not isinstance(quote, str):
            raise Rejected(field, "an evidence quote must be text")
        for text in (ref, quote):
            check_text(text, field, MAX_EVIDENCE_TEXT)
        items.append(Evidence(ref=ref.strip(), quote=quote.strip()))
    return tuple(items)


def unstorable(value: str) -> str | None:
    """Why PostgreSQL cannot store ``value`` as text, or None when it can.

    The one statement of this rule: the JSON API's schemas, the console's
    forms, the import and every action's own checks ask it. PostgreSQL text
    holds no NUL character, and the database's UTF-8 has no encoding for a
    lone surrogate (U+D800 to U+DFFF, half of a UTF-16 pair), which Python
    strings can hold and JSON can spell as an escape (``"\\ud800"``). Either
    would otherwise fail at the insert, as a 500 or a crashed import.
    """
    if "\x00" in value:
        return "must not contain a NUL character"
    # ASCII, the common case, holds no surrogate; anything else must encode.
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "must not contain a lone surrogate (U+D800 to U+DFFF), which is not text"
    return None


def check_text(value: str, field: str, limit: int) -> None:
    """Refuse text the database cannot store, or longer than ``limit`` characters."""
    problem = unstorable(value)
    if problem is not None:
        raise Rejected(field, problem)
    if len(value) > limit:
        raise Rejected(field, f"is longer than {limit} characters")


def _required_text(raw: Mapping[str, Any], field: str, limit: int) -> str:
    value = raw.get(field)
    if value is None:
        raise Rejected(field, "is required", code="required")
    if not isinstance(value, str):
        raise Rejected(field, "must be text")
    value = value.strip()
    if not value:
        raise Rejected(field, "must not be empty")
    check_text(value, field, limit)
    return value


def _shown_text(raw: Mapping[str, Any], field: str, limit: int, *, line_breaks: bool) -> str:
    """A required name or literal value: in NFKC, refused if it hides a character."""
    value = shown_form(_required_text(raw, field, limit))
    problem = hidden_character(value, line_breaks=line_breaks)
    if problem is not None:
        raise Rejected(field, problem)
    check_text(value, field, limit)  # NFKC can lengthen a value
    return value


def _optional_text(raw: Mapping[str, Any], field: str, limit: int) -> str:
    value = raw.get(field)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise Rejected(field, "must be text")
    check_text(value, field, limit)
    return value.strip()


def _choice(raw: Mapping[str, Any], field: str, choices: Sequence[str], *, default: str) -> str:
    value = raw.get(field)
    if value is None or value == "":
        return default
    if value not in choices:
        raise Rejected(field, f"must be one of {', '.join(choices)}, not {value!r}")
    return value


# --- the decision -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Incoming:
    """The incoming fact as ``decide`` sees it: object already reduced to its key."""

    predicate: str
    object_kind: str
    object_key: str
    epistemic: str
    epistemic_stated: bool
    source_type: str
    confidence: float
    t_valid: datetime
    t_invalid: datetime | None = None
    evidence: tuple[Evidence, ...] = ()
    # The writer is a steward of the scope: the one writer whose word a
    # candidate cannot hold up (rule 3), since the steward is who admits it.
    by_steward: bool = False


@dataclass(frozen=True, slots=True)
class StandingFact:
    """A fact already in the slot (same scope, bucket and, for ``user``, author)."""

    id: UUID | str
    predicate: str
    object_kind: str
    object_key: str
    epistemic: str
    source_type: str
    confidence: float
    t_valid: datetime
    t_invalid: datetime | None = None
    evidence: tuple[Evidence, ...] = ()
    # A system fact whose latest verdict is not ``admitted`` (SPEC §6): no
    # verdict yet, or rejected. A ``user`` fact is never one (it has no
    # verdicts; it is weighed only against its own author's writes).
    candidate: bool = False

    @property
    def live(self) -> bool:
        return self.t_invalid is None


@dataclass(frozen=True, slots=True)
class Reinforcement:
    fact_id: UUID | str
    confidence: float
    source_type: str
    evidence: tuple[Evidence, ...]
    resourced: bool


@dataclass(frozen=True, slots=True)
class Decision:
    status: Status
    reason: Reason | None = None
    # The base confidence of the fact to create (every status but reinforced).
    confidence: float | None = None
    reinforcement: Reinforcement | None = None
    # Facts whose interval closes at the incoming t_valid, pointing at the new fact.
    supersedes: tuple[UUID | str, ...] = ()
    # Facts a flagged write collided with: the conflict's standing members.
    candidates: tuple[UUID | str, ...] = ()
    rationale: str = ""


def birth_confidence(requested: float, ceiling: float) -> float:
    """Clamp into [0, 1], then to the source's ceiling."""
    return min(max(requested, 0.0), 1.0, ceiling)


def merge_evidence(
    standing: Iterable[Evidence], incoming: Iterable[Evidence]
) -> tuple[Evidence, ...]:
    """Union of two supports, first-seen order, deduplicated by (ref, quote)."""
    merged: dict[tuple[str, str], Evidence] = {}
    for item in (*standing, *incoming):
        merged.setdefault((item.ref, item.quote), item)
    return tuple(merged.values())


def decide(
    incoming: Incoming,
    standing: Sequence[StandingFact],
    vocabulary: Vocabulary,
    *,
    now: datetime,
    trusted_rank: int,
) -> Decision:
    """Weigh ``incoming`` against the standing facts of its slot (rules in the module doc).

    ``standing`` must hold every fact of the slot (same scope, subject, bucket
    and, for ``user``, author) that can matter: facts with the incoming
    predicate and value, live or not; on a ``one`` predicate, or for a
    low-trust writer, every live value of the predicate; and the live facts
    of the exclusion group with the incoming value. Anything else is ignored.
    """
    predicate = vocabulary.predicates[incoming.predicate]
    source = vocabulary.sources[incoming.source_type]
    born = birth_confidence(incoming.confidence, source.confidence_ceiling)

    if incoming.t_invalid is not None:
        return Decision("created", confidence=born, rationale="a closed interval is history")

    def same_value(fact: StandingFact) -> bool:
        return (fact.object_kind, fact.object_key) == (incoming.object_kind, incoming.object_key)

    live = [fact for fact in standing if fact.live]

    # 2. duplicate
    duplicate = next((f for f in live if f.predicate == incoming.predicate and same_value(f)), None)
    if duplicate is not None:
        escalates = (
            incoming.epistemic_stated
            and EPISTEMIC_STRENGTH[incoming.epistemic] > EPISTEMIC_STRENGTH[duplicate.epistemic]
        )
        if escalates:
            if incoming.t_valid <= duplicate.t_valid:
                return _flag("backdated", born, [duplicate], "escalation dated before the fact")
            return Decision(
                "superseded",
                confidence=born,
                supersedes=(duplicate.id,),
                rationale=f"escalation: {duplicate.epistemic} restated as {incoming.epistemic}",
            )
        return Decision(
            "reinforced", reinforcement=_reinforce(duplicate, incoming, born, vocabulary)
        )

    # 3. collisions
    group = predicate.exclusion_group
    by_cardinality = [
        f
        for f in live
        if f.predicate == incoming.predicate
        and predicate.cardinality == "one"
        and not predicate.event_like
        and not same_value(f)
    ]
    by_group = [
        f
        for f in live
        if group
        and f.predicate != incoming.predicate
        and vocabulary.predicates[f.predicate].exclusion_group == group
        and same_value(f)
    ]
    collisions = by_cardinality + by_group
    if collisions:
        # What a commitment would be overruled by, or would overrule: for a
        # steward, only what a steward has admitted. A candidate commitment
        # is someone's proposal, and the steward is who rules on proposals;
        # letting it dispute the steward's write would let any member hold
        # the scope's stewards up by stating a class.
        weighed = [f for f in collisions if not f.candidate] if incoming.by_steward else collisions
        if weighed and (
            incoming.epistemic == "commitment" or any(f.epistemic == "commitment" for f in weighed)
        ):
            return _flag("commitment", born, collisions, "a commitment is never overruled")
        if any(incoming.t_valid <= f.t_valid for f in collisions):
            return _flag("backdated", born, collisions, "valid from before a standing fact")
        if any(
            vocabulary.sources[f.source_type].trust_rank > source.trust_rank for f in collisions
        ):
            return _flag("outranked", born, collisions, "a more trusted source stands")
        if by_group or predicate.policy == "supersede":
            return Decision(
                "superseded",
                confidence=born,
                supersedes=tuple(f.id for f in collisions),
                rationale="exclusion group" if by_group else "predicate policy supersede",
            )
        if predicate.policy == "review":
            return _flag("contradiction", born, collisions, "predicate policy review")
        # policy "parallel": the values coexist.

    # 4. revenant
    if source.trust_rank < trusted_rank:
        buried = any(
            not f.live and f.predicate == incoming.predicate and same_value(f) for f in standing
        )
        rivals = [f for f in live if f.predicate == incoming.predicate and not same_value(f)]
        if buried and rivals:
            return _flag("revenant", born, rivals, "a low-trust source revives a retired value")

    # 5. created
    return Decision("created", confidence=born)


def _flag(reason: Reason, born: float, candidates: Sequence[StandingFact], why: str) -> Decision:
    return Decision(
        "flagged",
        reason=reason,
        confidence=born,
        candidates=tuple(f.id for f in candidates),
        rationale=why,
    )


def _reinforce(
    fact: StandingFact, incoming: Incoming, born: float, vocabulary: Vocabulary
) -> Reinforcement:
    # Re-source only on a strictly higher ceiling: a human confirming a
    # session extraction lifts it out of the session band, a tie changes nothing.
    old_ceiling = vocabulary.sources[fact.source_type].confidence_ceiling
    new_ceiling = vocabulary.sources[incoming.source_type].confidence_ceiling
    resourced = new_ceiling > old_ceiling
    source_type = incoming.source_type if resourced else fact.source_type
    ceiling = max(new_ceiling, old_ceiling) if resourced else old_ceiling
    # ``born`` is already capped by the incoming source's own ceiling, so a
    # weaker source can never lift a fact above what it could assert itself.
    confidence = max(fact.confidence, min(born, ceiling))
    return Reinforcement(
        fact_id=fact.id,
        confidence=confidence,
        source_type=source_type,
        evidence=merge_evidence(fact.evidence, incoming.evidence),
        resourced=resourced,
    )


def incoming_from(
    assertion: Assertion, object_key: str, *, t_valid: datetime, by_steward: bool = False
) -> Incoming:
    """The decision's view of a checked assertion whose object resolved to ``object_key``.

    ``by_steward``: the writer is a steward of the assertion's scope (rule 3).
    """
    return Incoming(
        predicate=assertion.predicate,
        object_kind=assertion.object_kind,
        object_key=object_key,
        epistemic=assertion.epistemic,
        epistemic_stated=assertion.epistemic_stated,
        source_type=assertion.source_type,
        confidence=assertion.confidence,
        t_valid=t_valid,
        t_invalid=assertion.t_invalid,
        evidence=assertion.evidence,
        by_steward=by_steward,
    )


def conflict_is_moot(members: Sequence[tuple[str, bool]]) -> bool:
    """Whether an open conflict has closed by itself (SPEC §3).

    ``members`` holds each member's (role, live). A conflict with an incoming
    side is moot once its incoming fact is no longer live or none of its
    standing facts is; one without (found among standing facts) once fewer
    than two members are live.
    """
    incoming = [live for role, live in members if role == "incoming"]
    standing = [live for role, live in members if role != "incoming"]
    if incoming:
        return not all(incoming) or not any(standing)
    return sum(standing) < 2
