"""The feed: an event for each record a steward should hear about, once, read off the records."""

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.utils import timezone

from admissions.actions import file_challenge, record_verdict, refute_challenge
from memories.maintenance.tasks import enqueue_periodic
from memories.store.models import AuditEntry, Conflict
from notifications import channels
from notifications.feed import record_events
from notifications.models import Event, EventKind
from notifications.worker import PERIODIC_JOBS
from tests.admissions.conftest import write_fact
from tests.taskqueue import run_queued_tasks

pytestmark = pytest.mark.django_db


def version(actor, value: str, *, scope: str = "project", **extra):
    return write_fact(actor, value, scope=scope, predicate="core/has-version", **extra)


def kinds() -> list[str]:
    return sorted(Event.objects.values_list("kind", flat=True))


@pytest.fixture
def heard(monkeypatch) -> list:
    """What the channels were handed, pass by pass."""
    passes: list = []
    monkeypatch.setattr(channels, "CHANNELS", (lambda events: passes.append(list(events)),))
    return passes


def test_a_contradiction_is_one_conflict_opened_event_with_both_sides_and_its_link(
    author, settings
):
    settings.CLAIMGRAPH_SITE_URL = "https://claimgraph.example.org"
    version(author, "2.0.0", source_type="code")
    version(author, "9.9.9", source_type="agent-note")
    conflict = Conflict.objects.get()

    record_events(now=timezone.now())

    event = Event.objects.get(kind=EventKind.CONFLICT_OPENED)
    data = event.data
    assert event.scope_id == conflict.scope_id
    assert data["item"] == {
        "type": "conflict",
        "id": str(conflict.pk),
        "title": "AuthService core/has-version",
        "url": f"https://claimgraph.example.org/conflicts/{conflict.pk}/",
    }
    assert sorted(side["value"] for side in data["sides"]) == ["2.0.0", "9.9.9"]
    assert {side["source_type"] for side in data["sides"]} == {"code", "agent-note"}
    assert all(
        side["url"].startswith("https://claimgraph.example.org/facts/") for side in data["sides"]
    )
    assert data["conflict_kind"] == conflict.kind
    assert "2.0.0" in data["summary"] and "9.9.9" in data["summary"]
    assert data["scope"] == {"id": conflict.scope_id, "name": "project"}
    body = event.body()
    assert body["type"] == "conflict.opened"
    assert body["schema"] == "claimgraph.event/1"
    assert body["id"] == f"evt_{event.pk}"


def test_a_second_pass_writes_nothing_new(author, heard):
    version(author, "2.0.0")
    version(author, "9.9.9", source_type="agent-note")
    first = record_events(now=timezone.now())
    count = Event.objects.count()
    assert first and count == sum(first.values())
    assert record_events(now=timezone.now()) == {}
    assert Event.objects.count() == count
    # The channels heard each event once, in the pass that wrote it.
    assert len(heard) == 1 and len(heard[0]) == count


def test_each_unjudged_system_fact_is_a_candidate_waiting(author, scope):
    fact = write_fact(author, "redis")
    write_fact(author, "memcached", bucket="user")  # no verdict to wait for

    record_events(now=timezone.now())

    event = Event.objects.get(kind=EventKind.CANDIDATE_WAITING)
    assert event.source == f"candidate:{fact.pk}"
    assert event.data["item"]["url"].endswith(f"/facts/{fact.pk}/")
    assert event.data["sides"][0]["value"] == "redis"
    assert event.data["author"] == author.username


def test_a_fact_judged_before_the_pass_waits_for_nothing(author, steward):
    fact = write_fact(author, "redis")
    record_verdict(actor=steward, fact_id=fact.pk, verdict="admitted", ground="checked")
    record_events(now=timezone.now())
    assert not Event.objects.filter(kind=EventKind.CANDIDATE_WAITING).exists()


def test_an_evidenced_challenge_is_filed_and_its_refutation_is_addressed_to_the_challenger(
    author, steward, member
):
    fact = write_fact(author, "redis")
    record_verdict(actor=steward, fact_id=fact.pk, verdict="admitted", ground="checked")
    challenge = file_challenge(
        actor=member, fact_id=fact.pk, ground="it moved", evidence=[{"ref": "ticket-7"}]
    )
    record_events(now=timezone.now())

    filed = Event.objects.get(kind=EventKind.CHALLENGE_FILED)
    assert filed.data["suspended"] is True
    assert filed.data["challenger"] == member.username
    assert filed.data["evidence"][0]["ref"] == "ticket-7"
    assert "suspended" in filed.data["summary"]
    assert filed.addressee is None

    refute_challenge(actor=steward, challenge_id=challenge.pk, ground="still there")
    record_events(now=timezone.now())

    settled = Event.objects.get(kind=EventKind.CHALLENGE_SETTLED)
    assert settled.addressee == member
    assert settled.data["outcome"] == "refuted"
    assert settled.data["item"]["id"] == str(challenge.pk)
    # The challenger hears of its own challenge's outcome, and of nothing else.
    assert list(Event.objects.for_recipient(member)) == [settled]


