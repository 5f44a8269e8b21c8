"""The watch: queues past their target, workers gone quiet, the doctor's findings, told once."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.store.models import DoctorRun, Fact, WorkerHeartbeat
from notifications.models import Event, EventKind
from notifications.watch import record_watch_events
from tests.admissions.conftest import write_fact
from tests.conftest import at

pytestmark = pytest.mark.django_db


def test_a_queue_past_its_target_is_told_once_a_day_with_its_page(author, scope, settings):
    settings.CLAIMGRAPH_QUEUE_TARGET_HOURS = {
        **settings.CLAIMGRAPH_QUEUE_TARGET_HOURS,
        "candidates": 2,
    }
    # Early in a day, so an hour later is the same day whenever the test runs.
    fact = write_fact(author, "redis", now=at("2026-06-01T06:00"))
    now = fact.recorded_at + timedelta(hours=3)

    assert record_watch_events(now=now) == {"queue.overdue": 1}
    assert record_watch_events(now=now + timedelta(hours=1)) == {}

    event = Event.objects.get(kind=EventKind.QUEUE_OVERDUE)
    assert event.scope == scope
    assert event.data["queue"] == "candidates"
    assert event.data["count"] == 1
    assert event.data["target_hours"] == 2
    assert event.data["item"]["url"].endswith("/candidates/")
    assert "past its target of 2 h" in event.data["summary"]
    # Another day, still waiting: told again.
    assert record_watch_events(now=now + timedelta(days=1)) == {"queue.overdue": 1}


def test_a_queue_within_its_target_is_not_told(author):
    fact = write_fact(author, "redis")
    assert record_watch_events(now=fact.recorded_at + timedelta(minutes=5)) == {}


def test_a_worker_that_stopped_beating_is_told_once_even_after_it_is_marked_lost(settings):
    settings.CLAIMGRAPH_HEARTBEAT_STALE_SECONDS = 60
    now = timezone.now()
    beat = WorkerHeartbeat.objects.create(
        worker_id="w1",
        host="box",
        pid=42,
        started_at=now - timedelta(hours=1),
        beat_at=now - timedelta(minutes=5),
    )
    WorkerHeartbeat.objects.create(
        worker_id="alive", host="box", pid=43, started_at=now, beat_at=now
    )
    WorkerHeartbeat.objects.create(
        worker_id="clean",
        host="box",
        pid=44,
        started_at=now - timedelta(hours=1),
        beat_at=now - timedelta(minutes=5),
        stopped_at=now - timedelta(minutes=5),
    )
    assert record_watch_events(now=now) == {"worker.stale": 1}
    # A scheduler marks it lost: still the same quiet spell, not told again.
    WorkerHeartbeat.objects.filter(pk=beat.pk).update(stopped_at=now)
    assert record_watch_events(now=now + timedelta(minutes=1)) == {}

    event = Event.objects.get(kind=EventKind.WORKER_STALE)
    assert event.scope is None
    assert event.data["item"]["id"] == "w1"
    assert event.data["item"]["url"].endswith("/health/")


def test_a_site_wide_event_reaches_global_stewards_only(settings, steward, scope_steward):
    settings.CLAIMGRAPH_HEARTBEAT_STALE_SECONDS = 60
    now = timezone.now()
    WorkerHeartbeat.objects.create(
        worker_id="w1", host="box", pid=42, started_at=now, beat_at=now - timedelta(minutes=5)
    )
    record_watch_events(now=now)
    assert Event.objects.for_recipient(steward).count() == 1
    assert Event.objects.for_recipient(scope_steward).count() == 0


def test_a_doctor_run_with_violations_is_one_event_listing_them(db):
    now = timezone.now()
    DoctorRun.objects.create(started_at=now, finished_at=now)  # found nothing
    run = DoctorRun.objects.create(
        started_at=now,
        finished_at=now,
        violations=[
            {"check": "moot-conflict", "what": "an open conflict with one live side", "ids": ["c1"]}
        ],
    )
    assert record_watch_events(now=now) == {"doctor.violation": 1}
    assert record_watch_events(now=now) == {}
    event = Event.objects.get()
    assert event.source == f"doctor:{run.pk}"
    assert event.data["violations"][0]["check"] == "moot-conflict"
    assert "an open conflict with one live side" in event.data["summary"]


def test_nothing_waiting_nothing_told(db):
    assert record_watch_events(now=timezone.now()) == {}
    assert not Fact.objects.exists()
