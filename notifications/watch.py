"""Events no record announces: a queue past its target age, a worker gone, the doctor's findings.

The worker's ``notifications watch`` job (:func:`record_watch_events`)
looks at the state of things every ``CLAIMGRAPH_NOTIFY_WATCH_SECONDS`` and
writes an event for what it finds, once:

- a queue of a scope whose oldest item has waited longer than its target
  (``CLAIMGRAPH_QUEUE_TARGET_HOURS``, the dashboard's): at most one event per
  queue, scope and day (``queue.overdue``);
- a worker that stopped beating without stopping cleanly, whether or not a
  scheduler has marked it lost yet: one event per heartbeat it went quiet
  after (``worker.stale``, for every scope's stewards: no scope);
- a doctor run that found violations: one event per run (``doctor.violation``).

Queues are counted by ``admissions.queues``, the dashboard's one home for them.
"""

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.tasks import task
from django.utils import timezone

from admissions.models import QueueKind
from admissions.queues import waiting
from memories.store.models import DoctorRun, Scope, WorkerHeartbeat
from notifications.channels import announce
from notifications.links import console_url, item, queue_url, scope_of
from notifications.models import Event, EventKind


@task
def record_watch_events_task() -> dict[str, int]:
    """The worker's ``notifications watch`` job: one look, how many events of each kind."""
    return record_watch_events(now=timezone.now())


def record_watch_events(*, now: datetime) -> dict[str, int]:
    """Look at the state of things at ``now``; new events written and announced at once."""
    events = [*_overdue_queues(now), *_stale_workers(now), *_doctor_findings(now)]
    with transaction.atomic():
        written = Event.objects.record(events)
        announce(written)
    counts: dict[str, int] = {}
    for event in written:
        counts[event.kind] = counts.get(event.kind, 0) + 1
    return counts


def _overdue_queues(now: datetime) -> list[Event]:
    events = []
    for scope in Scope.objects.order_by("pk"):
        for queue, found in waiting(Scope.objects.filter(pk=scope.pk)).items():
            target = timedelta(hours=settings.CLAIMGRAPH_QUEUE_TARGET_HOURS[queue])
            if found.oldest is None or now - found.oldest <= target:
                continue
            label = QueueKind(queue).label.lower()
            count = f"{found.count}{'+' if found.more else ''}"
            hours = int((now - found.oldest).total_seconds() // 3600)
            events.append(
                Event(
                    kind=EventKind.QUEUE_OVERDUE,
                    scope=scope,
                    occurred_at=now,
                    source=f"queue:{queue}:{scope.pk}:{now.date().isoformat()}",
                    data={
                        "summary": (
                            f"{count} {label} in {scope.name}; the oldest has "
                            f"waited {hours} h, past its target of "
                            f"{settings.CLAIMGRAPH_QUEUE_TARGET_HOURS[queue]} h"
                        ),
                        "scope": scope_of(scope),
                        "item": item(
                            "queue",
                            queue,
                            label,
                            queue_url(queue),
                        ),
                        "sides": [],
                        "queue": queue,
                        "count": found.count,
                        "more": found.more,
                        "oldest": found.oldest.isoformat(),
                        "target_hours": settings.CLAIMGRAPH_QUEUE_TARGET_HOURS[queue],
                    },
                )
            )
    return events


def _stale_workers(now: datetime) -> list[Event]:
    stale = timedelta(seconds=settings.CLAIMGRAPH_HEARTBEAT_STALE_SECONDS)
    since = now - timedelta(hours=settings.CLAIMGRAPH_NOTIFY_LOOKBACK_HOURS)
    quiet = WorkerHeartbeat.objects.filter(beat_at__gte=since).filter(
        Q(stopped_at__isnull=True, beat_at__lt=now - stale)
        # Marked lost by a scheduler: stopped long after its last beat.
        | Q(stopped_at__gt=F("beat_at") + stale)
    )
    return [
        Event(
            kind=EventKind.WORKER_STALE,
            occurred_at=beat.beat_at + stale,
            source=f"worker:{beat.worker_id}:{beat.beat_at.isoformat()}",
            data={
                "summary": (
                    f"Worker {beat.worker_id} on {beat.host} (pid {beat.pid}) stopped beating "
                    f"at {beat.beat_at.isoformat()}"
                ),
                "scope": None,
                "item": item(
                    "worker",
                    beat.worker_id,
                    f"worker {beat.worker_id} on {beat.host}",
                    console_url("health"),
                ),
                "sides": [],
                "host": beat.host,
                "pid": beat.pid,
                "last_beat": beat.beat_at.isoformat(),
            },
        )
        for beat in quiet
    ]


def _doctor_findings(now: datetime) -> list[Event]:
    since = now - timedelta(hours=settings.CLAIMGRAPH_NOTIFY_LOOKBACK_HOURS)
    runs = DoctorRun.objects.filter(finished_at__gte=since).exclude(violations=[])
    return [
        Event(
            kind=EventKind.DOCTOR_VIOLATION,
            occurred_at=run.finished_at,
            source=f"doctor:{run.pk}",
            data={
                "summary": (
                    f"The doctor found {len(run.violations)} broken invariant"
                    f"{'s' if len(run.violations) != 1 else ''}: "
                    + "; ".join(violation.get("what", "") for violation in run.violations[:3])
                ),
                "scope": None,
                "item": item("doctor", str(run.pk), f"doctor run {run.pk}", console_url("health")),
                "sides": [],
                "violations": run.violations,
                "capped": run.capped,
            },
        )
        for run in runs
    ]
