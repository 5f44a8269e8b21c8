"""Claim and Release in the console: a note on the item page and its queue row, for stewards."""

import pytest
from django.urls import reverse

from memories.store.models import ReviewClaim
from memories.write.claims import claim_item
from tests.console.conftest import signed_in

pytestmark = pytest.mark.django_db


def test_claiming_a_conflict_shows_who_reviews_it_on_the_page_and_the_queue(
    world, as_steward, scope_steward
):
    url = reverse("claim", args=["conflict", world.conflict.pk])
    answer = as_steward.post(url, {"queue": "scope=project"})
    page = reverse("conflict", args=[world.conflict.pk])
    assert answer.status_code == 303
    assert answer["Location"] == page + "?queue=scope%3Dproject"
    followed = as_steward.get(page)
    assert "Claimed until " in followed.text
    assert "You are reviewing this (until" in followed.text
    assert "Release" in followed.text

    # Another steward sees the claim, is offered no Claim, and may still rule.
    other = signed_in(scope_steward).get(page)
    assert "Being reviewed by stella (until" in other.text
    assert "You may still act" in other.text
    assert "Keep this" in other.text
    queue = signed_in(scope_steward).get(reverse("conflicts"))
    assert "Being reviewed by stella" in queue.text


def test_a_claimed_candidate_shows_on_the_candidates_queue_and_the_fact_page(world, as_steward):
    fact = world.candidates[0]
    as_steward.post(reverse("claim", args=["fact", fact.pk]))
    assert "Being reviewed by stella" in as_steward.get(reverse("candidates")).text
    assert "You are reviewing this (until" in as_steward.get(reverse("fact", args=[fact.pk])).text


def test_htmx_claim_answers_with_the_panel_saying_claimed(world, as_steward):
    answer = as_steward.post(
        reverse("claim", args=["conflict", world.conflict.pk]), headers={"HX-Request": "true"}
    )
    assert answer.status_code == 200
    assert 'role="status"' in answer.text
    assert "Claimed until " in answer.text
    assert "<html" not in answer.text
    released = as_steward.post(
        reverse("release-claim", args=["conflict", world.conflict.pk]),
        headers={"HX-Request": "true"},
    )
    assert "Released" in released.text
    assert not ReviewClaim.objects.exists()


def test_a_second_steward_cannot_take_a_live_claim(world, steward, scope_steward):
    claim_item(actor=steward, conflict_id=world.conflict.pk)
    answer = signed_in(scope_steward).post(
        reverse("claim", args=["conflict", world.conflict.pk]), follow=True
    )
    assert "Not claimed: already being reviewed by stella" in answer.text
    assert ReviewClaim.objects.get().claimed_by == steward


def test_members_are_refused_and_outsiders_get_not_found(world, as_member, as_outsider):
    for kind, pk in [("conflict", world.conflict.pk), ("fact", world.candidates[0].pk)]:
        assert as_member.post(reverse("claim", args=[kind, pk])).status_code == 403
        assert as_outsider.post(reverse("claim", args=[kind, pk])).status_code == 404
        assert as_outsider.post(reverse("release-claim", args=[kind, pk])).status_code == 404
    page = as_member.get(reverse("conflict", args=[world.conflict.pk]))
    assert ">Claim<" not in page.text
    assert not ReviewClaim.objects.exists()


def test_a_claim_is_a_post(world, as_steward):
    assert (
        as_steward.get(reverse("claim", args=["fact", world.candidates[0].pk])).status_code == 405
    )


def test_a_ruling_from_the_page_ends_the_claim(world, as_steward):
    as_steward.post(reverse("claim", args=["conflict", world.conflict.pk]))
    as_steward.post(
        reverse("conflict-resolve", args=[world.conflict.pk]),
        {"action": "dismiss", "reason": "a false alarm"},
    )
    assert not ReviewClaim.objects.exists()
