"""The task worker, its scheduler and the health of background work.

One test starts the real ``manage.py worker`` process against the test
database; the others drive the same pieces in-process.
"""

import math
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from django.db import transaction
from django.tasks import TaskResultStatus
from django.urls import reverse
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from memories.maintenance.health import background_health
from memories.maintenance.tasks import (
    KEEP_PERIODIC_RUNS,
    PeriodicJob,
    enqueue_once,
    enqueue_periodic,
    heartbeat,
    recompute_slot_task,
    record_heartbeat,
    retry_failed,
    sweep_stale_slots_task,
)
from memories.maintenance.worker import Scheduler
from memories.store.models import CrawlerRun, PeriodicRun, Predicate, TruthSlot, WorkerHeartbeat
from memories.write.actions import assert_fact
from tests.conftest import at, make_user
from tests.deadlines import PROCESS_DEADLINE, wait_until
from tests.processes import ROOT, database_environment
from tests.racing import race
from tests.taskqueue import run_queued_tasks, task_statuses


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
        env=database_environment(),
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

        wait_until(done, what="the worker to run both tasks", every=0.1)
        assert TruthSlot.objects.get().decided_by == "detection"
        assert DBTaskResult.objects.get(pk=beat.id).return_value == "worker-under-test"
        # The scheduler's first round: a heartbeat and the stale-slot sweep.
        wait_until(
            lambda: DBTaskResult.objects.filter(
                task_path=sweep_stale_slots_task.module_path, status=TaskResultStatus.SUCCESSFUL
            ).exists(),
            what="the periodic sweep",
            every=0.1,
        )
        health = background_health()
        assert health.healthy, health.problems
        assert health.last_heartbeat.worker_id == "worker-under-test"
        assert health.last_heartbeat.pid == process.pid
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=PROCESS_DEADLINE)

    assert process.returncode == 0, output
    assert "worker worker-under-test stopped" in output
    # Tasks that succeed are not printed at the default verbosity (-v 2 does).
    assert "state=SUCCESSFUL" not in output, output
    stopped = WorkerHeartbeat.objects.get(worker_id="worker-under-test")
    assert stopped.stopped_at is not None
    health = background_health()
    assert not health.healthy
    assert health.problems == ("the last worker (worker-under-test) stopped",)


def start_worker(worker_id: str, **environment: str) -> subprocess.Popen:
    """A real ``manage.py worker`` process on this test run's database."""
    return subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "worker",
            "--interval=0.1",
            "--heartbeat-seconds=0.5",
            "--no-startup-delay",
            f"--worker-id={worker_id}",
        ],
        cwd=ROOT,
        env=database_environment() | environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_three_real_workers_enqueue_a_periodic_job_once_per_period():
    # The stale-slot sweep, every second: on an empty store a run takes a few
    # milliseconds, so each period's run is done long before the next starts
    # (a run still waiting would make the next period skip, not double).
    names = [f"racer-{n}" for n in range(3)]
    workers = [start_worker(name, CLAIMGRAPH_STALE_SWEEP_SECONDS="1") for name in names]
    try:
        wait_until(
            lambda: WorkerHeartbeat.objects.filter(worker_id__in=names).count() == 3,
            what="the three workers' first heartbeats",
            every=0.1,
        )
        all_running = time.time()
        # Until a run is enqueued five whole periods on: at least five periods
        # in which all three ran, however long a busy machine takes to get there.
        fifth = datetime.fromtimestamp(math.ceil(all_running) + 5, tz=UTC)
        wait_until(
            lambda: DBTaskResult.objects.filter(
                task_path=sweep_stale_slots_task.module_path, enqueued_at__gte=fifth
            ).exists(),
            what="a sweep enqueued five periods after all three workers started",
            every=0.1,
        )
        stopping = time.time()
    finally:
        for process in workers:
            process.send_signal(signal.SIGTERM)
        outputs = [process.communicate(timeout=PROCESS_DEADLINE)[0] for process in workers]
    assert [process.returncode for process in workers] == [0, 0, 0], outputs

    enqueued = DBTaskResult.objects.filter(task_path=sweep_stale_slots_task.module_path)
    per_second = Counter(
        int(at.timestamp()) for at in enqueued.values_list("enqueued_at", flat=True)
    )
    # No whole period in which all three workers were running has two runs.
    # (The first worker's first run is enqueued as it starts, mid-period, and
    # may land in the next second: outside this window.) A period may have
    # none on a busy machine: one whose previous run still waits is skipped.
    periods = range(math.ceil(all_running), math.floor(stopping))
    assert len(periods) >= 5
    runs_per_period = [per_second[period] for period in periods]
    assert max(runs_per_period) == 1, runs_per_period
    assert runs_per_period.count(1) >= len(periods) // 2, runs_per_period
    # Over the whole run, each task is one period's claim and each claim has its task.
    runs = dict(
        PeriodicRun.objects.filter(job="recompute stale truth slots").values_list(
            "period_start", "task_result_id"
        )
    )
    assert sorted(str(task_id) for task_id in runs.values()) == sorted(
        str(task_id) for task_id in enqueued.values_list("id", flat=True)
    )
    assert all(start.microsecond == 0 for start in runs)


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
def test_the_scheduler_beats_and_enqueues_each_job_at_the_start_of_its_periods():
    started = at("2026-12-01 10:00:30")  # half-way through a one-minute period
    job = PeriodicJob("sweep", sweep_stale_slots_task, lambda: 60.0)
    scheduler = Scheduler(
        worker_id="w1",
        heartbeat_seconds=15,
        jobs=[job],
        clock=lambda: 100.0,
        wall_clock=lambda: started,
    )

    def tick(seconds: float) -> None:
        scheduler.tick(100.0 + seconds, started + timedelta(seconds=seconds))

    tick(0)  # the period of 10:00
    first_beat = WorkerHeartbeat.objects.get(worker_id="w1").beat_at
    assert task_statuses() == [("sweep_stale_slots_task", "READY")]

    tick(10)  # nothing is due yet
    assert WorkerHeartbeat.objects.get(worker_id="w1").beat_at == first_beat
    tick(16)  # a heartbeat is
    assert WorkerHeartbeat.objects.get(worker_id="w1").beat_at > first_beat

    run_queued_tasks()
    tick(29.9)  # still the period of 10:00, which has its run
    assert task_statuses() == [("sweep_stale_slots_task", "SUCCESSFUL")]
    tick(30)  # 10:01, a minute after the last period started, not after this worker did
    assert task_statuses()[-1] == ("sweep_stale_slots_task", "READY")

    tick(90)  # 10:02 is due, but the run of 10:01 still waits: no second copy
    assert len(task_statuses()) == 2
    run_queued_tasks()
    tick(150)
    assert list(PeriodicRun.objects.filter(job="sweep").values_list("period_start", flat=True)) == [
        at("2026-12-01 10:03"),
        at("2026-12-01 10:01"),
        at("2026-12-01 10:00"),
    ]


