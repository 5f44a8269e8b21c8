"""The webhook pages of the console: the account section, an endpoint's log, its actions."""

import re

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from standardwebhooks import Webhook

from notifications.webhook.actions import create_endpoint
from notifications.webhook.models import Delivery, Endpoint
from notifications.webhook.signing import body_bytes, signed_headers
from tests.conftest import make_user
from tests.notifications.receiver import Answer, Receiver
from tests.notifications.test_webhooks import record_event
from tests.taskqueue import run_queued_tasks


@pytest.fixture(autouse=True)
def webhook_settings(settings):
    settings.CLAIMGRAPH_WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1"]
    return settings


def signed_in(user) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def csrf_of(client: Client) -> str:
    client.get(reverse("account"))
    return client.cookies["csrftoken"].value


def post(client: Client, url: str, data: dict | None = None):
    return client.post(url, {**(data or {}), "csrfmiddlewaretoken": csrf_of(client)})


def test_the_account_page_lists_the_viewers_endpoints_only(scope, scope_steward, member):
    mine, _ = create_endpoint(owner=scope_steward, scope=scope, url="https://hooks.example/a")
    create_endpoint(owner=member, scope=scope, url="https://hooks.example/theirs")
    page = signed_in(scope_steward).get(reverse("account")).content.decode()
    assert "https://hooks.example/a" in page
    assert reverse("webhook-endpoint", args=[mine.pk]) in page
    assert "hooks.example/theirs" not in page
    assert 'action="/account/webhooks/"' in page


def test_adding_an_endpoint_shows_its_secret_once(scope, scope_steward):
    client = signed_in(scope_steward)
    response = post(
        client,
        reverse("webhook-add"),
        {"url": "https://hooks.example/in", "scope": scope.name, "kinds": ["conflict.opened"]},
    )
    assert response.status_code == 201
    endpoint = Endpoint.objects.get()
    assert (endpoint.url, endpoint.kinds, endpoint.owner) == (
        "https://hooks.example/in",
        ["conflict.opened"],
        scope_steward,
    )
    assert endpoint.secret in response.content.decode()
    assert "no-cache" in response["Cache-Control"] or "no-store" in response["Cache-Control"]
    # Never again: not on the endpoint's page, nor on the account page.
    assert (
        endpoint.secret
        not in client.get(reverse("webhook-endpoint", args=[endpoint.pk])).content.decode()
    )
    assert endpoint.secret not in client.get(reverse("account")).content.decode()


def test_a_bad_url_is_refused_naming_it_and_writes_nothing(scope, scope_steward):
    response = post(
        signed_in(scope_steward),
        reverse("webhook-add"),
        {"url": "ftp://hooks.example/in", "scope": scope.name},
    )
    assert response.status_code == 400
    assert "must start with http:// or https://" in response.content.decode()
    assert not Endpoint.objects.exists()


def test_the_scope_choice_offers_only_the_viewers_scopes(scope, other_scope, scope_steward):
    response = post(
        signed_in(scope_steward),
        reverse("webhook-add"),
        {"url": "https://hooks.example/in", "scope": other_scope.name},
    )
    assert response.status_code == 400
    assert not Endpoint.objects.exists()
    account = signed_in(scope_steward).get(reverse("account")).content.decode()
    assert f'value="{scope.name}"' in account
    assert f'value="{other_scope.name}"' not in account


def test_a_member_may_subscribe_only_to_its_challenges_outcomes(scope, member):
    client = signed_in(member)
    refused = post(
        client,
        reverse("webhook-add"),
        {"url": "https://hooks.example/in", "scope": scope.name, "kinds": ["conflict.opened"]},
    )
    assert refused.status_code == 400
    assert "not a steward" in refused.content.decode()
    added = post(client, reverse("webhook-add"), {"url": "https://h.example/", "scope": scope.name})
    assert added.status_code == 201
    assert Endpoint.objects.get().kinds == ["challenge.settled"]


def test_the_endpoint_page_shows_the_delivery_log_and_redelivers(scope, scope_steward):
    with Receiver(Answer(500, b"down"), Answer(200, b"fine")) as receiver:
        endpoint, secret = create_endpoint(owner=scope_steward, scope=scope, url=receiver.url())
        event = record_event(scope)
        run_queued_tasks()
        client = signed_in(scope_steward)
        page = client.get(reverse("webhook-endpoint", args=[endpoint.pk])).content.decode()
        assert event.public_id in page
        assert "<strong>500</strong>" in page and "down" in page and " ms</small>" in page
        first = Delivery.objects.get()
        response = post(client, reverse("webhook-redeliver", args=[first.pk]))
        assert response.status_code == 302
        assert response["Location"] == reverse("webhook-endpoint", args=[endpoint.pk])
        # The redelivery is due at once; the first delivery's retry is not due yet.
        assert run_queued_tasks() == 1
    again = Delivery.objects.exclude(pk=first.pk).get()
    assert (again.state, again.redelivered_by) == ("delivered", scope_steward)
    last = receiver.received[-1]
    assert last.headers["webhook-id"] == event.public_id
    Webhook(secret).verify(last.body, last.headers)
    page = client.get(reverse("webhook-endpoint", args=[endpoint.pk])).content.decode()
    assert "<strong>200</strong>" in page and "(redelivery)" in page


