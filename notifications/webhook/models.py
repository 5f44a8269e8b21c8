"""Webhook endpoints, their deliveries and each delivery's attempts (the delivery log).

Imported by ``notifications.models`` so the app's models are all in one
registry; this module imports nothing of ``notifications`` itself (the event
is named by its label), so the two cannot import each other in a circle.
"""

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models

from memories.store.models import Scope


class EndpointQuerySet(models.QuerySet["Endpoint"]):
    def owned_by(self, user) -> "EndpointQuerySet":
        """The endpoints ``user`` owns: the only ones a person may see or change."""
        if not user.is_authenticated:
            return self.none()
        return self.filter(owner_id=user.pk)

    def active(self) -> "EndpointQuerySet":
        return self.filter(active=True)


class Endpoint(models.Model):
    """A URL that hears of one scope's events, signed with the endpoint's secret.

    ``secret`` is kept as it was shown (``whsec_…``) because signing needs the
    key itself, not a digest of it; it is left out of ``__str__``, ``repr`` and
    the admin. After a rotation ``previous_secret`` signs too, until
    ``rotated_at`` plus ``CLAIMGRAPH_WEBHOOK_ROTATION_OVERLAP_HOURS``.
    ``failing_since`` is the first failed attempt since the last success:
    the endpoint is disabled once it has failed continuously for
    ``CLAIMGRAPH_WEBHOOK_DISABLE_AFTER_HOURS``.
    """

    id = models.BigAutoField(primary_key=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhook_endpoints"
    )
    scope = models.ForeignKey(Scope, on_delete=models.PROTECT, related_name="+")
    url = models.URLField(max_length=2000)
    # Event kinds (notifications.models.EventKind values); empty means every kind.
    kinds = ArrayField(models.CharField(max_length=40), default=list, blank=True)
    secret = models.CharField(max_length=100)
    previous_secret = models.CharField(max_length=100, blank=True)
    rotated_at = models.DateTimeField(null=True, blank=True)
    active = models.BooleanField(default=True)
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.TextField(blank=True)
    failing_since = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()

    objects = EndpointQuerySet.as_manager()

    class Meta:
        app_label = "notifications"
        ordering = ["id"]
        indexes = [models.Index(fields=["scope", "active"], name="webhook_endpoint_scope")]

    def __str__(self) -> str:
        return f"webhook {self.pk} → {self.url}"

    def __repr__(self) -> str:
        return f"<Endpoint {self.pk} {self.url}>"

    def hears(self, kind: str) -> bool:
        """Whether this endpoint subscribed to events of ``kind`` (no kinds: every kind)."""
        return not self.kinds or kind in self.kinds


class DeliveryState(models.TextChoices):
    PENDING = "pending", "Pending"
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed"
    # Not sent at all: the owner may no longer hear of the event, or the
    # endpoint was disabled before its turn came.
    DROPPED = "dropped", "Dropped"


class Delivery(models.Model):
    """One event for one endpoint: sent, and retried, until it lands or gives up.

    A manual redelivery is a delivery of its own (``redelivered_by``) with its
    own attempts, and the same ``webhook-id``: the event's public id.
    """

    id = models.BigAutoField(primary_key=True)
    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="deliveries")
    event = models.ForeignKey("notifications.Event", on_delete=models.PROTECT, related_name="+")
    state = models.CharField(
        max_length=20, choices=DeliveryState.choices, default=DeliveryState.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    redelivered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField()

    class Meta:
        app_label = "notifications"
        ordering = ["-id"]
        indexes = [models.Index(fields=["endpoint", "-id"], name="webhook_delivery_latest")]

    def __str__(self) -> str:
        return f"delivery {self.pk} of event {self.event_id} to endpoint {self.endpoint_id}"


class Attempt(models.Model):
    """One HTTP attempt of a delivery: what came back, or why nothing did. Append-only."""

    id = models.BigAutoField(primary_key=True)
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    at = models.DateTimeField()
    status_code = models.PositiveIntegerField(null=True, blank=True)
    # Why the attempt failed when no status says it (timeout, refused address, redirect).
    error = models.CharField(max_length=300, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    # The response's first bytes, as text (undecodable bytes replaced).
    response_head = models.CharField(max_length=200, blank=True)
    retry_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "notifications"
        ordering = ["delivery_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["delivery", "number"], name="webhook_attempt_once")
        ]

    def __str__(self) -> str:
        return f"attempt {self.number} of delivery {self.delivery_id}"

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300
