"""Truth slots: the current answer for one (scope, subject, predicate) (SPEC §7).

Pure: no Django, no database, no clock. The shell (``memories.maintenance.truth``) passes
the live claims of one slot as :class:`Claim` values, the predicate's
semantics, an adjudicator's verdict if it has one, and ``now``; ``decide_slot``
returns a :class:`TruthOutcome`. What the outcome says must *change* in the
store (a supersession, a conflict to open) is a proposal; :func:`settle`
holds back what automatic maintenance may not do (rules 7-9 below) and
:func:`truth_effects` turns the rest into
:class:`~memories.core.effects.Effects` for ``memories.store.apply``. This module
decides; it never writes.

Rules, in precedence order:

1. **Values.** Claims are grouped by value (object kind and comparison key).
   Equal values corroborate: a group's support is its claims' evidence merged
   (deduplicated by ref and quote), its confidence the best of its claims'.
   Corroboration never ends a claim's validity: agreement does not mean a
   claim stopped being true.
2. **Disputed values.** A value whose every claim is disputed by an open
   conflict is reported ``disputed`` and is never current: that conflict
   waits for a steward (or the judge), not for this function.
3. **Detection.** No undisputed value: the slot has no current value. One
   undisputed value: it is current. Several on a ``many`` or event-like
   predicate: all are current, ranked — such values do not compete.
4. **Competing values** (several undisputed values on a ``one`` predicate):
   a. a *usable* verdict decides (about this very claim set, naming a winner
      among the undisputed values when it names one): ``corroborate`` merges
      every competing value into the winner (the highest effective confidence
      unless named) without closing anything; ``single_winner`` keeps the
      named value and proposes superseding the others now; ``supersede``
      keeps the newest value by valid time (or the named one) and proposes
      superseding the older ones where it began; ``coexist`` keeps all;
      ``needs_review`` leaves all unresolved for a human;
   b. otherwise the predicate's policy, deterministically: ``parallel`` keeps
      all; ``supersede`` keeps the value strictly newest by valid time and
      proposes superseding the others (a tie is left for a human: recency
      that does not differ decides nothing); ``review`` leaves all unresolved.
5. **Safe supersession.** A proposed supersession must be one the write path
   could have made: never of a commitment (a commitment is never overruled
   silently), never of a claim whose source outranks the winner's, never at
   or before the superseded claim's own start. If any is unsafe, nothing is
   superseded and all competing values are left unresolved, with the reason.
6. **Unresolved values** come with a proposed conflict between their claims.

What is acted on (:func:`settle`), in precedence order:

7. **Waiting for a verdict.** While a model is to be asked about this claim
   set, nothing is acted on: the policy is the fallback, not the first word.
   The competing values are shown unresolved, and no conflict is opened.
8. **Verdicts.** A ``corroborate`` or ``supersede`` verdict is acted on only
   where ``memories.core.verdicts.may_act`` allows (high confidence); a
   ``single_winner`` (a contradiction) never is. A verdict not acted on
   leaves the competing values unresolved, with a conflict for a human.
   ``coexist`` keeps every value and writes nothing; ``needs_review``
   leaves them for a human (rule 6).
9. **Human rulings** (``memories.core.rulings``, the crawler's and the
   judge's rule). No claim is superseded by a claim a steward ruled on
   together with it, nor where a human ruled on, reopened or reverted a
   change to one of the two after both were recorded: those are left for a
   human, with a conflict. A supersession acted on never closes a claim
   before the latest ruling on the two. When a steward ruled on every pair
   of the competing claims, they stand as the steward left them: all
   current, no conflict. A conflict is opened only if some pair of its
   claims does not already share an open conflict or a ruling, so
   recomputing twice opens nothing the second time.

The rationale always names the path that decided: detection, the
adjudicator's verdict, or the predicate's policy.

Values are ordered current first (by effective confidence, then the newer
start, then the value), then superseded, unresolved and disputed values in
the order they were first recorded, so nothing but the decision favours one.
"""

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal
from uuid import UUID

