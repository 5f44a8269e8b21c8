"""``GET /api/v1/health``: is the background work alive (SPEC §10, §12)?

Any valid token may read it, member or steward: an agent (or a monitor
holding a token) must be able to tell a dead worker from a quiet one. It
shows nothing of any scope to do so. Failed tasks are named by id, task and
exception class, without their arguments or traceback, which name the rows
they were working on whatever their scope; the crawler's counts per action
are totals, and its free-form report is shown only to a global steward, who
may read every scope anyway.
"""

from datetime import datetime
from typing import Any

from django.http import HttpRequest
from ninja import Router
from ninja.responses import Status
from pydantic import BaseModel

from api.memory import caller
from api.schemas import READ_ERRORS, QueryParameters
from memories.health import CrawlerRunSummary, Health, WorkerState, background_health
from memories.roles import is_global_steward

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


# --- the operation -----------------------------------------------------------------


@router.get("/health", response={200: HealthOut, 503: HealthOut, **READ_ERRORS})
def get_health(request: HttpRequest):
    """The background work: heartbeats, failed and queued tasks, the last crawler run."""
    QueryParameters.refuse_unknown(request)
    health = background_health()
    body = present_health(health, full_report=is_global_steward(caller(request)))
    return Status(200 if health.healthy else 503, body)


def present_health(health: Health, *, full_report: bool) -> dict[str, Any]:
    """The Health shape; the crawler's report only with ``full_report``."""
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
