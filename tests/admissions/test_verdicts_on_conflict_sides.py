"""A verdict on a fact that is a side of an open conflict (issue 30 item 3, docs/admissions.md).

A rejection takes the fact out of its open conflicts: one left without two
sides closes as moot, in the verdict's transaction, resolved by the steward
with an audit entry naming the verdict. An admission settles nothing.
"""

import pytest

from admissions.actions import record_verdict
from memories.maintenance.crawler import run_crawl
from memories.store.models import AuditEntry, Conflict
from memories.write.actions import resolve_conflict
from tests.admissions.conftest import write_fact
from tests.conftest import at

pytestmark = pytest.mark.django_db

T = at("2026-03-01T12:00:00")


def graphql(actor, predicate: str, source: str, **extra):
    """``api-layer <predicate> GraphQL``: the stance group's slot, as in SPEC §2 example 1."""
    return write_fact(
        actor, "GraphQL", subject="api-layer", predicate=predicate, source_type=source, **extra
    )


@pytest.fixture
def commitment_conflict(author):
    """The ADR against GraphQL, and a session's preference for it, flagged against it."""
    adr = graphql(author, "core/decided-against", "decision-record", epistemic="commitment")
    newcomer = graphql(author, "core/prefers", "session-log")
    conflict = Conflict.objects.get(members__fact=newcomer)
    return adr, newcomer, conflict


def reject(steward, fact, ground="the ADR stands"):
    return record_verdict(actor=steward, fact_id=fact.pk, verdict="rejected", ground=ground, now=T)


def test_rejecting_the_incoming_side_closes_its_conflict_as_moot(steward, commitment_conflict):
    _, newcomer, conflict = commitment_conflict
    recorded = reject(steward, newcomer)
    conflict.refresh_from_db()
    assert not conflict.is_open
    assert (conflict.resolution, conflict.resolved_by, conflict.resolved_at) == ("moot", steward, T)
    assert "was rejected" in conflict.reason and "the ADR stands" in conflict.reason
    assert [c.pk for c in recorded.closed] == [conflict.pk]
    assert recorded.still_open == []


def test_the_moot_closing_is_audited_as_the_stewards_act_naming_the_verdict(
    steward, commitment_conflict
):
    _, newcomer, conflict = commitment_conflict
    recorded = reject(steward, newcomer)
    entry = AuditEntry.objects.get(action="closed-conflict", target_id=str(conflict.pk))
    assert entry.actor == steward
    assert entry.rule == ""  # a person's act: no revert of an automatic change reopens it
    assert entry.after == {
        "status": "resolved",
        "resolution": "moot",
        "rejected": str(newcomer.pk),
        "verdict": str(recorded.record.pk),
    }
    conflict.refresh_from_db()
    assert entry.reason == conflict.reason


def test_rejecting_the_incoming_side_leaves_it_valid_and_its_rival_undisputed(
    steward, commitment_conflict
):
    adr, newcomer, _ = commitment_conflict
    reject(steward, newcomer)
    newcomer.refresh_from_db()
    adr.refresh_from_db()
    # A rejection is a record, not an end: the fact stays valid for a later verdict.
    assert newcomer.is_live and adr.is_live
    assert not Conflict.objects.open().filter(members__fact=adr).exists()


def test_rejecting_the_standing_side_of_a_two_sided_conflict_closes_it(
    steward, commitment_conflict
):
    adr, _newcomer, conflict = commitment_conflict
    recorded = reject(steward, adr, ground="the ADR was withdrawn last week")
    conflict.refresh_from_db()
    assert conflict.resolution == "moot"
    assert str(adr) in conflict.reason
    assert [c.pk for c in recorded.closed] == [conflict.pk]


def test_admitting_a_side_leaves_its_conflict_open_and_says_it_still_waits(
    steward, commitment_conflict
):
    _, newcomer, conflict = commitment_conflict
    recorded = record_verdict(
        actor=steward, fact_id=newcomer.pk, verdict="admitted", ground="we do prefer it", now=T
    )
    conflict.refresh_from_db()
    assert conflict.is_open
    assert recorded.closed == []
    assert [c.pk for c in recorded.still_open] == [conflict.pk]
    assert not AuditEntry.objects.filter(action="closed-conflict").exists()


@pytest.fixture
def three_sided(author):
    """The ADR against GraphQL and an agent's note to avoid it both stand; a session's
    preference for GraphQL then collides with both: one conflict, three members."""
    adr = graphql(author, "core/decided-against", "decision-record", epistemic="commitment")
    avoids = graphql(author, "core/avoids", "agent-note")
    prefers = graphql(author, "core/prefers", "session-log")
    conflict = Conflict.objects.get(members__fact=prefers)
    assert conflict.members.count() == 3
    return adr, avoids, prefers, conflict


