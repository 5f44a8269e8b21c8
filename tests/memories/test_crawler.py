"""The maintenance crawler against the real database (SPEC §8)."""

import json
from datetime import timedelta
from io import StringIO
from uuid import uuid4

import psycopg
import pytest
from django.core.management import call_command
from django.db import transaction
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from memories.core.confidence import effective_confidence
from memories.maintenance import crawler
from memories.maintenance.crawler import crawl_task, run_crawl
from memories.maintenance.health import background_health
from memories.maintenance.worker import PERIODIC_JOBS, Scheduler
from memories.store.apply import do_apply, do_apply_many
from memories.store.models import (
    AuditEntry,
    Conflict,
    ConflictMember,
    CrawlerRun,
    Entity,
    Fact,
    Predicate,
    Scope,
    SourceType,
)
from memories.store.vocabulary import forget_vocabulary, load_vocabulary
from memories.write.actions import assert_fact, invalidate_fact, resolve_conflict

pytestmark = pytest.mark.django_db


def write(actor, subject, predicate, obj, source="code", now=None, **extra):
    return assert_fact(
        actor=actor,
        data={
            "scope": "project",
            "subject": subject,
            "predicate": predicate,
            "object": obj,
            "source_type": source,
            **extra,
        },
        now=now,
    )


def two_values(member, *, old_statement="", new_statement="", **old_extra):
    """Two values of a slot that became one-valued after they were written."""
    now = timezone.now()
    old = write(
        member,
        "shoply",
        "core/uses",
        "Heroku",
        t_valid=(now - timedelta(days=10)).isoformat(),
        statement=old_statement,
        **old_extra,
    ).fact
    new = write(
        member,
        "shoply",
        "core/uses",
        "Fly",
        t_valid=(now - timedelta(days=2)).isoformat(),
        statement=new_statement,
    ).fact
    Predicate.objects.filter(name="core/uses").update(cardinality="one", policy="supersede")
    forget_vocabulary()
    return old, new


def crawler_audit() -> list[tuple[str, str, object]]:
    return list(
        AuditEntry.objects.filter(rule__startswith="crawler:").values_list(
            "rule", "target_id", "actor"
        )
    )


def test_plain_disagreement_opens_a_conflict_and_a_second_run_changes_nothing(member):
    old, new = two_values(member)
    first = run_crawl()
    assert first.counts == {"superseded": 0, "opened-conflict": 1, "decayed": 0}
    conflict = Conflict.objects.get()
    assert (conflict.kind, conflict.is_open) == ("crawler", True)
    assert sorted((m.fact_id, m.role, m.disputes) for m in conflict.members.all()) == sorted(
        [(old.pk, "existing", True), (new.pk, "existing", True)]
    )
    # No incoming side: every member is disputed, both stay live.
    assert set(Fact.objects.disputed().values_list("pk", flat=True)) == {old.pk, new.pk}
    assert Fact.objects.live().filter(pk__in=[old.pk, new.pk]).count() == 2
    assert crawler_audit() == [("crawler: opened-conflict", str(conflict.pk), None)]

    second = run_crawl()
    assert second.counts == {"superseded": 0, "opened-conflict": 0, "decayed": 0}
    assert Conflict.objects.count() == 1
    assert len(crawler_audit()) == 1


def test_an_update_cue_on_the_newer_value_supersedes_the_older(member):
    old, new = two_values(member, new_statement="We switched to Fly last week.")
    run = run_crawl()
    assert run.counts == {"superseded": 1, "opened-conflict": 0, "decayed": 0}
    old.refresh_from_db()
    assert (old.t_invalid, old.superseded_by_id, old.invalidation_kind) == (
        new.t_valid,
        new.pk,
        "superseded",
    )
    assert Fact.objects.get(pk=new.pk).is_live
    assert not Conflict.objects.exists()
    assert crawler_audit() == [("crawler: superseded", str(old.pk), None)]
    assert run_crawl().counts == {"superseded": 0, "opened-conflict": 0, "decayed": 0}


def test_a_commitment_is_never_superseded_by_a_cue(member):
    old, _ = two_values(member, new_statement="Actually we use Fly.", epistemic="commitment")
    run = run_crawl()
    assert run.counts["superseded"] == 0
    assert run.counts["opened-conflict"] == 1
    assert Fact.objects.get(pk=old.pk).is_live