from memories.core.decisions import Evidence, PredicateSpec, merge_evidence
from memories.core.effects import (
    EXISTING,
    SUPERSEDED,
    AuditNote,
    Change,
    CloseInterval,
    Effects,
    Member,
    OpenConflict,
)
from memories.core.rulings import (
    all_pairs,
    left_for_a_human,
    not_before_rulings,
    ruled_together,
)
from memories.core.verdicts import Verdict, may_act

DecidedBy = Literal["detection", "adjudicator", "policy"]
ValueStatus = Literal["current", "superseded", "unresolved", "disputed"]
STATUS_ORDER: dict[str, int] = {"current": 0, "superseded": 1, "unresolved": 2, "disputed": 3}


@dataclass(frozen=True)
class Claim:
    """One live fact of the slot, as the decision sees it."""

    fact_id: str
    object_kind: str
    # The comparison key of the object: two claims hold one value when kind
    # and key are equal (see memories.core.normalize).
    object_key: str
    object: str
    epistemic: str
    source_type: str
    trust_rank: int
    confidence: float
    effective_confidence: float
    t_valid: datetime
    recorded_at: datetime
    evidence: tuple[Evidence, ...] = ()
    statement: str = ""
    # A disputed member of an open conflict (SPEC §2): not believed meanwhile.
    disputed: bool = False
    # Ids of the open conflicts it is in, and of those a steward ruled on
    # (memories.core.rulings): what may link it to the slot's other claims.
    open_conflicts: frozenset = frozenset()
    ruled_conflicts: frozenset = frozenset()
    # When a human last ruled on it (memories.core.rulings.left_for_a_human).
    ruled_at: datetime | None = None


@dataclass(frozen=True)
class SlotValue:
    """One value of the slot with every claim that holds it and their merged support."""

    object_kind: str
    object_key: str
    object: str
    fact_ids: tuple[str, ...]
    confidence: float
    effective_confidence: float
    # When the value was first claimed to hold (the earliest start of its claims).
    t_valid: datetime
    first_recorded_at: datetime
    support: tuple[Evidence, ...]
    status: ValueStatus = "current"


@dataclass(frozen=True)
class ProposedSupersession:
    """A fact whose interval the decision would close at ``at``, pointing at ``by``."""

    fact_id: str
    by: str
    at: datetime


@dataclass(frozen=True)
class ProposedConflict:
    """Facts the decision leaves for a human: a conflict with no incoming side."""

    kind: str
    fact_ids: tuple[str, ...]


@dataclass(frozen=True)
class TruthOutcome:
    values: tuple[SlotValue, ...]
    decided_by: DecidedBy
    rationale: str
    claim_set_hash: str
    # Several values compete and no usable verdict decided: an adjudicator
    # could be asked about this claim set.
    competing: bool = False
    verdict: Verdict | None = None
    supersessions: tuple[ProposedSupersession, ...] = ()
    conflict: ProposedConflict | None = None

    @property
    def current(self) -> tuple[SlotValue, ...]:
        return tuple(value for value in self.values if value.status == "current")


def claim_set_hash(fact_ids: Iterable[object]) -> str:
    """The identity of a claim set: SHA-256 of its sorted fact ids, one per line."""
    return hashlib.sha256("\n".join(sorted(str(i) for i in fact_ids)).encode()).hexdigest()


def semantics_version(predicate: PredicateSpec) -> str:
    """A short name for the predicate semantics a decision depends on.

    Cardinality, policy, exclusion group and event-likeness; a slot computed
    under another version must be recomputed.
    """
    text = (
        f"cardinality={predicate.cardinality};policy={predicate.policy};"
        f"group={predicate.exclusion_group};event_like={predicate.event_like}"
    )
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def group_values(claims: Iterable[Claim]) -> list[SlotValue]:
    """Claims grouped by value, support merged, in the order each value was first recorded."""
    groups: dict[tuple[str, str], list[Claim]] = {}
    for claim in sorted(claims, key=lambda c: (c.recorded_at, c.fact_id)):
        groups.setdefault((claim.object_kind, claim.object_key), []).append(claim)
    values = []
    for (kind, key), members in groups.items():
        support: tuple[Evidence, ...] = ()
        for member in members:
            support = merge_evidence(support, member.evidence)
        values.append(
            SlotValue(
                object_kind=kind,
                object_key=key,
                object=members[0].object,
                fact_ids=tuple(member.fact_id for member in members),
                confidence=max(member.confidence for member in members),
                effective_confidence=max(member.effective_confidence for member in members),
                t_valid=min(member.t_valid for member in members),
                first_recorded_at=members[0].recorded_at,
                support=support,
                status="disputed" if all(member.disputed for member in members) else "current",
            )
        )
    return values


