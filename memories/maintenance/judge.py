"""The judge (SPEC §7): the adjudicator's verdicts on open conflicts, as advice or acted on.

:func:`run_judge` asks the configured adjudicator about each open conflict's
claim set (its live members), through ``adjudicate_claim_set``, so a verdict
is memoized in :class:`~memories.store.models.Adjudication` and an unchanged claim
set never calls the model again. Without ``resolve`` that row is the whole
record: the verdict is advice for a human.

With ``resolve`` it acts only where ``memories.core.verdicts.may_act`` allows
(a confident ``corroborate`` or ``supersede``, never on a commitment,
outranked, revenant or reverted conflict, nor on one a steward reopened by
reverting an automatic resolution, nor where a human ruled on one of its
claims after all of them were recorded: ``memories.core.rulings``), by the
same ruling a steward makes
(``memories.core.effects.resolution_effects``) applied through the one
``memories.store.apply.do_apply``, automatically (no actor) and under the slot lock:
``corroborate`` lets the values coexist, ``supersede`` keeps the member
newest by valid time and ends the others. A conflict resolved meanwhile, or
whose claim set is no longer the one judged, is skipped.
"""

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.tasks import task
from django.utils import timezone

from memories.core.effects import MemberState, resolution_effects
from memories.core.rulings import left_for_a_human
from memories.core.truth import Claim, claim_set_hash, decide_slot
from memories.core.verdicts import Verdict, may_act
from memories.maintenance.adjudicator import (
    AdjudicationRequest,
    Adjudicator,
    Answer,
    adjudicate_claim_set,
    configured_adjudicator,
    memoized_verdict,
)
from memories.maintenance.truth import load_claims, predicate_spec
from memories.store.apply import do_apply
from memories.store.errors import Forbidden, StateConflict
from memories.store.lookups import visible_conflict
from memories.store.models import Conflict
from memories.store.permissions import may_resolve
from memories.store.slots import lock_predicate_slot
from memories.store.touched import recompute_on_commit

# Why the judge leaves a conflict alone that it could otherwise resolve.
LEFT_FOR_A_HUMAN = "a human ruled on its claims since they were recorded"


@dataclass(frozen=True)
class Judgement:
    """What the judge made of one open conflict."""

    conflict_id: str
    kind: str
    verdict: Verdict | None
    # "advice only", "resolved: coexist", "resolved: keep", or why not acted on.
    outcome: str

    def line(self) -> str:
        """One line for a person: id, kind, verdict, confidence, outcome."""
        if self.verdict is None:
            judged = "no verdict"
        else:
            judged = f"{self.verdict.kind} {self.verdict.confidence:.2f}"
        return f"{self.conflict_id} {self.kind}: {judged} — {self.outcome}"


def run_judge(
    *,
    resolve: bool = False,
    min_confidence: float | None = None,
    adjudicator: Adjudicator | None = None,
    now: datetime | None = None,
) -> list[Judgement]:
    """Judge every open conflict, oldest first; resolve those ``may_act`` allows if ``resolve``.

    ``min_confidence`` defaults to ``CLAIMGRAPH_JUDGE_MIN_CONFIDENCE``; raises
    ``ValueError`` when it is not a number in [0, 1], before anything is asked.
    """
    if min_confidence is None:
        min_confidence = settings.CLAIMGRAPH_JUDGE_MIN_CONFIDENCE
    may_act(None, min_confidence)  # validates min_confidence
    adjudicator = adjudicator or configured_adjudicator()
    conflicts = list(Conflict.objects.open().select_related("predicate", "subject"))
    return [
        _judge_one(conflict, adjudicator, resolve, min_confidence, now) for conflict in conflicts
    ]


@task
def judge_task(resolve: bool) -> list[str]:
    """The judge as a task: its lines, one per open conflict."""
    return [judgement.line() for judgement in run_judge(resolve=resolve)]


