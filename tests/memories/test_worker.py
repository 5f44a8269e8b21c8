"""The task worker, its scheduler and the health of background work.

One test starts the real ``manage.py worker`` process against the test
database; the others drive the same pieces in-process.
"""

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection
from django.tasks import TaskResultStatus
from django.urls import reverse
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from memories.actions import assert_fact
from memories.health import background_health
from memories.models import CrawlerRun, Predicate, TruthSlot, WorkerHeartbeat
from memories.tasks import (
    PeriodicJob,
    heartbeat,
    recompute_slot_task,
    record_heartbeat,
    retry_failed,
    sweep_stale_slots_task,
)
from memories.worker import Scheduler
from tests.conftest import make_user
from tests.taskqueue import run_queued_tasks, task_statuses

ROOT = Path(__file__).resolve().parents[2]


def worker_environment() -> dict[str, str]:
    """The environment of a worker process that uses this test run's database."""
    database = connection.settings_dict
    env = {key: value for key, value in os.environ.items() if key != "CLAIMGRAPH_TEST_DATABASE"}
    env["DJANGO_DEBUG"] = "1"
    if os.environ.get("DATABASE_URL"):
        credentials = quote(database["USER"]) + (
            f":{quote(database['PASSWORD'])}" if database["PASSWORD"] else ""
        )
        env["DATABASE_URL"] = (
            f"postgresql://{credentials}@{database['HOST']}:{database['PORT']}/{database['NAME']}"
        )
    else:
        # The embedded server: the worker joins it and names the test database.
        env["CLAIMGRAPH_DATABASE_NAME"] = database["NAME"]
    return env


def wait_for(condition, *, timeout: float = 15.0, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_real_worker_runs_queued_work_beats_and_stops_cleanly(member):
    fact = assert_fact(
        actor=member,
        data={
            "scope": "project",
            "subject": "AuthService",
            "predicate": "core/has-version",
            "object": "2.0.0",
            "source_type": "code",
        },
    ).fact
    recompute = recompute_slot_task.enqueue(fact.scope_id, fact.subject_id, fact.predicate_id)
    beat = heartbeat.enqueue()

    process = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "worker",
            "--interval=0.1",
            "--heartbeat-seconds=0.5",
            "--no-startup-delay",
            "--worker-id=worker-under-test",
        ],
        cwd=ROOT,
        env=worker_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:

        def done() -> bool:
            statuses = DBTaskResult.objects.filter(pk__in=[recompute.id, beat.id]).values_list(
                "status", flat=True
            )
            return list(statuses) == [TaskResultStatus.SUCCESSFUL] * 2

        wait_for(done, what="the worker to run both tasks")
        assert TruthSlot.objects.get().decided_by == "detection"
        assert DBTaskResult.objects.get(pk=beat.id).return_value == "worker-under-test"
        # The scheduler's first round: a heartbeat and the stale-slot sweep.
        wait_for(
            lambda: DBTaskResult.objects.filter(
                task_path=sweep_stale_slots_task.module_path, status=TaskResultStatus.SUCCESSFUL
            ).exists(),
            what="the periodic sweep",
        )
        health = background_health()
        assert health.healthy, health.problems
        assert health.last_heartbeat.worker_id == "worker-under-test"
        assert health.last_heartbeat.pid == process.pid
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=15)

    assert process.returncode == 0, output
    assert "worker worker-under-test stopped" in output
    stopped = WorkerHeartbeat.objects.get(worker_id="worker-under-test")
    assert stopped.stopped_at is not None
    health = background_health()
    assert not health.healthy
    assert health.problems == ("the last worker (worker-under-test) stopped",)


@pytest.mark.django_db
def test_a_silent_worker_is_unhealthy_once_its_heartbeat_is_stale(settings):
    settings.CLAIMGRAPH_HEARTBEAT_STALE_SECONDS = 60
    now = timezone.now()
    record_heartbeat("w1", now=now)
    assert background_health(now=now + timedelta(seconds=60)).healthy
    late = background_health(now=now + timedelta(seconds=61))
    assert not late.healthy
    assert late.heartbeat_stale
    assert late.heartbeat_age_seconds == pytest.approx(61)
    assert late.problems == ("no heartbeat for 61 s (stale after 60 s)",)


