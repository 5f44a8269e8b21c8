"""``manage.py doctor``: each invariant the database does not enforce, broken on purpose.

Every test but the first makes one violation directly in the database
(updates that go around the actions, as a bug or a hand-made repair would)
and checks that the doctor names it with its ids and exits 1.
"""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.tasks import TaskResultStatus
from django.urls import reverse
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from admissions.actions import file_challenge, record_verdict
from memories.maintenance.tasks import enqueue_periodic, record_heartbeat, sweep_stale_slots_task
from memories.store.models import Conflict, DoctorRun, Entity, Fact, Predicate, WorkerHeartbeat
from memories.write.actions import resolve_conflict
from notifications.worker import PERIODIC_JOBS
from tests.admissions.conftest import write_fact
from tests.conftest import make_user
from tests.taskqueue import run_queued_tasks

pytestmark = pytest.mark.django_db


def doctor() -> tuple[int, str]:
    """The command's exit status and what it printed."""
    out = StringIO()
    try:
        call_command("doctor", stdout=out)
    except CommandError as error:
        return error.returncode, out.getvalue()
    return 0, out.getvalue()


def reported(check: str) -> list[dict]:
    """The violations of ``check`` in the run the doctor just recorded."""
    run = DoctorRun.objects.order_by("-started_at", "-id").first()
    return [violation for violation in run.violations if violation["check"] == check]


def version(actor, value: str, **extra) -> Fact:
    return write_fact(actor, value, predicate="core/has-version", **extra)


def test_a_store_written_through_the_actions_has_no_violation():
    call_command("seed_demo", stdout=StringIO())
    record_heartbeat("w1", now=timezone.now())
    status, output = doctor()
    assert (status, output.splitlines()[-1]) == (0, "No violations."), output
    assert DoctorRun.objects.get().violations == []


def test_two_live_values_of_a_one_valued_slot_outside_any_conflict(author):
    older = version(author, "2.0.0")
    newer = version(author, "2.1.0")  # supersedes 2.0.0
    # A repair by hand reopens the older value without linking the two.
    Fact.objects.filter(pk=older.pk).update(
        t_invalid=None, invalidated_at=None, invalidation_kind="", superseded_by=None
    )
    status, output = doctor()
    assert status == 1
    (violation,) = reported("unlinked-values")
    assert violation["ids"] == [str(older.pk), str(newer.pk)]
    assert "core/has-version" in violation["what"] and "manage.py crawl" in violation["todo"]
    assert f"ids: {older.pk}, {newer.pk}" in output


def test_values_linked_by_an_open_conflict_or_a_ruling_parallel_or_decayed_are_not_reported(
    author, steward
):
    now = timezone.now()
    version(author, "2.0.0", now=now)
    backdated = version(author, "1.9.0", t_valid=(now - timedelta(days=1)).isoformat())
    conflict = Conflict.objects.get()  # flagged backdated: the two share it
    assert doctor()[0] == 0
    resolve_conflict(actor=steward, conflict_id=conflict.pk, action="coexist", reason="both ran")
    assert doctor()[0] == 0
    # Under policy parallel, or once decayed, values do not compete.
    Fact.objects.filter(pk=backdated.pk).update(decayed_at=now)
    # No ruling any more: closed by itself (a moot closing a steward made is a ruling).
    Conflict.objects.update(resolution="moot", resolved_by=None)
    assert doctor()[0] == 0
    Fact.objects.filter(pk=backdated.pk).update(decayed_at=None)
    assert doctor()[0] == 1
    Predicate.objects.filter(name="core/has-version").update(policy="parallel")
    assert doctor()[0] == 0


def test_an_open_conflict_whose_members_are_no_longer_live(author):
    now = timezone.now()
    version(author, "2.0.0", now=now)
    incoming = version(author, "1.9.0", t_valid=(now - timedelta(days=1)).isoformat())
    conflict = Conflict.objects.get()
    # The incoming fact closed around apply, which would have closed the conflict.
    Fact.objects.filter(pk=incoming.pk).update(
        t_invalid=now + timedelta(seconds=1), invalidated_at=now, invalidation_kind="invalidated"
    )
    status, _ = doctor()
    assert status == 1
    (violation,) = reported("moot-conflict")
    assert violation["ids"] == [str(conflict.pk), str(incoming.pk)]
    assert "Dismiss it" in violation["todo"]


def test_derived_admission_state_that_disagrees_with_the_records(author, steward, scope):
    fact = write_fact(author)
    record_verdict(actor=steward, fact_id=fact.pk, verdict="admitted", ground="checked")
    challenged = write_fact(author, "memcached")
    record_verdict(actor=steward, fact_id=challenged.pk, verdict="admitted", ground="checked")
    challenge = file_challenge(
        actor=author, fact_id=challenged.pk, ground="gone", evidence=[{"ref": "commit 1"}]
    )
    assert doctor()[0] == 0
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE admissions_factverdict SET verdict = 'rejected' WHERE fact_id = %s", [fact.pk]
        )
        cursor.execute(
            "DELETE FROM admissions_openchallenge WHERE challenge_id = %s", [challenge.pk]
        )
        cursor.execute("UPDATE admissions_scopetally SET admitted = 5")
    status, _ = doctor()
    assert status == 1
    violations = reported("admission-state")
    assert [violation["ids"] for violation in violations] == [
        [str(pk)] for pk in sorted([fact.pk, challenged.pk], key=str)
    ] + [[str(challenge.pk)], [str(scope.pk)]]
    what = {violation["ids"][0]: violation["what"] for violation in violations}
    assert "status rejected, not admitted" in what[str(fact.pk)]
    assert "status admitted, not suspended" in what[str(challenged.pk)]
    assert "has it closed, the records open (evidenced, fact admitted)" in what[str(challenge.pk)]
    assert "count of admitted facts is 5, the records admit 2" in what[str(scope.pk)]
    assert "admissions_rebuild_state()" in violations[0]["todo"]

    with connection.cursor() as cursor:
        cursor.execute("SELECT admissions_rebuild_state()")
    assert doctor()[0] == 0