def test_background_work_is_an_automatic_change_naming_its_rule(author, scope):
    fact = write_fact(author, "redis")
    AuditEntry.objects.create(
        at=timezone.now(),
        actor=None,
        scope=scope,
        action="decayed",
        target_type="fact",
        target_id=str(fact.pk),
        reason="not reinforced for 90 days",
        rule="crawler: decay",
    )
    record_events(now=timezone.now())
    change = Event.objects.get(kind=EventKind.CHANGE_AUTOMATIC)
    assert change.data["rule"] == "crawler: decay"
    assert change.data["item"]["url"].endswith("/changes/")
    assert "crawler: decay" in change.data["summary"]


def test_a_person_s_own_act_is_no_automatic_change(author, steward, scope):
    fact = write_fact(author, "redis")
    record_verdict(actor=steward, fact_id=fact.pk, verdict="rejected", ground="wrong")
    record_events(now=timezone.now())
    assert not Event.objects.filter(kind=EventKind.CHANGE_AUTOMATIC).exists()


def test_a_record_committed_late_with_an_older_time_still_gets_its_event(author, scope):
    """Ids and times are taken before commit: the window is read again, not a cursor."""
    write_fact(author, "redis")
    now = timezone.now()
    record_events(now=now)
    late = AuditEntry.objects.create(
        at=now - timedelta(minutes=5),
        actor=None,
        scope=scope,
        action="decayed",
        target_type="fact",
        target_id="x",
        rule="crawler: decay",
    )
    record_events(now=now)
    assert Event.objects.filter(source=f"audit:{late.pk}").exists()


def test_a_record_older_than_the_lookback_is_not_announced(author, scope, settings):
    settings.CLAIMGRAPH_NOTIFY_LOOKBACK_HOURS = 1
    old = AuditEntry.objects.create(
        at=timezone.now() - timedelta(hours=2),
        actor=None,
        scope=scope,
        action="decayed",
        target_type="fact",
        target_id="x",
        rule="crawler: decay",
    )
    record_events(now=timezone.now())
    assert not Event.objects.filter(source=f"audit:{old.pk}").exists()


def test_a_pass_writes_at_most_a_batch_of_each_source_and_the_next_takes_the_rest(
    author, monkeypatch
):
    monkeypatch.setattr("notifications.feed.BATCH", 2)
    for value in ("a", "b", "c"):
        write_fact(author, value, predicate="core/uses", subject=f"S{value}")
    assert record_events(now=timezone.now()) == {"candidate.waiting": 2}
    assert record_events(now=timezone.now()) == {"candidate.waiting": 1}


def test_a_channel_that_fails_leaves_no_event_behind(author, monkeypatch):
    def broken(events):
        raise RuntimeError("the channel is down")

    monkeypatch.setattr(channels, "CHANNELS", (broken,))
    write_fact(author, "redis")
    with pytest.raises(RuntimeError):
        record_events(now=timezone.now())
    assert Event.objects.count() == 0


def test_events_of_another_scope_never_reach_this_scope_s_steward(
    outsider, scope_steward, other_scope
):
    version(outsider, "1.0", scope="elsewhere")
    record_events(now=timezone.now())
    assert Event.objects.filter(scope=other_scope).exists()
    assert Event.objects.for_recipient(scope_steward).count() == 0


def test_the_write_path_writes_nothing_for_notifications(author):
    """Delivering never slows a write: the feed reads records the write already keeps.

    Counted by PostgreSQL for the test's transaction, whichever statement or
    function inserted the rows.
    """
    version(author, "2.0.0")
    inserted = "SELECT relname, n_tup_ins FROM pg_stat_xact_user_tables WHERE n_tup_ins > 0"
    with connection.cursor() as cursor:
        cursor.execute(inserted)
        before = dict(cursor.fetchall())
        version(author, "9.9.9", source_type="agent-note")
        cursor.execute(inserted)
        added = {table for table, count in cursor.fetchall() if count > before.get(table, 0)}
    assert {"memories_fact", "memories_conflict", "memories_auditentry"} <= added
    assert not [table for table in added if table.startswith("notifications_")]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_passes_at_once_write_each_event_once(author):
    for value in ("2.0.0", "9.9.9"):
        version(author, value, source_type="code" if value == "2.0.0" else "agent-note")
    start = threading.Barrier(2)
    results, errors = [], []

    def one_pass():
        try:
            start.wait()
            results.append(record_events(now=timezone.now()))
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=one_pass) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert sum(sum(counts.values()) for counts in results) == Event.objects.count()
    assert Event.objects.values("source").distinct().count() == Event.objects.count()
    assert kinds().count(EventKind.CONFLICT_OPENED) == 1


def test_the_feed_and_the_watch_are_jobs_the_task_worker_runs(author, settings):
    jobs = {job.name: job for job in PERIODIC_JOBS}
    settings.CLAIMGRAPH_NOTIFY_SECONDS = 7
    assert jobs["notifications feed"].every() == 7
    assert jobs["notifications watch"].first_after > 0
    write_fact(author, "redis")

    enqueue_periodic(jobs["notifications feed"], now=timezone.now())
    assert run_queued_tasks() == 1

    assert Event.objects.filter(kind=EventKind.CANDIDATE_WAITING).count() == 1
