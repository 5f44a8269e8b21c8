"""API tokens and the write allowance that rate-limits them (SPEC §10).

A token's secret is shown once, when it is issued, and never stored: the
table keeps its SHA-256 digest, which is enough to recognise it and useless
to anyone who reads the table. Secrets are 256 random bits, so a plain
(unsalted, fast) digest is safe here, unlike for passwords.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def active(self) -> "ApiTokenQuerySet":
        """Not revoked, and belonging to an active account."""
        return self.filter(revoked_at__isnull=True, user__is_active=True)


class ApiToken(models.Model):
    """A bearer token an agent presents to the API on behalf of one account."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. an agent.")
    # The first characters of the secret, so a person can tell tokens apart
    # (and match one in a config file) without the table holding the secret.
    prefix = models.CharField(max_length=16, editable=False)
    digest = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "API token"
        constraints = [
            models.CheckConstraint(
                condition=Q(revoked_at__isnull=True) | Q(revoked_at__gte=models.F("created_at")),
                name="api_token_revoked_after_created",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None


class WriteAllowance(models.Model):
    """How far ahead one account has spent its write rate (a generic cell rate algorithm).

    Each write moves ``busy_until`` one interval (a minute divided by the
    rate) past ``max(busy_until, now)``; a write that would move it more than
    a minute ahead of now is refused. The effect is a sustained rate of N
    writes a minute with bursts of up to N. One row per *account*, whichever
    of its tokens wrote (issue 29 §7: a limit per token was multiplied by
    minting tokens), updated by a single UPSERT in PostgreSQL, so the limit
    holds across every worker and machine and needs no cleanup. The table is
    UNLOGGED (migrations 0002, 0003): charging a write then costs no disk
    sync, and a crash merely resets everyone's allowance.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="write_allowance",
    )
    busy_until = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.user_id} busy until {self.busy_until:%H:%M:%S}"