def test_a_resolved_coexist_is_never_reopened(member, steward):
    two_values(member)
    run_crawl()
    conflict = Conflict.objects.get()
    resolve_conflict(actor=steward, conflict_id=conflict.pk, action="coexist", reason="both")
    assert run_crawl().counts["opened-conflict"] == 0
    assert Conflict.objects.open().count() == 0


@pytest.mark.parametrize(("delta", "decayed"), [(+1e-6, True), (-1e-6, False)])
def test_decay_marking_at_the_threshold(member, settings, delta, decayed):
    # 0.9 from code, 90 days (one half-life) unused: it reads 0.45.
    fact = write(
        member,
        "AuthService",
        "core/has-version",
        "2.0.0",
        confidence=0.9,
        now=timezone.now() - timedelta(days=90),
    ).fact
    settings.CLAIMGRAPH_CRAWLER_DECAY_THRESHOLD = 0.45 + delta
    run = run_crawl()
    fact.refresh_from_db()
    assert run.counts["decayed"] == int(decayed)
    assert (fact.decayed_at is not None) is decayed
    assert fact.is_live  # an annotation, not an invalidation
    if decayed:
        assert crawler_audit() == [("crawler: decayed", str(fact.pk), None)]
        assert run_crawl().counts["decayed"] == 0


def test_invalidated_superseded_and_decayed_facts_are_skipped(member, settings):
    settings.CLAIMGRAPH_CRAWLER_DECAY_THRESHOLD = 1.0  # everything that decays would be marked
    gone = write(member, "a", "core/has-version", "1.0").fact
    invalidate_fact(actor=member, fact_id=gone.pk, reason="wrong")
    replaced = write(member, "b", "core/has-version", "1.0").fact
    current = write(member, "b", "core/has-version", "1.1").fact
    assert Fact.objects.get(pk=replaced.pk).superseded_by_id == current.pk
    marked = write(member, "c", "core/has-version", "1.0").fact
    # Marked when it was last reinforced: the mark holds.
    earlier = marked.last_reinforced_at
    Fact.objects.filter(pk=marked.pk).update(decayed_at=earlier)

    run = run_crawl()
    assert run.counts["decayed"] == 1
    assert set(Fact.objects.exclude(decayed_at=None).values_list("pk", flat=True)) == {
        marked.pk,
        current.pk,
    }
    assert Fact.objects.get(pk=marked.pk).decayed_at == earlier
    assert Fact.objects.get(pk=gone.pk).decayed_at is None
    assert Fact.objects.get(pk=replaced.pk).decayed_at is None


def test_every_change_has_an_audit_entry_with_its_rule(member, settings):
    two_values(member, new_statement="now on Fly")
    two_values_elsewhere = write(member, "api", "core/has-version", "1.0", confidence=0.9).fact
    settings.CLAIMGRAPH_CRAWLER_DECAY_THRESHOLD = 0.95
    run = run_crawl()
    assert sum(run.counts.values()) == len(crawler_audit()) > 1
    assert {rule for rule, _, actor in crawler_audit()} <= {
        "crawler: superseded",
        "crawler: decayed",
        "crawler: opened-conflict",
    }
    assert all(actor is None for _, _, actor in crawler_audit())
    assert Fact.objects.get(pk=two_values_elsewhere.pk).decayed_at is not None


def test_the_command_prints_the_report_and_health_shows_the_run(member):
    two_values(member)
    out = StringIO()
    call_command("crawl", stdout=out)
    text = out.getvalue()
    assert "opened-conflict: 1" in text
    assert "superseded: 0" in text
    assert "decayed: 0" in text
    run = CrawlerRun.objects.get()
    assert run.finished_at is not None
    assert background_health().last_crawler_run.counts == run.counts


def test_the_crawl_is_a_periodic_task_of_the_worker(settings):
    job = next(job for job in PERIODIC_JOBS if job.task is crawl_task)
    settings.CLAIMGRAPH_CRAWL_SECONDS = 120
    assert job.every() == 120
    assert 0 < job.first_after <= 120
    assert crawl_task.call() == {"superseded": 0, "opened-conflict": 0, "decayed": 0}


def test_a_decayed_fact_restated_is_marked_again_only_when_it_fades_again(member, settings):
    long_ago = timezone.now() - timedelta(days=400)
    fact = write(member, "AuthService", "core/has-version", "2.0.0", now=long_ago).fact
    assert run_crawl().counts["decayed"] == 1
    first_mark = Fact.objects.get(pk=fact.pk).decayed_at
    write(member, "AuthService", "core/has-version", "2.0.0")  # reinforced: the clock resets
    assert run_crawl().counts["decayed"] == 0
    settings.CLAIMGRAPH_CRAWLER_DECAY_THRESHOLD = 1.0
    assert run_crawl().counts["decayed"] == 1
    assert Fact.objects.get(pk=fact.pk).decayed_at > first_mark
    assert run_crawl().counts["decayed"] == 0


