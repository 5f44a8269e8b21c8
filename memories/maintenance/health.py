"""Health of the background work (SPEC §10, §12): is a worker alive, and is work waiting?

``background_health`` reads the workers' heartbeats, django-tasks-db's task
results, the periodic jobs' last runs, the last crawler run and the last
doctor run into one :class:`Health` value, for the console's health page and
``GET /api/v1/health`` to show.

Healthy means that at least one worker is alive: it has not stopped and its
last heartbeat is at most ``CLAIMGRAPH_HEARTBEAT_STALE_SECONDS`` old. Failed
tasks and a queue that waits are reported, not judged: a failure is a thing
to look at and retry, and a long task is not a dead worker.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from memories.maintenance.tasks import PeriodicJob
from memories.store.models import CrawlerRun, DoctorRun, PeriodicRun, WorkerHeartbeat

LATEST_FAILURES = 5
# How many of each periodic job's runs are shown, latest first.
LATEST_PERIODIC_RUNS = 5
TRACEBACK_TAIL_CHARS = 2_000


@dataclass(frozen=True)
class WorkerState:
    worker_id: str
    host: str
    pid: int
    started_at: datetime
    beat_at: datetime
    age_seconds: float
    stopped_at: datetime | None
    alive: bool


@dataclass(frozen=True)
class TaskFailure:
    id: str
    task_path: str
    args: list[Any]
    kwargs: dict[str, Any]
    finished_at: datetime | None
    exception: str
    # The end of the traceback: where it failed, which is the part one reads.
    traceback: str


@dataclass(frozen=True)
class CrawlerRunSummary:
    id: int
    started_at: datetime
    finished_at: datetime | None
    counts: dict[str, Any]
    report: dict[str, Any]


@dataclass(frozen=True)
class PeriodicRunState:
    period_start: datetime
    enqueued_at: datetime
    task_id: str | None
    # The task's status (READY, RUNNING, SUCCESSFUL, FAILED), or None once
    # django-tasks-db's result was pruned.
    status: str | None
    duration_seconds: float | None


@dataclass(frozen=True)
class PeriodicJobState:
    name: str
    every_seconds: float
    runs: tuple[PeriodicRunState, ...]


@dataclass(frozen=True)
class DoctorRunSummary:
    id: int
    started_at: datetime
    finished_at: datetime
    # Each as ``memories.maintenance.doctor.Violation.as_json``.
    violations: tuple[dict[str, Any], ...]
    capped: tuple[str, ...]


@dataclass(frozen=True)
class Health:
    healthy: bool
    checked_at: datetime
    # Why it is not healthy (empty when it is).
    problems: tuple[str, ...]
    stale_after_seconds: float
    # The most recently heard-from worker, and every worker heard from lately.
    last_heartbeat: WorkerState | None
    workers: tuple[WorkerState, ...]
    failed_tasks: int
    latest_failures: tuple[TaskFailure, ...]
    queue_depth: int
    oldest_queued_age_seconds: float | None
    last_crawler_run: CrawlerRunSummary | None
    periodic_jobs: tuple[PeriodicJobState, ...]
    last_doctor_run: DoctorRunSummary | None

    @property
    def heartbeat_age_seconds(self) -> float | None:
        return None if self.last_heartbeat is None else self.last_heartbeat.age_seconds

    @property
    def heartbeat_stale(self) -> bool:
        return not any(worker.alive for worker in self.workers)


def background_health(*, now: datetime | None = None, jobs: Sequence[PeriodicJob] = ()) -> Health:
    """The state of the background work at ``now`` (the clock by default).

    ``jobs`` are the periodic jobs to report on, each with its last runs
    (``notifications.worker.PERIODIC_JOBS``: every job a worker runs).
    """
    now = now or timezone.now()
    stale_after = settings.CLAIMGRAPH_HEARTBEAT_STALE_SECONDS
    # A worker is listed while its heartbeat is recent enough to matter to a
    # reader: ten stale periods, so a worker that just died is still named.
    recent = now - timedelta(seconds=stale_after * 10)
    workers = tuple(
        _worker_state(beat, now=now, stale_after=stale_after)
        for beat in WorkerHeartbeat.objects.filter(beat_at__gte=recent).order_by("-beat_at")
    )
    last = WorkerHeartbeat.objects.order_by("-beat_at").first()
    last_state = None if last is None else _worker_state(last, now=now, stale_after=stale_after)

    problems = []
    if last_state is None:
        problems.append("no worker has ever reported a heartbeat")
    elif not any(worker.alive for worker in workers):
        if last_state.stopped_at is not None:
            problems.append(f"the last worker ({last_state.worker_id}) stopped")
        else:
            problems.append(
                f"no heartbeat for {last_state.age_seconds:.0f} s (stale after {stale_after:.0f} s)"
            )

    queued = DBTaskResult.objects.ready()
    oldest = queued.order_by("enqueued_at").values_list("enqueued_at", flat=True).first()
    failed = DBTaskResult.objects.failed()
    return Health(
        healthy=not problems,
        checked_at=now,
        problems=tuple(problems),
        stale_after_seconds=stale_after,
        last_heartbeat=last_state,
        workers=workers,
        failed_tasks=failed.count(),
        latest_failures=tuple(failed_tasks(limit=LATEST_FAILURES)),
        queue_depth=queued.count(),
        oldest_queued_age_seconds=None if oldest is None else (now - oldest).total_seconds(),
        last_crawler_run=_last_crawler_run(),
        periodic_jobs=periodic_job_states(jobs),
        last_doctor_run=_last_doctor_run(),
    )


def periodic_job_states(jobs: Sequence[PeriodicJob]) -> tuple[PeriodicJobState, ...]:
    """Each job with its latest runs, latest first: one query (a job keeps a few runs)."""
    runs: dict[str, list[PeriodicRunState]] = {job.name: [] for job in jobs}
    rows = (
        PeriodicRun.objects.filter(job__in=list(runs))
        .select_related("task_result")
        .order_by("job", "-period_start")
    )
    for row in rows:
        if len(runs[row.job]) < LATEST_PERIODIC_RUNS:
            runs[row.job].append(_periodic_run_state(row))
    return tuple(
        PeriodicJobState(name=job.name, every_seconds=job.every(), runs=tuple(runs[job.name]))
        for job in jobs
    )


def _periodic_run_state(run: PeriodicRun) -> PeriodicRunState:
    task = run.task_result
    duration = None
    if task is not None and task.started_at is not None and task.finished_at is not None:
        duration = (task.finished_at - task.started_at).total_seconds()
    return PeriodicRunState(
        period_start=run.period_start,
        enqueued_at=run.enqueued_at,
        task_id=None if task is None else str(task.pk),
        status=None if task is None else task.status,
        duration_seconds=duration,
    )


def _last_doctor_run() -> DoctorRunSummary | None:
    run = DoctorRun.objects.order_by("-started_at", "-id").first()
    if run is None:
        return None
    return DoctorRunSummary(
        id=run.pk,
        started_at=run.started_at,
        finished_at=run.finished_at,
        violations=tuple(run.violations),
        capped=tuple(run.capped),
    )


def failed_tasks(*, limit: int) -> list[TaskFailure]:
    """The latest failed tasks, most recent first (each retryable by ``tasks.retry_failed``)."""
    rows = DBTaskResult.objects.failed().order_by("-finished_at", "-enqueued_at")[:limit]
    return [
        TaskFailure(
            id=str(row.pk),
            task_path=row.task_path,
            args=row.args_kwargs.get("args", []),
            kwargs=row.args_kwargs.get("kwargs", {}),
            finished_at=row.finished_at,
            exception=row.exception_class_path,
            traceback=row.traceback[-TRACEBACK_TAIL_CHARS:],
        )
        for row in rows
    ]


def _worker_state(beat: WorkerHeartbeat, *, now: datetime, stale_after: float) -> WorkerState:
    age = max(0.0, (now - beat.beat_at).total_seconds())
    return WorkerState(
        worker_id=beat.worker_id,
        host=beat.host,
        pid=beat.pid,
        started_at=beat.started_at,
        beat_at=beat.beat_at,
        age_seconds=age,
        stopped_at=beat.stopped_at,
        alive=beat.stopped_at is None and age <= stale_after,
    )


def _last_crawler_run() -> CrawlerRunSummary | None:
    run = CrawlerRun.objects.order_by("-started_at", "-id").first()
    if run is None:
        return None
    return CrawlerRunSummary(
        id=run.pk,
        started_at=run.started_at,
        finished_at=run.finished_at,
        counts=run.counts,
        report=run.report,
    )