@pytest.mark.django_db
def test_no_heartbeat_at_all_is_unhealthy():
    health = background_health()
    assert not health.healthy
    assert health.problems == ("no worker has ever reported a heartbeat",)
    assert health.last_heartbeat is None


@pytest.mark.django_db
def test_health_reports_the_queue_and_the_last_crawler_run():
    record_heartbeat("w1", now=timezone.now())
    first = sweep_stale_slots_task.enqueue()
    sweep_stale_slots_task.enqueue()
    DBTaskResult.objects.filter(pk=first.id).update(
        enqueued_at=timezone.now() - timedelta(minutes=5)
    )
    CrawlerRun.objects.create(
        started_at=timezone.now(), finished_at=timezone.now(), counts={"decayed": 2}
    )
    health = background_health()
    assert health.healthy
    assert health.queue_depth == 2
    assert health.oldest_queued_age_seconds == pytest.approx(300, abs=5)
    assert health.last_crawler_run.counts == {"decayed": 2}


@pytest.mark.django_db
def test_a_failed_task_is_visible_and_retried_with_the_same_arguments():
    predicate = Predicate.objects.get(name="core/uses")
    failing = recompute_slot_task.enqueue(scope_id=1, subject_id=2, predicate_id=predicate.pk + 999)
    run_queued_tasks()
    health = background_health()
    assert health.failed_tasks == 1
    (failure,) = health.latest_failures
    assert failure.id == failing.id
    assert failure.exception.endswith("DoesNotExist")
    assert failure.kwargs == {"scope_id": 1, "subject_id": 2, "predicate_id": predicate.pk + 999}

    retried = retry_failed(failing.id)
    assert retried.id != failing.id
    again = DBTaskResult.objects.get(pk=retried.id)
    assert again.status == TaskResultStatus.READY
    assert again.args_kwargs == DBTaskResult.objects.get(pk=failing.id).args_kwargs
    with pytest.raises(DBTaskResult.DoesNotExist):
        retry_failed(retried.id)  # not failed: nothing to retry


@pytest.mark.django_db
def test_the_admin_retries_failed_tasks(client):
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    failing = recompute_slot_task.enqueue(1, 2, 10_000)
    run_queued_tasks()
    response = client.post(
        reverse("admin:django_tasks_database_dbtaskresult_changelist"),
        {"action": "retry", "_selected_action": [failing.id]},
        follow=True,
    )
    assert response.status_code == 200
    assert "Enqueued 1 failed task(s) again." in response.content.decode()
    assert task_statuses() == [("recompute_slot_task", "FAILED"), ("recompute_slot_task", "READY")]


@pytest.mark.django_db
def test_the_scheduler_beats_and_enqueues_periodic_jobs_when_due():
    clock = [100.0]
    job = PeriodicJob("sweep", sweep_stale_slots_task, lambda: 60.0)
    scheduler = Scheduler(worker_id="w1", heartbeat_seconds=15, jobs=[job], clock=lambda: clock[0])

    scheduler.tick(100.0)
    first_beat = WorkerHeartbeat.objects.get(worker_id="w1").beat_at
    assert task_statuses() == [("sweep_stale_slots_task", "READY")]

    scheduler.tick(110.0)  # nothing is due yet
    assert WorkerHeartbeat.objects.get(worker_id="w1").beat_at == first_beat
    scheduler.tick(116.0)  # a heartbeat is
    assert WorkerHeartbeat.objects.get(worker_id="w1").beat_at > first_beat

    scheduler.tick(161.0)  # the sweep is due, but its last run still waits in the queue
    assert task_statuses() == [("sweep_stale_slots_task", "READY")]
    run_queued_tasks()
    scheduler.tick(222.0)
    assert task_statuses() == [
        ("sweep_stale_slots_task", "SUCCESSFUL"),
        ("sweep_stale_slots_task", "READY"),
    ]