def test_rejecting_one_of_two_standing_sides_leaves_a_three_sided_conflict_open(
    steward, three_sided
):
    _adr, avoids, _prefers, conflict = three_sided
    recorded = reject(steward, avoids, ground="the note misread the ADR")
    conflict.refresh_from_db()
    assert conflict.is_open
    assert conflict.pk in [c.pk for c in recorded.still_open]
    assert conflict.pk not in [c.pk for c in recorded.closed]


def test_a_side_rejected_earlier_counts_when_the_last_standing_side_is_rejected(
    steward, three_sided
):
    adr, avoids, _prefers, conflict = three_sided
    reject(steward, avoids, ground="the note misread the ADR")
    reject(steward, adr, ground="the ADR was superseded by ADR-12")
    conflict.refresh_from_db()
    assert conflict.resolution == "moot"


def test_rejecting_a_fact_in_no_conflict_closes_nothing(steward, author):
    fact = write_fact(author)
    recorded = reject(steward, fact, ground="not used here")
    assert (recorded.closed, recorded.still_open) == ([], [])
    assert not AuditEntry.objects.filter(action="closed-conflict").exists()


def test_a_conflict_already_ruled_on_is_not_touched_by_a_later_rejection(
    steward, commitment_conflict
):
    _adr, newcomer, conflict = commitment_conflict
    resolve_conflict(
        actor=steward, conflict_id=conflict.pk, action="dismiss", reason="a false alarm"
    )
    reject(steward, newcomer)
    conflict.refresh_from_db()
    assert conflict.resolution == "dismissed"


@pytest.fixture
def outranked_conflict(author):
    """billing core/has-version: 5.0 from code stands; 5.1 from an agent note is flagged."""
    standing = write_fact(
        author, "5.0", subject="billing core", predicate="core/has-version", confidence=0.95
    )
    newcomer = write_fact(
        author,
        "5.1",
        subject="billing core",
        predicate="core/has-version",
        source_type="agent-note",
    )
    return standing, newcomer, Conflict.objects.get(members__fact=newcomer)


def test_the_crawler_does_not_reopen_a_question_a_rejection_closed(steward, outranked_conflict):
    _standing, newcomer, _conflict = outranked_conflict
    reject(steward, newcomer, ground="billing core is on 5.0: see the lock file")
    run_crawl(full=True)
    assert not Conflict.objects.open().exists()


def test_admitting_a_fact_whose_rejection_closed_its_conflict_reopens_it(
    steward, commitment_conflict
):
    _, newcomer, conflict = commitment_conflict
    reject(steward, newcomer)
    later = at("2026-03-02T09:00:00")
    recorded = record_verdict(
        actor=steward, fact_id=newcomer.pk, verdict="admitted", ground="we misread it", now=later
    )
    conflict.refresh_from_db()
    assert conflict.is_open and conflict.reopened_at == later
    assert [c.pk for c in recorded.reopened] == [conflict.pk]
    assert [c.pk for c in recorded.still_open] == [conflict.pk]
    entry = AuditEntry.objects.get(action="reopened-conflict")
    assert (entry.actor, entry.rule, entry.target_id) == (steward, "", str(conflict.pk))
    assert entry.after["admitted"] == str(newcomer.pk)


def test_admitting_one_side_does_not_reopen_a_conflict_whose_other_side_is_rejected_too(
    steward, commitment_conflict
):
    adr, newcomer, conflict = commitment_conflict
    reject(steward, newcomer)
    reject(steward, adr, ground="the ADR was withdrawn")
    recorded = record_verdict(
        actor=steward, fact_id=newcomer.pk, verdict="admitted", ground="fine", now=T
    )
    conflict.refresh_from_db()
    assert not conflict.is_open
    assert recorded.reopened == []


def test_admitting_a_fact_never_reopens_a_conflict_a_steward_ruled_on(steward, commitment_conflict):
    _, newcomer, conflict = commitment_conflict
    resolve_conflict(actor=steward, conflict_id=conflict.pk, action="dismiss", reason="fine")
    recorded = record_verdict(
        actor=steward, fact_id=newcomer.pk, verdict="admitted", ground="fine", now=T
    )
    conflict.refresh_from_db()
    assert conflict.resolution == "dismissed" and recorded.reopened == []