def test_the_scheduler_runs_the_first_crawl_a_minute_after_it_starts():
    clock = [1_000.0]
    job = next(job for job in PERIODIC_JOBS if job.task is crawl_task)
    scheduler = Scheduler(worker_id="w1", heartbeat_seconds=15, jobs=[job], clock=lambda: clock[0])
    started = timezone.now()
    scheduler.tick(1_000.0, started)
    assert not DBTaskResult.objects.exists()
    scheduler.tick(1_000.0 + job.first_after, started + timedelta(seconds=job.first_after))
    assert list(DBTaskResult.objects.values_list("task_path", flat=True)) == [
        "memories.maintenance.crawler.crawl_task"
    ]


def test_an_export_carries_the_decay_mark(member, tmp_path):
    fact = write(member, "AuthService", "core/has-version", "2.0.0").fact
    Fact.objects.filter(pk=fact.pk).update(decayed_at=fact.last_reinforced_at)
    out = StringIO()
    call_command("export_facts", "--scope", "project", stdout=out)
    line = next(json.loads(x) for x in out.getvalue().splitlines() if '"kind": "fact"' in x)
    assert line["decayed_at"] is not None


def test_values_a_steward_kept_together_are_never_reopened(member, steward):
    old, new = two_values(member)
    run_crawl()
    conflict = Conflict.objects.get()
    resolve_conflict(
        actor=steward,
        conflict_id=conflict.pk,
        action="keep",
        keep=[old.pk, new.pk],
        reason="both hold",
    )
    assert run_crawl().counts["opened-conflict"] == 0
    assert Conflict.objects.open().count() == 0


# --- set-wise: round trips grow with chunks, not slots -------------------------------


def many_slots(member, count: int, *, days_ago: float = 1, values: int = 1) -> None:
    """``count`` slots of ``core/has-version`` about as many subjects, written set-wise."""
    scope = Scope.objects.get(name="project")
    entities = Entity.objects.bulk_create(
        Entity(scope=scope, name=f"service-{n}", key=f"service-{n}") for n in range(count)
    )
    at = timezone.now() - timedelta(days=days_ago)
    Fact.objects.bulk_create(
        Fact(
            scope=scope,
            subject=entity,
            predicate=Predicate.objects.get(name="core/has-version"),
            object_kind="literal",
            object_lit=f"1.{n}",
            object_key=f"1.{n}",
            epistemic="observation",
            source_type=SourceType.objects.get(name="code"),
            confidence=0.9,
            author=member,
            t_valid=at - timedelta(days=n),
            recorded_at=at,
            last_reinforced_at=at,
        )
        for entity in entities
        for n in range(values)
    )