def test_the_log_refreshes_as_a_partial_for_htmx(scope, scope_steward):
    endpoint, _ = create_endpoint(owner=scope_steward, scope=scope, url="https://h.example/")
    response = signed_in(scope_steward).get(
        reverse("webhook-endpoint", args=[endpoint.pk]), HTTP_HX_REQUEST="true"
    )
    page = response.content.decode()
    assert page.lstrip().startswith('<section id="deliveries"')
    assert "Rotate the secret" not in page


def test_rotating_shows_the_new_secret_once_and_keeps_the_old_one_for_the_overlap(
    scope, scope_steward
):
    endpoint, old = create_endpoint(owner=scope_steward, scope=scope, url="https://h.example/")
    response = post(signed_in(scope_steward), reverse("webhook-rotate", args=[endpoint.pk]))
    endpoint.refresh_from_db()
    assert response.status_code == 200
    assert endpoint.secret != old and endpoint.previous_secret == old
    page = response.content.decode()
    assert endpoint.secret in page and old not in page


def test_removing_an_endpoint(scope, scope_steward):
    endpoint, _ = create_endpoint(owner=scope_steward, scope=scope, url="https://h.example/")
    response = post(signed_in(scope_steward), reverse("webhook-remove", args=[endpoint.pk]))
    assert response.status_code == 302
    assert not Endpoint.objects.exists()


def test_a_disabled_endpoint_is_announced_on_the_account_page_and_can_be_enabled(
    scope, scope_steward
):
    endpoint, _ = create_endpoint(owner=scope_steward, scope=scope, url="https://h.example/")
    Endpoint.objects.filter(pk=endpoint.pk).update(
        active=False, disabled_at=timezone.now(), disabled_reason="every attempt failed"
    )
    client = signed_in(scope_steward)
    account = client.get(reverse("account")).content.decode()
    assert "Webhook endpoint disabled:" in account and "every attempt failed" in account
    assert post(client, reverse("webhook-enable", args=[endpoint.pk])).status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.active and endpoint.disabled_reason == ""


def unmasked(response) -> str:
    """The page without what differs on every response (the masked CSRF token, the CSP nonce)."""
    page = response.content.decode()
    page = re.sub(r'"X-CSRFToken": "[^"]+"', "", page)
    page = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", page)
    return re.sub(r'nonce="[^"]+"', "", page)


def test_another_persons_endpoint_answers_exactly_like_a_missing_one(scope, scope_steward):
    endpoint, _ = create_endpoint(owner=scope_steward, scope=scope, url="https://h.example/")
    record_event(scope)
    delivery = Delivery.objects.get()
    stranger = signed_in(make_user("stranger"))
    missing = stranger.get(reverse("webhook-endpoint", args=[endpoint.pk + 1000]))
    theirs = stranger.get(reverse("webhook-endpoint", args=[endpoint.pk]))
    assert missing.status_code == theirs.status_code == 404
    assert unmasked(missing) == unmasked(theirs)
    for name, pk in [
        ("webhook-rotate", endpoint.pk),
        ("webhook-remove", endpoint.pk),
        ("webhook-enable", endpoint.pk),
        ("webhook-redeliver", delivery.pk),
    ]:
        assert post(stranger, reverse(name, args=[pk])).status_code == 404
    endpoint.refresh_from_db()
    assert Delivery.objects.count() == 1 and endpoint.previous_secret == ""


def test_the_actions_need_the_csrf_token(scope, scope_steward):
    endpoint, _ = create_endpoint(owner=scope_steward, scope=scope, url="https://h.example/")
    client = signed_in(scope_steward)
    assert client.post(reverse("webhook-remove", args=[endpoint.pk])).status_code == 403
    assert client.post(reverse("webhook-add"), {"url": "https://x.example/"}).status_code == 403
    assert Endpoint.objects.count() == 1


def test_the_demo_receiver_accepts_a_good_signature_only(scope, scope_steward, settings):
    settings.CLAIMGRAPH_WEBHOOK_RECEIVER = True
    _, secret = create_endpoint(
        owner=scope_steward, scope=scope, url="http://127.0.0.1:8000/webhooks/receiver/"
    )
    body = body_bytes({"type": "conflict.opened"})
    headers = signed_headers(message_id="evt_1", body=body, secrets_=[secret], now=timezone.now())
    extra = {f"HTTP_{name.upper().replace('-', '_')}": value for name, value in headers.items()}
    client = Client()
    url = reverse("webhook-receiver")
    assert client.post(url, body, content_type="application/json", **extra).status_code == 204
    tampered = body.replace(b"opened", b"closed")
    assert client.post(url, tampered, content_type="application/json", **extra).status_code == 400
    settings.CLAIMGRAPH_WEBHOOK_RECEIVER = False
    assert client.post(url, body, content_type="application/json", **extra).status_code == 404