def decide_slot(
    claims: Sequence[Claim],
    predicate: PredicateSpec,
    *,
    verdict: Verdict | None = None,
    now: datetime,
) -> TruthOutcome:
    """The slot's current values from its live claims (rules in the module doc)."""
    digest = claim_set_hash(claim.fact_id for claim in claims)
    values = group_values(claims)
    disputed = [value for value in values if value.status == "disputed"]
    candidates = [value for value in values if value.status != "disputed"]
    aside = f"; {_count(disputed, 'value')} disputed by an open conflict" if disputed else ""

    def outcome(decided_by: DecidedBy, rationale: str, **rest: Any) -> TruthOutcome:
        return TruthOutcome(
            values=_ordered([*rest.pop("values", candidates), *disputed]),
            decided_by=decided_by,
            rationale=rationale + aside,
            claim_set_hash=digest,
            **rest,
        )

    if not candidates:
        return outcome("detection", "no undisputed value" if disputed else "no live claim")
    if len(candidates) == 1:
        claims_held = _count(candidates[0].fact_ids, "claim")
        return outcome("detection", f"one value, held by {claims_held}")
    if predicate.cardinality == "many" or predicate.event_like:
        kind = "event-like" if predicate.event_like else "many-valued"
        return outcome("detection", f"{len(candidates)} values of a {kind} predicate coexist")

    by_id = {claim.fact_id: claim for claim in claims}
    problem = _verdict_problem(verdict, digest, candidates)
    if verdict is not None and problem is None:
        return _follow_verdict(verdict, candidates, by_id, now=now, outcome=outcome)

    ignored = f" (the adjudicator's verdict was not used: {problem})" if verdict else ""
    policy = predicate.policy
    if policy == "parallel":
        return outcome(
            "policy",
            f"predicate policy parallel: {len(candidates)} competing values kept, "
            f"ranked by effective confidence{ignored}",
            competing=True,
        )
    if policy == "supersede":
        newest = max(candidates, key=lambda value: value.t_valid)
        if sum(value.t_valid == newest.t_valid for value in candidates) > 1:
            return _unresolved(
                outcome,
                candidates,
                by_id,
                "policy",
                "predicate policy supersede, but the newest values began at the same "
                f"time: left for review{ignored}",
                competing=True,
            )
        return _supersede(
            outcome,
            candidates,
            newest,
            by_id,
            at=newest.t_valid,
            decided_by="policy",
            why=f"predicate policy supersede: the newest value by valid time{ignored}",
            competing=True,
        )
    return _unresolved(
        outcome,
        candidates,
        by_id,
        "policy",
        f"predicate policy review: left for a steward{ignored}",
        competing=True,
    )


# Builds the outcome from the decision's parts, adding what every outcome of
# one slot shares (its disputed values, its claim-set hash).
Build = Callable[..., "TruthOutcome"]


