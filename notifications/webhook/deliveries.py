"""Delivering: each attempt sent, logged and retried; an endpoint that keeps failing disabled.

A delivery is attempted by ``deliver_task`` on the task worker, never in a
request. Each attempt reads its delivery again, asks the audience rule
again (``Event.objects.for_recipient``: an owner who lost the scope's
stewardship since hears nothing more), sends the event's one serialization
signed at that moment, and records what came back. A failure worth
retrying is enqueued again with ``run_after`` (exponential backoff) until
``CLAIMGRAPH_WEBHOOK_MAX_ATTEMPTS``. The HTTP request runs outside any
transaction: no row stays locked while a slow endpoint answers.
"""

import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.tasks import task
from django.utils import timezone

from notifications.links import console_url
from notifications.models import Event
from notifications.webhook.models import Attempt, Delivery, DeliveryState, Endpoint
from notifications.webhook.sending import Outcome, send
from notifications.webhook.signing import body_bytes, signed_headers, signing_secrets

logger = logging.getLogger(__name__)

# Each wait before a retry is this many times the one before, and at most the cap.
BACKOFF_FACTOR = 4
BACKOFF_CAP = timedelta(hours=12)


def backoff(failed_attempts: int, *, first: float) -> timedelta:
    """The wait after the n-th failed attempt: ``first`` * 4^(n-1), at most 12 h. Pure."""
    seconds = first * BACKOFF_FACTOR ** (failed_attempts - 1)
    return min(timedelta(seconds=seconds), BACKOFF_CAP)


@task
def deliver_task(delivery_id: int) -> dict[str, Any]:
    """Make the next attempt of one delivery (run by the task worker)."""
    attempt = attempt_delivery(delivery_id, now=timezone.now())
    if attempt is None:
        return {"attempted": False}
    return {
        "attempted": True,
        "number": attempt.number,
        "status_code": attempt.status_code,
        "error": attempt.error,
    }


@task
def forget_old_deliveries_task() -> dict[str, int]:
    """Empty the delivery logs of what is older than ``CLAIMGRAPH_WEBHOOK_LOG_DAYS`` (daily)."""
    return {"forgotten": forget_old_deliveries(now=timezone.now())}


def forget_old_deliveries(*, now: datetime) -> int:
    """Delete finished deliveries (and their attempts) made before the log's window; how many.

    A pending one stays, whatever its age: its retry still reads it.
    """
    before = now - timedelta(days=settings.CLAIMGRAPH_WEBHOOK_LOG_DAYS)
    old = Delivery.objects.filter(created_at__lt=before).exclude(state=DeliveryState.PENDING)
    forgotten, _ = old.delete()
    return forgotten


def queue_delivery(delivery: Delivery, *, run_after: datetime | None = None) -> None:
    """Enqueue ``delivery``'s next attempt, in the caller's transaction (so only if it commits)."""
    queued = deliver_task if run_after is None else deliver_task.using(run_after=run_after)
    queued.enqueue(delivery_id=delivery.pk)


def may_hear(endpoint: Endpoint, event: Event) -> bool:
    """Whether ``event`` may go to ``endpoint``: of its scope, and its owner may hear of it."""
    return (
        endpoint.scope_id == event.scope_id
        and Event.objects.for_recipient(endpoint.owner).filter(pk=event.pk).exists()
    )


def attempt_delivery(delivery_id: int, *, now: datetime) -> Attempt | None:
    """Attempt a pending delivery once at ``now`` and record it; None when none is pending."""
    delivery = (
        Delivery.objects.select_related("endpoint__owner", "event")
        .filter(pk=delivery_id, state=DeliveryState.PENDING)
        .first()
    )
    if delivery is None:  # delivered, given up, or its endpoint removed
        return None
    endpoint, event = delivery.endpoint, delivery.event
    if not endpoint.active:
        return _drop(delivery, now, "not sent: the endpoint is disabled")
    if not may_hear(endpoint, event):
        return _drop(delivery, now, "not sent: the endpoint's owner may not hear of this event")
    body = body_bytes(event.body())
    headers = signed_headers(
        message_id=event.public_id,
        body=body,
        secrets_=signing_secrets(
            endpoint.secret, endpoint.previous_secret, endpoint.rotated_at, now=now
        ),
        now=now,
    )
    outcome = send(
        endpoint.url,
        body,
        headers,
        timeout=settings.CLAIMGRAPH_WEBHOOK_TIMEOUT_SECONDS,
        allowed_hosts=settings.CLAIMGRAPH_WEBHOOK_ALLOWED_HOSTS,
    )
    return record_attempt(delivery.pk, outcome, now=now)


