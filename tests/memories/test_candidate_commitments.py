"""An unadmitted candidate never blocks a steward's write (issue 29 item 8).

The issue's reproduction: a member's `decision-record` commitment, which no
steward has admitted, made a steward's later `code` write flag as
"contradicting a commitment". A steward is who admits facts; a member's
proposal, whatever class it states, cannot dispute the steward's word. The
steward's write meets the candidate by the ordinary later rules instead, so
here it supersedes it (an audited, revertible automatic change). Once a
steward has admitted the commitment it holds everyone up as before.
"""

import json

import pytest
from django.db import connection

from admissions.actions import record_verdict
from memories.core.effects import SUPERSEDE_RULE
from memories.store.models import AdmittedFact, AuditEntry, Conflict, Fact
from memories.write.actions import assert_fact
from memories.write.ingest import import_lines
from memories.write.reverts import revert_automatic_change
from tests.api.conftest import fact_body

pytestmark = pytest.mark.django_db

# The two collisions of the reproduction: a stance's exclusion group, and a
# version (a 'one' predicate whose policy is supersede).
DECIDED = {
    "scope": "project",
    "subject": "api-layer",
    "predicate": "core/decided-against",
    "object": "GraphQL",
    "source_type": "decision-record",
    "epistemic": "commitment",
}
PREFERS = {key: value for key, value in DECIDED.items() if key != "epistemic"} | {
    "predicate": "core/prefers",
    "source_type": "code",
}
PINNED = fact_body(object="2.0.0", source_type="decision-record", epistemic="commitment")
BUMPED = fact_body(object="3.0.0", source_type="code")
COLLISIONS = [
    pytest.param(DECIDED, PREFERS, id="exclusion-group"),
    pytest.param(PINNED, BUMPED, id="one-predicate"),
]


def write(actor, data):
    return assert_fact(actor=actor, data=data)


@pytest.mark.parametrize(("proposed", "ruled"), COLLISIONS)
def test_a_members_candidate_commitment_never_flags_a_stewards_later_code_write(
    member, steward, proposed, ruled
):
    candidate = write(member, proposed)
    assert candidate.status == "created"

    result = write(steward, ruled)

    assert (result.status, result.reason) == ("superseded", None)
    assert result.superseded == [candidate.fact.pk]
    assert not Conflict.objects.exists()
    closed = Fact.objects.get(pk=candidate.fact.pk)
    assert not closed.is_live and closed.superseded_by_id == result.fact.pk
    assert Fact.objects.disputed().count() == 0
    # Said in the audit feed as a write-path supersession, as any other.
    assert AuditEntry.objects.filter(rule=SUPERSEDE_RULE, scope=closed.scope).count() == 1


@pytest.mark.parametrize(("proposed", "ruled"), COLLISIONS)
def test_a_steward_who_is_not_a_member_is_not_held_up_by_a_candidate_either(
    member, scope_steward, proposed, ruled
):
    candidate = write(member, proposed)
    result = write(scope_steward, ruled)
    assert (result.status, result.superseded) == ("superseded", [candidate.fact.pk])


@pytest.mark.parametrize(("proposed", "ruled"), COLLISIONS)
def test_an_admitted_commitment_still_flags_the_stewards_threatening_write(
    member, steward, proposed, ruled
):
    commitment = write(member, proposed)
    record_verdict(actor=steward, fact_id=commitment.fact.pk, verdict="admitted", ground="ADR-7")

    result = write(steward, ruled)

    assert (result.status, result.reason) == ("flagged", "commitment")
    assert [fact.pk for fact in result.candidates] == [commitment.fact.pk]
    assert Fact.objects.get(pk=commitment.fact.pk).is_live
    assert Conflict.objects.open().count() == 1


@pytest.mark.parametrize(("proposed", "ruled"), COLLISIONS)
def test_a_members_write_is_still_held_up_by_a_candidate_commitment(
    member, author, proposed, ruled
):
    commitment = write(member, proposed)
    result = write(author, ruled)
    assert (result.status, result.reason) == ("flagged", "commitment")
    assert [fact.pk for fact in result.candidates] == [commitment.fact.pk]


def test_a_rejected_commitment_holds_a_steward_up_no_more_than_a_candidate(member, steward):
    commitment = write(member, DECIDED)
    record_verdict(actor=steward, fact_id=commitment.fact.pk, verdict="admitted", ground="ADR-7")
    record_verdict(actor=steward, fact_id=commitment.fact.pk, verdict="rejected", ground="gone")
    assert write(steward, PREFERS).status == "superseded"


def test_the_admitted_facts_follow_the_latest_verdict_and_rebuild_the_same(member, steward):
    first = write(member, DECIDED).fact
    second = write(member, PINNED).fact
    record_verdict(actor=steward, fact_id=first.pk, verdict="admitted", ground="ADR-7")
    record_verdict(actor=steward, fact_id=second.pk, verdict="admitted", ground="ADR-8")
    record_verdict(actor=steward, fact_id=second.pk, verdict="rejected", ground="wrong")
    assert set(AdmittedFact.objects.values_list("fact_id", "scope_id")) == {
        (first.pk, first.scope_id)
    }
    with connection.cursor() as cursor:
        cursor.execute("SELECT admissions_rebuild_state()")
    assert set(AdmittedFact.objects.values_list("fact_id", flat=True)) == {first.pk}


def test_a_stewards_import_meets_a_candidate_as_a_stewards_write_does(member, steward):
    candidate = write(member, DECIDED)
    admitted = write(member, PINNED)
    record_verdict(actor=steward, fact_id=admitted.fact.pk, verdict="admitted", ground="ADR-8")

    report = import_lines([json.dumps(PREFERS), json.dumps(BUMPED)], actor=steward)

    over_candidate, over_admitted = report.outcomes
    assert (over_candidate.status, over_candidate.superseded) == (
        "superseded",
        (candidate.fact.pk,),
    )
    assert (over_admitted.status, over_admitted.reason) == ("flagged", "commitment")


def test_the_candidate_a_stewards_write_superseded_can_be_brought_back_by_a_revert(member, steward):
    candidate = write(member, PINNED)
    ruled = write(steward, BUMPED)
    entry = AuditEntry.objects.automatic().get(rule=SUPERSEDE_RULE)
    assert entry.actor == steward

    revert_automatic_change(actor=steward, entry_id=entry.pk, reason="the pin was meant")

    assert Fact.objects.get(pk=candidate.fact.pk).is_live
    assert Fact.objects.get(pk=ruled.fact.pk).is_live
    conflict = Conflict.objects.get(kind="reverted")
    assert conflict.is_open
