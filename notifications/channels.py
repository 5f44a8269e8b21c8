"""Where a newly recorded event goes: every channel, in the transaction that recorded it.

The feed (``notifications.feed``) calls :func:`announce` with the events it
has just written. Each channel decides who hears of each event (through
``Event.objects.for_recipient``, the one audience rule) and enqueues its own
deliveries. The task queue lives in the database, so a delivery is queued
only if the events commit, and nothing is sent before they do.
"""

from collections.abc import Callable, Sequence

from notifications.email import sending
from notifications.models import Event
from notifications.webhook.channel import on_events as webhooks

Channel = Callable[[Sequence[Event]], None]

CHANNELS: tuple[Channel, ...] = (sending.on_events, webhooks)


def announce(events: Sequence[Event]) -> None:
    """Hand ``events`` (just recorded, not yet committed) to every channel."""
    if not events:
        return
    for channel in CHANNELS:
        channel(events)
