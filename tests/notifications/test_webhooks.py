"""Webhook deliveries over real HTTP: signed, retried, logged, guarded, and disabled when dead."""

import ipaddress
import json
from datetime import UTC, datetime, timedelta
from itertools import count

import pytest
from django.core import mail
from django.utils import timezone
from django_tasks_db.models import DBTaskResult
from guardian.shortcuts import remove_perm
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from memories.store.roles import STEWARD_PERMISSION
from notifications.channels import announce
from notifications.models import Event, EventKind
from notifications.webhook.actions import create_endpoint, rotate_secret
from notifications.webhook.addresses import forbidden_reason
from notifications.webhook.deliveries import attempt_delivery, backoff, forget_old_deliveries
from notifications.webhook.models import Delivery, DeliveryState, Endpoint
from notifications.webhook.sending import retryable_status
from notifications.worker import PERIODIC_JOBS
from tests.notifications.receiver import Answer, Receiver
from tests.taskqueue import run_queued_tasks, task_statuses

_sources = count()


def record_event(scope, kind=EventKind.CONFLICT_OPENED, addressee=None) -> Event:
    """An event as the feed records it, handed to the channels as the feed does."""
    event = Event.objects.create(
        kind=kind,
        scope=scope,
        addressee=addressee,
        occurred_at=timezone.now(),
        source=f"test:{next(_sources)}",
        data={
            "summary": "AuthService core/has-version has two values.",
            "scope": {"id": scope.pk, "name": scope.name},
            "item": {
                "type": "conflict",
                "id": "c-1",
                "title": "AuthService core/has-version",
                "url": "http://testserver/conflicts/c-1/",
            },
            "sides": [{"fact_id": "f-1", "value": "2.0.0", "source_type": "code"}],
        },
    )
    announce([event])
    return event


@pytest.fixture(autouse=True)
def webhook_settings(settings):
    settings.CLAIMGRAPH_WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.CLAIMGRAPH_WEBHOOK_TIMEOUT_SECONDS = 2.0
    return settings


def make_ready(delivery_id: int) -> None:
    """Drive the clock: the delivery's waiting retry is due now."""
    DBTaskResult.objects.filter(status="READY").update(run_after=timezone.now())


def test_a_delivery_arrives_signed_with_the_events_body(scope, scope_steward):
    with Receiver(Answer(200, b"thanks")) as receiver:
        endpoint, secret = create_endpoint(owner=scope_steward, scope=scope, url=receiver.url())
        event = record_event(scope)
        assert run_queued_tasks() == 1
    [got] = receiver.received
    assert Webhook(secret).verify(got.body, got.headers) == event.body()
    assert got.headers["webhook-id"] == event.public_id
    assert got.headers["content-type"] == "application/json"
    delivery = Delivery.objects.get(endpoint=endpoint)
    assert delivery.state == DeliveryState.DELIVERED
    [attempt] = delivery.attempt_log.all()
    assert (attempt.number, attempt.status_code, attempt.response_head) == (1, 200, "thanks")
    assert attempt.latency_ms is not None and attempt.retry_at is None


def test_a_500_is_retried_with_backoff_and_every_attempt_is_logged(scope, scope_steward):
    with Receiver(Answer(500, b"boom"), Answer(503), Answer(200)) as receiver:
        endpoint, secret = create_endpoint(owner=scope_steward, scope=scope, url=receiver.url())
        event = record_event(scope)
        assert run_queued_tasks() == 1
        delivery = Delivery.objects.get(endpoint=endpoint)
        first = delivery.attempt_log.get()
        assert (first.status_code, first.response_head) == (500, "boom")
        # The retry waits in the queue, due after the first backoff (10 s by default).
        assert first.retry_at == first.at + timedelta(seconds=10)
        waiting = DBTaskResult.objects.get(status="READY")
        assert waiting.run_after == first.retry_at
        assert run_queued_tasks() == 0  # not due yet
        for _ in range(2):
            make_ready(delivery.pk)
            assert run_queued_tasks() == 1
    assert [r.headers["webhook-id"] for r in receiver.received] == [event.public_id] * 3
    for got in receiver.received:
        Webhook(secret).verify(got.body, got.headers)
    assert len({got.body for got in receiver.received}) == 1  # the same bytes each time
    delivery.refresh_from_db()
    assert delivery.state == DeliveryState.DELIVERED
    log = list(delivery.attempt_log.values_list("number", "status_code"))
    assert log == [(1, 500), (2, 503), (3, 200)]
    assert [a.retry_at - a.at for a in delivery.attempt_log.all()[:2]] == [
        timedelta(seconds=10),
        timedelta(seconds=40),
    ]
    endpoint.refresh_from_db()
    assert endpoint.failing_since is None
    assert {status for _name, status in task_statuses()} == {"SUCCESSFUL"}


