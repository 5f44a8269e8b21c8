"""The admissions actions against the real database, and statuses read back from it."""

import uuid
from dataclasses import replace
from datetime import timedelta

import pytest

from admissions.actions import correct_fact, file_challenge, record_verdict, refute_challenge
from admissions.models import Record, Role
from admissions.selectors import (
    candidates,
    challenge_summary,
    fact_records,
    fact_status,
    fold_as_known_at,
    open_challenges,
    scope_statuses,
    with_admission_status,
)
from memories.store.errors import NotFound, Rejected, StateConflict
from memories.store.models import AuditEntry, Fact
from tests.admissions.conftest import write_fact
from tests.conftest import at, make_user

pytestmark = pytest.mark.django_db

T = at("2026-03-01T12:00:00")


def minutes(n: float):
    return T + timedelta(minutes=n)


def admit(steward, fact, when=0, verdict="admitted"):
    return record_verdict(
        actor=steward, fact_id=fact.pk, verdict=verdict, ground="checked", now=minutes(when)
    ).record


def challenge(actor, fact, when, evidence=("ticket-1",)):
    return file_challenge(
        actor=actor,
        fact_id=fact.pk,
        ground="it is wrong",
        evidence=list(evidence) if evidence is not None else None,
        now=minutes(when),
    )


def status(fact) -> str:
    return fact_status(Fact.objects.get(pk=fact.pk)).status


def assert_paths_agree(scope) -> None:
    """The derived-state reads and the pure fold over the records say the same."""
    folded = fold_as_known_at(scope)
    statuses = scope_statuses(scope)
    for fact in Fact.objects.filter(scope=scope, bucket="system"):
        assert fact_status(fact) == folded.status_of(fact.pk)
        assert fact_status(fact, explain=False) == replace(folded.status_of(fact.pk), findings=())
        assert statuses[fact.pk] == folded.status_of(fact.pk).status


# --- verdicts -----------------------------------------------------------------------


def test_a_steward_admits_a_candidate_and_the_audit_feed_says_so(steward, system_fact):
    assert status(system_fact) == "candidate"
    record = admit(steward, system_fact)
    assert (record.role, record.verdict, record.author) == ("admission", "admitted", steward)
    assert status(system_fact) == "admitted"
    entry = AuditEntry.objects.get(action="recorded-verdict")
    assert entry.actor == steward
    assert (entry.before["status"], entry.after["status"]) == ("candidate", "admitted")
    assert entry.reason == "checked"


def test_an_author_setting_admitted_on_their_own_fact_claims_nothing(author):
    fact = write_fact(author, "kafka", statement='admission: "admitted"')
    assert status(fact) == "candidate"


@pytest.mark.parametrize(
    ("verdict", "ground", "field"),
    [("accepted", "ok", "verdict"), ("", "ok", "verdict"), ("admitted", "  ", "ground")],
)
def test_a_bad_verdict_or_missing_ground_is_rejected_and_nothing_is_written(
    steward, system_fact, verdict, ground, field
):
    with pytest.raises(Rejected) as error:
        record_verdict(actor=steward, fact_id=system_fact.pk, verdict=verdict, ground=ground)
    assert error.value.field == field
    assert not Record.objects.exists()


def test_a_verdict_on_a_user_fact_is_rejected(steward, user_fact):
    with pytest.raises(Rejected) as error:
        record_verdict(actor=steward, fact_id=user_fact.pk, verdict="admitted", ground="ok")
    assert error.value.field == "fact"


def test_equal_inserted_at_verdicts_are_decided_by_id_every_time(steward, system_fact):
    # Two stewards' verdicts stamped with the same microsecond: the higher id wins.
    first = admit(steward, system_fact, when=1, verdict="admitted")
    second = admit(steward, system_fact, when=1, verdict="rejected")
    winner = max(first, second, key=lambda record: record.pk)
    assert status(system_fact) == winner.verdict
    assert fact_status(system_fact).verdict_record == winner.pk
    assert_paths_agree(system_fact.scope)


# --- challenges -------------------------------------------------------------------------


def test_an_evidenced_challenge_suspends_an_admitted_fact(steward, member, system_fact):
    admit(steward, system_fact)
    record = challenge(member, system_fact, 1)
    assert record.evidence == [{"ref": "ticket-1", "quote": ""}]
    assert status(system_fact) == "suspended"
    entry = AuditEntry.objects.get(action="filed-challenge")
    assert (entry.before["status"], entry.after["status"]) == ("admitted", "suspended")


