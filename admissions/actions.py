"""The admissions actions (SPEC §6): verdicts, challenges, refutations, corrections.

Each action decides who may act before it reads the row it names: the row is
looked up *through* the caller's visibility (``readable_fact``, or the
challenge's scope among the caller's scopes), so a fact or challenge outside
the caller's scopes answers :class:`NotFound` exactly as a missing one does.
Inside their own scope, a member attempting a steward action gets
:class:`Forbidden`. Then the input is checked (:class:`Rejected`, naming the
field), and only then is anything written.

Locking: every record write takes one transaction-scoped advisory lock per
scope (``_lock_scope``) before reading the clock and the statuses it reports.
The flood cap makes one fact's status depend on the whole scope (A, and each
challenger's other challenges), so the lock is per scope, not per fact;
record writes are human-paced, so serializing them per scope costs nothing
that matters. Writers to different scopes never wait for each other. The
trigger that maintains the derived state locks the scope's tally row as well,
so even inserts that bypass these actions cannot miscount.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.utils import timezone

from admissions.challenge_effects import open_challenge_by
from admissions.models import FactVerdict, Record, Role, Verdict
from admissions.selectors import fact_status
from memories.core.decisions import ASSERTION_FIELDS, parse_evidence, parse_time
from memories.core.effects import Effects, PointAt
from memories.core.text import required_reason
from memories.store.apply import do_apply
from memories.store.audit import record_audit
from memories.store.errors import (
    ChallengeAlreadyOpen,
    Forbidden,
    NotFound,
    Rejected,
    StateConflict,
)
from memories.store.lookups import readable_fact
from memories.store.models import Bucket, Conflict, Fact, InvalidationKind, Scope
from memories.store.permissions import may_end
from memories.store.roles import is_steward_of
from memories.store.slots import lock_predicate_slot
from memories.store.touched import recompute_on_commit
from memories.write.actions import AssertResult, assert_fact, invalidate_fact
from memories.write.claims import end_claims
from memories.write.sides import (
    closed_by_people,
    do_close_set_aside,
    do_reopen_set_aside,
    member_fact_ids,
    open_conflicts_of,
)


@dataclass
class Correction:
    """What ``correct_fact`` did: the replacement and the records it wrote."""

    result: AssertResult
    replacement: Fact
    refutations: list[Record] = field(default_factory=list)
    admission: Record | None = None


@dataclass
class RecordedVerdict:
    """What ``record_verdict`` did: its record, and the open conflicts the fact is in.

    ``closed``: the conflicts a rejection left without two sides, closed as
    moot with it. ``still_open``: those that still wait for a ruling (every
    one, after an admission: a verdict on one side settles no conflict),
    ``reopened`` among them: those an earlier rejection of the fact had
    closed, open again since it is admitted.
    """

    record: Record
    closed: list[Conflict] = field(default_factory=list)
    still_open: list[Conflict] = field(default_factory=list)
    reopened: list[Conflict] = field(default_factory=list)


def record_verdict(
    *,
    actor: User,
    fact_id: UUID | str,
    verdict: str,
    ground: str,
    now: datetime | None = None,
) -> RecordedVerdict:
    """A steward's verdict on a system fact: ``admitted`` or ``rejected`` (rule 1).

    A verdict and the open conflicts of its fact (docs/admissions.md, "A
    verdict on a side of a conflict"):

    - a **rejection** takes the fact out of every open conflict it is a side
      of, as an invalidation would, though the fact stays valid (a later
      admission may bring it back: verdicts are records, not an end). A
      conflict left without two sides by it (and by its other members'
      earlier rejections) closes as moot in the same transaction, resolved
      by the steward with an audit entry naming the verdict and its ground.
      The rule of "two sides" is the write path's (``conflict_is_moot``):
      rejecting the incoming fact always closes its conflict; rejecting a
      standing fact closes it only when no other standing fact is left; a
      conflict among standing facts (the crawler's) closes when fewer than
      two are left. Otherwise the conflict stays open, the rejected member
      in it, for a steward to rule on what remains.
    - an **admission** settles nothing: the conflict still needs a ruling
      (``still_open`` lists them, so every face can say so). An admission of
      a fact whose rejection closed a conflict reopens that conflict if it has
      two sides again (``reopened``): admitted, the fact would otherwise be
      served beside the rival it contradicts, with nothing disputed.

    Locks: the scope's record lock, then the fact's slot (as ``correct_fact``
    takes them), so the conflicts weighed are the ones standing when the
    verdict is written.
    """
    fact = readable_fact(actor, fact_id)
    _require_steward(actor, fact.scope, "only a steward may record a verdict")
    _require_system(fact)
    if verdict not in Verdict.values:
        raise Rejected("verdict", f"must be one of {', '.join(Verdict.values)}, not {verdict!r}")
    ground = required_reason(ground, "ground")
    with transaction.atomic():
        now = _lock_scope(fact.scope_id, now)
        end_claims(fact_ids=[fact.pk], scope_id=fact.scope_id)
        record = _write(
            actor,
            fact,
            "recorded-verdict",
            Record(role=Role.ADMISSION, verdict=verdict, ground=ground),
            now,
        )
        if verdict != Verdict.REJECTED:
            reopened = _reopen_on_admission(actor, fact, record, now)
            still_open = open_conflicts_of(fact.pk, fact.scope_id, lock=False)
            return RecordedVerdict(record, still_open=still_open, reopened=reopened)
        lock_predicate_slot(fact.scope_id, fact.subject_id, fact.predicate.name)
        conflicts = open_conflicts_of(fact.pk, fact.scope_id)
        if not conflicts:
            return RecordedVerdict(record)
        outcome = do_close_set_aside(
            actor=actor,
            conflicts=conflicts,
            set_aside=_rejected_among(fact.scope_id, conflicts) | {fact.pk},
            reason=rejection_reason(fact, ground),
            cause={"rejected": str(fact.pk), "verdict": str(record.pk)},
            now=now,
        )
    return RecordedVerdict(record, closed=outcome.closed, still_open=outcome.still_open)


def _rejected_among(scope_id: int, conflicts: list[Conflict]) -> frozenset[UUID]:
    """The members of ``conflicts`` whose latest verdict is a rejection.

    A side rejected earlier in a three-sided conflict is no more a side than
    the one rejected now.
    """
    return frozenset(
        FactVerdict.objects.filter(
            scope_id=scope_id,
            fact_id__in=member_fact_ids(conflicts),
            verdict=Verdict.REJECTED,
        ).values_list("fact_id", flat=True)
    )


def _reopen_on_admission(actor: User, fact: Fact, record: Record, now: datetime) -> list[Conflict]:
    """Reopen the conflicts a rejection of ``fact`` closed, now that it is admitted.

    Its rival was not served beside it while it was rejected; admitted, the
    two would be, with nothing disputed: the question is a steward's again.
    Only conflicts a person's verdict closed (``closed_by_people``), and only
    those with two sides again. The slot is locked only when there is one.
    """
    if not closed_by_people(fact.pk, fact.scope_id):
        return []
    lock_predicate_slot(fact.scope_id, fact.subject_id, fact.predicate.name)
    conflicts = closed_by_people(fact.pk, fact.scope_id, lock=True)
    return do_reopen_set_aside(
        actor=actor,
        conflicts=conflicts,
        set_aside=_rejected_among(fact.scope_id, conflicts) - {fact.pk},
        reason=f"{fact} was admitted after its rejection, so the conflict has two sides again. "
        f"The ground: {record.ground}",
        cause={"admitted": str(fact.pk), "verdict": str(record.pk)},
        now=now,
    )


def rejection_reason(fact: Fact, ground: str) -> str:
    """The reason a conflict closed as moot by a rejection gives, on its page and in the feed."""
    return f"{fact} was rejected, so the conflict no longer has two sides. The ground: {ground}"


def file_challenge(
    *,
    actor: User,
    fact_id: UUID | str,
    ground: str,
    evidence: list | None,
    now: datetime | None = None,
) -> Record:
    """Anyone in the scope, the author included, says a system fact is wrong, and why.

    With at least one evidence ref the challenge is *evidenced* and suspends
    an admitted fact within its author's cap; with ``evidence=None`` it is on
    the record with no effect. An empty list is refused: absence is said as
    ``None``, never as ``[]``.

    One open challenge per account and fact (issue 30 item 7): while the
    actor's earlier challenge on the fact, evidenced or not, is unrefuted, a
    second answers :class:`ChallengeAlreadyOpen` and nothing is written. Once
    it is refuted the actor may challenge the fact again. What the new
    challenge does is ``challenge_effects([record])``.
    """
    fact = readable_fact(actor, fact_id)
    _require_system(fact)
    ground = required_reason(ground, "ground")
    if evidence is not None:
        if isinstance(evidence, list | tuple) and not evidence:
            raise Rejected(
                "evidence",
                "an empty list is refused: leave evidence out (null) for a challenge "
                "without evidence, or give at least one ref",
            )
        evidence = [item.as_dict() for item in parse_evidence(evidence, "evidence")]
    with transaction.atomic():
        now = _lock_scope(fact.scope_id, now)
        # Read under the scope's lock, so two filings at once cannot both pass.
        standing = open_challenge_by(actor, fact)
        if standing is not None:
            raise ChallengeAlreadyOpen(standing.pk)
        return _write(
            actor,
            fact,
            "filed-challenge",
            Record(role=Role.CHALLENGE, ground=ground, evidence=evidence),
            now,
        )


def refute_challenge(
    *,
    actor: User,
    challenge_id: UUID | str,
    ground: str,
    now: datetime | None = None,
) -> Record:
    """A steward's answer to one named challenge, restoring its target (rule 4).

    A challenge already refuted answers :class:`StateConflict`: a steward who
    changed their mind files a new challenge rather than a second refutation.
    """
    challenge = _visible_challenge(actor, challenge_id)
    _require_steward(actor, challenge.scope, "only a steward may refute a challenge")
    ground = required_reason(ground, "ground")
    with transaction.atomic():
        now = _lock_scope(challenge.scope_id, now)
        if Record.objects.refutations().filter(challenge=challenge).exists():
            raise StateConflict("the challenge is already refuted")
        end_claims(fact_ids=[challenge.fact_id], scope_id=challenge.scope_id)
        return _write(
            actor,
            challenge.fact,
            "refuted-challenge",
            Record(role=Role.REFUTATION, challenge=challenge, ground=ground),
            now,
        )


def correct_fact(
    *,
    actor: User,
    fact_id: UUID | str,
    changes: Mapping[str, Any],
    ground: str,
    now: datetime | None = None,
) -> Correction:
    """Replace a live fact with a corrected one, through the ordinary write path.

    The fact's author or a steward of its scope may correct it. Fields not in
    ``changes`` are taken from the corrected fact, except the valid time: the
    replacement is valid from ``changes["t_valid"]`` or now, and the
    corrected fact's interval closes there (or now, if that would not be
    after its own start). It is closed *before* the replacement is asserted,
    so the write path never weighs a fact against its own correction; then it
    points at the replacement (``superseded_by``). All in one transaction.

    A steward's correction of a system fact also refutes every open
    challenge on it, evidenced or not, and admits the replacement, each with
    the correction's ground. An author's correction resolves nothing and the
    replacement starts as a candidate.
    """
    fact = readable_fact(actor, fact_id)
    if not may_end(actor, fact):
        raise Forbidden("only the fact's author or a steward may correct it")
    ground = required_reason(ground, "ground")
    data = _replacement_data(fact, changes, actor)
    steward = is_steward_of(actor, fact.scope)

    with transaction.atomic():
        now = _lock_scope(fact.scope_id, now)
        fact = Fact.objects.for_display().select_for_update(of=("self",)).get(pk=fact.pk)
        if not fact.is_live:
            raise StateConflict("only a live fact can be corrected")
        end_claims(fact_ids=[fact.pk], scope_id=fact.scope_id)
        if now <= fact.t_valid:
            raise StateConflict("the fact only becomes valid in the future: invalidate it")
        before = fact_status(fact)
        starts = parse_time(data.get("t_valid"), "t_valid") or now
        closes = starts if fact.t_valid < starts <= now else now

        invalidate_fact(
            actor=actor,
            fact_id=fact.pk,
            reason=ground,
            at=closes,
            now=now,
            kind=InvalidationKind.SUPERSEDED,
        )
        result = assert_fact(actor=actor, data=data, now=now)
        replacement = result.fact
        recompute_on_commit(do_apply(Effects((PointAt(fact.pk, replacement.pk),), now=now)).touched)

        refutations: list[Record] = []
        admission = None
        if steward and fact.bucket == Bucket.SYSTEM:
            for challenge in Record.objects.open().filter(fact=fact).history_order():
                refutations.append(
                    _insert(
                        actor,
                        fact,
                        Record(role=Role.REFUTATION, challenge=challenge, ground=ground),
                        now,
                    )
                )
            admission = _insert(
                actor,
                replacement,
                Record(role=Role.ADMISSION, verdict=Verdict.ADMITTED, ground=ground),
                now,
            )
        after = fact_status(fact)
        replaced = fact_status(replacement)
        record_audit(
            at=now,
            actor=actor,
            scope_id=fact.scope_id,
            action="corrected-fact",
            target=fact,
            before={"status": before.status if before else None, "superseded_by": None},
            after={
                "status": after.status if after else None,
                "superseded_by": str(replacement.pk),
                "replacement_status": replaced.status if replaced else None,
                "refutations": [str(record.pk) for record in refutations],
                "admission": str(admission.pk) if admission else None,
            },
            reason=ground,
        )
    return Correction(
        result=result, replacement=replacement, refutations=refutations, admission=admission
    )


# --- helpers ---------------------------------------------------------------------------


def _lock_scope(scope_id: int, now: datetime | None) -> datetime:
    """Serialize record writes in one scope; the clock is read under the lock.

    A time read before the lock could be older than a record the previous
    holder just committed, and rule 1 would then rank a later verdict first.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            [f"claimgraph:admissions:{scope_id}"],
        )
    return now or timezone.now()


