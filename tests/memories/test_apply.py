"""apply's two back ends take the same Effects to the same rows.

The same sequence of Effects is applied one write at a time, the end state
read, rolled back to a savepoint, then folded and flushed set-wise: facts,
conflicts, members and audit entries must come out alike.
"""

import itertools
import json
from datetime import timedelta
from uuid import uuid4

import pytest
from django.db import transaction
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from memories.core.decisions import Decision, Evidence, Reinforcement
from memories.core.effects import NewFact, reinforce_effects, write_effects
from memories.maintenance.tasks import recompute_touched_slots_task
from memories.maintenance.worker import PERIODIC_JOBS, Scheduler
from memories.store.apply import FactState, SetApplier, Slots, do_apply
from memories.store.models import AuditEntry, Conflict, ConflictMember, Fact, TouchedSlot, TruthSlot
from memories.store.touched import recompute_on_commit
from memories.store.vocabulary import load_vocabulary
from memories.write.actions import assert_fact
from memories.write.batch import load_open_conflicts
from memories.write.ingest import import_lines
from tests.conftest import at
from tests.taskqueue import run_queued_tasks, task_statuses

pytestmark = pytest.mark.django_db

START = at("2026-03-01T12:00:00")


def write(actor, obj, source, **extra):
    data = {
        "scope": "project",
        "subject": "AuthService",
        "predicate": "core/has-version",
        "object": obj,
        "source_type": source,
        **extra,
    }
    return assert_fact(actor=actor, data=data, now=START)


def end_state(scope) -> dict:
    facts = Fact.objects.filter(scope=scope).order_by("recorded_at", "id")
    skip = {"id"}
    return {
        "facts": [
            {f.attname: getattr(fact, f.attname) for f in Fact._meta.concrete_fields}
            for fact in facts
        ],
        "conflicts": [
            {f.attname: getattr(c, f.attname) for f in Conflict._meta.concrete_fields}
            for c in Conflict.objects.filter(scope=scope).order_by("opened_at", "id")
        ],
        "members": sorted(
            (str(m.conflict_id), str(m.fact_id), m.role, m.disputes, m.kept)
            for m in ConflictMember.objects.filter(conflict__scope=scope)
        ),
        "audit": [
            {
                f.attname: getattr(entry, f.attname)
                for f in AuditEntry._meta.concrete_fields
                if f.attname not in skip
            }
            for entry in AuditEntry.objects.filter(scope=scope).order_by("id")
        ],
    }


def loaded_slots(scope, vocab) -> Slots:
    """Every fact of the scope as the set-wise back end holds it (what a batch loads)."""
    slots = Slots()
    for fact in Fact.objects.filter(scope=scope).order_by("recorded_at", "id"):
        slots.add(
            FactState(
                id=fact.id,
                scope_id=fact.scope_id,
                subject_id=fact.subject_id,
                predicate=vocab.predicate_names[fact.predicate_id],
                object_kind=fact.object_kind,
                object_key=fact.object_key,
                epistemic=fact.epistemic,
                source_type=vocab.source_names[fact.source_type_id],
                confidence=fact.confidence,
                t_valid=fact.t_valid,
                t_invalid=fact.t_invalid,
                evidence=tuple(Evidence(**item) for item in fact.evidence),
                bucket=fact.bucket,
                author_id=fact.author_id,
                last_reinforced_at=fact.last_reinforced_at,
            )
        )
    return slots


def test_both_back_ends_end_in_the_same_rows(member, scope):
    vocab = load_vocabulary()
    standing = write(member, "2.0.0", "code", confidence=0.95)
    outranked = write(member, "3.0.0", "agent-note")
    assert outranked.status == "flagged"  # a conflict for the supersession below to moot
    old, disputed = standing.fact, outranked.fact
    now = START + timedelta(hours=1)

    def new_fact(value: str, source: str) -> NewFact:
        return NewFact(
            uuid4(),
            scope.pk,
            old.subject_id,
            old.predicate_id,
            "literal",
            None,
            value,
            value,
            "observation",
            vocab.source_ids[source],
            0.8,
            "ep-1",
            "",
            (Evidence("commit:1"),),
            member.pk,
            "system",
            now,
            None,
            now,
            now,
        )

    newer = new_fact("2.1.0", "code")
    doubtful = new_fact("2.2.0", "agent-note")
    sequence = [
        write_effects(
            Decision(
                "superseded", confidence=0.85, supersedes=(old.pk, disputed.pk), rationale="newer"
            ),
            newer,
            conflict_id=None,
            source_ids=vocab.source_ids,
        ),
        write_effects(
            Decision(
                "flagged",
                reason="outranked",
                confidence=0.4,
                candidates=(newer.id,),
                rationale="lower rank",
            ),
            doubtful,
            conflict_id=uuid4(),
            source_ids=vocab.source_ids,
        ),
        reinforce_effects(
            Decision(
                "reinforced",
                reinforcement=Reinforcement(
                    newer.id, 0.9, "code", (Evidence("commit:1"), Evidence("commit:2")), False
                ),
            ),
            now=now + timedelta(minutes=1),
            source_ids=vocab.source_ids,
        ),
    ]

    savepoint = transaction.savepoint_create()
    for effects in sequence:
        do_apply(effects)
    one_at_a_time = end_state(scope)
    transaction.savepoint_rollback(savepoint)

    slots = loaded_slots(scope, vocab)
    conflicts, ended_elsewhere = load_open_conflicts(slots)
    applier = SetApplier(
        vocab=vocab, slots=slots, conflicts=conflicts, ended_elsewhere=ended_elsewhere
    )
    for effects in sequence:
        applier.fold(effects)
    applier.flush()
    set_wise = end_state(scope)

    assert set_wise == one_at_a_time
    # And the sequence did what it says: the first conflict closed as moot.
    resolutions = [c["resolution"] for c in one_at_a_time["conflicts"]]
    assert resolutions == ["moot", ""]
    assert [entry["action"] for entry in one_at_a_time["audit"]][-4:] == [
        "superseded",
        "superseded",
        "closed-conflict",
        "opened-conflict",
    ]


