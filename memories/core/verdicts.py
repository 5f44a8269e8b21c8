"""Adjudicator verdicts: what one may say, how it is read, and when it may be acted on.

Pure: no Django, no database, no clock. An adjudicator (SPEC §7) looks at the
competing values of one truth slot and answers with one of five verdicts, a
confidence in [0, 1] and a rationale:

- ``corroborate``: the values are one value spelled differently; their
  support merges into one winner and no claim's validity ends;
- ``single_winner``: one value is right and the others are not;
- ``coexist``: the values hold together;
- ``supersede``: a newer value replaced the older ones;
- ``needs_review``: a human must decide.

``parse_verdict`` reads a model's answer strictly: one JSON object with known
keys and well-formed values, or no usable verdict at all. ``may_act`` is the
one home of the rule that limits what automatic resolution may do with a
verdict.
"""

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

VerdictKind = Literal["corroborate", "single_winner", "coexist", "supersede", "needs_review"]
VERDICT_KINDS: tuple[VerdictKind, ...] = (
    "corroborate",
    "single_winner",
    "coexist",
    "supersede",
    "needs_review",
)
# The only verdicts automatic resolution may ever act on: a merge of spellings
# and a clean update. Everything else is a contradiction or a doubt, and a
# contradiction is never resolved automatically, however confident the verdict.
ACTIONABLE_VERDICTS = frozenset({"corroborate", "supersede"})
# Conflicts that exist to stop a write from winning quietly: a threatened
# commitment, a less trusted source against a more trusted one, a retired value
# brought back. No verdict resolves them; a steward does.
# "reverted": opened by a steward's revert of an automatic supersession, so
# automatic resolution would only redo what a human undid.
PROTECTED_CONFLICT_KINDS = frozenset({"commitment", "outranked", "revenant", "reverted"})

MAX_RATIONALE_LENGTH = 4_000
VERDICT_KEYS = frozenset({"verdict", "confidence", "rationale", "winner", "semantics"})
SEMANTICS_KEYS = frozenset({"cardinality", "policy", "exclusion_group", "event_like", "rationale"})