@pytest.mark.parametrize(
    ("failed", "wait"),
    [
        (1, timedelta(seconds=10)),
        (2, timedelta(seconds=40)),
        (3, timedelta(seconds=160)),
        (6, timedelta(seconds=10 * 4**5)),
        (7, timedelta(seconds=10 * 4**6)),
        (8, timedelta(hours=12)),
        (20, timedelta(hours=12)),
    ],
)
def test_the_backoff_grows_fourfold_up_to_twelve_hours(failed, wait):
    assert backoff(failed, first=10) == wait


@pytest.mark.parametrize(
    ("status", "retried"),
    [(500, True), (502, True), (408, True), (429, True), (400, False), (404, False), (410, False)],
)
def test_which_answers_are_retried(status, retried):
    assert retryable_status(status) is retried


def test_attempts_stop_at_the_cap(scope, scope_steward, webhook_settings):
    webhook_settings.CLAIMGRAPH_WEBHOOK_MAX_ATTEMPTS = 2
    with Receiver(Answer(500)) as receiver:
        endpoint, _ = create_endpoint(owner=scope_steward, scope=scope, url=receiver.url())
        record_event(scope)
        run_queued_tasks()
        make_ready(0)
        run_queued_tasks()
    delivery = Delivery.objects.get(endpoint=endpoint)
    assert (delivery.state, delivery.attempts, len(receiver.received)) == ("failed", 2, 2)
    assert not DBTaskResult.objects.filter(status="READY").exists()


def test_a_404_is_not_retried(scope, scope_steward):
    with Receiver(Answer(404, b"no such hook")) as receiver:
        endpoint, _ = create_endpoint(owner=scope_steward, scope=scope, url=receiver.url())
        record_event(scope)
        run_queued_tasks()
    delivery = Delivery.objects.get(endpoint=endpoint)
    assert delivery.state == DeliveryState.FAILED
    [attempt] = delivery.attempt_log.all()
    assert (attempt.status_code, attempt.retry_at) == (404, None)
    assert not DBTaskResult.objects.filter(status="READY").exists()
    assert len(receiver.received) == 1


def test_a_redirect_is_not_followed(scope, scope_steward):
    with Receiver(Answer(302, headers={"location": "http://127.0.0.1:9/elsewhere"})) as receiver:
        endpoint, _ = create_endpoint(owner=scope_steward, scope=scope, url=receiver.url())
        record_event(scope)
        run_queued_tasks()
    assert [r.path for r in receiver.received] == ["/hook"]
    delivery = Delivery.objects.get(endpoint=endpoint)
    assert delivery.state == DeliveryState.FAILED
    [attempt] = delivery.attempt_log.all()
    assert attempt.status_code == 302
    assert attempt.error == "redirect to http://127.0.0.1:9/elsewhere not followed"


def test_a_timeout_is_retried(scope, scope_steward, webhook_settings):
    webhook_settings.CLAIMGRAPH_WEBHOOK_TIMEOUT_SECONDS = 0.3
    with Receiver(Answer(200, delay=1.5)) as receiver:
        endpoint, _ = create_endpoint(owner=scope_steward, scope=scope, url=receiver.url())
        record_event(scope)
        run_queued_tasks()
    attempt = Delivery.objects.get(endpoint=endpoint).attempt_log.get()
    assert attempt.error == "timed out after 0.3 s"
    assert attempt.status_code is None and attempt.retry_at is not None