def touched() -> list[tuple[int, int, int]]:
    return list(TouchedSlot.objects.values_list("scope_id", "subject_id", "predicate_id"))


_drains = itertools.count()


def drain_once() -> list[tuple[str, str]]:
    """What a worker does: its scheduler enqueues the drain, the worker runs it.

    Each call is a period of its own (an hour after the last), as for a
    worker's scheduler from one period to the next.
    """
    job = next(job for job in PERIODIC_JOBS if job.task is recompute_touched_slots_task)
    now = timezone.now() + timedelta(hours=next(_drains))
    Scheduler(worker_id="w1", heartbeat_seconds=15, jobs=[job], clock=lambda: 0.0).tick(0.0, now)
    run_queued_tasks()
    return task_statuses()


def test_the_slots_a_write_touches_are_recomputed_once_each_after_commit(
    member, scope, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        first = write(member, "2.0.0", "code", confidence=0.95)
        # Another write to the same slot in the same transaction: still one recompute.
        write(member, "2.1.0", "code")
    fact = first.fact
    assert touched() == [(fact.scope_id, fact.subject_id, fact.predicate_id)]
    assert task_statuses() == []
    assert drain_once() == [("recompute_touched_slots_task", "SUCCESSFUL")]
    (task,) = DBTaskResult.objects.all()
    assert task.return_value == {"recomputed": 1}
    slot = TruthSlot.objects.get()
    assert (slot.scope_id, slot.subject_id, slot.predicate_id) == touched_slot(fact)
    assert slot.claim_set_hash
    assert touched() == []
    # Nothing left to do: the scheduler enqueues no drain.
    assert drain_once() == [("recompute_touched_slots_task", "SUCCESSFUL")]


def touched_slot(fact) -> tuple[int, int, int]:
    return (fact.scope_id, fact.subject_id, fact.predicate_id)


def test_touching_a_marked_slot_again_counts_and_keeps_the_mark_from_a_recompute(member, scope):
    fact = write(member, "2.0.0", "code").fact
    (mark,) = TouchedSlot.objects.all()
    assert mark.touches == 1
    # A recompute that read the mark before this touch deletes it only if
    # its count is unchanged: here it no longer is.
    recompute_on_commit([touched_slot(fact)])
    (again,) = TouchedSlot.objects.all()
    assert (again.pk, again.touches, again.touched_at) == (mark.pk, 2, mark.touched_at)
    assert not TouchedSlot.objects.filter(pk=mark.pk, touches=mark.touches).exists()


def test_nothing_is_enqueued_for_a_write_rolled_back(
    member, scope, django_capture_on_commit_callbacks
):
    with (
        django_capture_on_commit_callbacks(execute=True),
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        write(member, "2.0.0", "code")
        raise RuntimeError("rolled back")
    assert touched() == []
    assert task_statuses() == []


def test_an_import_batch_marks_its_slots_and_one_drain_recomputes_them(
    member, scope, django_capture_on_commit_callbacks
):
    lines = [
        json.dumps({**LINE, "subject": subject, "object": "1.0"}) for subject in ("a", "b", "c")
    ]
    with django_capture_on_commit_callbacks(execute=True):
        report = import_lines(lines, actor=member, now=START)
    assert [outcome.status for outcome in report.outcomes] == ["created"] * 3
    expected = sorted(touched_slot(f) for f in Fact.objects.filter(scope=scope))
    assert sorted(touched()) == expected
    assert drain_once() == [("recompute_touched_slots_task", "SUCCESSFUL")]
    assert DBTaskResult.objects.get().return_value == {"recomputed": 3}
    assert sorted(TruthSlot.objects.values_list("scope_id", "subject_id", "predicate_id")) == (
        expected
    )


LINE = {"scope": "project", "predicate": "core/has-version", "source_type": "code"}
