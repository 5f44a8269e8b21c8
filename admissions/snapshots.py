"""The daily queue snapshot: what waited in each review queue of each scope, one row a day.

The dashboard draws the last 30 days of these (``console.queue_charts``). A
snapshot counts each queue with ``admissions.queues.waiting`` (every item,
not the dashboard's first thousand), scope by scope, so a day's point and the
dashboard's number are the same count taken at different moments.

**The first reading of a day stands.** A day's rows are inserted with
``ON CONFLICT DO NOTHING`` on the unique (day, scope, queue), and a scope
already recorded that day is not counted again. The worker takes the snapshot
at the start of each day's period (``CLAIMGRAPH_QUEUE_SNAPSHOT_SECONDS``,
fixed on the clock), so every day's point is read at the same hour and the
line compares like with like; a second run the same day (a retried task, a
shorter period in a test, two workers racing past their ``PeriodicRun``)
would otherwise move that day's reading to another hour, and rewrite history
someone may already have looked at. Under any number of concurrent runs
PostgreSQL lets one insert of each row in and the others do nothing, so a
day never has two rows for a queue, nor an error. A worker started in the
middle of a day takes that day's reading soon after it starts (``first_after``)
if there is none yet, so a new ``make run`` shows a point at once: that one
day is read at another hour.
"""

from datetime import date, datetime
from typing import Any

from django.db import transaction
from django.tasks import task
from django.utils import timezone

from admissions.models import QueueSnapshot
from admissions.queues import waiting
from memories.store.models import Scope


def snapshot_day(now: datetime) -> date:
    """The day a snapshot taken at ``now`` is of: the date on the site's clock (``TIME_ZONE``)."""
    return timezone.localdate(now)


def take_queue_snapshot(*, now: datetime) -> dict[str, Any]:
    """Record today's size and oldest age of every queue of every scope not recorded today.

    Returns the day and how many scopes this run recorded (0 when every
    scope had its reading already).
    """
    day = snapshot_day(now)
    recorded_today = QueueSnapshot.objects.filter(day=day).values("scope")
    scopes = Scope.objects.exclude(pk__in=recorded_today).order_by("pk")
    rows = []
    for scope in scopes:
        for queue, figures in waiting(Scope.objects.filter(pk=scope.pk), every=True).items():
            age = None
            if figures.oldest is not None:
                # An item stamped a moment after ``now`` (a clock a little
                # ahead) has waited no time, not a negative one.
                age = max(0, int((now - figures.oldest).total_seconds()))
            rows.append(
                QueueSnapshot(
                    day=day,
                    scope=scope,
                    queue=queue,
                    size=figures.count,
                    oldest_age_seconds=age if figures.count else None,
                    taken_at=now,
                )
            )
    with transaction.atomic():
        QueueSnapshot.objects.bulk_create(rows, ignore_conflicts=True)
    return {"day": day.isoformat(), "scopes": len({row.scope_id for row in rows})}


@task
def queue_snapshot_task() -> dict[str, Any]:
    """The worker's daily run of :func:`take_queue_snapshot`."""
    return take_queue_snapshot(now=timezone.now())
