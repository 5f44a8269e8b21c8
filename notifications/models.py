"""The events that channels send: one row per thing a person should hear about."""

from collections.abc import Sequence

from django.conf import settings
from django.db import connection, models
from django.db.models import Q

from memories.store.models import Scope
from memories.store.roles import is_global_steward, steward_scope_ids

# The channels' own models live in their subpackages; imported here so Django finds them.
from notifications.email.models import DigestPreference, DigestSubscription
from notifications.webhook.models import Attempt, Delivery, Endpoint

__all__ = [
    "SCHEMA",
    "Attempt",
    "Delivery",
    "DigestPreference",
    "DigestSubscription",
    "Endpoint",
    "Event",
    "EventKind",
    "EventQuerySet",
]

# The version of the body's shape (docs/notifications.md): a change that could
# break a receiver gets a new one.
SCHEMA = "claimgraph.event/1"


class EventKind(models.TextChoices):
    """What happened. The value is the event's ``type`` in every payload (docs/notifications.md)."""

    CONFLICT_OPENED = "conflict.opened", "Conflict opened"
    CANDIDATE_WAITING = "candidate.waiting", "Candidate waiting"
    CHALLENGE_FILED = "challenge.filed", "Evidenced challenge filed"
    CHALLENGE_SETTLED = "challenge.settled", "Challenge settled"
    CHANGE_AUTOMATIC = "change.automatic", "Automatic change made"
    QUEUE_OVERDUE = "queue.overdue", "Queue over its target age"
    WORKER_STALE = "worker.stale", "Worker stale"
    DOCTOR_VIOLATION = "doctor.violation", "Doctor found a violation"


class EventQuerySet(models.QuerySet["Event"]):
    def record(self, events: Sequence["Event"]) -> list["Event"]:
        """Write those of ``events`` whose source has no event yet; the ones written.

        Call inside a transaction. Writers take one advisory lock first, so
        two workers recording the same source at once write it once, and
        the events each returns are its own.
        """
        if not events:
            return []
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                ["claimgraph:notifications:record"],
            )
        known = set(
            self.filter(source__in=[event.source for event in events]).values_list(
                "source", flat=True
            )
        )
        fresh = {event.source: event for event in events if event.source not in known}
        return self.bulk_create(fresh.values())

    def for_recipient(self, user) -> "EventQuerySet":
        """The events ``user`` may hear about: the one rule every channel applies.

        A scope's stewards hear about everything in it; anyone else hears only
        about events addressed to them (a challenger about its own challenge's
        outcome). Checked again at delivery time, so losing stewardship stops
        deliveries that were already queued.
        """
        if not user.is_authenticated or not user.is_active:
            return self.none()
        if is_global_steward(user):
            return self.all()
        return self.filter(Q(scope_id__in=steward_scope_ids(user)) | Q(addressee=user))


class Event(models.Model):
    """Something a steward (or an addressee) should hear about. Append-only.

    Written by the worker, never by the write path: the events are read off
    records the domain already keeps. ``data`` is what the event says (its
    scope, its item with the console link that acts on it, the sides where
    there are sides); :meth:`body` is the whole JSON document every channel
    sends, as docs/notifications.md documents it.
    """

    id = models.BigAutoField(primary_key=True)
    kind = models.CharField(max_length=40, choices=EventKind.choices)
    scope = models.ForeignKey(Scope, on_delete=models.PROTECT, related_name="+", null=True)
    # Beyond the scope's stewards: the one account this event is about (a challenger).
    addressee = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, related_name="+"
    )
    occurred_at = models.DateTimeField()
    recorded_at = models.DateTimeField(auto_now_add=True)
    # What the event was read from ("audit:1234", "queue:conflicts:3:2026-12-04"),
    # unique so a second pass over the same records adds nothing.
    source = models.CharField(max_length=120, unique=True)
    data = models.JSONField()

    objects = EventQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["scope", "id"], name="event_scope_latest")]

    def __str__(self) -> str:
        return f"{self.kind} {self.source}"

    @property
    def public_id(self) -> str:
        """The id receivers see (``webhook-id`` too): stable across redeliveries."""
        return f"evt_{self.pk}"

    def body(self) -> dict:
        """The document every channel sends: ``{"type", "schema", "id", "timestamp", "data"}``."""
        return {
            "type": self.kind,
            "schema": SCHEMA,
            "id": self.public_id,
            "timestamp": self.occurred_at.isoformat(),
            "data": self.data,
        }
