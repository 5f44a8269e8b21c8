"""Withdrawals (SPEC §12): everything one episode wrote, taken back."""

import uuid

from django.conf import settings
from django.db import models

from memories.store.models.scopes import Scope


class Withdrawal(models.Model):
    """A steward's withdrawal of everything one episode wrote (SPEC §12).

    ``withdrawn`` lists the facts the episode wrote that were closed (kind
    ``withdrawn``); ``reinstated`` lists the facts those writes had superseded
    that were restored, each with the state it had before, so the withdrawal
    itself can be read back as history.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    scope = models.ForeignKey(Scope, on_delete=models.PROTECT, related_name="withdrawals")
    episode = models.CharField(max_length=200)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    at = models.DateTimeField()
    reason = models.TextField()
    withdrawn = models.JSONField(default=list)
    reinstated = models.JSONField(default=list)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"withdrawal of {self.episode}"
