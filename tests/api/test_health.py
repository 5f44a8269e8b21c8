"""GET /health: the background work's state, 200 when a worker is alive, 503 otherwise."""

from datetime import timedelta

import pytest
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from memories.maintenance.tasks import enqueue_periodic, recompute_slot_task, record_heartbeat
from memories.store.models import CrawlerRun, DoctorRun
from notifications.worker import PERIODIC_JOBS
from tests.taskqueue import run_queued_tasks

pytestmark = pytest.mark.django_db

SHAPE = {
    "healthy",
    "checked_at",
    "problems",
    "stale_after_seconds",
    "heartbeat",
    "workers",
    "failed_tasks",
    "queue",
    "last_crawler_run",
    "periodic_jobs",
    "last_doctor_run",
}


def test_health_is_503_without_any_worker_heartbeat(member, agent_for):
    response = agent_for(member).get("/health")
    assert response.status_code == 503
    body = response.json()
    assert set(body) == SHAPE
    assert body["healthy"] is False
    assert body["problems"] == ["no worker has ever reported a heartbeat"]
    assert body["heartbeat"] is None and body["workers"] == []


def test_health_is_200_after_a_fresh_heartbeat(member, agent_for):
    record_heartbeat("w1", now=timezone.now())
    response = agent_for(member).get("/health")
    assert response.status_code == 200
    body = response.json()
    assert body["healthy"] is True and body["problems"] == []
    assert body["heartbeat"]["worker_id"] == "w1" and body["heartbeat"]["alive"] is True
    assert body["heartbeat"]["age_seconds"] < 60
    assert [worker["worker_id"] for worker in body["workers"]] == ["w1"]
    assert body["failed_tasks"] == {"count": 0, "latest": []}
    assert body["queue"] == {"depth": 0, "oldest_age_seconds": None}
    assert body["last_crawler_run"] is None


def test_health_is_503_once_the_heartbeat_is_stale(member, agent_for, settings):
    settings.CLAIMGRAPH_HEARTBEAT_STALE_SECONDS = 60
    record_heartbeat("w1", now=timezone.now() - timedelta(seconds=120))
    body = agent_for(member).get("/health").json()
    assert body["healthy"] is False
    assert body["problems"][0].startswith("no heartbeat for 120 s")


def test_health_reports_queue_failures_and_the_last_crawler_run(member, agent_for):
    record_heartbeat("w1", now=timezone.now())
    failing = recompute_slot_task.enqueue(scope_id=1, subject_id=2, predicate_id=10**9)
    run_queued_tasks()
    queued = recompute_slot_task.enqueue(scope_id=1, subject_id=2, predicate_id=3)
    DBTaskResult.objects.filter(pk=queued.id).update(
        enqueued_at=timezone.now() - timedelta(minutes=5)
    )
    CrawlerRun.objects.create(
        started_at=timezone.now(),
        finished_at=timezone.now(),
        counts={"decayed": 2},
        report={"decayed": ["a fact of some scope"]},
    )
    body = agent_for(member).get("/health").json()
    assert body["queue"]["depth"] == 1
    assert body["queue"]["oldest_age_seconds"] == pytest.approx(300, abs=5)
    assert body["failed_tasks"]["count"] == 1
    [failure] = body["failed_tasks"]["latest"]
    assert failure["id"] == str(failing.id)
    assert failure["exception"].endswith("DoesNotExist")
    # Nothing that names the rows a task worked on, whatever their scope.
    assert set(failure) == {"id", "task_path", "finished_at", "exception"}
    run = body["last_crawler_run"]
    assert run["counts"] == {"decayed": 2}
    assert run["report"] is None


def test_a_global_steward_reads_the_crawler_report(steward, agent_for):
    record_heartbeat("w1", now=timezone.now())
    CrawlerRun.objects.create(started_at=timezone.now(), counts={}, report={"decayed": 1})
    body = agent_for(steward).get("/health").json()
    assert body["last_crawler_run"]["report"] == {"decayed": 1}


def test_health_needs_a_token_and_takes_no_parameters(member, agent_for, anonymous):
    assert anonymous.get("/health").status_code == 401
    refused = agent_for(member).get("/health", scope="project")
    assert refused.status_code == 400
    assert refused.json()["field"] == "scope"


def test_health_lists_each_periodic_job_with_its_last_runs(member, agent_for):
    record_heartbeat("w1", now=timezone.now())
    sweep = next(job for job in PERIODIC_JOBS if job.name == "recompute stale truth slots")
    enqueued = enqueue_periodic(sweep, now=timezone.now())
    run_queued_tasks()
    body = agent_for(member).get("/health").json()
    jobs = {job["name"]: job for job in body["periodic_jobs"]}
    assert list(jobs) == [job.name for job in PERIODIC_JOBS]
    (run,) = jobs[sweep.name]["runs"]
    assert run["task_id"] == str(enqueued.id) and run["status"] == "SUCCESSFUL"
    assert run["duration_seconds"] >= 0
    assert jobs["doctor"]["runs"] == []


DOCTOR_VIOLATION = {
    "check": "unused-entity",
    "what": "entity 9 ('Orphan') in scope 1 is named by no fact and no merge",
    "ids": ["9"],
    "todo": "delete it",
}


def test_the_last_doctor_run_counts_violations_for_everyone_and_lists_them_for_stewards(
    member, steward, agent_for
):
    record_heartbeat("w1", now=timezone.now())
    DoctorRun.objects.create(
        started_at=timezone.now(), finished_at=timezone.now(), violations=[DOCTOR_VIOLATION]
    )
    seen = agent_for(member).get("/health").json()["last_doctor_run"]
    assert seen["counts"] == {"unused-entity": 1} and seen["violations"] is None
    full = agent_for(steward).get("/health").json()["last_doctor_run"]
    assert full["violations"] == [DOCTOR_VIOLATION]
