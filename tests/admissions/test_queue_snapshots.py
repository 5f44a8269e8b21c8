"""The daily queue snapshot: one row per scope, queue and day, counted as the dashboard counts."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse

from admissions.actions import file_challenge, record_verdict
from admissions.models import QueueSnapshot
from admissions.queues import QUEUES, waiting
from admissions.snapshots import queue_snapshot_task, take_queue_snapshot
from memories.maintenance.tasks import enqueue_periodic
from memories.store.models import Scope
from notifications.worker import PERIODIC_JOBS
from tests.admissions.conftest import write_fact
from tests.conftest import at
from tests.console.conftest import signed_in
from tests.racing import race
from tests.taskqueue import run_queued_tasks

pytestmark = pytest.mark.django_db

NOW = at("2026-06-10T08:00")
TODAY = NOW.date()


@pytest.fixture
def queues(scope, other_scope, member, steward, outsider) -> None:
    """In ``project``: a commitment's conflict (both sides candidates), three more
    candidates, a suspended fact and its challenge; in ``elsewhere``: one candidate."""
    write_fact(
        steward,
        "GraphQL",
        subject="api-layer",
        predicate="core/decided-against",
        source_type="decision-record",
        epistemic="commitment",
        now=at("2026-06-01T09:00"),
    )
    write_fact(
        member,
        "GraphQL",
        subject="api-layer",
        predicate="core/prefers",
        source_type="session-log",
        now=at("2026-06-02T09:00"),
    )
    for day, name in [(3, "Redis"), (4, "Kafka"), (5, "Celery")]:
        write_fact(
            member, name, subject="shoply", source_type="session-log", now=at(f"2026-06-0{day}")
        )
    admitted = write_fact(steward, "2.0.0", predicate="core/has-version", now=at("2026-06-06"))
    record_verdict(actor=steward, fact_id=admitted.pk, verdict="admitted", ground="in the code")
    file_challenge(
        actor=member,
        fact_id=admitted.pk,
        ground="the lockfile says 3.0.0",
        evidence=[{"ref": "uv.lock", "quote": "version = 3.0.0"}],
        now=at("2026-06-07T10:00"),
    )
    write_fact(outsider, "Mongo", scope="elsewhere", source_type="session-log", now=NOW)


def readings(day=TODAY) -> dict[tuple[str, str], tuple[int, int | None]]:
    return {
        (row.scope.name, row.queue): (row.size, row.oldest_age_seconds)
        for row in QueueSnapshot.objects.filter(day=day).select_related("scope")
    }


def test_a_snapshot_records_each_queue_of_each_scope_with_its_size_and_oldest_age(queues):
    assert take_queue_snapshot(now=NOW) == {"day": "2026-06-10", "scopes": 2}
    assert readings() == {
        ("project", "conflicts"): (1, int(timedelta(days=8, hours=-1).total_seconds())),
        # The five facts without a verdict, the steward's commitment the oldest.
        ("project", "candidates"): (5, int(timedelta(days=8, hours=23).total_seconds())),
        ("project", "challenges"): (1, int(timedelta(days=2, hours=22).total_seconds())),
        ("project", "suspended"): (1, int(timedelta(days=2, hours=22).total_seconds())),
        ("elsewhere", "conflicts"): (0, None),
        ("elsewhere", "candidates"): (1, 0),
        ("elsewhere", "challenges"): (0, None),
        ("elsewhere", "suspended"): (0, None),
    }


def test_each_scopes_reading_is_the_count_of_its_queues(queues):
    take_queue_snapshot(now=NOW)
    for scope in Scope.objects.all():
        counted = waiting(Scope.objects.filter(pk=scope.pk), every=True)
        for queue in QUEUES:
            row = QueueSnapshot.objects.get(day=NOW.date(), scope=scope, queue=queue)
            assert row.size == counted[queue].count


def test_a_second_snapshot_the_same_day_leaves_the_first_reading(queues, member):
    take_queue_snapshot(now=NOW)
    first = readings()
    write_fact(member, "RabbitMQ", subject="shoply", source_type="session-log", now=NOW)

    assert take_queue_snapshot(now=NOW + timedelta(hours=15)) == {"day": "2026-06-10", "scopes": 0}
    assert readings() == first
    assert QueueSnapshot.objects.count() == 8

    take_queue_snapshot(now=NOW + timedelta(days=1))
    assert readings(NOW.date() + timedelta(days=1))[("project", "candidates")][0] == 6
    assert QueueSnapshot.objects.count() == 16


def test_a_new_scope_gets_its_reading_from_a_later_run_the_same_day(queues):
    take_queue_snapshot(now=NOW)
    Scope.objects.create(name="late")
    assert take_queue_snapshot(now=NOW + timedelta(hours=1))["scopes"] == 1
    assert readings()[("late", "candidates")] == (0, None)
    assert QueueSnapshot.objects.count() == 12


def test_the_snapshot_counts_what_the_dashboard_shows(queues, steward, member):
    take_queue_snapshot(now=NOW)
    for viewer in (steward, member):
        shown = signed_in(viewer).get(reverse("dashboard")).context["queues"]
        scopes = Scope.objects.visible_to(viewer)
        for queue in shown:
            recorded = QueueSnapshot.objects.filter(
                day=NOW.date(), scope__in=scopes, queue=queue.name
            )
            assert sum(row.size for row in recorded) == queue.count, (viewer, queue.name)


def test_an_empty_queue_has_no_oldest_age_and_a_waiting_one_has_one(scope):
    with transaction.atomic(), pytest.raises(IntegrityError):
        QueueSnapshot.objects.create(
            day=NOW.date(),
            scope=scope,
            queue="conflicts",
            size=0,
            oldest_age_seconds=5,
            taken_at=NOW,
        )
    with transaction.atomic(), pytest.raises(IntegrityError):
        QueueSnapshot.objects.create(
            day=NOW.date(), scope=scope, queue="conflicts", size=2, taken_at=NOW
        )


def test_the_snapshot_is_a_daily_periodic_job_of_the_worker_with_a_first_run_soon(queues, settings):
    job = next(job for job in PERIODIC_JOBS if job.task is queue_snapshot_task)
    assert job.every() == 86_400
    settings.CLAIMGRAPH_QUEUE_SNAPSHOT_SECONDS = 3_600
    assert job.every() == 3_600
    assert 0 < job.first_after <= 30

    assert enqueue_periodic(job, now=NOW) is not None
    assert enqueue_periodic(job, now=NOW + timedelta(minutes=5)) is None  # the same period
    assert run_queued_tasks() == 1
    assert QueueSnapshot.objects.count() == 8


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_snapshots_taken_at_once_by_several_workers_record_one_row_per_queue(queues):
    results = race(lambda hour: take_queue_snapshot(now=NOW + timedelta(hours=hour)), [0, 1, 2])
    assert all(result["day"] == "2026-06-10" for result in results)
    assert QueueSnapshot.objects.count() == 8
    assert len({row.taken_at for row in QueueSnapshot.objects.all()}) == 1
