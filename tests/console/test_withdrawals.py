"""Withdrawing an episode from the console: the dry run first, then one confirmation."""

import re

import pytest
from django.urls import reverse

from memories.store.models import Fact, InvalidationKind, Withdrawal
from memories.write.actions import assert_fact
from tests.conftest import at, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def episode(scope, member, steward):
    """An agent run that overwrote a good version, and wrote one new fact."""
    agent = make_user("agent-7")
    scope.members.add(agent)

    def write(actor, subject, predicate, obj, source, now, **extra):
        data = {"scope": "project", "subject": subject, "predicate": predicate}
        data |= {"object": obj, "source_type": source, **extra}
        return assert_fact(actor=actor, data=data, now=at(now)).fact

    good = write(member, "AuthService", "core/has-version", "2.0.0", "code", "2026-04-01T09:00")
    bad = write(
        agent,
        "AuthService",
        "core/has-version",
        "6.6.6",
        "code",
        "2026-04-02T09:00",
        episode="run-7",
    )
    extra = write(
        agent, "shoply", "core/uses", "Mongo", "session-log", "2026-04-02T10:00", episode="run-7"
    )
    return {"good": good, "bad": bad, "extra": extra}


def dry_run_token(as_steward) -> str:
    """The token the dry run page carries in its confirmation form."""
    page = as_steward.get(reverse("withdraw"), {"scope": "project", "episode": "run-7"})
    return re.search(r'name="token" value="([0-9a-f]+)"', page.text).group(1)


def test_the_dry_run_lists_what_would_change_and_changes_nothing(episode, as_steward):
    answer = as_steward.get(reverse("withdraw"), {"scope": "project", "episode": "run-7"})
    assert answer.status_code == 200
    text = answer.text
    assert "Dry run: <bdi>run-7</bdi> in project" in text
    assert "Would withdraw 2 facts" in text and "6.6.6" in text and "Mongo" in text
    assert "Would reinstate 1 fact" in text and "2.0.0" in text
    assert ">Withdraw</button>" in text
    assert not Withdrawal.objects.exists()
    assert Fact.objects.get(pk=episode["bad"].pk).t_invalid is None


def test_withdraw_needs_a_reason_and_writes_nothing_without_one(episode, as_steward):
    answer = as_steward.post(
        reverse("withdraw"), {"scope": "project", "episode": "run-7", "reason": "   "}
    )
    assert answer.status_code == 400
    assert "a withdrawal needs a reason" in answer.text
    assert "Would withdraw 2 facts" in answer.text
    assert not Withdrawal.objects.exists()


def test_withdraw_does_it_and_says_what_was_done(episode, as_steward):
    answer = as_steward.post(
        reverse("withdraw"),
        {
            "scope": "project",
            "episode": "run-7",
            "reason": "the agent run was poisoned",
            "token": dry_run_token(as_steward),
        },
        follow=True,
    )
    record = Withdrawal.objects.get()
    assert answer.redirect_chain[-1][0] == reverse("withdrawal", args=[record.pk])
    assert "Withdrew episode run-7 in project: 2 facts withdrawn, 1 fact reinstated." in answer.text
    assert "the agent run was poisoned" in answer.text
    bad = Fact.objects.get(pk=episode["bad"].pk)
    assert bad.invalidation_kind == InvalidationKind.WITHDRAWN
    assert Fact.objects.get(pk=episode["good"].pk).t_invalid is None


def test_an_unknown_episode_is_named_as_the_problem(episode, as_steward):
    answer = as_steward.get(reverse("withdraw"), {"scope": "project", "episode": "run-8"})
    assert "This episode wrote nothing in this scope." in answer.text
    assert ">Withdraw</button>" not in answer.text


def test_members_are_refused_and_a_scope_not_stewarded_is_not_offered(
    episode, as_member, as_outsider, scope_steward, other_scope
):
    assert as_member.get(reverse("withdraw")).status_code == 403
    posted = as_member.post(
        reverse("withdraw"), {"scope": "project", "episode": "run-7", "reason": "mine now"}
    )
    assert posted.status_code == 403
    assert as_outsider.get(reverse("withdraw")).status_code == 403
    assert not Withdrawal.objects.exists()


def test_the_fact_page_links_stewards_to_the_withdrawal_of_its_episode(
    episode, as_steward, as_member
):
    page = reverse("fact", args=[episode["bad"].pk])
    assert "Withdraw this episode…" in as_steward.get(page).text
    assert "?scope=project&amp;episode=run-7" in as_steward.get(page).text
    assert "Withdraw this episode…" not in as_member.get(page).text


def test_a_confirmation_after_the_episode_grew_withdraws_nothing_and_shows_the_new_dry_run(
    episode, as_steward
):
    """Issue 29 §2: the agent wrote into the episode between the dry run and Withdraw."""
    token = dry_run_token(as_steward)
    data = {"scope": "project", "subject": "queue", "predicate": "core/uses", "object": "sqs"}
    assert_fact(
        actor=episode["bad"].author, data={**data, "source_type": "code", "episode": "run-7"}
    )
    posted = {"scope": "project", "episode": "run-7", "reason": "poisoned", "token": token}
    answer = as_steward.post(reverse("withdraw"), posted)
    assert answer.status_code == 409
    assert "Nothing was withdrawn: the episode changed since its dry run" in answer.text
    assert "Would withdraw 3 facts" in answer.text and "sqs" in answer.text
    assert not Withdrawal.objects.exists()
    new_token = re.search(r'name="token" value="([0-9a-f]+)"', answer.text).group(1)
    assert new_token != token and new_token == dry_run_token(as_steward)
    assert as_steward.post(reverse("withdraw"), {**posted, "token": new_token}).status_code == 302
    assert len(Withdrawal.objects.get().withdrawn) == 3


def test_the_page_lists_the_scopes_recent_episodes_with_a_link_to_each_dry_run(episode, as_steward):
    page = as_steward.get(reverse("withdraw")).content.decode()
    assert "Recent episodes" in page
    assert "run-7" in page
    assert "?scope=project&amp;episode=run-7" in page
