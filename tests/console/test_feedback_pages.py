"""The console's styled error pages (403, 404, 405) and the status messages htmx answers
carry, over HTTP on the real database. The API keeps its JSON for the same refusals."""

import pytest
from django.test import RequestFactory
from django.urls import reverse

from api.errors import permission_denied
from memories.store.models import Fact

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture(autouse=True)
def production(settings):
    """Django's handlers and pages as served with DEBUG off."""
    settings.DEBUG = False


def in_the_layout(html: str) -> None:
    assert "css/console.css" in html
    assert 'class="site-header"' in html


@pytest.mark.parametrize("name", ["conflict-resolve", "fact-verdict", "fact-challenge"])
def test_a_get_on_an_action_answers_a_styled_405_with_allow_post(as_member, world, name):
    target = world.conflict.pk if name == "conflict-resolve" else world.admitted.pk
    response = as_member.get(reverse(name, args=[target]))
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    html = response.content.decode()
    in_the_layout(html)
    assert "This address is an action, not a page" in html
    assert "It takes POST" in html
    assert 'aria-label="Main"' in html  # the navigation, for a signed-in account


def test_the_405_page_also_answers_a_visitor_who_is_not_signed_in(client, world):
    response = client.get(reverse("fact-verdict", args=[world.admitted.pk]))
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert "This address is an action" in response.content.decode()


def test_a_fact_outside_the_viewers_scopes_is_a_styled_404_that_leaks_nothing(as_outsider, world):
    response = as_outsider.get(reverse("fact", args=[world.admitted.pk]))
    assert response.status_code == 404
    html = response.content.decode()
    in_the_layout(html)
    assert "Not found" in html
    for secret in ("AuthService", "2.0.0", "has-version", str(world.admitted.pk)):
        assert secret not in html


def test_an_unknown_console_address_is_the_same_styled_404(as_member):
    response = as_member.get("/no-such-page/")
    assert response.status_code == 404
    in_the_layout(response.content.decode())
    assert "Not found" in response.content.decode()


def test_the_api_keeps_its_json_for_404_and_405(client):
    response = client.get("/api/v1/no-such-thing")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    response = client.get("/api/v1/facts")
    assert response.status_code == 405
    assert response["Content-Type"].startswith("application/json")


def test_a_permission_denied_is_a_styled_403_in_the_console_and_json_in_the_api(member):
    factory = RequestFactory()
    request = factory.get("/facts/")
    request.user = member
    response = permission_denied(request, Exception("no"))
    assert response.status_code == 403
    html = response.content.decode()
    in_the_layout(html)
    assert "Not allowed" in html
    api = permission_denied(factory.get("/api/v1/facts/x"), Exception("no"))
    assert api.status_code == 403
    assert api["Content-Type"].startswith("application/json")


def test_a_member_asking_for_a_stewards_queue_gets_the_refusal_in_the_layout(as_member):
    response = as_member.get(reverse("candidates"))
    assert response.status_code == 403
    in_the_layout(response.content.decode())


# --- status messages in htmx answers ------------------------------------------------------


def test_an_htmx_challenge_answer_carries_the_message_out_of_band(as_member, world):
    url = reverse("fact-challenge", args=[world.admitted.pk])
    response = as_member.post(url, {"ground": "3.0.0 shipped", "evidence": "PR-9"}, **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert '<div id="messages" hx-swap-oob="innerHTML">' in html
    assert "Challenge filed against" in html
    # Read once: the next page does not say it again.
    assert "Challenge filed" not in as_member.get(reverse("facts")).content.decode()


def test_an_htmx_verdict_and_a_batch_review_say_what_they_did(as_steward, world):
    first, second, third = world.candidates
    url = reverse("fact-verdict", args=[first.pk])
    html = as_steward.post(url, {"verdict": "admitted", "ground": "seen"}, **HTMX).content.decode()
    assert 'id="messages" hx-swap-oob' in html
    assert "Admitted:" in html
    batch = {"facts": [str(second.pk), str(third.pk)], "verdict": "rejected", "ground": "no"}
    html = as_steward.post(reverse("candidates"), batch, **HTMX).content.decode()
    assert "Rejected 2 of 2 selected candidates." in html
    assert 'id="messages" hx-swap-oob' in html


def test_a_refused_htmx_input_is_the_fragment_with_its_error_and_writes_nothing(as_member, world):
    url = reverse("fact-challenge", args=[world.admitted.pk])
    response = as_member.post(url, {"ground": "   ", "evidence": ""}, **HTMX)
    assert response.status_code == 400
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="fact-status">')
    assert 'class="error"' in html
    assert "hx-swap-oob" not in html
    assert not Fact.objects.get(pk=world.admitted.pk).records.filter(role="challenge").exists()


def test_a_page_that_showed_its_messages_adds_no_second_copy(as_steward, world):
    url = reverse("fact-verdict", args=[world.candidates[0].pk])
    response = as_steward.post(url, {"verdict": "admitted", "ground": "seen"}, follow=True)
    html = response.content.decode()
    assert html.count("Admitted:") == 1
    assert "hx-swap-oob" not in html


def test_an_htmx_answer_without_messages_is_untouched(as_member):
    assert "hx-swap-oob" not in as_member.get(reverse("facts"), **HTMX).content.decode()
