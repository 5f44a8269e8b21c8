"""What changes webhook endpoints: the console and ``manage.py webhook`` call these, nothing else.

Each action finds what it acts on through a lookup that authorizes: for a
person (``actor``), only their own endpoints, and another's answers
``NotFound`` exactly like a missing one. ``actor=None`` is the operator at
the command line, who may act on any endpoint.
"""

from collections.abc import Iterable
from datetime import datetime

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from memories.store.errors import Forbidden, NotFound, Rejected, StateConflict
from memories.store.models import Scope
from memories.store.roles import is_member_of, is_steward_of
from notifications.models import EventKind
from notifications.webhook.addresses import check_url
from notifications.webhook.deliveries import queue_delivery
from notifications.webhook.models import Delivery, Endpoint
from notifications.webhook.signing import new_secret

# The console's demo receiver (``console.views.webhooks.receiver``), where the
# demo's endpoint delivers: a receiver checks signatures with the secrets of
# the endpoints whose URL ends in this path.
DEMO_RECEIVER_PATH = "/webhooks/receiver/"

# What a member (not a steward) of a scope may subscribe to: its own challenges' outcomes.
MEMBER_KINDS = (EventKind.CHALLENGE_SETTLED.value,)


class NotSteward(Forbidden):
    """Only a scope's stewards may subscribe to its events (a member: its challenges' outcomes)."""


def parse_kinds(kinds: Iterable[str]) -> list[str]:
    """The event kinds named, in the vocabulary's order; ``Rejected`` naming an unknown one."""
    named = {kind.strip() for kind in kinds if kind and kind.strip()}
    unknown = sorted(named - set(EventKind.values))
    if unknown:
        raise Rejected(
            "events",
            f"unknown event kind {', '.join(map(repr, unknown))};"
            f" known: {', '.join(EventKind.values)}",
        )
    return [kind for kind in EventKind.values if kind in named]


def create_endpoint(
    *,
    owner: User,
    scope: Scope,
    url: str,
    kinds: Iterable[str] = (),
    now: datetime | None = None,
) -> tuple[Endpoint, str]:
    """A new endpoint of ``owner`` on ``scope``; returned with its secret, shown this once.

    A steward of the scope may subscribe to any kinds (none named: every
    kind). A member may subscribe only to ``challenge.settled`` (its own
    challenges' outcomes; naming none means that one); anyone else is
    refused. Which events then reach it is the audience rule's, per event.
    """
    if not owner.is_authenticated or not owner.is_active:
        raise NotFound("account")
    url = check_url(url).geturl()
    kinds = parse_kinds(kinds)
    if not is_steward_of(owner, scope):
        if not is_member_of(owner, scope):
            raise NotSteward(f"{owner.get_username()} is not a steward of the scope {scope.name}")
        kinds = kinds or list(MEMBER_KINDS)
        if not set(kinds) <= set(MEMBER_KINDS):
            raise NotSteward(
                f"{owner.get_username()} is not a steward of the scope {scope.name}: a member"
                f" may subscribe only to {', '.join(MEMBER_KINDS)} (its own challenges' outcomes)"
            )
    secret = new_secret()
    endpoint = Endpoint.objects.create(
        owner=owner,
        scope=scope,
        url=url,
        kinds=kinds,
        secret=secret,
        created_at=now or timezone.now(),
    )
    return endpoint, secret


def endpoint_of(
    actor: User | None, endpoint_id: int | str, *, for_update: bool = False
) -> Endpoint:
    """The endpoint ``endpoint_id`` if ``actor`` owns it (None: the operator); else ``NotFound``."""
    try:
        pk = int(endpoint_id)
    except (TypeError, ValueError):
        raise NotFound("endpoint") from None
    endpoints = Endpoint.objects.select_related("scope", "owner")
    if actor is not None:
        endpoints = endpoints.owned_by(actor)
    if for_update:
        endpoints = endpoints.select_for_update(of=("self",))
    endpoint = endpoints.filter(pk=pk).first()
    if endpoint is None:
        raise NotFound("endpoint")
    return endpoint


def rotate_secret(
    *, actor: User | None, endpoint_id: int | str, now: datetime | None = None
) -> tuple[Endpoint, str]:
    """A new secret for the endpoint, shown this once; the old one signs too for the overlap.

    A second rotation during an overlap ends the first one's: only the
    secret just replaced keeps signing beside the new one.
    """
    secret = new_secret()
    with transaction.atomic():
        endpoint = endpoint_of(actor, endpoint_id, for_update=True)
        endpoint.previous_secret = endpoint.secret
        endpoint.secret = secret
        endpoint.rotated_at = now or timezone.now()
        endpoint.save(update_fields=["previous_secret", "secret", "rotated_at"])
    return endpoint, secret


def remove_endpoint(*, actor: User | None, endpoint_id: int | str) -> Endpoint:
    """Delete the endpoint with its delivery log; waiting deliveries find nothing to send."""
    with transaction.atomic():
        endpoint = endpoint_of(actor, endpoint_id, for_update=True)
        removed_id = endpoint.pk
        endpoint.delete()
        endpoint.pk = removed_id
    return endpoint


def enable_endpoint(*, actor: User | None, endpoint_id: int | str) -> Endpoint:
    """Turn a disabled endpoint back on, its failures forgotten."""
    with transaction.atomic():
        endpoint = endpoint_of(actor, endpoint_id, for_update=True)
        if endpoint.active:
            raise StateConflict("the endpoint is already enabled")
        endpoint.active = True
        endpoint.disabled_at = None
        endpoint.disabled_reason = ""
        endpoint.failing_since = None
        endpoint.save(update_fields=["active", "disabled_at", "disabled_reason", "failing_since"])
    return endpoint


def redeliver(
    *, actor: User | None, delivery_id: int | str, now: datetime | None = None
) -> Delivery:
    """Send a delivery's event again: a new delivery, its own attempts, the same ``webhook-id``."""
    try:
        pk = int(delivery_id)
    except (TypeError, ValueError):
        raise NotFound("delivery") from None
    with transaction.atomic():
        found = Delivery.objects.select_related("endpoint").filter(pk=pk)
        if actor is not None:
            found = found.filter(endpoint__owner_id=actor.pk)
        original = found.first()
        if original is None:
            raise NotFound("delivery")
        if not original.endpoint.active:
            raise StateConflict("the endpoint is disabled: enable it before redelivering")
        delivery = Delivery.objects.create(
            endpoint=original.endpoint,
            event_id=original.event_id,
            redelivered_by=actor,
            created_at=now or timezone.now(),
        )
        queue_delivery(delivery)
    return delivery