def _follow_verdict(
    verdict: Verdict,
    candidates: list[SlotValue],
    by_id: Mapping[str, Claim],
    *,
    now: datetime,
    outcome: Build,
) -> TruthOutcome:
    named = _value_of(verdict.winner, candidates)
    said = f"adjudicator verdict {verdict.kind} at {verdict.confidence:.2f}: {verdict.rationale}"
    if verdict.kind == "corroborate":
        winner = named or _ranked(candidates)[0]
        merged = SlotValue(
            object_kind=winner.object_kind,
            object_key=winner.object_key,
            object=winner.object,
            fact_ids=tuple(i for value in _ordered(candidates) for i in value.fact_ids),
            confidence=max(value.confidence for value in candidates),
            effective_confidence=max(value.effective_confidence for value in candidates),
            t_valid=min(value.t_valid for value in candidates),
            first_recorded_at=min(value.first_recorded_at for value in candidates),
            support=_merged_support(_ordered(candidates)),
        )
        return outcome("adjudicator", said, values=[merged], verdict=verdict)
    if verdict.kind == "coexist":
        return outcome("adjudicator", said, verdict=verdict)
    if verdict.kind == "needs_review":
        return _unresolved(outcome, candidates, by_id, "adjudicator", said, verdict=verdict)
    if verdict.kind == "single_winner":
        assert named is not None  # parse_verdict and _verdict_problem see to it
        return _supersede(
            outcome,
            candidates,
            named,
            by_id,
            at=now,
            decided_by="adjudicator",
            why=said,
            verdict=verdict,
        )
    # supersede: the newer value replaced the older ones where it began.
    winner = named or max(candidates, key=lambda value: value.t_valid)
    return _supersede(
        outcome,
        candidates,
        winner,
        by_id,
        at=winner.t_valid,
        decided_by="adjudicator",
        why=said,
        verdict=verdict,
    )


def _supersede(
    outcome: Build,
    candidates: list[SlotValue],
    winner: SlotValue,
    by_id: Mapping[str, Claim],
    *,
    at: datetime,
    decided_by: DecidedBy,
    why: str,
    **rest: object,
) -> TruthOutcome:
    """Keep ``winner`` and propose superseding the other values, if that is safe (rule 5)."""
    leader = max((by_id[i] for i in winner.fact_ids), key=lambda claim: claim.trust_rank)
    losers = [value for value in candidates if value is not winner]
    for value in losers:
        for claim in (by_id[i] for i in value.fact_ids):
            unsafe = _unsafe(claim, leader, at)
            if unsafe:
                kind, reason = unsafe
                return _unresolved(
                    outcome,
                    candidates,
                    by_id,
                    decided_by,
                    f"{why}; not superseded: {reason}",
                    kind=kind,
                    **rest,
                )
    proposals = tuple(
        ProposedSupersession(fact_id=i, by=winner.fact_ids[0], at=at)
        for value in losers
        for i in value.fact_ids
    )
    kept = [winner, *(_with_status(value, "superseded") for value in losers)]
    return outcome(decided_by, why, values=kept, supersessions=proposals, **rest)


def _unsafe(claim: Claim, winner: Claim, at: datetime) -> tuple[str, str] | None:
    if claim.epistemic == "commitment":
        return "commitment", f"{claim.object!r} is a commitment, never overruled silently"
    if claim.trust_rank > winner.trust_rank:
        return "outranked", f"{claim.object!r} comes from a more trusted source"
    if at <= claim.t_valid:
        return "contradiction", f"{claim.object!r} began no earlier than its replacement"
    return None


def _unresolved(
    outcome: Build,
    candidates: list[SlotValue],
    by_id: Mapping[str, Claim],
    decided_by: DecidedBy,
    why: str,
    *,
    kind: str | None = None,
    **rest: object,
) -> TruthOutcome:
    """Leave every competing value for a human, proposing one conflict between their claims."""
    fact_ids = tuple(i for value in _ordered(candidates) for i in value.fact_ids)
    if kind is None:
        epistemics = {by_id[i].epistemic for i in fact_ids}
        kind = "commitment" if "commitment" in epistemics else "contradiction"
    return outcome(
        decided_by,
        why,
        values=[_with_status(value, "unresolved") for value in candidates],
        conflict=ProposedConflict(kind=kind, fact_ids=fact_ids),
        **rest,
    )


def _verdict_problem(
    verdict: Verdict | None, digest: str, candidates: list[SlotValue]
) -> str | None:
    """Why ``verdict`` cannot decide this slot, or None when it can."""
    if verdict is None:
        return "no verdict"
    if verdict.claim_set_hash != digest:
        return "it is about another claim set"
    if verdict.winner is not None and _value_of(verdict.winner, candidates) is None:
        return "its winner is not an undisputed value of the slot"
    if verdict.kind == "single_winner" and verdict.winner is None:
        return "single_winner names no winner"
    return None