def _write(actor, fact: Fact, action: str, record: Record, now: datetime) -> Record:
    """Insert one record and audit it with the fact's status before and after."""
    before = fact_status(fact)
    record = _insert(actor, fact, record, now)
    after = fact_status(fact)
    assert before is not None and after is not None  # system facts only
    record_audit(
        at=now,
        actor=actor,
        scope_id=fact.scope_id,
        action=action,
        target=record,
        before={"status": before.status, "fact": str(fact.pk)},
        after={
            "status": after.status,
            "fact": str(fact.pk),
            "role": record.role,
            "verdict": record.verdict,
            "admitted_in_scope": after.admitted_count,
            "cap": after.cap,
        },
        reason=record.ground,
    )
    return record


def _insert(actor, fact: Fact, record: Record, now: datetime) -> Record:
    record.scope_id = fact.scope_id
    record.fact = fact
    record.author = actor
    record.inserted_at = now
    if record.role == Role.REFUTATION:
        record.challenge_role = Role.CHALLENGE
    record.save(force_insert=True)
    return record


def _visible_challenge(actor, challenge_id: UUID | str) -> Record:
    """A challenge in one of ``actor``'s scopes; anything else is :class:`NotFound`."""
    try:
        challenge_uuid = UUID(str(challenge_id))
    except ValueError:
        raise NotFound("challenge") from None
    challenge = (
        Record.objects.challenges()
        .filter(pk=challenge_uuid, scope__in=Scope.objects.visible_to(actor))
        .select_related("scope", "fact__scope")
        .first()
    )
    if challenge is None:
        raise NotFound("challenge")
    return challenge


