"""What a challenge does to its fact (issue 30 item 7): the rule as a table, then the database.

``status.effect_of`` is the one home of the rule; ``challenge_effect`` adds
its words. The database half checks the reads that feed it
(``admissions.challenge_effects``) and the refusal of a second open
challenge by one account on one fact.
"""

from datetime import timedelta

import pytest

from admissions.actions import file_challenge, record_verdict, refute_challenge
from admissions.challenge_effects import (
    challenge_effects,
    challenge_forecast,
    challenges_of,
    open_challenge_by,
)
from admissions.models import Record
from admissions.selectors import fact_status
from admissions.status import EFFECTS, challenge_effect, effect_of
from memories.store.errors import ChallengeAlreadyOpen, StateConflict
from memories.store.models import AuditEntry, Fact
from tests.admissions.conftest import write_fact
from tests.conftest import at

T = at("2026-03-01T12:00:00")


def minutes(n: float):
    return T + timedelta(minutes=n)


# --- the rule, as data in and data out ------------------------------------------------


@pytest.mark.parametrize(
    ("evidenced", "verdict", "earlier", "cap", "expected"),
    [
        (False, "admitted", 0, 2, "none"),
        (True, None, 0, 2, "dormant"),
        (True, "rejected", 5, 2, "dormant"),
        (True, "admitted", None, 2, "none"),
        (True, "admitted", 0, 2, "suspended"),
        (True, "admitted", 1, 2, "suspended"),
        (True, "admitted", 2, 2, "queued"),
        (True, "admitted", 7, 2, "queued"),
        (True, "admitted", 0, 0, "queued"),
    ],
)
def test_the_effect_of_a_challenge_follows_rules_2_3_and_6_in_order(
    evidenced, verdict, earlier, cap, expected
):
    assert effect_of(evidenced=evidenced, verdict=verdict, earlier=earlier, cap=cap) == expected
    assert expected in EFFECTS


def test_a_queued_challenge_is_told_the_cap_that_it_has_no_window_and_when_it_frees_up():
    # A = 8 at 25%: cap 2. Two of the author's rank before it, none queued ahead.
    effect = challenge_effect(
        evidenced=True, verdict="admitted", earlier=2, admitted_count=8, share_percent=25
    )
    assert (effect.effect, effect.cap, effect.label) == ("queued", 2, "queued with no effect")
    assert effect.headline == "Queued with no effect: it does not suspend the fact."
    assert "already suspend 2 facts, your flood cap in this scope (25% of its 8 admitted" in (
        effect.why
    )
    assert "no time window" in effect.why
    # One refuted, or a ninth fact admitted (ceil(9 * 25%) = 3), and it counts.
    assert "when 1 of your earlier challenges is refuted, or when 1 more fact is admitted" in (
        effect.why
    )
    assert effect.reason == f"{effect.headline} {effect.why}"


def test_a_challenge_deeper_in_the_queue_counts_those_ahead_of_it():
    effect = challenge_effect(
        evidenced=True, verdict="admitted", earlier=4, admitted_count=8, share_percent=25
    )
    assert "2 more of yours are queued before it" in effect.why
    # Three refuted, or A = 17 (ceil(17 * 25%) = 5 > 4): nine more.
    assert "when 3 of your earlier challenges are refuted, or when 9 more facts are" in effect.why


def test_a_challenge_within_the_cap_is_told_it_suspends_the_fact_and_its_place():
    effect = challenge_effect(
        evidenced=True, verdict="admitted", earlier=1, admitted_count=8, share_percent=25
    )
    assert effect.effect == "suspended"
    assert effect.headline == "Suspends the fact until a steward refutes it."
    assert "number 2 of your open evidenced challenges in this scope, where the cap is 2" in (
        effect.why
    )


def test_with_a_share_of_zero_the_cap_never_frees_up_by_admissions():
    effect = challenge_effect(
        evidenced=True, verdict="admitted", earlier=0, admitted_count=8, share_percent=0
    )
    assert effect.effect == "queued"
    assert "more fact" not in effect.why


# --- the database ----------------------------------------------------------------------


def admit(steward, fact, when=0):
    return record_verdict(
        actor=steward, fact_id=fact.pk, verdict="admitted", ground="checked", now=minutes(when)
    )


def challenge(actor, fact, when, evidence=("ticket-1",)):
    return file_challenge(
        actor=actor,
        fact_id=fact.pk,
        ground="it is wrong",
        evidence=list(evidence) if evidence is not None else None,
        now=minutes(when),
    )


@pytest.fixture
def eight_admitted(steward, author) -> list[Fact]:
    """Eight admitted facts: a cap of 2 per account."""
    facts = [write_fact(author, f"lib-{n}") for n in range(8)]
    for fact in facts:
        admit(steward, fact)
    return facts


@pytest.mark.django_db
def test_the_form_forecast_says_queued_once_the_account_is_at_its_cap(member, eight_admitted):
    facts = eight_admitted
    assert challenge_forecast(member, facts[2]).effect == "suspended"
    challenge(member, facts[0], 1)
    challenge(member, facts[1], 2)
    forecast = challenge_forecast(member, facts[2])
    assert (forecast.effect, forecast.cap, forecast.earlier) == ("queued", 2, 2)
    # What the forecast said is what filing does.
    filed = challenge(member, facts[2], 3)
    assert challenge_effects([filed])[filed.pk] == forecast
    assert filed.pk in fact_status(facts[2]).queued