def _value_of(fact_id: str | None, values: Iterable[SlotValue]) -> SlotValue | None:
    if fact_id is None:
        return None
    return next((value for value in values if fact_id in value.fact_ids), None)


def _with_status(value: SlotValue, status: ValueStatus) -> SlotValue:
    return replace(value, status=status)


def _merged_support(values: Iterable[SlotValue]) -> tuple[Evidence, ...]:
    support: tuple[Evidence, ...] = ()
    for value in values:
        support = merge_evidence(support, value.support)
    return support


def _ranked(values: Iterable[SlotValue]) -> list[SlotValue]:
    """Highest effective confidence first; then the value that began later; then by key."""
    return sorted(
        values,
        key=lambda v: (
            -v.effective_confidence,
            -v.t_valid.timestamp(),
            v.object_kind,
            v.object_key,
        ),
    )


def _ordered(values: Iterable[SlotValue]) -> list[SlotValue]:
    values = list(values)
    current = _ranked(value for value in values if value.status == "current")
    rest = sorted(
        (value for value in values if value.status != "current"),
        key=lambda v: (STATUS_ORDER[v.status], v.first_recorded_at, v.object_kind, v.object_key),
    )
    return current + rest


# Verdicts that change what the slot believes: followed only where may_act allows.
ACTING_VERDICTS = frozenset({"corroborate", "supersede", "single_winner"})


def truth_rule(decided_by: str, what: str) -> str:
    """The audit rule of a truth-maintenance change: the path and the verdict or policy."""
    return f"truth: {decided_by}: {what}"


def settle(
    outcome: TruthOutcome,
    claims: Sequence[Claim],
    *,
    min_confidence: float,
    awaiting_verdict: bool,
) -> TruthOutcome:
    """The outcome as truth maintenance may act on it (rules 7-9 in the module doc).

    Returns ``outcome`` itself when all of it may be acted on; otherwise an
    outcome whose values, proposals and rationale say what is held back and
    why. ``min_confidence`` is the bar of ``may_act``.
    """
    by_id = {claim.fact_id: claim for claim in claims}
    verdict = outcome.verdict
    if awaiting_verdict and (outcome.supersessions or outcome.conflict):
        return _held(outcome, claims, "nothing acted on until the adjudicator answers", open_=False)
    acting = verdict is not None and verdict.kind in ACTING_VERDICTS
    if acting and not may_act(verdict, min_confidence):
        assert verdict is not None
        if verdict.kind == "single_winner":
            why = "a single winner is a contradiction, for a human to resolve"
        else:
            why = f"its confidence is below {min_confidence:g}"
        return _linked_conflict(_held(outcome, claims, f"not acted on: {why}"), by_id)
    if outcome.supersessions:
        winners = {
            s.by: next(v.fact_ids for v in outcome.values if s.by in v.fact_ids)
            for s in outcome.supersessions
        }
        ruled = any(
            ruled_together(by_id[s.fact_id].ruled_conflicts, by_id[w].ruled_conflicts)
            for s in outcome.supersessions
            for w in winners[s.by]
        )
        if ruled:
            why = "not superseded: a steward ruled on these claims together"
            return _linked_conflict(_held(outcome, claims, why), by_id)

        def involved(s: ProposedSupersession) -> list[Claim]:
            return [by_id[s.fact_id], *(by_id[w] for w in winners[s.by])]

        if any(
            left_for_a_human((c.recorded_at, c.ruled_at) for c in involved(s))
            for s in outcome.supersessions
        ):
            why = "not superseded: a human ruled on these claims since they were recorded"
            return _linked_conflict(_held(outcome, claims, why), by_id)
        dated = tuple(
            replace(s, at=not_before_rulings(s.at, (c.ruled_at for c in involved(s))))
            for s in outcome.supersessions
        )
        if dated != outcome.supersessions:
            outcome = replace(outcome, supersessions=dated)
    return _linked_conflict(outcome, by_id)


