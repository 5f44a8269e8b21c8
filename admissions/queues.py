"""What waits for a human: the review queues, each counted once, the way every reader counts it.

The dashboard, the daily queue snapshot and the notifications (a queue over
its target age, the digest) all read the queues here, so a queue means the
same thing on every page and in every message. Each queue is listed by its
own QuerySet (open conflicts, ``selectors.candidates``,
``selectors.open_challenge_entries``, the facts suspended by a challenge in
effect); :func:`waiting` says how many items wait and since when.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from django.db.models import Count, Min, QuerySet

from admissions.models import ChallengeRank, QueueKind
from admissions.selectors import candidates, in_effect, open_challenge_entries
from memories.store.models import Conflict, Scope

QueueName = Literal["conflicts", "candidates", "challenges", "suspended"]
# In the order the dashboard shows them; their labels are QueueKind's.
QUEUES: tuple[QueueName, ...] = tuple(QueueKind.values)  # type: ignore[assignment]

# A count stops here and says "1000+": counting a queue of a million
# candidates would read them all on every visit.
COUNTED = 1_000


@dataclass(frozen=True)
class Waiting:
    """How many items of one queue wait (at most the count asked for), and the oldest's time."""

    count: int
    more: bool
    oldest: datetime | None


def waiting(scopes: QuerySet[Scope], *, every: bool = False) -> dict[QueueName, Waiting]:
    """Every queue over ``scopes``: one query each, counting up to ``COUNTED`` unless ``every``."""
    counted = None if every else COUNTED
    return {
        "conflicts": _bounded(
            Conflict.objects.open().filter(scope__in=scopes), "opened_at", counted
        ),
        "candidates": _bounded(candidates(scopes.values("pk")), "recorded_at", counted),
        # Read from the open challenges alone, however many were refuted.
        "challenges": _bounded(open_challenge_entries(scopes), "inserted_at", counted),
        "suspended": _suspended(scopes),
    }


def _bounded(listed: QuerySet, at: str, counted: int | None) -> Waiting:
    """One query over the oldest ``counted + 1`` items of ``listed``, read in ``at`` order."""
    ordered = listed.order_by(at).values(at)
    if counted is not None:
        ordered = ordered[: counted + 1]
    found = ordered.aggregate(count=Count("*"), oldest=Min(at))
    more = counted is not None and found["count"] > counted
    return Waiting(min(found["count"], counted) if more else found["count"], more, found["oldest"])


def _suspended(scopes: QuerySet[Scope]) -> Waiting:
    # A suspended fact waits since the challenge that suspends it was filed.
    # Counted as its queue (the Facts browser's "suspended") lists them, live
    # or not: a count that differs from the list it links to misleads.
    found = in_effect(ChallengeRank.objects.filter(scope__in=scopes)).aggregate(
        count=Count("fact", distinct=True), oldest=Min("inserted_at")
    )
    return Waiting(found["count"], False, found["oldest"])