def test_the_write_paths_admitted_facts_that_disagree_with_the_records(author, steward):
    admitted = write_fact(author)
    record_verdict(actor=steward, fact_id=admitted.pk, verdict="admitted", ground="checked")
    candidate = write_fact(author, "memcached")
    assert doctor()[0] == 0
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM memories_admittedfact WHERE fact_id = %s", [admitted.pk])
        cursor.execute(
            "INSERT INTO memories_admittedfact (fact_id, scope_id) VALUES (%s, %s)",
            [candidate.pk, candidate.scope_id],
        )
    assert doctor()[0] == 1
    what = {v["ids"][0]: v["what"] for v in reported("admission-state")}
    assert set(what) == {str(admitted.pk), str(candidate.pk)}
    assert (
        "taking it as a candidate (memories_admittedfact), though the records admit it"
        in (what[str(admitted.pk)])
    )
    assert (
        "taking it as admitted (memories_admittedfact), though the records do not admit it"
        in (what[str(candidate.pk)])
    )

    with connection.cursor() as cursor:
        cursor.execute("SELECT admissions_rebuild_state()")
    assert doctor()[0] == 0


def test_an_entity_no_fact_or_merge_names(author, scope):
    write_fact(author)  # AuthService and nothing else
    orphan = Entity.objects.create(scope=scope, name="Orphan", key="orphan")
    status, output = doctor()
    assert status == 1
    (violation,) = reported("unused-entity")
    assert violation["ids"] == [str(orphan.pk)]
    assert f"entity {orphan.pk} ('Orphan')" in output


def running(*, minutes: float, worker_id: str) -> str:
    task = sweep_stale_slots_task.enqueue()
    DBTaskResult.objects.filter(pk=task.id).update(
        status=TaskResultStatus.RUNNING,
        started_at=timezone.now() - timedelta(minutes=minutes),
        worker_ids=[worker_id],
    )
    return str(task.id)


def test_tasks_running_too_long_or_after_their_worker_is_gone(settings):
    settings.CLAIMGRAPH_TASK_STUCK_MINUTES = 30
    settings.CLAIMGRAPH_HEARTBEAT_STALE_SECONDS = 60
    record_heartbeat("alive", now=timezone.now())
    running(minutes=5, worker_id="alive")  # a long task of a live worker: fine
    running(minutes=0.5, worker_id="gone")  # not yet past a heartbeat's staleness
    too_long = running(minutes=31, worker_id="alive")
    orphaned = running(minutes=2, worker_id="gone")
    status, _ = doctor()
    assert status == 1
    violations = reported("stuck-task")
    assert [violation["ids"] for violation in violations] == [[too_long], [orphaned]]
    assert "longer than 30 minutes" in violations[0]["what"]
    assert "its worker gone is not alive" in violations[1]["what"]


def test_a_worker_that_neither_stopped_nor_beats(settings):
    settings.CLAIMGRAPH_HEARTBEAT_STALE_SECONDS = 60
    record_heartbeat("silent", now=timezone.now() - timedelta(minutes=10))
    record_heartbeat("stopped", now=timezone.now() - timedelta(minutes=10))
    WorkerHeartbeat.objects.filter(worker_id="stopped").update(stopped_at=timezone.now())
    record_heartbeat("beating", now=timezone.now())
    status, output = doctor()
    assert status == 1
    (violation,) = reported("stale-heartbeat")
    assert violation["ids"] == ["silent"]
    assert "has not beaten for 600 s (stale after 60 s)" in output


def test_the_admin_does_what_the_doctor_says_for_a_lost_worker_and_its_task(client, settings):
    settings.CLAIMGRAPH_HEARTBEAT_STALE_SECONDS = 60
    record_heartbeat("lost", now=timezone.now() - timedelta(minutes=10))
    task_id = running(minutes=10, worker_id="lost")
    assert doctor()[0] == 1
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    client.post(
        reverse("admin:memories_workerheartbeat_changelist"),
        {"action": "mark_stopped", "_selected_action": [WorkerHeartbeat.objects.get().pk]},
    )
    client.post(
        reverse("admin:django_tasks_database_dbtaskresult_changelist"),
        {"action": "abandon", "_selected_action": [task_id]},
    )
    assert DBTaskResult.objects.get(pk=task_id).status == TaskResultStatus.FAILED
    assert doctor()[0] == 0


def test_a_worker_runs_the_doctor_as_a_periodic_job(author, scope):
    Entity.objects.create(scope=scope, name="Orphan", key="orphan")
    job = next(job for job in PERIODIC_JOBS if job.name == "doctor")
    enqueue_periodic(job, now=timezone.now())
    run_queued_tasks()
    (run,) = DoctorRun.objects.all()
    assert [violation["check"] for violation in run.violations] == ["unused-entity"]
    assert DBTaskResult.objects.get().return_value == {"violations": 1, "capped": []}