def _held(
    outcome: TruthOutcome, claims: Sequence[Claim], why: str, *, open_: bool = True
) -> TruthOutcome:
    """Every undisputed value unresolved, nothing superseded; a conflict for them if ``open_``."""
    values = group_values(claims)
    candidates = [value for value in values if value.status != "disputed"]
    fact_ids = tuple(i for value in _ordered(candidates) for i in value.fact_ids)
    kind = "contradiction"
    if any(claim.epistemic == "commitment" for claim in claims if claim.fact_id in fact_ids):
        kind = "commitment"
    return replace(
        outcome,
        values=tuple(
            _ordered(
                [
                    value if value.status == "disputed" else _with_status(value, "unresolved")
                    for value in values
                ]
            )
        ),
        rationale=f"{outcome.rationale}; {why}",
        supersessions=(),
        conflict=ProposedConflict(kind, fact_ids) if open_ else None,
    )


def _linked_conflict(outcome: TruthOutcome, by_id: Mapping[str, Claim]) -> TruthOutcome:
    """Drop a proposed conflict whose claims are already linked (rule 9)."""
    proposed = outcome.conflict
    if proposed is None:
        return outcome
    ties = [(by_id[i].open_conflicts, by_id[i].ruled_conflicts) for i in proposed.fact_ids]
    if all_pairs(ties, ruled_only=True):
        return replace(
            outcome,
            values=tuple(
                _ordered(
                    _with_status(value, "current") if value.status == "unresolved" else value
                    for value in outcome.values
                )
            ),
            rationale=f"{outcome.rationale}; a steward already ruled these values stand together",
            conflict=None,
        )
    if all_pairs(ties):
        return replace(
            outcome,
            rationale=f"{outcome.rationale}; they already share an open conflict",
            conflict=None,
        )
    return outcome


def truth_effects(
    outcome: TruthOutcome,
    *,
    policy: str,
    scope_id: int,
    subject_id: int,
    predicate_id: int,
    conflict_id: UUID,
    now: datetime,
) -> Effects:
    """The settled outcome's changes: supersessions and a conflict, each with its audit entry.

    Automatic (no actor), each audit entry naming its rule
    (:func:`truth_rule`) and the outcome's rationale as its reason. A
    superseded fact's interval closes where the decision said, pointing at
    the value that replaced it; its conflicts are weighed for mootness. A
    conflict has no incoming side, so each member is disputed (SPEC §2).
    """
    if outcome.verdict is not None and outcome.decided_by == "adjudicator":
        rule = truth_rule("adjudicator", outcome.verdict.kind)
    else:
        rule = truth_rule(outcome.decided_by, policy)
    reason = outcome.rationale
    changes: list[Change] = []
    for s in outcome.supersessions:
        changes.append(
            CloseInterval(UUID(s.fact_id), s.at, now, SUPERSEDED, reason, UUID(s.by), None)
        )
        changes.append(
            AuditNote(
                now,
                scope_id,
                SUPERSEDED,
                "fact",
                s.fact_id,
                {"t_invalid": None, "superseded_by": None},
                {"t_invalid": s.at.astimezone(UTC).isoformat(), "superseded_by": s.by},
                reason,
                rule,
                None,
            )
        )
    if outcome.conflict is not None:
        members = tuple(Member(UUID(i), EXISTING, True) for i in outcome.conflict.fact_ids)
        changes.append(
            OpenConflict(
                conflict_id,
                outcome.conflict.kind,
                scope_id,
                subject_id,
                predicate_id,
                now,
                members,
            )
        )
        changes.append(
            AuditNote(
                now,
                scope_id,
                "opened-conflict",
                "conflict",
                str(conflict_id),
                None,
                {"kind": outcome.conflict.kind, "members": list(outcome.conflict.fact_ids)},
                reason,
                rule,
                None,
            )
        )
    return Effects(tuple(changes), tuple(UUID(s.fact_id) for s in outcome.supersessions), now)


def _count(items: Sequence[object], noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"
