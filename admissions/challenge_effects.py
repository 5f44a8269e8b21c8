"""What a challenge does to its fact, read from the database (SPEC §6 rules 2, 3 and 6).

The rule is ``admissions.status.effect_of`` (with its words,
``challenge_effect``); this module only gathers its inputs from the derived
state the record trigger keeps (``OpenChallenge``, ``ChallengeRank``,
``FactVerdict``, ``ScopeTally``), for three questions every face asks the
same way:

* ``challenge_forecast`` — what would a challenge by this account on this
  fact do if filed now (the form says it before filing);
* ``challenge_effects`` — what each of these open challenges does now (the
  flash and the API/MCP answer after filing, the challenger's dashboard);
* ``open_challenge_by`` — this account's open challenge on this fact, which
  refuses a second one (issue 30 item 7);

and ``challenges_of``, one account's latest challenges with each one's
effect and outcome (the challenger's dashboard).
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal
from uuid import UUID

from django.contrib.auth.models import User
from django.db.models import Exists, OuterRef, Prefetch, Subquery

from admissions.models import ChallengeRank, FactVerdict, OpenChallenge, Record, ScopeTally
from admissions.selectors import share_percent
from admissions.status import Effect, Status, challenge_effect
from memories.store.models import Fact


def _admitted_counts(scope_ids: Iterable[int]) -> dict[int, int]:
    """A per scope; a scope with no verdict and no challenge yet has no tally row: 0."""
    return dict(
        ScopeTally.objects.filter(scope_id__in=set(scope_ids)).values_list("scope_id", "admitted")
    )


def challenge_forecast(actor: User, fact: Fact, status: Status | None = None) -> Effect:
    """What an evidenced challenge by ``actor`` on ``fact`` would do if filed now.

    A challenge filed now ranks after every open one of its author, so the
    count of rule 6 is all of ``actor``'s ranked challenges in the scope on
    other facts. ``status``, the fact's status as the caller already read it,
    saves reading the verdict and A again. The caller has checked that
    ``actor`` may read ``fact``.
    """
    if status is not None:
        verdict = _VERDICT_OF_STATUS[status.status]
        admitted_count = status.admitted_count
    else:
        verdict = (
            FactVerdict.objects.filter(scope_id=fact.scope_id, fact=fact)
            .values_list("verdict", flat=True)
            .first()
        )
        admitted_count = _admitted_counts([fact.scope_id]).get(fact.scope_id, 0)
    earlier = (
        ChallengeRank.objects.filter(scope_id=fact.scope_id, author=actor)
        .exclude(fact=fact)
        .count()
    )
    return challenge_effect(
        evidenced=True,
        verdict=verdict,
        earlier=earlier,
        admitted_count=admitted_count,
        share_percent=share_percent(),
    )


# The latest verdict behind each status: a suspended fact is an admitted one (rule 2).
_VERDICT_OF_STATUS: dict[str, Literal["admitted", "rejected"] | None] = {
    "candidate": None,
    "admitted": "admitted",
    "suspended": "admitted",
    "rejected": "rejected",
}


def challenge_effects(challenges: Iterable[Record]) -> dict[UUID, Effect]:
    """The effect now of each open challenge among ``challenges``; refuted ones are left out.

    Four queries whatever the number of challenges: their open rows, their
    ranks, their facts' verdicts and their scopes' A.
    """
    challenges = list(challenges)
    ids = [challenge.pk for challenge in challenges]
    if not ids:
        return {}
    opened = {
        row["challenge_id"]: row
        for row in OpenChallenge.objects.filter(challenge_id__in=ids).values(
            "challenge_id", "scope_id", "fact_id", "author_id", "evidenced"
        )
    }
    if not opened:
        return {}
    scope_ids = {row["scope_id"] for row in opened.values()}
    # The rank view is partitioned by scope and author: naming both lets
    # PostgreSQL rank those accounts' challenges alone.
    positions = dict(
        ChallengeRank.objects.filter(
            scope_id__in=scope_ids,
            author_id__in={row["author_id"] for row in opened.values()},
            challenge_id__in=list(opened),
        ).values_list("challenge_id", "position")
    )
    verdicts = dict(
        FactVerdict.objects.filter(
            scope_id__in=scope_ids, fact_id__in={row["fact_id"] for row in opened.values()}
        ).values_list("fact_id", "verdict")
    )
    admitted = _admitted_counts(scope_ids)
    share = share_percent()
    effects = {}
    for challenge_id, row in opened.items():
        verdict = verdicts.get(row["fact_id"])
        position = positions.get(challenge_id)
        effects[challenge_id] = challenge_effect(
            evidenced=row["evidenced"],
            verdict=verdict,
            # An evidenced open challenge on an admitted fact that the rank
            # leaves out is a repeat: its author's earlier one on the fact counts.
            earlier=None if position is None else position - 1,
            admitted_count=admitted.get(row["scope_id"], 0),
            share_percent=share,
        )
    return effects


def open_challenge_by(actor: User, fact: Fact) -> Record | None:
    """``actor``'s earliest open challenge on ``fact``, evidenced or not; None if there is none."""
    found = (
        OpenChallenge.objects.filter(scope_id=fact.scope_id, fact=fact, author=actor)
        .order_by("inserted_at", "challenge_id")
        .values_list("challenge_id", flat=True)
        .first()
    )
    return None if found is None else Record.objects.get(pk=found)


