"""The maintenance crawler against the real database (SPEC §8)."""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from memories.actions import assert_fact, invalidate_fact, resolve_conflict
from memories.crawler import crawl_task, run_crawl
from memories.health import background_health
from memories.models import AuditEntry, Conflict, CrawlerRun, Fact, Predicate
from memories.vocabulary import forget_vocabulary
from memories.worker import PERIODIC_JOBS, Scheduler

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
    scheduler.tick(1_000.0)
    assert not DBTaskResult.objects.exists()
    scheduler.tick(1_000.0 + job.first_after)
    assert list(DBTaskResult.objects.values_list("task_path", flat=True)) == [
        "memories.crawler.crawl_task"
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
