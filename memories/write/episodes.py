"""Withdrawing an episode (SPEC §12): one steward action undoes what a session wrote.

Every live fact the episode wrote is closed as *withdrawn* — its own kind,
distinct from a supersession and from an ordinary invalidation — and every
fact those writes had superseded is reinstated, so a poisoned session is
undone in one step instead of a hundred. A dry run answers exactly what
would change and writes nothing.

Reinstating reopens the superseded fact itself (its interval is opened again
and ``superseded_by`` cleared), although SPEC §3 says an invalidated fact is
never reopened. That rule protects a *ruling*: a human or the write path
decided the fact stopped holding. Here the only thing that ended it was a
write the steward has just declared void. Reopening keeps the fact's id, so
its admission records, challenges and receipts still apply to it; a copy
would start again as a candidate and lose them. The before state of every
fact touched is kept in the ``Withdrawal`` record and in the audit feed.

What is never reopened: a fact whose value has since been asserted again
(the unique live-value index allows only one), or one that would now
collide with a live fact the episode did not write (the write path would
not let it stand silently either). Those are reported as kept closed, with
why. Reinforcements the episode made to other writers' facts are not undone:
a reinforcement does not record who made it.

A steward's act never belongs to an agent's episode: a fact a steward of the
scope wrote under the episode's name (a correction made before corrections
stopped taking the corrected fact's episode, or a steward's own write) is
neither withdrawn nor passed through to reinstate what it replaced. It is
reported as left for the steward, who undoes it, if at all, as a steward.

A withdrawal does exactly what its dry run showed. A dry run's plan has a
``token`` naming everything it would change; confirming passes that token
back, the plan is made again under the slots' locks, and a plan whose token
differs (the agent wrote more since, or something was reinstated or kept
closed differently) is refused with :class:`PlanChanged`, which carries the
new dry run. Every face (the API, the console, the command) confirms so.
"""

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from uuid import UUID

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Count, Max
from django.utils import timezone

from memories.core import decisions
from memories.core.decisions import MAX_EPISODE_LENGTH
from memories.core.effects import Reinstated, Withdrawn, withdrawal_effects
from memories.core.text import required_reason, required_text
from memories.store.apply import do_apply
from memories.store.audit import fact_state
from memories.store.errors import Forbidden, NotFound, StateConflict
from memories.store.models import (
    Conflict,
    ConflictMember,
    Fact,
    InvalidationKind,
    Scope,
    Withdrawal,
)
from memories.store.roles import is_steward_of
from memories.store.slots import lock_slots
from memories.store.touched import recompute_on_commit
from memories.store.vocabulary import load_vocabulary


@dataclass
class KeptClosed:
    fact: Fact
    why: str


@dataclass
class WithdrawalPlan:
    """What a withdrawal changes (or, in a dry run, would change)."""

    episode: str
    scope: Scope
    dry_run: bool
    withdrawn: list[Fact] = field(default_factory=list)
    reinstated: list[Fact] = field(default_factory=list)
    kept_closed: list[KeptClosed] = field(default_factory=list)
    left_for_steward: list[KeptClosed] = field(default_factory=list)
    closed_conflicts: list[UUID] = field(default_factory=list)
    withdrawal: Withdrawal | None = None

    @property
    def token(self) -> str:
        """Names exactly what this plan changes: the same token, the same withdrawal."""
        parts = [
            str(self.scope.pk),
            self.episode,
            *(sorted(str(f.pk) for f in facts) for facts in self._listed()),
        ]
        return hashlib.sha256(repr(parts).encode()).hexdigest()[:32]

    def _listed(self) -> tuple[list[Fact], ...]:
        return (
            self.withdrawn,
            self.reinstated,
            [k.fact for k in self.kept_closed],
            [k.fact for k in self.left_for_steward],
        )


class PlanChanged(StateConflict):
    """The withdrawal would no longer do what its dry run showed; ``plan`` is the new dry run."""

    def __init__(self, plan: WithdrawalPlan, confirmed: bool) -> None:
        super().__init__(
            "the episode changed since its dry run: review the new dry run and confirm its token"
            if confirmed
            else "confirm the dry run: pass the token its dry run answered"
        )
        self.plan = plan


