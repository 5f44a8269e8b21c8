"""Truth maintenance, the shell (SPEC §7): gather a slot's claims, decide, store the answer.

``recompute_slot`` locks one (scope, subject, predicate) slot, reads its live
claims, asks the pure ``memories.core.truth.decide_slot`` for the answer (with
the memoized verdict on exactly this claim set, if there is one) and writes
the :class:`~memories.store.models.TruthSlot` row. ``adjudicate_slot`` asks the
adjudicator about a claim set outside any lock, then recomputes: the verdict
is used only if, under the lock, the slot's claim set is still the one that
was evaluated; otherwise the slot is re-detected from what it holds now.

Which claims a slot weighs: the live facts (``t_invalid`` null) of its scope,
subject and predicate in the ``system`` bucket. ``user`` bucket facts are
private to their authors and are never part of the shared answer. Admission
(SPEC §6) is not weighed here: it is a gate that recall applies on top
(``admissions.selectors``), and the status of each value's facts is shown
beside the slot. An entity object merged into another (an active
:class:`~memories.store.models.EntityMerge`) counts as the entity it was merged into,
so two spellings of one thing corroborate instead of competing.

What the decision calls for, it acts on, in the recompute's transaction and
under the slot's lock: ``memories.core.truth.settle`` holds back what
automatic maintenance may not do (a verdict ``may_act`` refuses, anything
while a model is still to be asked, a question a steward has ruled on, a
conflict its claims already share), ``truth_effects`` turns the rest
(supersessions, a conflict to open) into effects, and ``memories.store.apply``
writes them with their audit entries (no actor, the rule ``truth: ...``).
The slot's row then records the settled outcome. It does not enqueue work:
the tasks above it do (``memories.maintenance.tasks``), following
``Recomputation.wants_adjudication``; nor does it ask for its own slot to be
recomputed after what it applied, since that is the slot it has just written.
It deletes the slot's ``TouchedSlot`` mark, the request writes leave for it
(``memories.store.touched.recompute_on_commit``), unless a write touched the slot
again after the recompute read the mark.
"""

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from uuid import uuid4

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memories.core.decisions import Evidence, PredicateSpec, Vocabulary
from memories.core.truth import (
    Claim,
    SlotValue,
    TruthOutcome,
    claim_set_hash,
    decide_slot,
    semantics_version,
    settle,
    truth_effects,
)
from memories.maintenance.adjudicator import (
    AdjudicationRequest,
    Adjudicator,
    adjudicate_claim_set,
    configured_adjudicator,
    memoized_verdict,
)
from memories.store.apply import do_apply
from memories.store.models import (
    Bucket,
    Conflict,
    ConflictMember,
    Entity,
    EntityMerge,
    Fact,
    ObjectKind,
    Predicate,
    TouchedSlot,
    TruthSlot,
)
from memories.store.slots import lock_slot


@dataclass(frozen=True)
class Recomputation:
    slot: TruthSlot
    outcome: TruthOutcome
    # Competing values were decided by the policy while a model could be
    # asked about this claim set: the caller should enqueue its adjudication.
    wants_adjudication: bool = False


def predicate_spec(predicate: Predicate) -> PredicateSpec:
    return PredicateSpec(
        name=predicate.name,
        cardinality=predicate.cardinality,  # type: ignore[arg-type]
        default_epistemic=predicate.default_epistemic,
        policy=predicate.policy,  # type: ignore[arg-type]
        exclusion_group=predicate.exclusion_group,
        event_like=predicate.event_like,
    )