class UnusableVerdict(ValueError):
    """The answer is not a verdict this module accepts; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Verdict:
    """An adjudicator's answer about one claim set.

    ``claim_set_hash`` names the claims the verdict is about (see
    ``memories.core.truth.claim_set_hash``): a verdict about another set is
    not used. ``winner`` is the id of a fact of that set, when the verdict
    names one.
    """

    kind: VerdictKind
    confidence: float
    rationale: str
    claim_set_hash: str
    winner: str | None = None
    model: str = ""


@dataclass(frozen=True)
class SemanticsProposal:
    """Semantics an adjudicator suggests for a predicate: recorded, never applied."""

    cardinality: str = ""
    policy: str = ""
    exclusion_group: str = ""
    event_like: bool | None = None
    rationale: str = ""


@dataclass(frozen=True)
class ParsedAnswer:
    verdict: Verdict
    proposal: SemanticsProposal | None = None


def may_act(
    verdict: Verdict | None, min_confidence: float, *, conflict_kind: str | None = None
) -> bool:
    """Whether automatic resolution may act on ``verdict``.

    Rules, in precedence order:

    1. no verdict → no;
    2. a conflict of kind commitment, outranked, revenant or reverted →
       never, at any confidence: those conflicts exist so that a write cannot
       win quietly (or, for reverted, because a steward undid an automatic
       supersession);
    3. a verdict other than ``corroborate`` or ``supersede`` → never: a
       contradiction (``single_winner``), a coexistence or a doubt is a
       human's to resolve;
    4. otherwise only when the verdict's confidence is at least
       ``min_confidence`` (a confidence that is not a number in [0, 1] is no
       confidence).

    Raises ``ValueError`` when ``min_confidence`` is not a number in [0, 1].
    """
    if not _is_unit_number(min_confidence):
        raise ValueError(f"min_confidence must be a number in [0, 1], not {min_confidence!r}")
    if verdict is None:
        return False
    if conflict_kind in PROTECTED_CONFLICT_KINDS:
        return False
    if verdict.kind not in ACTIONABLE_VERDICTS:
        return False
    return _is_unit_number(verdict.confidence) and verdict.confidence >= min_confidence


def parse_verdict(
    content: str, *, labels: Mapping[str, str], claim_set_hash: str, model: str = ""
) -> ParsedAnswer:
    """Read a model's answer; raise :class:`UnusableVerdict` for anything but a valid one.

    ``content`` must be exactly one JSON object (surrounding whitespace aside)
    with the keys ``verdict`` (one of :data:`VERDICT_KINDS`), ``confidence``
    (a number in [0, 1]), ``rationale`` (non-empty text) and optionally
    ``winner`` (one of ``labels``, which map the labels the model was shown to
    fact ids) and ``semantics`` (a proposal for the predicate). Any other key,
    or a value of the wrong type, makes the whole answer unusable: a verdict
    that is half understood is not understood.

    ``single_winner`` must name its winner; ``corroborate`` and ``supersede``
    may; ``coexist`` and ``needs_review`` must not.
    """
    try:
        data = json.loads(content.strip())
    except (ValueError, TypeError):
        raise UnusableVerdict("the answer is not JSON") from None
    if not isinstance(data, dict):
        raise UnusableVerdict("the answer is not a JSON object")
    unknown = sorted(set(data) - VERDICT_KEYS)
    if unknown:
        raise UnusableVerdict(f"unknown key {unknown[0]!r}")

    kind = data.get("verdict")
    if kind not in VERDICT_KINDS:
        raise UnusableVerdict(f"unknown verdict {kind!r}")
    confidence = data.get("confidence")
    if not _is_unit_number(confidence):
        raise UnusableVerdict(f"confidence must be a number in [0, 1], not {confidence!r}")
    rationale = data.get("rationale")
    if not isinstance(rationale, str) or not rationale.strip():
        raise UnusableVerdict("a rationale is required")

    label = data.get("winner")
    if label is not None and (not isinstance(label, str) or label not in labels):
        raise UnusableVerdict(f"the winner {label!r} is not one of the claims shown")
    if kind == "single_winner" and label is None:
        raise UnusableVerdict("single_winner must name its winner")
    if kind in ("coexist", "needs_review") and label is not None:
        raise UnusableVerdict(f"{kind} names no winner")

    verdict = Verdict(
        kind=kind,
        confidence=float(confidence),
        rationale=rationale.strip()[:MAX_RATIONALE_LENGTH],
        claim_set_hash=claim_set_hash,
        winner=labels[label] if label is not None else None,
        model=model,
    )
    semantics = data.get("semantics")
    return ParsedAnswer(verdict, None if semantics is None else _parse_semantics(semantics))


def _parse_semantics(raw: Any) -> SemanticsProposal:
    if not isinstance(raw, dict):
        raise UnusableVerdict("semantics must be an object")
    unknown = sorted(set(raw) - SEMANTICS_KEYS)
    if unknown:
        raise UnusableVerdict(f"unknown semantics key {unknown[0]!r}")
    cardinality = raw.get("cardinality", "")
    policy = raw.get("policy", "")
    group = raw.get("exclusion_group", "")
    event_like = raw.get("event_like")
    rationale = raw.get("rationale", "")
    if cardinality not in ("", "one", "many"):
        raise UnusableVerdict(f"unknown cardinality {cardinality!r}")
    if policy not in ("", "supersede", "parallel", "review"):
        raise UnusableVerdict(f"unknown policy {policy!r}")
    if not isinstance(group, str) or len(group) > 100:
        raise UnusableVerdict("exclusion_group must be a short text")
    if event_like is not None and not isinstance(event_like, bool):
        raise UnusableVerdict("event_like must be true or false")
    if not isinstance(rationale, str):
        raise UnusableVerdict("a semantics rationale must be text")
    return SemanticsProposal(
        cardinality=cardinality,
        policy=policy,
        exclusion_group=group.strip(),
        event_like=event_like,
        rationale=rationale.strip()[:MAX_RATIONALE_LENGTH],
    )


def _is_unit_number(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0.0 <= value <= 1.0
    )