def withdraw_episode(
    *,
    actor: User,
    scope: str,
    episode: str,
    reason: str,
    dry_run: bool = False,
    confirm: str | None = None,
    now: datetime | None = None,
) -> WithdrawalPlan:
    """Withdraw every live fact ``episode`` wrote in ``scope`` (a steward of the scope).

    Raises NotFound for a scope the actor cannot see or an episode that
    wrote nothing there, Forbidden for a member who is not a steward, and
    StateConflict when nothing the episode wrote is still live (a dry run
    answers that with an empty plan instead).

    Unless ``dry_run``, ``confirm`` must be the ``token`` of the dry run
    being confirmed: a plan made under the locks that differs from it is
    refused with :class:`PlanChanged` (a StateConflict) and nothing is written.
    """
    target = Scope.objects.visible_to(actor).filter(name=scope).first()
    if target is None:
        raise NotFound("scope")
    if not is_steward_of(actor, target):
        raise Forbidden("only a steward of the scope may withdraw an episode")
    episode = required_text(episode, "episode", limit=MAX_EPISODE_LENGTH)
    reason = required_reason(reason, "reason")

    with transaction.atomic():
        written = Fact.objects.filter(scope=target, episode=episode)
        if not written.exists():
            raise NotFound("episode")
        # Lock every slot the plan can touch, then plan from what is read
        # under the locks. A supersession chain can cross slots (a
        # correction may change the subject), so the chains are walked once
        # to find the slots and again, locked, to decide.
        vocabulary = load_vocabulary()
        stewards = _stewards_in(target, episode)
        slots = {_slot(fact, vocabulary) for fact in _involved(target, episode, stewards)}
        lock_slots(slots)
        now = now or timezone.now()
        plan = _plan(target, episode, slots, vocabulary, stewards, dry_run=dry_run)
        if dry_run:
            return plan
        if not plan.withdrawn:
            raise StateConflict("nothing this episode wrote is still live")
        if confirm != plan.token:
            plan.dry_run = True
            raise PlanChanged(plan, confirmed=confirm is not None)
        _do_withdraw(plan, actor=actor, reason=reason, now=now)
    return plan


def _slot(fact: Fact, vocabulary) -> tuple[int, int, str]:
    return (fact.scope_id, fact.subject_id, vocabulary.spec.slot_name(fact.predicate.name))


LEFT_FOR_STEWARD = "a steward wrote it: a withdrawal never undoes a steward's act"


def _stewards_in(scope: Scope, episode: str) -> frozenset[int]:
    """The accounts among the episode's authors who are stewards of the scope."""
    authors = User.objects.filter(
        pk__in=Fact.objects.filter(scope=scope, episode=episode).values("author_id")
    )
    return frozenset(author.pk for author in authors if is_steward_of(author, scope))


def _of_episode(fact: Fact, episode: str, stewards: frozenset[int]) -> bool:
    """Whether ``fact`` is the episode's own write (a steward's never is)."""
    return fact.episode == episode and fact.author_id not in stewards


def _live_tagged(scope: Scope, episode: str):
    return (
        Fact.objects.filter(scope=scope, episode=episode, t_invalid__isnull=True)
        .select_related("predicate", "subject", "object_ref", "source_type")
        .order_by("recorded_at", "id")
    )


def _predecessors(fact_ids: list[UUID]) -> list[Fact]:
    return list(
        Fact.objects.filter(superseded_by__in=fact_ids, invalidation_kind="superseded")
        .select_related("predicate", "subject", "object_ref", "source_type")
        .order_by("recorded_at", "id")
    )


def _live_written(scope: Scope, episode: str, stewards: frozenset[int]):
    return _live_tagged(scope, episode).exclude(author_id__in=stewards)