def recompute_slot(
    scope_id: int,
    subject_id: int,
    predicate_id: int,
    *,
    now: datetime | None = None,
    adjudicator: Adjudicator | None = None,
    failed_adjudication: tuple[str, str] | None = None,
    min_confidence: float | None = None,
) -> Recomputation:
    """Recompute one slot's answer from its live claims, act on it and store it, under its lock.

    The predicate is read from the database, not from a process's cached
    vocabulary, so a recompute that follows a vocabulary change uses the new
    semantics. A verdict memoized for the current claim set is used; when
    there is none and ``adjudicator`` (the configured one by default) would
    consult a model, the answer says so (``wants_adjudication``) unless
    ``failed_adjudication`` — a (claim set hash, problem) pair — says that was
    just tried on this very set, in which case the rationale says why no
    verdict was used.

    What the answer calls for is applied (module doc); a verdict is acted on
    only at ``min_confidence`` or above (``CLAIMGRAPH_JUDGE_MIN_CONFIDENCE``
    by default, the judge's bar).
    """
    adjudicator = adjudicator or configured_adjudicator()
    if min_confidence is None:
        min_confidence = settings.CLAIMGRAPH_JUDGE_MIN_CONFIDENCE
    with transaction.atomic():
        predicate = Predicate.objects.get(pk=predicate_id)
        spec = predicate_spec(predicate)
        lock_slot(scope_id, subject_id, _slot_name(spec))
        # Read before the claims: a write that commits after this read leaves
        # the mark with one more touch, which the delete below then keeps.
        touched = _touch_mark(scope_id, subject_id, predicate_id)
        # The clock is read under the lock, like every writer of the slot.
        now = now or timezone.now()
        claims = load_claims(scope_id, subject_id, predicate_id, now=now)
        digest = claim_set_hash(claim.fact_id for claim in claims)
        memo = memoized_verdict(digest)
        outcome = decide_slot(claims, spec, verdict=memo, now=now)
        tried = failed_adjudication is not None and failed_adjudication[0] == digest
        if tried and outcome.competing:
            note = f" (the adjudicator gave no verdict: {failed_adjudication[1]})"
            outcome = _with_rationale(outcome, outcome.rationale + note)
        # A claim set with a verdict is never asked about again, even when that
        # verdict cannot decide it (its winner has since become disputed).
        wants = outcome.competing and adjudicator.consults_model and memo is None and not tried
        outcome = settle(outcome, claims, min_confidence=min_confidence, awaiting_verdict=wants)
        do_apply(
            truth_effects(
                outcome,
                policy=spec.policy,
                scope_id=scope_id,
                subject_id=subject_id,
                predicate_id=predicate_id,
                conflict_id=uuid4(),
                now=now,
            )
        )
        slot = _do_write_slot(scope_id, subject_id, predicate, spec, claims, outcome, now=now)
        if touched is not None:
            TouchedSlot.objects.filter(pk=touched[0], touches=touched[1]).delete()
    return Recomputation(slot, outcome, wants_adjudication=wants)


def adjudicate_slot(
    scope_id: int,
    subject_id: int,
    predicate_id: int,
    evaluated_hash: str,
    *,
    now: datetime | None = None,
    adjudicator: Adjudicator | None = None,
) -> Recomputation:
    """Ask the adjudicator about the slot's claim set ``evaluated_hash``, then recompute.

    The claim set is read without the lock and the model asked outside any
    transaction, so a slow model never holds up the slot's writers. If the
    set already differs from ``evaluated_hash``, no model is asked. The
    verdict is memoized under the set it was about; the recompute that
    follows takes the lock and uses it only if the slot's claim set is still
    that set, so a verdict that arrives late cannot overwrite a newer set of
    claims: the slot is re-detected instead. Values that no longer compete are
    re-detected without asking.
    """
    adjudicator = adjudicator or configured_adjudicator()
    predicate = Predicate.objects.get(pk=predicate_id)
    spec = predicate_spec(predicate)
    claims = load_claims(scope_id, subject_id, predicate_id, now=now or timezone.now())
    unchanged = claim_set_hash(claim.fact_id for claim in claims) == evaluated_hash
    # Values that no longer compete (the predicate became many-valued, say)
    # need no verdict: re-detect without asking.
    if not unchanged or not decide_slot(claims, spec, now=now or timezone.now()).competing:
        return recompute_slot(scope_id, subject_id, predicate_id, now=now, adjudicator=adjudicator)
    request = AdjudicationRequest(
        subject=Entity.objects.values_list("name", flat=True).get(pk=subject_id),
        predicate=spec,
        predicate_description=predicate.description,
        claims=tuple(claims),
        claim_set_hash=evaluated_hash,
    )
    answer = adjudicate_claim_set(
        adjudicator,
        request,
        scope_id=scope_id,
        subject_id=subject_id,
        predicate_id=predicate_id,
        now=now or timezone.now(),
    )
    failed = None if answer.verdict is not None else (evaluated_hash, answer.problem)
    return recompute_slot(
        scope_id,
        subject_id,
        predicate_id,
        now=now,
        adjudicator=adjudicator,
        failed_adjudication=failed,
    )


def load_claims(scope_id: int, subject_id: int, predicate_id: int, *, now: datetime) -> list[Claim]:
    """The slot's live ``system`` claims: effective confidence at ``now``, conflicts."""
    facts = list(
        Fact.objects.filter(
            scope_id=scope_id,
            subject_id=subject_id,
            predicate_id=predicate_id,
            bucket=Bucket.SYSTEM,
            t_invalid__isnull=True,
        )
        .with_disputed()
        .select_related("source_type", "object_ref")
        .order_by("recorded_at", "id")
    )
    objects = [fact.object_ref_id for fact in facts if fact.object_kind == ObjectKind.ENTITY]
    merged_into = dict(
        EntityMerge.objects.in_force()
        .filter(entity_id__in=objects)
        .values_list("entity_id", "into_id")
    )
    ties = ConflictMember.objects.ties(fact.pk for fact in facts)
    ruled_at = ConflictMember.objects.ruled_at((fact.pk for fact in facts), scope_ids=[scope_id])
    none: tuple[frozenset, frozenset] = (frozenset(), frozenset())
    return [
        Claim(
            fact_id=str(fact.pk),
            object_kind=fact.object_kind,
            object_key=(
                str(merged_into.get(fact.object_ref_id, fact.object_ref_id))
                if fact.object_kind == ObjectKind.ENTITY
                else fact.object_key
            ),
            object=fact.object_display,
            epistemic=fact.epistemic,
            source_type=fact.source_type.name,
            trust_rank=fact.source_type.trust_rank,
            confidence=fact.confidence,
            effective_confidence=fact.effective_confidence(now),
            t_valid=fact.t_valid,
            recorded_at=fact.recorded_at,
            evidence=tuple(
                Evidence(item.get("ref", ""), item.get("quote", "")) for item in fact.evidence
            ),
            statement=fact.statement,
            disputed=fact.disputed,
            open_conflicts=ties.get(fact.pk, none)[0],
            ruled_conflicts=ties.get(fact.pk, none)[1],
            ruled_at=ruled_at.get(fact.pk),
        )
        for fact in facts
    ]