def _require_steward(actor, scope: Scope, message: str) -> None:
    if not is_steward_of(actor, scope):
        raise Forbidden(message)


def _require_system(fact: Fact) -> None:
    # Only the caller's own user facts (or, for a steward, any in their
    # scope) get this far, so saying what the fact is leaks nothing.
    if fact.bucket != Bucket.SYSTEM:
        raise Rejected(
            "fact",
            "is a user-bucket fact: only system facts have verdicts, challenges and refutations",
        )


def _replacement_data(fact: Fact, changes: Mapping[str, Any], actor: User) -> dict[str, Any]:
    """The replacement's assertion: the corrected fact's fields, overridden by ``changes``.

    The episode is the corrected fact's only when its author corrects it: a
    correction by anyone else (a steward's ruling) is never part of the
    author's episode, so withdrawing that episode never withdraws it.
    """
    if not isinstance(changes, Mapping):
        raise Rejected("changes", "must be a mapping of fact fields")
    for name in changes:
        if name not in ASSERTION_FIELDS:
            raise Rejected(name, "is not a field of a fact")
    for name, current in (("scope", fact.scope.name), ("bucket", fact.bucket)):
        if name in changes and changes[name] != current:
            raise Rejected(name, f"a correction stays in the fact's {name}")
    if changes.get("t_invalid") is not None:
        raise Rejected("t_invalid", "a correction is live: invalidate a fact to end it")
    data: dict[str, Any] = {
        "scope": fact.scope.name,
        "subject": fact.subject.name,
        "predicate": fact.predicate.name,
        "object": fact.object_display,
        "object_kind": fact.object_kind,
        "epistemic": fact.epistemic,
        "source_type": fact.source_type.name,
        "confidence": fact.confidence,
        "episode": fact.episode if fact.author_id == actor.pk else "",
        "statement": fact.statement,
        "evidence": fact.evidence,
        "bucket": fact.bucket,
    }
    data.update({name: value for name, value in changes.items() if name != "t_invalid"})
    return data