def _involved(scope: Scope, episode: str, stewards: frozenset[int]) -> list[Fact]:
    """The episode's live facts and every fact up their supersession chains."""
    found = list(_live_written(scope, episode, stewards))
    frontier = [fact.pk for fact in found]
    seen = set(frontier)
    while frontier:
        earlier = [fact for fact in _predecessors(frontier) if fact.pk not in seen]
        found += earlier
        seen.update(fact.pk for fact in earlier)
        frontier = [fact.pk for fact in earlier if _of_episode(fact, episode, stewards)]
    return found


def _plan(
    scope: Scope, episode: str, slots, vocabulary, stewards: frozenset[int], *, dry_run: bool
) -> WithdrawalPlan:
    plan = WithdrawalPlan(episode=episode, scope=scope, dry_run=dry_run)
    # Anything written into a slot after the first walk, and so not locked,
    # is left alone: the withdrawal covers what stood when it began.
    plan.withdrawn = [
        f for f in _live_written(scope, episode, stewards) if _slot(f, vocabulary) in slots
    ]
    plan.left_for_steward = [
        KeptClosed(fact, LEFT_FOR_STEWARD)
        for fact in _live_tagged(scope, episode).filter(author_id__in=stewards)
    ]
    withdrawn_ids = {fact.pk for fact in plan.withdrawn}

    # Walk back from each withdrawn fact through what it superseded; a
    # predecessor the episode also wrote is passed through, the first one
    # it did not write is what the episode's writes replaced.
    candidates: list[Fact] = []
    frontier = list(withdrawn_ids)
    seen = set(frontier)
    while frontier:
        earlier = [fact for fact in _predecessors(frontier) if fact.pk not in seen]
        seen.update(fact.pk for fact in earlier)
        candidates += [fact for fact in earlier if not _of_episode(fact, episode, stewards)]
        frontier = [fact.pk for fact in earlier if _of_episode(fact, episode, stewards)]

    standing = _standing_after(candidates, withdrawn_ids)
    for fact in sorted(candidates, key=lambda f: (f.t_valid, f.recorded_at, f.pk), reverse=True):
        rival = _rival(fact, standing, vocabulary)
        if rival is not None:
            plan.kept_closed.append(KeptClosed(fact, rival))
            continue
        plan.reinstated.append(fact)
        standing.append(fact)
    plan.reinstated.reverse()
    plan.closed_conflicts = _moot_after(withdrawn_ids, {f.pk for f in plan.reinstated})
    return plan


def _standing_after(candidates: list[Fact], withdrawn_ids: set[UUID]) -> list[Fact]:
    """The live facts of the candidates' slots once the withdrawal is done."""
    if not candidates:
        return []
    subjects = {(fact.scope_id, fact.subject_id) for fact in candidates}
    live = Fact.objects.filter(
        scope_id__in={scope for scope, _ in subjects},
        subject_id__in={subject for _, subject in subjects},
        t_invalid__isnull=True,
    ).select_related("predicate", "source_type")
    return [fact for fact in live if fact.pk not in withdrawn_ids]


def _rival(fact: Fact, standing: list[Fact], vocabulary) -> str | None:
    """Why ``fact`` may not be reopened beside ``standing``, or None if it may."""
    spec = vocabulary.spec.predicates.get(fact.predicate.name)
    for other in standing:
        if (other.scope_id, other.subject_id, other.bucket) != (
            fact.scope_id,
            fact.subject_id,
            fact.bucket,
        ) or (fact.bucket == "user" and other.author_id != fact.author_id):
            continue
        same_value = (other.object_kind, other.object_key) == (fact.object_kind, fact.object_key)
        if other.predicate_id == fact.predicate_id and same_value:
            return f"its value was asserted again since, as fact {other.pk}"
        if spec is None:
            continue
        other_spec = vocabulary.spec.predicates.get(other.predicate.name)
        collides = (
            other.predicate_id == fact.predicate_id
            and spec.cardinality == "one"
            and not spec.event_like
            and not same_value
        ) or (
            other.predicate_id != fact.predicate_id
            and bool(spec.exclusion_group)
            and other_spec is not None
            and other_spec.exclusion_group == spec.exclusion_group
            and same_value
        )
        if collides:
            return f"fact {other.pk}, which the episode did not write, now stands in its slot"
    return None