@pytest.mark.parametrize(
    ("moment", "every", "start"),
    [
        ("2026-12-01 10:00:30", 60.0, "2026-12-01 10:00:00"),
        ("2026-12-01 10:00:00", 60.0, "2026-12-01 10:00:00"),
        ("2026-12-01 10:59:59.999999", 3600.0, "2026-12-01 10:00:00"),
        ("2026-12-01 10:00:00.74", 0.5, "2026-12-01 10:00:00.5"),
        ("2026-12-01 10:00:01.3", 0.3, "2026-12-01 10:00:01.2"),
    ],
)
def test_a_period_is_a_multiple_of_its_length_since_the_epoch(moment, every, start):
    job = PeriodicJob("job", sweep_stale_slots_task, lambda: every)
    assert job.period_start(at(moment)) == at(start)
    assert job.seconds_to_next_period(at(moment)) == pytest.approx(
        (at(start) - at(moment)).total_seconds() + every
    )


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_workers_racing_for_one_period_enqueue_one_run():
    job = PeriodicJob("sweep", sweep_stale_slots_task, lambda: 60.0)
    now = timezone.now()
    enqueued = race(lambda _: enqueue_periodic(job, now=now), range(8))
    assert sum(result is not None for result in enqueued) == 1
    assert task_statuses() == [("sweep_stale_slots_task", "READY")]
    (run,) = PeriodicRun.objects.all()
    assert (run.job, run.period_start) == ("sweep", job.period_start(now))
    assert str(run.task_result_id) == next(r.id for r in enqueued if r is not None)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_identical_enqueues_racing_leave_one_waiting_task():
    def enqueue(_):
        # Inside a transaction that goes on a while after the enqueue, as a
        # task's own would: the others must wait for it to commit, not miss it.
        with transaction.atomic():
            result = enqueue_once(sweep_stale_slots_task, predicate_id=7)
            time.sleep(0.2)
        return result

    enqueued = race(enqueue, range(8))
    assert sum(result is not None for result in enqueued) == 1
    assert task_statuses() == [("sweep_stale_slots_task", "READY")]
    # Other arguments are another call.
    assert enqueue_once(sweep_stale_slots_task, predicate_id=8) is not None


@pytest.mark.django_db
def test_a_period_claimed_by_a_rolled_back_transaction_is_free_again():
    job = PeriodicJob("sweep", sweep_stale_slots_task, lambda: 60.0)
    now = timezone.now()

    class RolledBack(Exception):
        pass

    with pytest.raises(RolledBack), transaction.atomic():
        assert enqueue_periodic(job, now=now) is not None
        raise RolledBack
    assert not PeriodicRun.objects.exists() and not DBTaskResult.objects.exists()
    assert enqueue_periodic(job, now=now) is not None
    assert PeriodicRun.objects.get().task_result_id is not None