def test_a_refused_connection_is_retried(scope, scope_steward):
    with Receiver() as receiver:
        url = receiver.url()
    # The server is gone: nothing listens on its port any more.
    endpoint, _ = create_endpoint(owner=scope_steward, scope=scope, url=url)
    record_event(scope)
    run_queued_tasks()
    attempt = Delivery.objects.get(endpoint=endpoint).attempt_log.get()
    assert attempt.error.startswith("connection failed")
    assert attempt.retry_at is not None


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 (the address of"),
        ("http://10.1.2.3:8080/hook", "10.1.2.3 (the address of 10.1.2.3) is a private address"),
        ("http://[::1]:9/hook", "::1 (the address of ::1) is a loopback address"),
    ],
)
def test_an_internal_address_is_refused_and_the_log_says_why(scope, scope_steward, url, why):
    endpoint, _ = create_endpoint(owner=scope_steward, scope=scope, url=url)
    record_event(scope)
    run_queued_tasks()
    delivery = Delivery.objects.get(endpoint=endpoint)
    assert delivery.state == DeliveryState.FAILED  # refused, never retried
    [attempt] = delivery.attempt_log.all()
    assert attempt.error.startswith("refused: ")
    assert why in attempt.error
    assert "CLAIMGRAPH_WEBHOOK_ALLOWED_HOSTS" in attempt.error


def test_the_loopback_address_is_refused_unless_allow_listed(
    scope, scope_steward, webhook_settings
):
    webhook_settings.CLAIMGRAPH_WEBHOOK_ALLOWED_HOSTS = []
    with Receiver() as receiver:
        endpoint, _ = create_endpoint(owner=scope_steward, scope=scope, url=receiver.url())
        record_event(scope)
        run_queued_tasks()
    assert receiver.received == []
    attempt = Delivery.objects.get(endpoint=endpoint).attempt_log.get()
    # 127.0.0.1 is loopback, and here the database server's address too.
    assert attempt.error.startswith("refused: 127.0.0.1 (the address of 127.0.0.1) is ")


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "is a loopback address"),
        ("169.254.169.254", "is a link-local address (cloud metadata lives there)"),
        ("10.0.0.1", "is a private address"),
        ("192.168.1.1", "is a private address"),
        ("::ffff:10.0.0.1", "is a private address"),
        ("fe80::1", "is a link-local address (cloud metadata lives there)"),
        ("224.0.0.1", "is a multicast address"),
        ("0.0.0.0", "is a private address"),
        ("240.0.0.1", "is a private address"),
        ("100.64.0.1", "is not a public address"),
        ("93.184.216.34", None),
        ("2606:2800:220:1::1", None),
    ],
)
def test_which_addresses_a_delivery_may_reach(address, reason):
    assert forbidden_reason(ipaddress.ip_address(address)) == reason


def test_the_databases_own_address_is_refused():
    database = ipaddress.ip_address("93.184.216.34")
    assert forbidden_reason(database, [database]) == "is the database server's address"


def test_no_delivery_for_a_scope_the_subscriber_does_not_steward(scope, other_scope, scope_steward):
    with Receiver() as receiver:
        create_endpoint(owner=scope_steward, scope=scope, url=receiver.url())
        record_event(other_scope)
        assert Delivery.objects.count() == 0
        assert run_queued_tasks() == 0
    assert receiver.received == []


def test_a_steward_who_lost_the_scope_hears_nothing_already_queued(scope, scope_steward):
    with Receiver() as receiver:
        endpoint, _ = create_endpoint(owner=scope_steward, scope=scope, url=receiver.url())
        record_event(scope)
        remove_perm(STEWARD_PERMISSION, scope_steward, scope)
        run_queued_tasks()
    assert receiver.received == []
    delivery = Delivery.objects.get(endpoint=endpoint)
    assert delivery.state == DeliveryState.DROPPED
    assert "may not hear" in delivery.attempt_log.get().error


def test_endpoints_hear_only_the_kinds_they_subscribed_to(scope, scope_steward):
    with Receiver() as receiver:
        create_endpoint(
            owner=scope_steward, scope=scope, url=receiver.url(), kinds=["candidate.waiting"]
        )
        record_event(scope, EventKind.CONFLICT_OPENED)
        record_event(scope, EventKind.CANDIDATE_WAITING)
        run_queued_tasks()
    assert [json.loads(r.body)["type"] for r in receiver.received] == ["candidate.waiting"]