def _moot_after(withdrawn_ids: set[UUID], reinstated_ids: set[UUID]) -> list[UUID]:
    """The open conflicts that will have closed by themselves once the plan is applied."""
    members = ConflictMember.objects.filter(
        conflict__in=Conflict.objects.open().filter(
            pk__in=ConflictMember.objects.filter(fact_id__in=withdrawn_ids).values("conflict")
        )
    ).values_list("conflict_id", "role", "fact_id", "fact__t_invalid")
    by_conflict: dict[UUID, list[tuple[str, bool]]] = {}
    for conflict_id, role, fact_id, t_invalid in members:
        live = fact_id in reinstated_ids or (t_invalid is None and fact_id not in withdrawn_ids)
        by_conflict.setdefault(conflict_id, []).append((role, live))
    return sorted(
        (cid for cid, states in by_conflict.items() if decisions.conflict_is_moot(states)),
        key=str,
    )


def _do_withdraw(plan: WithdrawalPlan, *, actor: User, reason: str, now: datetime) -> None:
    withdrawn = []
    for fact in plan.withdrawn:
        before = fact_state(fact)
        # The interval must end after it starts (a database constraint): a
        # fact valid only from the future is closed a microsecond after.
        fact.t_invalid = max(now, fact.t_valid + timedelta(microseconds=1))
        fact.invalidated_at = now
        fact.invalidated_by = actor
        fact.invalidation_kind = InvalidationKind.WITHDRAWN
        fact.invalidation_reason = reason
        withdrawn.append(Withdrawn(fact.pk, fact.t_invalid, before, fact_state(fact)))
    reinstated = []
    for fact in plan.reinstated:
        before = {
            **fact_state(fact),
            "invalidated_at": fact.invalidated_at.isoformat() if fact.invalidated_at else None,
            "invalidated_by": fact.invalidated_by_id,
            "invalidation_reason": fact.invalidation_reason,
        }
        fact.t_invalid = None
        fact.invalidated_at = None
        fact.invalidated_by = None
        fact.invalidation_kind = ""
        fact.invalidation_reason = ""
        fact.superseded_by = None
        reinstated.append(Reinstated(fact.pk, before, fact_state(fact)))

    plan.withdrawal = Withdrawal.objects.create(
        scope=plan.scope,
        episode=plan.episode,
        actor=actor,
        at=now,
        reason=reason,
        withdrawn=[
            {"fact": str(w.fact_id), "before": w.before, "after": w.after} for w in withdrawn
        ],
        reinstated=[
            {"fact": str(r.fact_id), "before": r.before, "after": r.after} for r in reinstated
        ],
    )
    applied = do_apply(
        withdrawal_effects(
            plan.withdrawal.pk,
            plan.scope.pk,
            episode=plan.episode,
            withdrawn=withdrawn,
            reinstated=reinstated,
            kept_closed=[
                {"fact": str(k.fact.pk), "why": k.why}
                for k in [*plan.kept_closed, *plan.left_for_steward]
            ],
            reason=reason,
            now=now,
            actor_id=actor.pk,
        )
    )
    recompute_on_commit(applied.touched)
    closed = applied.closed_moot
    plan.closed_conflicts = sorted(closed, key=str)


RECENT_EPISODES = 20


def recent_episodes(scopes, limit: int = RECENT_EPISODES):
    """The episodes that wrote facts in ``scopes``, last write first: a steward's way to find one.

    Each row: ``scope__name``, ``episode``, ``author__username``, ``facts``
    (how many facts it wrote) and ``last`` (its latest write).
    """
    return (
        Fact.objects.filter(scope__in=scopes)
        .exclude(episode="")
        .values("scope__name", "episode", "author__username")
        .annotate(facts=Count("id"), last=Max("recorded_at"))
        .order_by("-last", "episode")[:limit]
    )