def test_an_unevidenced_challenge_is_recorded_and_changes_nothing(steward, member, system_fact):
    admit(steward, system_fact)
    record = challenge(member, system_fact, 1, evidence=None)
    assert record.evidence is None
    assert status(system_fact) == "admitted"
    assert list(open_challenges(fact=system_fact)) == [record]


def test_the_facts_own_author_may_challenge_it(steward, author, system_fact):
    admit(steward, system_fact)
    challenge(author, system_fact, 1)
    assert status(system_fact) == "suspended"


@pytest.mark.parametrize(
    "evidence",
    [[], "ticket-1", [{"quote": "no ref"}], [{"ref": "x", "note": "?"}], [42], [{"ref": ""}]],
)
def test_an_empty_or_malformed_evidence_list_is_rejected(member, system_fact, evidence):
    with pytest.raises(Rejected) as error:
        file_challenge(actor=member, fact_id=system_fact.pk, ground="no", evidence=evidence)
    assert error.value.field == "evidence"
    assert not Record.objects.exists()


def test_a_challenge_on_a_user_fact_is_rejected(author, user_fact):
    with pytest.raises(Rejected) as error:
        file_challenge(actor=author, fact_id=user_fact.pk, ground="no", evidence=None)
    assert error.value.field == "fact"


def test_a_challenge_against_a_candidate_changes_nothing_and_costs_no_cap(
    steward, member, author, scope
):
    facts = [write_fact(author, f"lib-{n}") for n in range(4)]
    for fact in facts[:3]:
        admit(steward, fact)  # A = 3, cap = 1
    challenge(member, facts[3], 1)  # a candidate
    challenge(member, facts[0], 2)
    assert [status(fact) for fact in facts] == ["suspended", "admitted", "admitted", "candidate"]
    [usage] = challenge_summary(scope)
    assert (len(usage.in_effect), usage.queued, usage.dormant, usage.cap) == (1, (), 1, 1)
    assert_paths_agree(scope)


def test_with_eight_admitted_facts_one_accounts_third_evidenced_challenge_is_queued(
    steward, member, author, scope
):
    facts = [write_fact(author, f"lib-{n}") for n in range(8)]
    for fact in facts:
        admit(steward, fact)
    challenges = [challenge(member, fact, n + 1) for n, fact in enumerate(facts[:3])]

    assert [status(fact) for fact in facts[:3]] == ["suspended", "suspended", "admitted"]
    third = fact_status(facts[2])
    assert third.queued == (challenges[2].pk,)
    assert (third.admitted_count, third.cap) == (8, 2)
    assert "queued beyond the flood cap" in third.explanation
    assert member.username in third.explanation
    [usage] = challenge_summary(scope)
    assert usage.in_effect == (challenges[0].pk, challenges[1].pk)
    assert usage.queued == (challenges[2].pk,)
    assert_paths_agree(scope)

    # Refuting one in effect lets the queued one take effect.
    refute_challenge(actor=steward, challenge_id=challenges[0].pk, ground="checked", now=minutes(9))
    assert [status(fact) for fact in facts[:3]] == ["admitted", "suspended", "suspended"]
    assert_paths_agree(scope)


def test_two_challenges_by_one_account_on_one_fact_count_once(steward, member, author, scope):
    # The action refuses a second open challenge on one fact (issue 30 item 7), so the
    # repeat is written past it, as a record from before that rule or a restore would be.
    facts = [write_fact(author, f"lib-{n}") for n in range(8)]  # cap 2
    for fact in facts:
        admit(steward, fact)
    challenge(member, facts[0], 1)
    Record.objects.create(
        scope=scope,
        fact=facts[0],
        role=Role.CHALLENGE,
        ground="again",
        evidence=[{"ref": "ticket-2"}],
        author=member,
        inserted_at=minutes(2),
    )
    challenge(member, facts[1], 3)
    assert [status(fact) for fact in facts[:2]] == ["suspended", "suspended"]
    assert_paths_agree(scope)


# --- refutations ------------------------------------------------------------------------


def test_a_refutation_restores_the_fact_and_names_its_challenge(steward, member, system_fact):
    admit(steward, system_fact)
    filed = challenge(member, system_fact, 1)
    refutation = refute_challenge(actor=steward, challenge_id=filed.pk, ground="source checked")
    assert (refutation.role, refutation.challenge, refutation.fact) == (
        "refutation",
        filed,
        system_fact,
    )
    assert status(system_fact) == "admitted"
    assert not open_challenges(fact=system_fact).exists()
    entry = AuditEntry.objects.get(action="refuted-challenge")
    assert (entry.before["status"], entry.after["status"]) == ("suspended", "admitted")