def record_attempt(delivery_id: int, outcome: Outcome, *, now: datetime) -> Attempt | None:
    """Log ``outcome`` as the delivery's next attempt; retry, give up or disable as it says.

    Under the endpoint's row lock, so two deliveries to one endpoint finishing
    at once fold their results into ``failing_since`` one after the other.
    """
    disabled = None
    with transaction.atomic():
        delivery = (
            Delivery.objects.select_for_update()
            .filter(pk=delivery_id, state=DeliveryState.PENDING)
            .first()
        )
        if delivery is None:
            return None
        endpoint = Endpoint.objects.select_for_update().get(pk=delivery.endpoint_id)
        number = delivery.attempts + 1
        retry_at = None
        if outcome.succeeded:
            delivery.state = DeliveryState.DELIVERED
            endpoint.failing_since = None
        else:
            endpoint.failing_since = endpoint.failing_since or now
            if outcome.retryable and number < settings.CLAIMGRAPH_WEBHOOK_MAX_ATTEMPTS:
                retry_at = now + backoff(number, first=settings.CLAIMGRAPH_WEBHOOK_RETRY_SECONDS)
            else:
                delivery.state = DeliveryState.FAILED
        attempt = Attempt.objects.create(
            delivery=delivery,
            number=number,
            at=now,
            status_code=outcome.status_code,
            error=outcome.error,
            latency_ms=outcome.latency_ms,
            response_head=outcome.response_head,
            retry_at=retry_at,
        )
        delivery.attempts = number
        delivery.next_attempt_at = retry_at
        delivery.save(update_fields=["state", "attempts", "next_attempt_at"])
        if retry_at is not None:
            queue_delivery(delivery, run_after=retry_at)
        if endpoint.active and _failed_for_too_long(endpoint, now):
            disabled = _disable(endpoint, now)
        endpoint.save(update_fields=["failing_since"])
    if disabled is not None:
        _tell_owner(disabled)
    return attempt


def _failed_for_too_long(endpoint: Endpoint, now: datetime) -> bool:
    limit = timedelta(hours=settings.CLAIMGRAPH_WEBHOOK_DISABLE_AFTER_HOURS)
    return endpoint.failing_since is not None and now - endpoint.failing_since >= limit


def _disable(endpoint: Endpoint, now: datetime) -> Endpoint:
    hours = settings.CLAIMGRAPH_WEBHOOK_DISABLE_AFTER_HOURS
    endpoint.active = False
    endpoint.disabled_at = now
    endpoint.disabled_reason = (
        f"every delivery attempt failed for {hours:g} hours, since"
        f" {endpoint.failing_since:%Y-%m-%d %H:%M} UTC"
    )
    endpoint.save(update_fields=["active", "disabled_at", "disabled_reason"])
    # Its other waiting deliveries are dropped as their turn comes (attempt_delivery).
    return endpoint


def _tell_owner(endpoint: Endpoint) -> None:
    """Email the owner that ``endpoint`` was disabled (the account page shows it too)."""
    owner = endpoint.owner
    logger.warning("webhook endpoint %s disabled: %s", endpoint.pk, endpoint.disabled_reason)
    if not owner.email:
        return
    page = console_url("webhook-endpoint", endpoint_id=endpoint.pk)
    send_mail(
        subject=f"claimgraph: webhook endpoint {endpoint.url} was disabled",
        message=(
            f"Your webhook endpoint {endpoint.url} (scope {endpoint.scope.name}) was disabled:"
            f" {endpoint.disabled_reason}.\n\n"
            f"No more events are sent to it. Its delivery log, and the button that"
            f" enables it again, are at {page}\n"
        ),
        from_email=None,
        recipient_list=[owner.email],
    )


def _drop(delivery: Delivery, now: datetime, why: str) -> Attempt:
    with transaction.atomic():
        delivery = Delivery.objects.select_for_update().get(pk=delivery.pk)
        number = delivery.attempts + 1
        attempt = Attempt.objects.create(delivery=delivery, number=number, at=now, error=why)
        delivery.state = DeliveryState.DROPPED
        delivery.attempts = number
        delivery.next_attempt_at = None
        delivery.save(update_fields=["state", "attempts", "next_attempt_at"])
    return attempt