def _judge_one(
    conflict: Conflict,
    adjudicator: Adjudicator,
    resolve: bool,
    min_confidence: float,
    now: datetime | None,
) -> Judgement:
    def judgement(verdict: Verdict | None, outcome: str) -> Judgement:
        return Judgement(str(conflict.pk), conflict.kind, verdict, outcome)

    claims = _member_claims(conflict, now or timezone.now())
    if len(claims) < 2:
        return judgement(None, _not_judged(conflict))
    digest = claim_set_hash(claim.fact_id for claim in claims)
    # Asked outside any transaction: a slow model holds up no writer.
    answer = _ask(conflict, claims, adjudicator, now or timezone.now())
    verdict = answer.verdict
    if verdict is None:
        return judgement(None, f"no verdict ({answer.problem})")
    if not resolve:
        return judgement(verdict, "advice only")
    if conflict.reopened_at is not None:
        return judgement(verdict, "not acted on (a steward reverted its automatic resolution)")
    if _left_for_a_human(claims):
        return judgement(verdict, f"not acted on ({LEFT_FOR_A_HUMAN})")
    if not may_act(verdict, min_confidence, conflict_kind=conflict.kind):
        return judgement(verdict, "not acted on (needs a human)")
    return judgement(verdict, _resolve(conflict, verdict, digest, now))


def _left_for_a_human(claims: list[Claim]) -> bool:
    """Whether a human ruled on one of these claims after all were recorded (``core.rulings``)."""
    return left_for_a_human((claim.recorded_at, claim.ruled_at) for claim in claims)


def _ask(
    conflict: Conflict, claims: list[Claim], adjudicator: Adjudicator, now: datetime
) -> Answer:
    """The memo's or the adjudicator's answer on the conflict's claim set ``claims``."""
    request = AdjudicationRequest(
        subject=conflict.subject.name,
        predicate=predicate_spec(conflict.predicate),
        predicate_description=conflict.predicate.description,
        claims=tuple(claims),
        claim_set_hash=claim_set_hash(claim.fact_id for claim in claims),
    )
    return adjudicate_claim_set(
        adjudicator,
        request,
        scope_id=conflict.scope_id,
        subject_id=conflict.subject_id,
        predicate_id=conflict.predicate_id,
        now=now,
    )


# --- advice for a steward, on request -------------------------------------------------


@dataclass(frozen=True)
class Advice:
    """What the adjudicator (or, without a verdict, the predicate's policy) says of a conflict.

    Deliberately without the verdict's winner: advice shown to a steward
    names no candidate to pick (SPEC §3: no winner is pre-selected); its
    rationale, in the adjudicator's own words, is all it says about them.
    """

    # "adjudicator" (a verdict, ``verdict`` and ``confidence`` set), "policy"
    # (no verdict: the predicate's deterministic policy), or "nothing" (no
    # claim set an adjudicator could weigh).
    source: str
    rationale: str
    verdict: str = ""
    confidence: float | None = None
    model: str = ""
    # A verdict found in the memo: no model was asked this time.
    memoized: bool = False
    # Why there is no verdict (the adjudicator is not configured, timed out, ...).
    problem: str = ""


def ask_adjudicator(
    *,
    actor: User,
    conflict_id: object,
    adjudicator: Adjudicator | None = None,
    now: datetime | None = None,
) -> Advice:
    """A steward asks for advice on an open conflict: the memo, else the adjudicator, else policy.

    Only someone who may rule on the conflict may ask (``Forbidden``
    otherwise); a conflict the actor may not see is ``NotFound``. A verdict
    is memoized like the judge's (an unchanged claim set never asks the model
    twice); nothing is resolved. The model is asked outside any transaction.
    """
    conflict = visible_conflict(actor, conflict_id)
    if not conflict.is_open:
        raise StateConflict("this conflict is already resolved: there is nothing to advise on")
    if not may_resolve(actor, conflict):
        raise Forbidden("only a steward of the scope may ask the adjudicator")
    now = now or timezone.now()
    claims = _member_claims(conflict, now)
    if len(claims) < 2:
        return _no_claim_set()
    answer = _ask(conflict, claims, adjudicator or configured_adjudicator(), now)
    return _advice(conflict, claims, answer.verdict, answer.memoized, answer.problem, now)


def advice_on(conflict: Conflict, *, now: datetime | None = None) -> Advice:
    """The advice already at hand for ``conflict``: the memoized verdict, else the policy's.

    Never asks a model (a page view may call it): what ``ask_adjudicator``
    stored is found here.
    """
    now = now or timezone.now()
    claims = _member_claims(conflict, now)
    if len(claims) < 2:
        return _no_claim_set()
    verdict = memoized_verdict(claim_set_hash(claim.fact_id for claim in claims))
    if configured_adjudicator().consults_model:
        problem = "the adjudicator has given no verdict on this claim set"
    else:
        problem = "no adjudicator is configured"
    return _advice(conflict, claims, verdict, True, problem, now)