def test_a_member_hears_only_its_own_challenges_outcomes(scope, member, author):
    with Receiver() as receiver:
        endpoint, _ = create_endpoint(owner=member, scope=scope, url=receiver.url())
        assert endpoint.kinds == ["challenge.settled"]
        record_event(scope, EventKind.CHALLENGE_SETTLED, addressee=author)
        own = record_event(scope, EventKind.CHALLENGE_SETTLED, addressee=member)
        record_event(scope, EventKind.CONFLICT_OPENED)
        run_queued_tasks()
    assert [r.headers["webhook-id"] for r in receiver.received] == [own.public_id]


def test_during_a_rotations_overlap_both_secrets_sign_then_only_the_new_one(scope, scope_steward):
    with Receiver() as receiver:
        endpoint, old = create_endpoint(owner=scope_steward, scope=scope, url=receiver.url())
        now = timezone.now()
        an_hour_ago = now - timedelta(hours=1)
        _, new = rotate_secret(actor=scope_steward, endpoint_id=endpoint.pk, now=an_hour_ago)
        record_event(scope)
        run_queued_tasks()
        # Later than the overlap (24 h by default): the rotation was 25 hours ago.
        Endpoint.objects.filter(pk=endpoint.pk).update(rotated_at=now - timedelta(hours=25))
        record_event(scope)
        run_queued_tasks()
    during, after = receiver.received
    assert len(during.headers["webhook-signature"].split(" ")) == 2
    Webhook(new).verify(during.body, during.headers)
    Webhook(old).verify(during.body, during.headers)
    assert len(after.headers["webhook-signature"].split(" ")) == 1
    Webhook(new).verify(after.body, after.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(old).verify(after.body, after.headers)


def test_an_endpoint_failing_for_a_day_is_disabled_and_its_owner_told(
    scope, scope_steward, webhook_settings
):
    scope_steward.email = "sasha@example.org"
    scope_steward.save()
    with Receiver(Answer(500)) as receiver:
        endpoint, _ = create_endpoint(owner=scope_steward, scope=scope, url=receiver.url())
        record_event(scope)
        run_queued_tasks()
        endpoint.refresh_from_db()
        assert endpoint.active and endpoint.failing_since is not None
        # Failing since yesterday: the next failure disables it.
        Endpoint.objects.filter(pk=endpoint.pk).update(
            failing_since=timezone.now() - timedelta(hours=24, minutes=1)
        )
        make_ready(0)
        run_queued_tasks()
        endpoint.refresh_from_db()
        assert not endpoint.active
        assert "every delivery attempt failed for 24 hours" in endpoint.disabled_reason
        [notice] = mail.outbox
        assert notice.to == ["sasha@example.org"]
        assert receiver.url() in notice.subject
        assert f"/account/webhooks/{endpoint.pk}/" in notice.body
        # Its waiting retry, and any new event, are not sent.
        sent = len(receiver.received)
        make_ready(0)
        run_queued_tasks()
        record_event(scope)
        run_queued_tasks()
        assert len(receiver.received) == sent


def test_a_delivery_that_succeeds_ends_the_failing_streak(scope, scope_steward):
    with Receiver(Answer(500), Answer(200)) as receiver:
        endpoint, _ = create_endpoint(owner=scope_steward, scope=scope, url=receiver.url())
        record_event(scope)
        delivery = Delivery.objects.get()
        attempt_delivery(delivery.pk, now=datetime.now(UTC))
        endpoint.refresh_from_db()
        assert endpoint.failing_since is not None
        attempt_delivery(delivery.pk, now=datetime.now(UTC))
        endpoint.refresh_from_db()
        assert endpoint.failing_since is None and endpoint.active


def test_the_log_forgets_finished_deliveries_past_its_window_but_never_a_pending_one(
    scope, scope_steward
):
    create_endpoint(owner=scope_steward, scope=scope, url="https://h.example/")
    record_event(scope)
    record_event(scope)
    old, pending = Delivery.objects.order_by("id")
    long_ago = timezone.now() - timedelta(days=31)
    Delivery.objects.filter(pk=old.pk).update(state=DeliveryState.FAILED, created_at=long_ago)
    Delivery.objects.filter(pk=pending.pk).update(created_at=long_ago)
    forget_old_deliveries(now=timezone.now())
    assert list(Delivery.objects.values_list("pk", flat=True)) == [pending.pk]
    assert "webhook delivery log" in [job.name for job in PERIODIC_JOBS]
