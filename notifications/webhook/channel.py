"""The webhook channel: which endpoints hear of newly recorded events.

``on_events`` is in ``notifications.channels.CHANNELS``; the feed calls it
in the transaction that records the events, so each delivery row and its
task commit with them or not at all.
"""

from collections import defaultdict
from collections.abc import Sequence

from django.utils import timezone

from notifications.models import Event
from notifications.webhook.deliveries import queue_delivery
from notifications.webhook.models import Delivery, Endpoint


def on_events(events: Sequence[Event]) -> None:
    """A delivery (and its task) per event for each active endpoint that may hear of it.

    An endpoint hears an event of its own scope, of a kind it subscribed to,
    that its owner may hear of (``Event.objects.for_recipient``, the one
    audience rule: the scope's stewards, or the event's addressee). Events of
    no scope (a stale worker, the doctor) reach no endpoint: every endpoint
    names a scope.
    """
    by_scope: dict[int, list[Event]] = defaultdict(list)
    for event in events:
        if event.scope_id is not None:
            by_scope[event.scope_id].append(event)
    if not by_scope:
        return
    endpoints = Endpoint.objects.active().filter(scope_id__in=by_scope).select_related("owner")
    now = timezone.now()
    deliveries = []
    for endpoint in endpoints:
        candidates = [event for event in by_scope[endpoint.scope_id] if endpoint.hears(event.kind)]
        if not candidates:
            continue
        audible = set(
            Event.objects.for_recipient(endpoint.owner)
            .filter(pk__in=[event.pk for event in candidates])
            .values_list("pk", flat=True)
        )
        deliveries += [
            Delivery(endpoint=endpoint, event=event, created_at=now)
            for event in candidates
            if event.pk in audible
        ]
    for delivery in Delivery.objects.bulk_create(deliveries):
        queue_delivery(delivery)
