"""Stewards and challengers writing at the same instant, with real threads.

Each thread has its own PostgreSQL session. The derived state (the admitted
count A above all, which the flood cap reads) must end exactly where the fold
of the committed records says, whatever the interleaving.
"""

import pytest

from admissions.actions import file_challenge, record_verdict
from admissions.models import FactVerdict, OpenChallenge, ScopeTally
from admissions.selectors import fact_status, fold_as_known_at, scope_statuses
from memories.store.models import AuditEntry, Conflict, Fact
from tests.admissions.conftest import write_fact
from tests.racing import race

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

WRITERS = 8


def assert_derived_state_matches_the_fold(scope) -> None:
    folded = fold_as_known_at(scope)
    assert ScopeTally.objects.get(scope=scope).admitted == folded.admitted_count
    statuses = scope_statuses(scope)
    for fact in Fact.objects.filter(scope=scope, bucket="system"):
        assert fact_status(fact) == folded.status_of(fact.pk)
        assert fact_status(fact, explain=False).status == folded.status_of(fact.pk).status
        assert statuses[fact.pk] == folded.status_of(fact.pk).status


def test_stewards_admitting_different_facts_at_once_count_every_one(steward, author, scope):
    facts = [write_fact(author, f"lib-{n}") for n in range(WRITERS)]
    race(
        lambda fact: record_verdict(
            actor=steward, fact_id=fact.pk, verdict="admitted", ground="ok"
        ),
        facts,
    )
    assert ScopeTally.objects.get(scope=scope).admitted == WRITERS
    assert_derived_state_matches_the_fold(scope)


def test_stewards_disagreeing_on_one_fact_at_once_leave_a_consistent_count(
    steward, scope_steward, author, scope
):
    fact = write_fact(author)
    verdicts = ["admitted", "rejected"] * (WRITERS // 2)
    actors = [steward, scope_steward] * (WRITERS // 2)
    race(
        lambda pair: record_verdict(
            actor=pair[0], fact_id=fact.pk, verdict=pair[1], ground="ruling"
        ),
        list(zip(actors, verdicts, strict=True)),
    )
    latest = fact_status(fact).status
    assert ScopeTally.objects.get(scope=scope).admitted == (1 if latest == "admitted" else 0)
    assert_derived_state_matches_the_fold(scope)


def test_one_account_challenging_many_facts_at_once_suspends_no_more_than_its_cap(
    steward, member, author, scope
):
    facts = [write_fact(author, f"lib-{n}") for n in range(WRITERS)]  # cap 2
    for fact in facts:
        record_verdict(actor=steward, fact_id=fact.pk, verdict="admitted", ground="ok")
    race(
        lambda fact: file_challenge(
            actor=member, fact_id=fact.pk, ground="wrong", evidence=["ticket"]
        ),
        facts,
    )
    statuses = scope_statuses(scope)
    assert sorted(statuses[fact.pk] for fact in facts).count("suspended") == 2
    assert_derived_state_matches_the_fold(scope)


def test_challenges_and_verdicts_on_the_same_facts_at_once_leave_the_rank_right(
    steward, member, author, scope
):
    # Each challenge races the fact's first verdict: whichever commits first,
    # the open challenge must end flagged with the verdict that stands, or the
    # rank view (which reads the flag) would miss a suspension or invent one.
    facts = [write_fact(author, f"lib-{n}") for n in range(WRITERS // 2)]
    race(
        lambda step: (
            record_verdict(actor=steward, fact_id=step[1].pk, verdict="admitted", ground="ok")
            if step[0] == "verdict"
            else file_challenge(
                actor=member, fact_id=step[1].pk, ground="wrong", evidence=["ticket"]
            )
        ),
        [(kind, fact) for fact in facts for kind in ("verdict", "challenge")],
    )
    for entry in OpenChallenge.objects.all():
        assert (
            entry.fact_admitted
            == FactVerdict.objects.filter(fact=entry.fact_id, verdict="admitted").exists()
        )
    assert_derived_state_matches_the_fold(scope)


def test_two_stewards_rejecting_both_sides_of_a_conflict_at_once_close_it_once(
    steward, scope_steward, author, scope
):
    kept = write_fact(author, "2.0.0", predicate="core/has-version", confidence=0.95)
    flagged = write_fact(author, "3.0.0", predicate="core/has-version", source_type="agent-note")
    conflict = Conflict.objects.get(members__fact=flagged)
    # Meanwhile writers keep asserting on the same slot: no lock cycle with the verdicts.
    race(
        lambda job: job(),
        [
            lambda: record_verdict(
                actor=steward, fact_id=flagged.pk, verdict="rejected", ground="code says 2.0"
            ),
            lambda: record_verdict(
                actor=scope_steward, fact_id=kept.pk, verdict="rejected", ground="stale"
            ),
            lambda: write_fact(author, "2.0.0", predicate="core/has-version"),
        ],
    )
    conflict.refresh_from_db()
    assert conflict.resolution == "moot"
    assert (
        AuditEntry.objects.filter(action="closed-conflict", target_id=str(conflict.pk)).count() == 1
    )
    assert_derived_state_matches_the_fold(scope)