def _advice(
    conflict: Conflict,
    claims: list[Claim],
    verdict: Verdict | None,
    memoized: bool,
    problem: str,
    now: datetime,
) -> Advice:
    if verdict is not None:
        return Advice(
            source="adjudicator",
            rationale=verdict.rationale,
            verdict=verdict.kind,
            confidence=verdict.confidence,
            model=verdict.model,
            memoized=memoized,
        )
    # No verdict: what the predicate's deterministic policy makes of these claims.
    outcome = decide_slot(claims, predicate_spec(conflict.predicate), now=now)
    return Advice(source="policy", rationale=outcome.rationale, problem=problem)


def _no_claim_set() -> Advice:
    return Advice(
        source="nothing",
        rationale=(
            "fewer than two of its members are live shared claims of one predicate "
            "(a conflict across an exclusion group, or among private facts): "
            "there is no claim set for the adjudicator to weigh"
        ),
    )


def _not_judged(conflict: Conflict) -> str:
    """Why ``conflict`` has no claim set to weigh, in the judge's line."""
    live = [m.fact for m in conflict.members.select_related("fact__predicate") if m.fact.is_live]
    predicates = sorted({fact.predicate.name for fact in live})
    if len(predicates) > 1:
        # A claim set is one predicate's claims: an adjudicator told "prefers
        # GraphQL" and "decided against GraphQL" as two values of one slot
        # would weigh them as agreeing.
        return (
            f"not judged: its {len(live)} live members are claims of different predicates "
            f"({', '.join(predicates)}), which the adjudicator does not weigh together; "
            "a steward rules on it"
        )
    if len(live) > 1:
        return (
            "not judged: fewer than two of its live members are shared claims "
            "(the others are private); a steward rules on it"
        )
    return "fewer than two live members: nothing to judge"


def _member_claims(conflict: Conflict, now: datetime) -> list[Claim]:
    """The conflict's members that are live claims of its slot."""
    members = {str(fact_id) for fact_id in conflict.members.values_list("fact_id", flat=True)}
    claims = load_claims(conflict.scope_id, conflict.subject_id, conflict.predicate_id, now=now)
    return [claim for claim in claims if claim.fact_id in members]


def _resolve(conflict: Conflict, verdict: Verdict, digest: str, now: datetime | None) -> str:
    """Resolve ``conflict`` on ``verdict`` if it is still open on claim set ``digest``."""
    with transaction.atomic():
        lock_predicate_slot(conflict.scope_id, conflict.subject_id, conflict.predicate.name)
        now = now or timezone.now()
        current = Conflict.objects.select_for_update().get(pk=conflict.pk)
        if not current.is_open:
            return "skipped: resolved meanwhile"
        if current.reopened_at is not None:
            return "skipped: a steward reverted its automatic resolution"
        claims = _member_claims(current, now)
        if claim_set_hash(claim.fact_id for claim in claims) != digest:
            return "skipped: its claim set changed since it was judged"
        if _left_for_a_human(claims):
            return f"skipped: {LEFT_FOR_A_HUMAN}"
        members = [
            MemberState(m.fact_id, m.fact.is_live, m.fact.t_valid)
            for m in current.members.select_related("fact")
        ]
        if verdict.kind == "corroborate":
            action, keep = "coexist", frozenset()
        else:  # supersede: the newest by valid time stays
            newest = max(claims, key=lambda claim: (claim.t_valid, claim.recorded_at))
            action = "keep"
            keep = frozenset(m.fact_id for m in members if str(m.fact_id) == newest.fact_id)
        reason = f"judge: {verdict.kind} ({verdict.confidence:.2f}): {verdict.rationale}"
        applied = do_apply(
            resolution_effects(
                current.pk,
                current.scope_id,
                members,
                action=action,
                keep=keep,
                reason=reason,
                now=now,
                actor_id=None,
                rule=f"judge: {verdict.kind}",
            )
        )
        recompute_on_commit(applied.touched)
    return f"resolved: {action}"