@pytest.mark.django_db
def test_only_a_jobs_latest_runs_are_kept():
    job = PeriodicJob("often", sweep_stale_slots_task, lambda: 0.5)
    other = PeriodicJob("other", heartbeat, lambda: 0.5)
    start = at("2026-12-01 10:00")
    enqueue_periodic(other, now=start)
    for period in range(KEEP_PERIODIC_RUNS + 5):
        assert enqueue_periodic(job, now=start + timedelta(seconds=period * 0.5)) is not None
        run_queued_tasks()
    kept = PeriodicRun.objects.filter(job="often").values_list("period_start", flat=True)
    assert len(kept) == KEEP_PERIODIC_RUNS
    assert min(kept) == start + timedelta(seconds=5 * 0.5)
    assert PeriodicRun.objects.filter(job="other").count() == 1


@pytest.mark.django_db
def test_a_pruned_task_result_leaves_its_period_claimed():
    job = PeriodicJob("sweep", sweep_stale_slots_task, lambda: 60.0)
    now = timezone.now()
    enqueued = enqueue_periodic(job, now=now)
    run_queued_tasks()
    DBTaskResult.objects.filter(pk=enqueued.id).delete()  # as django-tasks-db's prune does
    assert PeriodicRun.objects.get().task_result_id is None
    assert enqueue_periodic(job, now=now) is None
    (state,) = background_health(jobs=[job]).periodic_jobs
    assert [(run.task_id, run.status) for run in state.runs] == [(None, None)]


@pytest.mark.django_db
def test_a_live_workers_scheduler_takes_back_what_a_lost_worker_left(settings):
    settings.CLAIMGRAPH_HEARTBEAT_STALE_SECONDS = 60
    now = at("2026-12-01 10:00:10")
    # A worker killed while it ran two tasks: a periodic job's run and a
    # recomputation that a write asked for.
    record_heartbeat("lost", now=now - timedelta(seconds=61))
    job = PeriodicJob("sweep", sweep_stale_slots_task, lambda: 3600.0)
    periodic = enqueue_periodic(job, now=now - timedelta(seconds=70))
    predicate = Predicate.objects.get(name="core/uses")
    asked = recompute_slot_task.enqueue(scope_id=1, subject_id=2, predicate_id=predicate.pk)
    for task_result in DBTaskResult.objects.all():
        task_result.claim("lost")
    record_heartbeat("alive", now=now)
    assert enqueue_periodic(job, now=now + timedelta(seconds=3600)) is None  # the job is stuck

    schedulers = [
        Scheduler(worker_id=name, heartbeat_seconds=15, jobs=[], wall_clock=lambda: now)
        for name in ("alive", "also-alive")
    ]
    for scheduler in schedulers:  # both in one period: one of them takes back
        scheduler.tick(scheduler.clock(), now)

    assert WorkerHeartbeat.objects.get(worker_id="lost").stopped_at == now
    assert WorkerHeartbeat.objects.get(worker_id="alive").stopped_at is None
    left = DBTaskResult.objects.filter(pk__in=[periodic.id, asked.id])
    assert set(left.values_list("status", flat=True)) == {TaskResultStatus.FAILED}
    assert {row.exception_class_path for row in left} == {"memories.maintenance.tasks.WorkerLost"}
    # The write's recomputation runs again; the periodic run waits for its next period.
    assert task_statuses() == [
        ("sweep_stale_slots_task", "FAILED"),
        ("recompute_slot_task", "FAILED"),
        ("recompute_slot_task", "READY"),
    ]
    assert PeriodicRun.objects.filter(job="reclaim lost workers").count() == 1
    assert enqueue_periodic(job, now=now + timedelta(seconds=3600)) is not None
    assert background_health(now=now).healthy


@pytest.mark.django_db
def test_a_late_worker_that_beats_again_is_alive_again(settings):
    settings.CLAIMGRAPH_HEARTBEAT_STALE_SECONDS = 60
    now = at("2026-12-01 10:00:10")
    record_heartbeat("late", now=now - timedelta(seconds=90))
    scheduler = Scheduler(worker_id="alive", heartbeat_seconds=15, jobs=[])
    scheduler.tick(scheduler.clock(), now)
    assert WorkerHeartbeat.objects.get(worker_id="late").stopped_at == now
    record_heartbeat("late", now=now + timedelta(seconds=1))
    assert WorkerHeartbeat.objects.get(worker_id="late").stopped_at is None


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_worker_says_its_start_once_at_every_verbosity():
    """Issue 30 §14: at -v 2 db_worker's own "Starting worker" repeated the command's line."""
    process = subprocess.Popen(
        [sys.executable, "manage.py", "worker", "-v", "2", "--no-startup-delay"],
        cwd=ROOT,
        env=database_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        first = process.stdout.readline()
        time.sleep(2)
    finally:
        process.send_signal(signal.SIGTERM)
        said = first + process.communicate(timeout=30)[0]
    assert first.startswith("worker ") and first.rstrip().endswith(" starting"), said
    assert sum("starting" in line.lower() for line in said.splitlines()) == 1, said
