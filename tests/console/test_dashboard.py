"""The dashboard: queue counts and ages against their targets, and the viewer's own actions."""

import pytest
from django.urls import reverse

from admissions import queues as admissions_queues
from admissions.actions import file_challenge, record_verdict
from admissions.selectors import candidates
from memories.store.models import Scope
from memories.write.actions import invalidate_fact, resolve_conflict
from tests.console.conftest import signed_in
from tests.test_settings import start_settings

pytestmark = pytest.mark.django_db

TARGETS = ("conflicts", "candidates", "challenges", "suspended")


def queues_of(client) -> dict:
    return {queue.label: queue for queue in client.get(reverse("dashboard")).context["queues"]}


def test_a_queue_whose_oldest_item_is_past_its_target_is_marked_in_words(
    world, as_steward, settings
):
    settings.CLAIMGRAPH_QUEUE_TARGET_HOURS = dict.fromkeys(TARGETS, 24) | {"conflicts": 10**6}
    queues = queues_of(as_steward)
    assert not queues["Open conflicts"].over_target
    assert queues["Candidates awaiting a verdict"].over_target
    page = as_steward.get(reverse("dashboard")).text
    assert page.count("over target") == sum(q.over_target for q in queues.values())
    assert "target: under 1000000 hours" in page
    assert "target: under 24 hours" in page


def test_an_empty_queue_is_never_over_target(steward, as_steward, settings):
    settings.CLAIMGRAPH_QUEUE_TARGET_HOURS = dict.fromkeys(TARGETS, 1)
    assert not any(queue.over_target for queue in queues_of(as_steward).values())
    assert "over target" not in as_steward.get(reverse("dashboard")).text


def test_the_dashboard_lists_the_viewers_own_actions_in_words_with_links(
    world, steward, scope_steward
):
    fact = world.candidates[0]
    record_verdict(actor=steward, fact_id=fact.pk, verdict="admitted", ground="seen in the repo")
    resolve_conflict(
        actor=steward, conflict_id=world.conflict.pk, action="dismiss", reason="a false alarm"
    )
    record_verdict(
        actor=scope_steward, fact_id=world.candidates[1].pk, verdict="rejected", ground="no"
    )

    page = signed_in(steward).get(reverse("dashboard")).text
    assert (
        f'Admitted <a href="{reverse("fact", args=[fact.pk])}">'
        "<bdi>shoply core/uses Redis</bdi></a>" in page
    )
    conflict_url = reverse("conflict", args=[world.conflict.pk])
    assert (
        f'Dismissed <a href="{conflict_url}"><bdi>the conflict on api-layer core/prefers</bdi></a>'
        " as a false" in page
    )
    assert page.index("Dismissed <a") < page.index("Admitted <a")  # newest first
    assert "Rejected" not in page  # another steward's action
    assert "Rejected <a" in signed_in(scope_steward).get(reverse("dashboard")).text


def test_at_most_ten_own_actions_are_listed(world, steward):
    for fact in [*world.candidates, world.newcomer] * 3:
        record_verdict(actor=steward, fact_id=fact.pk, verdict="rejected", ground="not so")
    recent = signed_in(steward).get(reverse("dashboard")).context["recent"]
    assert len(recent) == 10


def test_a_member_sees_no_withdrawal_link_and_a_steward_does(
    world, as_member, as_steward, as_outsider
):
    assert "Withdraw an episode…" not in as_member.get(reverse("dashboard")).text
    assert "Withdraw an episode…" in as_steward.get(reverse("dashboard")).text
    own = as_member.get(reverse("dashboard")).text
    assert (
        "Opened " in own
        and "><bdi>the conflict on api-layer core/prefers</bdi></a> (commitment)" in own
    )
    assert "You have not acted yet" in as_outsider.get(reverse("dashboard")).text


@pytest.mark.parametrize(
    "variable",
    [
        "CLAIMGRAPH_QUEUE_TARGET_HOURS",
        "CLAIMGRAPH_QUEUE_TARGET_HOURS_CONFLICTS",
        "CLAIMGRAPH_CLAIM_MINUTES",
    ],
)
def test_a_bad_target_or_claim_length_stops_start_up(variable):
    result = start_settings(DJANGO_DEBUG="1", **{variable: "0"})
    assert result.returncode != 0
    assert variable in result.stderr


def test_a_count_past_the_limit_says_more_and_keeps_the_oldest(world, as_steward, monkeypatch):
    monkeypatch.setattr(admissions_queues, "COUNTED", 1)
    waiting = candidates(Scope.objects.values("pk"))
    assert waiting.count() > 1
    shown = queues_of(as_steward)["Candidates awaiting a verdict"]
    assert (shown.count, shown.more) == (1, True)
    assert shown.oldest == waiting.order_by("recorded_at").first().recorded_at
    assert 'aria-label="1 or more candidates awaiting a verdict">1+</a>' in (
        as_steward.get(reverse("dashboard")).text
    )


def test_the_suspended_count_is_what_its_queue_lists_an_invalidated_fact_included(
    world, steward, member, as_steward
):
    file_challenge(
        actor=member,
        fact_id=world.admitted.pk,
        ground="the release notes say 2.1.0",
        evidence=[{"ref": "CHANGELOG.md"}],
    )
    invalidate_fact(actor=steward, fact_id=world.admitted.pk, reason="AuthService was retired")

    assert queues_of(as_steward)["Suspended facts"].count == 1
    listed = as_steward.get(reverse("facts"), {"status": "suspended"}).context["page"]
    assert [fact.pk for fact in listed.object_list] == [world.admitted.pk]
