"""``GET /api/v1/health``: is the background work alive (SPEC §10, §12)?

Any valid token may read it, member or steward: an agent (or a monitor
holding a token) must be able to tell a dead worker from a quiet one. It
shows nothing of any scope to do so. Failed tasks are named by id, task and
exception class, without their arguments or traceback, which name the rows
they were working on whatever their scope; the crawler's counts per action
are totals, and its free-form report is shown only to a global steward, who
may read every scope anyway. The same goes for the last doctor run: its
count of violations per check for everyone, the violations themselves (which
name rows of any scope) for a global steward only. The periodic jobs' runs
name only their periods and tasks.
"""

from datetime import datetime
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Router
from ninja.responses import Status
from pydantic import BaseModel

from api.memory import caller
from api.schemas import READ_ERRORS, QueryParameters
from memories.maintenance.health import (
    CrawlerRunSummary,
    DoctorRunSummary,
    Health,
    PeriodicJobState,
    WorkerState,
    background_health,
)
from memories.store.roles import is_global_steward
from notifications.worker import PERIODIC_JOBS

router = Router(tags=["health"])

# --- shapes ------------------------------------------------------------------------


class WorkerOut(BaseModel):
    worker_id: str
    host: str
    pid: int
    started_at: datetime
    beat_at: datetime
    age_seconds: float
    stopped_at: datetime | None
    alive: bool


class FailureOut(BaseModel):
    id: str
    task_path: str
    finished_at: datetime | None
    exception: str


class FailedTasksOut(BaseModel):
    count: int
    latest: list[FailureOut]


class QueueOut(BaseModel):
    depth: int
    oldest_age_seconds: float | None


class CrawlerRunOut(BaseModel):
    id: int
    started_at: datetime
    finished_at: datetime | None
    counts: dict[str, Any]
    report: dict[str, Any] | None


class PeriodicRunOut(BaseModel):
    period_start: datetime
    enqueued_at: datetime
    task_id: str | None
    status: Literal["READY", "RUNNING", "FAILED", "SUCCESSFUL"] | None
    duration_seconds: float | None


class PeriodicJobOut(BaseModel):
    name: str
    every_seconds: float
    runs: list[PeriodicRunOut]


class ViolationOut(BaseModel):
    check: str
    what: str
    ids: list[str]
    todo: str


class DoctorRunOut(BaseModel):
    id: int
    started_at: datetime
    finished_at: datetime
    # How many violations each check found (checks with none are absent).
    counts: dict[str, int]
    capped: list[str]
    violations: list[ViolationOut] | None


class HealthOut(BaseModel):
    healthy: bool
    checked_at: datetime
    problems: list[str]
    stale_after_seconds: float
    heartbeat: WorkerOut | None
    workers: list[WorkerOut]
    failed_tasks: FailedTasksOut
    queue: QueueOut
    last_crawler_run: CrawlerRunOut | None
    periodic_jobs: list[PeriodicJobOut]
    last_doctor_run: DoctorRunOut | None


# --- the operation -----------------------------------------------------------------


@router.get("/health", response={200: HealthOut, 503: HealthOut, **READ_ERRORS})
def get_health(request: HttpRequest):
    """The background work: heartbeats, failed and queued tasks, the periodic jobs' last runs,
    the last crawler run and the last doctor run."""
    QueryParameters.refuse_unknown(request)
    health = background_health(jobs=PERIODIC_JOBS)
    body = present_health(health, full_report=is_global_steward(caller(request)))
    return Status(200 if health.healthy else 503, body)


def present_health(health: Health, *, full_report: bool) -> dict[str, Any]:
    """The Health shape; the crawler's report and the doctor's violations only with
    ``full_report``."""
    return {
        "healthy": health.healthy,
        "checked_at": health.checked_at,
        "problems": list(health.problems),
        "stale_after_seconds": health.stale_after_seconds,
        "heartbeat": _worker(health.last_heartbeat) if health.last_heartbeat else None,
        "workers": [_worker(worker) for worker in health.workers],
        "failed_tasks": {
            "count": health.failed_tasks,
            "latest": [
                {
                    "id": failure.id,
                    "task_path": failure.task_path,
                    "finished_at": failure.finished_at,
                    "exception": failure.exception,
                }
                for failure in health.latest_failures
            ],
        },
        "queue": {
            "depth": health.queue_depth,
            "oldest_age_seconds": health.oldest_queued_age_seconds,
        },
        "last_crawler_run": _crawler_run(health.last_crawler_run, full_report=full_report),
        "periodic_jobs": [_periodic_job(job) for job in health.periodic_jobs],
        "last_doctor_run": _doctor_run(health.last_doctor_run, full_report=full_report),
    }


def _periodic_job(job: PeriodicJobState) -> dict[str, Any]:
    return {
        "name": job.name,
        "every_seconds": job.every_seconds,
        "runs": [
            {
                "period_start": run.period_start,
                "enqueued_at": run.enqueued_at,
                "task_id": run.task_id,
                "status": run.status,
                "duration_seconds": run.duration_seconds,
            }
            for run in job.runs
        ],
    }


def _doctor_run(run: DoctorRunSummary | None, *, full_report: bool) -> dict[str, Any] | None:
    if run is None:
        return None
    counts: dict[str, int] = {}
    for violation in run.violations:
        counts[violation["check"]] = counts.get(violation["check"], 0) + 1
    return {
        "id": run.id,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "counts": counts,
        "capped": list(run.capped),
        "violations": list(run.violations) if full_report else None,
    }


def _worker(worker: WorkerState) -> dict[str, Any]:
    return {
        "worker_id": worker.worker_id,
        "host": worker.host,
        "pid": worker.pid,
        "started_at": worker.started_at,
        "beat_at": worker.beat_at,
        "age_seconds": worker.age_seconds,
        "stopped_at": worker.stopped_at,
        "alive": worker.alive,
    }


def _crawler_run(run: CrawlerRunSummary | None, *, full_report: bool) -> dict[str, Any] | None:
    if run is None:
        return None
    return {
        "id": run.id,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "counts": run.counts,
        "report": run.report if full_report else None,
    }
