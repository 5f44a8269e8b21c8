"""The conflicts queue and the conflict page read in a fixed number of queries.

However many conflicts a queue page lists, however many candidates a conflict
has and however long its slot's history, each page makes the same number of
queries, and at most ``BUDGET``: the queue's rows, candidates, subjects and
rulers come in with the page, not one query per row.
"""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memories.store.models import Conflict
from memories.store.vocabulary import load_vocabulary
from memories.write.actions import resolve_conflict
from tests.conftest import at
from tests.console.conftest import write

pytestmark = pytest.mark.django_db

BUDGET = 12


@pytest.fixture(autouse=True)
def vocabulary_held(settings):
    """The vocabulary read once and kept, so a copy expiring between two counted
    requests does not add its reads to one of them only."""
    settings.CLAIMGRAPH_VOCABULARY_CACHE_SECONDS = 3600
    load_vocabulary()


def queries(client, url: str, **params) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, params)
    assert response.status_code == 200
    return len(captured)


def version_conflicts(steward, member, start: int, stop: int) -> list[Conflict]:
    """Open conflicts of two candidates: code's version against an agent's note."""
    found = []
    for i in range(start, stop):
        write(steward, f"svc-{i:02}", "core/has-version", "1.0", "code")
        found.append(write(member, f"svc-{i:02}", "core/has-version", "2.0", "agent-note").conflict)
    return found


def stance_conflict(steward, member) -> Conflict:
    """An open conflict of three candidates: a preference against two commitments."""
    for predicate in ("core/decided-against", "core/avoids"):
        write(steward, "api", predicate, "GraphQL", "decision-record", epistemic="commitment")
    conflict = write(member, "api", "core/prefers", "GraphQL", "session-log").conflict
    assert conflict.members.count() == 3
    return conflict


@pytest.mark.parametrize("state", ["open", "resolved", "all"])
def test_the_conflicts_queue_reads_as_many_queries_for_30_conflicts_as_for_2(
    as_steward, steward, member, state
):
    def measure() -> int:
        return queries(as_steward, reverse("conflicts"), state=state, per_page=50)

    few = version_conflicts(steward, member, 0, 3)
    resolve_conflict(actor=steward, conflict_id=few[0].pk, action="dismiss", reason="noise")
    small = measure()
    many = version_conflicts(steward, member, 3, 30)
    stance_conflict(steward, member)
    for conflict in many[:10]:
        resolve_conflict(actor=steward, conflict_id=conflict.pk, action="coexist", reason="both")
    assert measure() == small <= BUDGET


def test_the_conflict_page_reads_as_many_queries_for_a_long_history_as_for_a_short_one(
    as_steward, steward, member
):
    write(steward, "svc", "core/has-version", "1.0", "code")
    conflict = write(member, "svc", "core/has-version", "0.9", "agent-note").conflict
    url = reverse("conflict", args=[conflict.pk])
    short = queries(as_steward, url)
    for n in range(25):
        # Closed intervals on the slot: its history and timeline grow.
        write(
            member,
            "svc",
            "core/has-version",
            f"0.{n}",
            "code",
            t_valid=f"2025-01-{n + 1:02}T00:00:00+00:00",
            t_invalid=f"2025-01-{n + 2:02}T00:00:00+00:00",
        )
    assert queries(as_steward, url) == short <= BUDGET


def test_the_conflict_page_reads_as_many_queries_for_earlier_conflicts_as_without(
    as_steward, steward, member
):
    write(steward, "svc", "core/has-version", "1.0", "code")
    first = write(member, "svc", "core/has-version", "2.0", "agent-note").conflict
    alone = queries(as_steward, reverse("conflict", args=[first.pk]))
    latest = first
    for n in range(5):
        resolve_conflict(actor=steward, conflict_id=latest.pk, action="dismiss", reason="noise")
        latest = write(
            member,
            "svc",
            "core/has-version",
            f"3.{n}",
            "agent-note",
            now=at(f"2026-06-0{n + 1}T10:00"),
        ).conflict
        assert latest is not None
    assert Conflict.objects.on_slot_of(latest).count() == 5
    assert queries(as_steward, reverse("conflict", args=[latest.pk])) == alone <= BUDGET


def test_the_conflict_page_reads_as_many_queries_for_three_candidates_as_for_two(
    as_steward, steward, member
):
    (two,) = version_conflicts(steward, member, 0, 1)
    three = stance_conflict(steward, member)
    for_two = queries(as_steward, reverse("conflict", args=[two.pk]))
    assert queries(as_steward, reverse("conflict", args=[three.pk])) == for_two <= BUDGET


def test_a_resolved_conflict_page_stays_within_the_budget(as_steward, steward, member):
    (conflict,) = version_conflicts(steward, member, 0, 1)
    resolve_conflict(actor=steward, conflict_id=conflict.pk, action="coexist", reason="both")
    assert queries(as_steward, reverse("conflict", args=[conflict.pk])) <= BUDGET
