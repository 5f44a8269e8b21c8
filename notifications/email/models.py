"""Who gets a digest, how often, and about which scopes and kinds of event."""

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models

from memories.store.models import Scope


class Frequency(models.TextChoices):
    OFF = "off", "Off"
    IMMEDIATELY = "immediately", "Immediately"
    HOURLY = "hourly", "Hourly"
    DAILY = "daily", "Daily"


# What an account gets before it has chosen (docs/notifications.md): a steward
# a daily digest of every scope it stewards and every kind, anyone else none.
STEWARD_DEFAULT = Frequency.DAILY


class DigestPreference(models.Model):
    """One account's choice of digest, and what the digests it was sent covered.

    No row, or a row not ``chosen``, means the account never chose its
    scopes: the defaults apply (a steward: daily, every scope it stewards,
    every kind; anyone else: none). Saving the form marks the row chosen, and
    its ``DigestSubscription`` rows are then exactly what it chose.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        primary_key=True,
        on_delete=models.CASCADE,
        related_name="digest_preference",
    )
    frequency = models.CharField(max_length=12, choices=Frequency.choices, default=STEWARD_DEFAULT)
    # Whether ``subscriptions`` are the account's own choice (else: the defaults).
    chosen = models.BooleanField(default=False)
    # The outcomes of the account's own challenges (events addressed to it).
    own_challenges = models.BooleanField(default=True)
    # The start of the latest hourly or daily period handled, sent or found
    # empty: a period is handled once, whichever worker gets there.
    period_done = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    # The newest event a sent digest told of: the next one tells of later ones only.
    heard_to = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.user} {self.frequency}"


class DigestSubscription(models.Model):
    """The kinds of event one account hears of in one scope it stewards."""

    preference = models.ForeignKey(
        DigestPreference, on_delete=models.CASCADE, related_name="subscriptions"
    )
    scope = models.ForeignKey(Scope, on_delete=models.CASCADE, related_name="+")
    # EventKind values (notifications.models, which imports this module).
    kinds = ArrayField(models.CharField(max_length=40))

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["preference", "scope"], name="digest_scope_once"),
        ]

    def __str__(self) -> str:
        return f"{self.preference_id} {self.scope_id} {','.join(self.kinds)}"
