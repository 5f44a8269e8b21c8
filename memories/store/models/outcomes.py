"""Outcomes: reports that facts were used in accepted work."""

import uuid

from django.conf import settings
from django.db import models

from memories.store.models.facts import Fact
from memories.store.models.scopes import Scope


class Outcome(models.Model):
    """A report that facts were used in accepted work: the fact page's receipts."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    scope = models.ForeignKey(Scope, on_delete=models.PROTECT, related_name="outcomes")
    outcome = models.CharField(max_length=20, default="accepted")
    reported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="outcomes"
    )
    reported_at = models.DateTimeField()
    facts = models.ManyToManyField(Fact, related_name="outcomes")

    class Meta:
        ordering = ["reported_at", "id"]

    def __str__(self) -> str:
        return f"{self.outcome} at {self.reported_at:%Y-%m-%d %H:%M}"