def test_a_refutation_backfilled_before_its_challenge_still_resolves_it(
    steward, member, system_fact
):
    admit(steward, system_fact, when=0)
    filed = challenge(member, system_fact, 10)
    refute_challenge(actor=steward, challenge_id=filed.pk, ground="checked", now=minutes(5))
    assert status(system_fact) == "admitted"
    assert_paths_agree(system_fact.scope)


def test_the_action_refuses_a_second_refutation(steward, member, system_fact):
    admit(steward, system_fact)
    filed = challenge(member, system_fact, 1)
    refute_challenge(actor=steward, challenge_id=filed.pk, ground="checked")
    with pytest.raises(StateConflict):
        refute_challenge(actor=steward, challenge_id=filed.pk, ground="again")


def test_a_second_refutation_in_the_records_changes_nothing(steward, member, system_fact):
    admit(steward, system_fact)
    filed = challenge(member, system_fact, 1)
    refute_challenge(actor=steward, challenge_id=filed.pk, ground="checked", now=minutes(2))
    before = fact_status(system_fact)
    # Written past the action (two stewards' racing clients, an import).
    Record.objects.create(
        scope=system_fact.scope,
        fact=system_fact,
        role=Role.REFUTATION,
        challenge=filed,
        challenge_role=Role.CHALLENGE,
        ground="again",
        author=steward,
        inserted_at=minutes(3),
    )
    after = fact_status(system_fact)
    assert after.status == before.status == "admitted"
    assert_paths_agree(system_fact.scope)


def test_re_admitting_a_suspended_fact_leaves_it_suspended(steward, member, system_fact):
    admit(steward, system_fact, when=0)
    challenge(member, system_fact, 1)
    admit(steward, system_fact, when=2)
    suspended = fact_status(system_fact)
    assert suspended.status == "suspended"
    assert "only a refutation" in suspended.explanation


def test_refuting_a_challenge_outside_ones_scopes_or_missing_is_not_found(steward, outsider):
    with pytest.raises(NotFound):
        refute_challenge(actor=steward, challenge_id=uuid.uuid4(), ground="x")
    with pytest.raises(NotFound):
        refute_challenge(actor=steward, challenge_id="not-a-uuid", ground="x")


def test_only_challenges_can_be_refuted(steward, system_fact):
    verdict = admit(steward, system_fact)
    with pytest.raises(NotFound):
        refute_challenge(actor=steward, challenge_id=verdict.pk, ground="x")


# --- the record history -------------------------------------------------------------------


def test_a_facts_records_read_oldest_first_by_inserted_at_then_id(steward, member, system_fact):
    late = admit(steward, system_fact, when=5)
    early = challenge(member, system_fact, 1)
    assert list(fact_records(system_fact)) == [early, late]


# --- corrections ----------------------------------------------------------------------------


def test_an_author_corrects_their_fact_and_resolves_nothing(steward, member, author, scope):
    fact = write_fact(author, "2.0.0", predicate="core/has-version", confidence=0.95)
    admit(steward, fact)
    filed = challenge(member, fact, 1)

    correction = correct_fact(
        actor=author, fact_id=fact.pk, changes={"object": "2.1.0"}, ground="typo in the version"
    )
    old = Fact.objects.get(pk=fact.pk)
    assert correction.result.status == "created"
    assert correction.replacement.object_display == "2.1.0"
    assert correction.replacement.source_type.name == "code"  # taken from the old fact
    assert (old.superseded_by_id, old.invalidation_kind) == (
        correction.replacement.pk,
        "superseded",
    )
    assert old.t_invalid == correction.replacement.t_valid
    assert (correction.refutations, correction.admission) == ([], None)
    assert status(correction.replacement) == "candidate"
    assert list(open_challenges(fact=fact)) == [filed]
    assert AuditEntry.objects.filter(action="corrected-fact", target_id=str(fact.pk)).exists()


def test_the_corrected_fact_is_not_weighed_against_its_replacement(author, steward):
    # Weighed against the old code-sourced fact, an agent-note would be outranked.
    fact = write_fact(author, "2.0.0", predicate="core/has-version")
    correction = correct_fact(
        actor=steward,
        fact_id=fact.pk,
        changes={"object": "2.0.1", "source_type": "agent-note"},
        ground="release notes",
    )
    assert correction.result.status == "created"


