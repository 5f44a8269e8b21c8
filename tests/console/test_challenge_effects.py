"""What a challenge does, said on the fact page before filing and on the challenger's
dashboard after; a second open challenge refused from the console (issue 30 item 7)."""

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from admissions.actions import file_challenge, record_verdict, refute_challenge
from admissions.models import Record
from tests.admissions.conftest import write_fact
from tests.console.conftest import signed_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def admitted(steward) -> list:
    """Eight admitted facts: a flood cap of 2 per account."""
    facts = [write_fact(steward, f"lib-{n}") for n in range(8)]
    for fact in facts:
        record_verdict(actor=steward, fact_id=fact.pk, verdict="admitted", ground="checked")
    return facts


def challenge(actor, fact, evidence=("PR-1",)):
    return file_challenge(
        actor=actor,
        fact_id=fact.pk,
        ground="outdated",
        evidence=list(evidence) if evidence else None,
    )


def effect_box(response) -> str:
    page = response.content.decode()
    start = page.index('id="challenge-effect"')
    return page[start : page.index("</div>", start)]


def test_the_form_says_a_challenge_would_suspend_the_fact_below_the_cap(member, admitted):
    response = signed_in(member).get(reverse("fact", args=[admitted[0].pk]))
    said = effect_box(response)
    assert "With evidence, a challenge filed now suspends this fact" in said
    assert "where the cap is 2 (25% of its 8 admitted facts, rounded up)" in said


def test_the_form_says_at_the_cap_a_challenge_is_queued_with_no_effect_and_why(member, admitted):
    challenge(member, admitted[0])
    challenge(member, admitted[1])
    response = signed_in(member).get(reverse("fact", args=[admitted[2].pk]))
    said = effect_box(response)
    assert "You are at your flood cap here: a challenge filed now is queued with no effect" in said
    assert "It does not suspend this fact." in said
    assert "already suspend 2 facts, your flood cap in this scope" in said
    assert "no time window" in said
    assert "when 1 of your earlier challenges is refuted, or when 1 more fact is admitted" in said
    # Another account, below its own cap, is told the fact would be suspended.
    other = signed_in(admitted[0].author).get(reverse("fact", args=[admitted[2].pk]))
    assert "a challenge filed now suspends this fact" in effect_box(other)


def test_a_candidate_fact_says_a_challenge_has_no_effect_until_admitted(member, author):
    fact = write_fact(author, "not-yet")
    said = effect_box(signed_in(member).get(reverse("fact", args=[fact.pk])))
    assert "no effect while this fact is not admitted" in said


def test_with_an_open_challenge_of_ones_own_the_page_names_it_instead_of_the_form(member, admitted):
    challenge(member, admitted[0], evidence=None)
    page = signed_in(member).get(reverse("fact", args=[admitted[0].pk])).content.decode()
    assert "You already have an open challenge on this fact" in page
    assert reverse("fact-challenge", args=[admitted[0].pk]) not in page


@pytest.mark.parametrize("htmx", [False, True])
def test_a_second_open_challenge_is_refused_with_409_keeping_what_was_typed(member, admitted, htmx):
    first = challenge(member, admitted[0])
    headers = {"HX-Request": "true"} if htmx else {}
    response = signed_in(member).post(
        reverse("fact-challenge", args=[admitted[0].pk]),
        {"ground": "still outdated, see the tag", "evidence": "PR-77"},
        headers=headers,
    )
    assert response.status_code == 409
    page = response.content.decode()
    # The whole page, so htmx's error handler finds the reason in main.
    assert "<main" in page
    assert 'class="error" role="alert">Not filed: you already have an open challenge' in page
    assert str(first.pk) in page
    assert "still outdated, see the tag" in page and "PR-77" in page
    assert Record.objects.challenges().count() == 1


def test_after_a_refutation_the_console_files_a_new_challenge(member, steward, admitted):
    first = challenge(member, admitted[0])
    refute_challenge(actor=steward, challenge_id=first.pk, ground="it stands")
    response = signed_in(member).post(
        reverse("fact-challenge", args=[admitted[0].pk]), {"ground": "again", "evidence": "PR-2"}
    )
    assert response.status_code == 302
    said = [str(m) for m in get_messages(response.wsgi_request)][-1]
    assert "Suspends the fact until a steward refutes it." in said


def test_the_dashboard_lists_ones_challenges_with_effect_and_outcome(member, steward, admitted):
    refuted = challenge(member, admitted[0])
    challenge(member, admitted[1])
    challenge(member, admitted[2])
    challenge(member, admitted[3])  # the third open one: past the cap of 2
    refute_challenge(actor=steward, challenge_id=refuted.pk, ground="the tag says so")
    response = signed_in(member).get(reverse("dashboard"))
    shown = response.context["my_challenges"]
    assert [item.challenge.fact_id for item in shown] == [f.pk for f in admitted[3::-1]]
    assert [item.effect.effect if item.effect else None for item in shown] == [
        "queued",
        "suspended",
        "suspended",
        None,
    ]
    page = response.content.decode()
    section = page[page.index("Your challenges") : page.index("Your recent actions")]
    assert "queued with no effect" in section and "no time window" in section
    assert "suspends the fact" in section
    assert "refuted" in section and "the tag says so" in section
    assert f"author={member.username}" in section


def test_the_dashboard_of_an_account_without_challenges_has_no_such_section(member, admitted):
    response = signed_in(member).get(reverse("dashboard"))
    assert "Your challenges" not in response.content.decode()