@pytest.fixture
def round_trips(monkeypatch):
    """Every statement and COPY sent on any psycopg cursor (Django's and the hot ones)."""
    sent = []
    execute, copy = psycopg.Cursor.execute, psycopg.Cursor.copy

    def counted_execute(cursor, query, *args, **kwargs):
        sent.append(str(query))
        return execute(cursor, query, *args, **kwargs)

    def counted_copy(cursor, statement, *args, **kwargs):
        sent.append(str(statement))
        return copy(cursor, statement, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", counted_execute)
    monkeypatch.setattr(psycopg.Cursor, "copy", counted_copy)
    return sent


def test_a_pass_over_1200_slots_in_order_costs_a_handful_of_round_trips(member, round_trips):
    many_slots(member, 1_200)
    load_vocabulary()
    round_trips.clear()
    run = run_crawl()
    assert run.report["slots walked"] == 1_200
    assert sum(run.counts.values()) == 0
    # The run stored twice, its watermark (two), the run it may build on, one
    # read of the facts and the empty read that ends the walk.
    assert len(round_trips) <= 8, round_trips


def test_the_round_trips_grow_with_the_chunks_not_the_slots(member, round_trips, monkeypatch):
    many_slots(member, 1_200)
    load_vocabulary()
    monkeypatch.setattr(crawler, "CHUNK_FACTS", 100)
    round_trips.clear()
    run = run_crawl()
    assert run.report["slots walked"] == 1_200
    reads = [q for q in round_trips if q.startswith("SELECT scope_id, subject_id, predicate_id")]
    # Twelve reads or so (each leaves its last slot, maybe cut, to the next), then an empty one.
    assert 13 <= len(reads) <= 14
    assert len(round_trips) <= len(reads) + 6


def test_slots_that_change_are_locked_and_written_a_batch_at_a_time(member, settings, round_trips):
    many_slots(member, 300, days_ago=400)  # each one's fact faded below the threshold
    load_vocabulary()
    round_trips.clear()
    run = run_crawl()
    assert run.counts["decayed"] == 300
    assert Fact.objects.filter(decayed_at__isnull=False).count() == 300
    assert AuditEntry.objects.filter(rule="crawler: decayed").count() == 300
    # Per batch of LOCKED_BATCH slots: the locks, the read under them, the marks
    # and the audit entries' COPY.
    batches = -(-300 // crawler.LOCKED_BATCH)
    # (A savepoint and its release around each: the test's own transaction.)
    assert len(round_trips) <= 7 + 7 * batches, round_trips
    assert run_crawl().counts["decayed"] == 0


def test_a_slot_larger_than_a_read_is_walked_whole(member, monkeypatch):
    monkeypatch.setattr(crawler, "CHUNK_FACTS", 3)
    many_slots(member, 4, values=5)  # five competing values on each of four slots
    run = run_crawl()
    assert run.report["slots walked"] == 4
    assert run.counts["opened-conflict"] == 4
    assert all(c.members.count() == 5 for c in Conflict.objects.all())
    assert run_crawl().counts == {"superseded": 0, "opened-conflict": 0, "decayed": 0}


def test_a_slot_changed_before_its_lock_is_decided_again_on_what_the_lock_sees(member, monkeypatch):
    old, _ = two_values(member)
    taken = crawler.lock_slots

    def a_writer_first(slots):
        # Between the read without a lock and the lock: one value is invalidated.
        invalidate_fact(actor=member, fact_id=old.pk, reason="gone")
        taken(slots)

    monkeypatch.setattr(crawler, "lock_slots", a_writer_first)
    run = run_crawl()
    assert run.counts == {"superseded": 0, "opened-conflict": 0, "decayed": 0}
    assert not Conflict.objects.exists()


def test_apply_many_writes_what_apply_writes_one_decision_at_a_time(member, steward):
    # A supersession whose older values share an open conflict (moot once
    # they close), a plain disagreement, and a faded fact.
    now = timezone.now()
    a = write(
        member, "shoply", "core/uses", "Heroku", t_valid=(now - timedelta(days=9)).isoformat()
    )
    b = write(
        member, "shoply", "core/uses", "Render", t_valid=(now - timedelta(days=6)).isoformat()
    )
    write(
        member,
        "shoply",
        "core/uses",
        "Fly",
        t_valid=(now - timedelta(days=2)).isoformat(),
        statement="We switched to Fly.",
    )
    write(member, "billing", "core/uses", "Stripe", t_valid=(now - timedelta(days=9)).isoformat())
    write(member, "billing", "core/uses", "Adyen", t_valid=(now - timedelta(days=3)).isoformat())
    write(member, "AuthService", "core/has-version", "2.0.0", now=now - timedelta(days=400))
    Predicate.objects.filter(name="core/uses").update(cardinality="one", policy="supersede")
    forget_vocabulary()
    moot = Conflict.objects.create(
        scope=a.fact.scope,
        kind="contradiction",
        subject=a.fact.subject,
        predicate=a.fact.predicate,
        opened_at=now - timedelta(days=5),
    )
    ConflictMember.objects.create(
        conflict=moot, scope_id=moot.scope_id, fact=a.fact, role="existing", disputes=False
    )
    ConflictMember.objects.create(
        conflict=moot, scope_id=moot.scope_id, fact=b.fact, role="incoming", disputes=True
    )

    vocab = load_vocabulary()
    decay = crawler.DecaySettings(0.1, 90.0, 0.05)
    slots = crawler._slot_facts(next(crawler._chunks()), vocab)
    decided = [
        crawler._decide(slot, facts, vocab, decay, now, uuid4()) for slot, facts in slots.items()
    ]
    changes = [outcome.effects for outcome in decided if outcome.effects.changes]
    assert {kind for o in decided for kind, n in o.counts.items() if n} == {
        "superseded",
        "opened-conflict",
        "decayed",
    }

    def end_state():
        return (
            sorted(
                Fact.objects.values_list(
                    "id", "t_invalid", "invalidated_at", "superseded_by", "decayed_at"
                )
            ),
            sorted(Conflict.objects.values_list("id", "kind", "resolved_at", "resolution")),
            sorted(ConflictMember.objects.values_list("conflict", "fact", "role", "disputes")),
            sorted(
                AuditEntry.objects.values_list("action", "target_id", "rule", "reason", "at"),
            ),
        )

    with transaction.atomic():
        one_by_one = [do_apply(effects) for effects in changes]
        expected = end_state()
        transaction.set_rollback(True)
    with transaction.atomic():
        together = do_apply_many(changes)
        assert end_state() == expected
        transaction.set_rollback(True)
    assert together.touched == set().union(*(done.touched for done in one_by_one))
    assert together.closed_moot == [moot.pk]
    assert [c.pk for c in together.opened] == [c.pk for d in one_by_one for c in d.opened]


# --- incremental passes --------------------------------------------------------------


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_pass_after_a_finished_one_walks_only_what_changed_since(member, settings):
    many_slots(member, 50)
    two_values(member)  # one slot for the first pass to change
    first = run_crawl()
    assert (first.report["walk"], first.report["slots walked"]) == ("full", 51)
    assert first.counts["opened-conflict"] == 1

    second = run_crawl()
    assert second.report["walk"] == f"since run {first.pk}"
    # Only the slot the first pass itself wrote to (its conflict), found in order.
    assert second.report["slots walked"] == 1
    assert sum(second.counts.values()) == 0

    # Written now, reinforced long ago: a new slot with a faded fact.
    write(member, "service-7", "core/depends-on", "redis", now=timezone.now() - timedelta(days=400))
    third = run_crawl()
    assert third.report["slots walked"] == 1
    assert third.counts["decayed"] == 1

    assert run_crawl(full=True).report["slots walked"] == 51
    settings.CLAIMGRAPH_CRAWLER_DECAY_THRESHOLD = 0.2  # another basis: a full pass again
    assert run_crawl().report["walk"] == "full"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_pass_never_builds_on_one_that_did_not_finish(member):
    many_slots(member, 10)
    run_crawl()
    CrawlerRun.objects.create(started_at=timezone.now())  # failed midway
    assert run_crawl().report["walk"] != "full"  # builds on the last finished one
    CrawlerRun.objects.update(report={})  # nothing recorded to build on
    assert run_crawl().report["walk"] == "full"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_an_incremental_pass_finds_every_fact_whose_decay_crossed_since(member):
    # Facts reinforced from 1 to 599 days ago, bases 0.15 to 0.95: the
    # window of the SQL must hold every one whose reading fell below the
    # threshold between the previous pass and now (a superset is allowed).
    scope = Scope.objects.get(name="project")
    code = SourceType.objects.get(name="code")
    predicate = Predicate.objects.get(name="core/has-version")
    now = timezone.now()
    earlier = now - timedelta(days=17)
    entities = Entity.objects.bulk_create(
        Entity(scope=scope, name=f"s{n}", key=f"s{n}") for n in range(300)
    )
    facts = Fact.objects.bulk_create(
        Fact(
            scope=scope,
            subject=entity,
            predicate=predicate,
            object_kind="literal",
            object_lit="1",
            object_key="1",
            epistemic="observation",
            source_type=code,
            confidence=0.15 + (n % 9) * 0.1,
            author=member,
            t_valid=now - timedelta(days=1 + 2 * n),
            recorded_at=now - timedelta(days=1 + 2 * n),
            last_reinforced_at=now - timedelta(days=1 + 2 * n),
        )
        for n, entity in enumerate(entities)
    )
    decay = crawler.DecaySettings(0.1, 90.0, 0.05)

    def reads(fact, at):
        return effective_confidence(
            fact.confidence,
            last_reinforced_at=fact.last_reinforced_at,
            at=at,
            decays=True,
            half_life_days=decay.half_life_days,
            floor=decay.floor,
        )

    crossed = {
        (f.scope_id, f.subject_id, f.predicate_id)
        for f in facts
        if reads(f, earlier) >= decay.threshold > reads(f, now)
    }
    assert len(crossed) > 5
    next_id, _, _ = crawler._transactions()
    # A previous pass whose watermark is now: nothing counts as written since.
    previous = CrawlerRun(started_at=earlier, report={"watermark": next_id})
    found = {
        crawler._slot_of(row)
        for chunk in crawler._changed_chunks(previous, next_id, now, decay)
        for row in chunk
    }
    assert crossed <= found
    assert len(found) < len(facts) / 3