@dataclass(frozen=True)
class Refutation:
    """Who answered a challenge, when, and why the fact stands."""

    by: str
    at: datetime
    ground: str


@dataclass(frozen=True)
class ChallengeShown:
    """One challenge, what it does now (None once refuted) and the refutation that answered it."""

    challenge: Record
    effect: Effect | None
    refutation: Refutation | None


def challenges_of(author: User, scope_ids: Iterable[int], *, limit: int) -> list[ChallengeShown]:
    """``author``'s latest ``limit`` challenges in these scopes, newest first, each with
    its effect (open ones) or its refutation (the first, by ``(inserted_at, id)``).

    Two queries whatever ``limit`` (the dashboard's budget): the challenges with
    what their effect reads annotated, and the facts they name.
    """
    mine = Record.objects.challenges().filter(author=author, scope_id__in=scope_ids)
    answered = (
        Record.objects.refutations().filter(challenge=OuterRef("pk")).order_by("inserted_at", "id")
    )
    opened = OpenChallenge.objects.filter(challenge=OuterRef("pk"))
    challenges = list(
        mine.select_related("scope")
        .prefetch_related(Prefetch("fact", queryset=Fact.objects.named()))
        .annotate(
            is_open=Exists(opened),
            fact_verdict=Subquery(
                FactVerdict.objects.filter(
                    scope_id=OuterRef("scope_id"), fact=OuterRef("fact_id")
                ).values("verdict")[:1]
            ),
            # Named by the view's partition (scope, author) first, so PostgreSQL
            # ranks this account's challenges alone.
            position=Subquery(
                ChallengeRank.objects.filter(
                    scope_id=OuterRef("scope_id"),
                    author_id=OuterRef("author_id"),
                    challenge=OuterRef("pk"),
                ).values("position")[:1]
            ),
            admitted=Subquery(
                ScopeTally.objects.filter(scope_id=OuterRef("scope_id")).values("admitted")[:1]
            ),
            refutation_id=Subquery(answered.values("pk")[:1]),
            refutation_ground=Subquery(answered.values("ground")[:1]),
            refutation_at=Subquery(answered.values("inserted_at")[:1]),
            refutation_by=Subquery(answered.values("author__username")[:1]),
        )
        .order_by("-inserted_at", "-id")[:limit]
    )
    share = share_percent()
    shown = []
    for challenge in challenges:
        effect = refutation = None
        if challenge.is_open:
            effect = challenge_effect(
                evidenced=challenge.evidence is not None,
                verdict=challenge.fact_verdict,
                earlier=None if challenge.position is None else challenge.position - 1,
                admitted_count=challenge.admitted or 0,
                share_percent=share,
            )
        elif challenge.refutation_id is not None:
            refutation = Refutation(
                by=challenge.refutation_by,
                at=challenge.refutation_at,
                ground=challenge.refutation_ground,
            )
        shown.append(ChallengeShown(challenge=challenge, effect=effect, refutation=refutation))
    return shown