def mark_slots_stale(predicate_id: int, reason: str) -> int:
    """Mark every truth slot of the predicate stale with ``reason``; how many were."""
    return TruthSlot.objects.filter(predicate_id=predicate_id).update(
        stale=True, stale_reason=reason
    )


def mark_outdated_slots() -> int:
    """Mark stale the slots computed under semantics their predicate no longer has.

    The safety net for vocabulary changes made other than through the admin
    (a shell, a migration), and for a recompute that read the predicate just
    before an edit committed.
    """
    marked = 0
    for predicate in Predicate.objects.all():
        marked += (
            TruthSlot.objects.filter(predicate=predicate, stale=False)
            .exclude(vocabulary_version=semantics_version(predicate_spec(predicate)))
            .update(stale=True, stale_reason="the predicate's semantics changed")
        )
    return marked


def touched_slots(*, limit: int) -> list[tuple[int, int, int]]:
    """Up to ``limit`` slots that writes touched, as (scope, subject, predicate), oldest first."""
    return list(
        TouchedSlot.objects.order_by("touched_at", "id").values_list(
            "scope_id", "subject_id", "predicate_id"
        )[:limit]
    )


def forget_touched(scope_id: int, subject_id: int, predicate_id: int) -> None:
    """Drop the slot's mark (its recompute is handed to a task of its own)."""
    TouchedSlot.objects.filter(
        scope_id=scope_id, subject_id=subject_id, predicate_id=predicate_id
    ).delete()


def _touch_mark(scope_id: int, subject_id: int, predicate_id: int) -> tuple[int, int] | None:
    return (
        TouchedSlot.objects.filter(
            scope_id=scope_id, subject_id=subject_id, predicate_id=predicate_id
        )
        .values_list("id", "touches")
        .first()
    )


def stale_slots(*, limit: int, predicate_id: int | None = None) -> list[tuple[int, int, int]]:
    """Up to ``limit`` stale slots as (scope, subject, predicate) ids, the longest stale first."""
    slots = TruthSlot.objects.stale()
    if predicate_id is not None:
        slots = slots.filter(predicate_id=predicate_id)
    return list(
        slots.order_by("computed_at", "id").values_list("scope_id", "subject_id", "predicate_id")[
            :limit
        ]
    )


def _do_write_slot(
    scope_id: int,
    subject_id: int,
    predicate: Predicate,
    spec: PredicateSpec,
    claims: list[Claim],
    outcome: TruthOutcome,
    *,
    now: datetime,
) -> TruthSlot:
    slot, _ = TruthSlot.objects.update_or_create(
        scope_id=scope_id,
        subject_id=subject_id,
        predicate=predicate,
        defaults={
            "values": [_value_json(value) for value in outcome.values],
            "conflict": _open_conflict([claim.fact_id for claim in claims]),
            "rationale": outcome.rationale,
            "decided_by": outcome.decided_by,
            "computed_at": now,
            "stale": False,
            "stale_reason": "",
            "vocabulary_version": semantics_version(spec),
            "claim_set_hash": outcome.claim_set_hash,
        },
    )
    return slot


def _open_conflict(fact_ids: list[str]) -> Conflict | None:
    """The most recently opened open conflict among the slot's live facts."""
    if not fact_ids:
        return None
    return (
        Conflict.objects.open()
        .filter(members__fact_id__in=fact_ids)
        .order_by("-opened_at", "-id")
        .first()
    )


def _slot_name(spec: PredicateSpec) -> str:
    # The write path's own slot name (exclusion group, else predicate), so
    # recomputing serializes with the writers of the slot.
    return Vocabulary(predicates={spec.name: spec}, sources={}).slot_name(spec.name)


def _with_rationale(outcome: TruthOutcome, rationale: str) -> TruthOutcome:
    return replace(outcome, rationale=rationale)


def _value_json(value: SlotValue) -> dict[str, Any]:
    return {
        "object": value.object,
        "object_kind": value.object_kind,
        "object_key": value.object_key,
        "fact_ids": list(value.fact_ids),
        "confidence": value.confidence,
        "effective_confidence": value.effective_confidence,
        "status": value.status,
        "t_valid": value.t_valid.isoformat(),
        "support": [item.as_dict() for item in value.support],
    }