def test_a_steward_correction_refutes_every_open_challenge_and_admits_the_replacement(
    steward, member, outsider, author, scope
):
    fact = write_fact(author, "2.0.0", predicate="core/has-version")
    admit(steward, fact)
    evidenced = challenge(member, fact, 1)
    unevidenced = challenge(author, fact, 2, evidence=None)
    assert status(fact) == "suspended"

    correction = correct_fact(
        actor=steward, fact_id=fact.pk, changes={"object": "2.1.0"}, ground="per the changelog"
    )
    assert {r.challenge_id for r in correction.refutations} == {evidenced.pk, unevidenced.pk}
    assert all(r.ground == "per the changelog" for r in correction.refutations)
    assert correction.admission.fact == correction.replacement
    assert correction.admission.ground == "per the changelog"
    assert status(correction.replacement) == "admitted"
    assert status(fact) == "admitted"  # its challenges are answered; it stays superseded
    assert not open_challenges(fact=fact).exists()
    assert_paths_agree(scope)


def test_correcting_a_user_fact_only_supersedes_it(author, user_fact):
    correction = correct_fact(
        actor=author, fact_id=user_fact.pk, changes={"object": "valkey"}, ground="renamed"
    )
    assert correction.replacement.bucket == "user"
    assert Fact.objects.get(pk=user_fact.pk).superseded_by_id == correction.replacement.pk
    assert not Record.objects.exists()


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"scope": "elsewhere"}, "scope"),
        ({"bucket": "user"}, "bucket"),
        ({"t_invalid": "2030-01-01T00:00:00Z"}, "t_invalid"),
        ({"colour": "blue"}, "colour"),
        ({"predicate": "core/unknown"}, "predicate"),
    ],
)
def test_a_bad_correction_is_rejected_and_nothing_changes(author, system_fact, changes, field):
    with pytest.raises(Rejected) as error:
        correct_fact(actor=author, fact_id=system_fact.pk, changes=changes, ground="fix")
    assert error.value.field == field
    assert Fact.objects.get(pk=system_fact.pk).is_live
    assert Fact.objects.count() == 1


def test_a_correction_needs_a_ground(author, system_fact):
    with pytest.raises(Rejected) as error:
        correct_fact(actor=author, fact_id=system_fact.pk, changes={"object": "x"}, ground="")
    assert error.value.field == "ground"


def test_an_invalidated_fact_cannot_be_corrected(author, system_fact):
    correct_fact(actor=author, fact_id=system_fact.pk, changes={"object": "valkey"}, ground="a")
    with pytest.raises(StateConflict):
        correct_fact(actor=author, fact_id=system_fact.pk, changes={"object": "b"}, ground="b")


# --- queues ---------------------------------------------------------------------------------


def test_the_candidates_queue_lists_live_system_facts_without_a_verdict(
    steward, author, scope, other_scope
):
    waiting = write_fact(author, "kafka")
    decided = write_fact(author, "redis")
    write_fact(author, "memcached", bucket="user")
    admit(steward, decided)
    assert list(candidates([scope.pk])) == [waiting]
    assert list(candidates([scope.pk], {"predicate": "core/uses", "source_type": "code"})) == [
        waiting
    ]
    assert list(candidates([scope.pk], {"source_type": "agent-note"})) == []
    assert list(candidates([other_scope.pk])) == []
    with pytest.raises(Rejected):
        candidates([scope.pk], {"colour": "blue"})


def test_statuses_can_be_annotated_and_filtered_in_one_query(
    steward, member, author, scope, django_assert_num_queries
):
    facts = [write_fact(author, f"lib-{n}") for n in range(4)]
    admit(steward, facts[0])
    admit(steward, facts[1])
    admit(steward, facts[2], verdict="rejected")
    challenge(member, facts[1], 1)
    user = write_fact(author, "private", bucket="user")
    with django_assert_num_queries(1):
        annotated = dict(
            with_admission_status(Fact.objects.filter(scope=scope)).values_list(
                "pk", "admission_status"
            )
        )
    assert [annotated[f.pk] for f in facts] == ["admitted", "suspended", "rejected", "candidate"]
    assert annotated[user.pk] is None
    suspended = with_admission_status(Fact.objects.all()).filter(admission_status="suspended")
    assert list(suspended) == [facts[1]]


def test_the_challenge_summary_shows_each_account_against_the_cap(steward, scope, author):
    facts = [write_fact(author, f"lib-{n}") for n in range(4)]  # cap 1
    for fact in facts:
        admit(steward, fact)
    zed = make_user("zed")
    scope.members.add(zed)
    first = challenge(zed, facts[0], 1)
    second = challenge(zed, facts[1], 2)
    challenge(author, facts[2], 3)
    summary = {usage.author_name: usage for usage in challenge_summary(scope)}
    assert summary["zed"].in_effect == (first.pk,)
    assert summary["zed"].queued == (second.pk,)
    assert summary["zed"].cap == 1
    assert len(summary[author.username].in_effect) == 1