@pytest.mark.django_db
def test_the_forecast_reads_the_same_with_and_without_the_status_given(member, eight_admitted):
    challenge(member, eight_admitted[0], 1)
    fact = eight_admitted[3]
    assert challenge_forecast(member, fact) == challenge_forecast(member, fact, fact_status(fact))


@pytest.mark.django_db
def test_a_candidate_fact_forecasts_dormant(member, system_fact):
    assert challenge_forecast(member, system_fact).effect == "dormant"


@pytest.mark.django_db
def test_each_open_challenge_has_its_effect_and_a_refuted_one_none(
    steward, member, author, eight_admitted
):
    facts = eight_admitted
    candidate = write_fact(author, "not-yet")
    first = challenge(member, facts[0], 1)
    second = challenge(member, facts[1], 2)
    third = challenge(member, facts[2], 3)
    doubt = challenge(member, facts[3], 4, evidence=None)
    dormant = challenge(member, candidate, 5)
    effects = challenge_effects([first, second, third, doubt, dormant])
    assert {record_id: effect.effect for record_id, effect in effects.items()} == {
        first.pk: "suspended",
        second.pk: "suspended",
        third.pk: "queued",
        doubt.pk: "none",
        dormant.pk: "dormant",
    }
    refute_challenge(actor=steward, challenge_id=first.pk, ground="checked", now=minutes(6))
    after = challenge_effects([first, third])
    assert first.pk not in after
    assert after[third.pk].effect == "suspended"


@pytest.mark.django_db
def test_a_repeat_written_past_the_action_still_counts_once_and_reads_none(member, eight_admitted):
    fact = eight_admitted[0]
    first = challenge(member, fact, 1)
    # Before the rule, or restored from an export: a second open one on the fact.
    repeat = Record.objects.create(
        scope=fact.scope,
        fact=fact,
        role="challenge",
        ground="again",
        evidence=[{"ref": "ticket-2"}],
        author=member,
        inserted_at=minutes(2),
    )
    effects = challenge_effects([first, repeat])
    assert (effects[first.pk].effect, effects[repeat.pk].effect) == ("suspended", "none")
    assert "count once" in effects[repeat.pk].why
    assert fact_status(fact).suspended_by == (first.pk,)


@pytest.mark.django_db
def test_a_second_open_challenge_on_the_same_fact_is_refused_and_nothing_is_written(
    member, system_fact
):
    first = challenge(member, system_fact, 1)
    records, audits = Record.objects.count(), AuditEntry.objects.count()
    with pytest.raises(ChallengeAlreadyOpen) as refused:
        challenge(member, system_fact, 2)
    assert isinstance(refused.value, StateConflict)
    assert refused.value.code == "challenge_already_open"
    assert refused.value.challenge_id == first.pk
    assert str(first.pk) in str(refused.value)
    assert (Record.objects.count(), AuditEntry.objects.count()) == (records, audits)


@pytest.mark.django_db
def test_an_open_challenge_without_evidence_also_refuses_a_second(member, system_fact):
    challenge(member, system_fact, 1, evidence=None)
    with pytest.raises(ChallengeAlreadyOpen):
        challenge(member, system_fact, 2)


@pytest.mark.django_db
def test_after_a_refutation_the_same_account_may_challenge_the_fact_again(
    steward, member, system_fact
):
    admit(steward, system_fact)
    first = challenge(member, system_fact, 1)
    refute_challenge(actor=steward, challenge_id=first.pk, ground="checked", now=minutes(2))
    assert open_challenge_by(member, system_fact) is None
    again = challenge(member, system_fact, 3)
    assert open_challenge_by(member, system_fact) == again
    assert fact_status(system_fact).status == "suspended"


@pytest.mark.django_db
def test_another_account_may_challenge_a_fact_someone_else_challenges(
    steward, member, author, system_fact
):
    admit(steward, system_fact)
    challenge(member, system_fact, 1)
    challenge(author, system_fact, 2)
    assert len(fact_status(system_fact).suspended_by) == 2


@pytest.mark.django_db
def test_an_accounts_challenges_list_newest_first_with_effect_or_refutation(
    steward, member, eight_admitted
):
    first = challenge(member, eight_admitted[0], 1)
    second = challenge(member, eight_admitted[1], 2)
    refute_challenge(actor=steward, challenge_id=first.pk, ground="source checked", now=minutes(3))
    shown = challenges_of(member, [eight_admitted[0].scope_id], limit=10)
    assert [item.challenge.pk for item in shown] == [second.pk, first.pk]
    assert (shown[0].effect.effect, shown[0].refutation) == ("suspended", None)
    assert shown[1].effect is None
    refutation = shown[1].refutation
    assert (refutation.ground, refutation.by, refutation.at) == (
        "source checked",
        steward.username,
        minutes(3),
    )
