"""Concurrent writers against the real database, with real threads.

Each thread has its own database connection (Django keeps one per thread), so
these are separate PostgreSQL sessions racing for the same rows and locks.
"""

import threading
from collections import Counter
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection, connections, transaction

from memories.store.models import Entity, Fact
from memories.store.slots import lock_slot
from memories.write.actions import assert_fact
from tests.deadlines import PROCESS_DEADLINE, wait_until
from tests.racing import a_session_waits_on_a_lock, race

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

WRITERS = 16


def test_sixteen_writers_of_one_new_fact_make_one_row(member):
    data = {
        "scope": "project",
        "subject": "AuthService",
        "predicate": "core/uses",
        "object": "redis",
        "source_type": "code",
    }
    results = race(lambda _: assert_fact(actor=member, data=data).status, range(WRITERS))
    assert Counter(results) == {"created": 1, "reinforced": WRITERS - 1}
    assert Fact.objects.count() == 1
    assert Entity.objects.filter(name="AuthService").count() == 1


def test_sixteen_values_on_one_slot_leave_one_live_undisputed_value(member):
    def write(version):
        return assert_fact(
            actor=member,
            data={
                "scope": "project",
                "subject": "AuthService",
                "predicate": "core/has-version",
                "object": f"1.{version}",
                "source_type": "code",
            },
        ).status

    statuses = race(write, range(WRITERS))
    assert statuses.count("created") == 1
    assert set(statuses) <= {"created", "superseded", "flagged"}

    facts = list(Fact.objects.with_disputed().order_by("t_valid"))
    assert len(facts) == WRITERS
    live_undisputed = [f for f in facts if f.is_live and not f.disputed]
    assert len(live_undisputed) == 1
    for fact in facts:
        if fact is live_undisputed[0]:
            continue
        assert fact.superseded_by_id is not None or fact.disputed
    # No interval is lost: each superseded fact ends exactly where its successor begins.
    successors = {f.pk: f for f in facts}
    for fact in facts:
        if fact.superseded_by_id:
            assert fact.t_invalid == successors[fact.superseded_by_id].t_valid


def test_writers_on_different_slots_do_not_wait_for_each_other(member, scope):
    """Hold one slot's lock in another session; a write to another slot goes straight through."""
    held = threading.Event()
    release = threading.Event()
    kept: dict[str, bool] = {}
    subject = Entity(scope=scope, name="HeldService")
    subject.set_keys()
    subject.save()

    def hold_the_lock():
        try:
            with transaction.atomic():
                lock_slot(scope.pk, subject.pk, "predicate:core/has-version")
                held.set()
                # Until the test lets go: kept["until released"] says it lasted.
                kept["until released"] = release.wait(PROCESS_DEADLINE)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_the_lock)
    holder.start()
    assert held.wait(PROCESS_DEADLINE)

    def write(subject_name):
        assert_fact(
            actor=member,
            data={
                "scope": "project",
                "subject": subject_name,
                "predicate": "core/has-version",
                "object": "1.0",
                "source_type": "code",
            },
        )
        connections.close_all()

    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            free = pool.submit(write, "OtherService")
            futures.wait([free], timeout=PROCESS_DEADLINE)
            # Written while the holder still held the lock, not once it gave up.
            assert free.done() and kept == {}, "the write to another slot waited for the lock"
            free.result()
            blocked = pool.submit(write, "HeldService")
            wait_until(a_session_waits_on_a_lock, what="the write to the held slot to wait")
            assert not blocked.done(), "a write to the held slot must wait for the lock"
            release.set()
            blocked.result(timeout=PROCESS_DEADLINE)
    finally:
        release.set()
        holder.join()
    assert kept == {"until released": True}
