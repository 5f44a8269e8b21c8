"""Review claims (SPEC §9): a steward's note that they are reviewing one item.

The claimed item is named by string (``"Fact"``, ``"Conflict"``) so that
``facts``, whose items show their live claim, can import this module.
"""

from collections.abc import Iterable
from datetime import datetime

from django.conf import settings
from django.db import models
from django.db.models import F, Prefetch, Q
from django.db.models.functions import Now
from django.utils import timezone

from memories.store.models.scopes import Scope


class ReviewClaimQuerySet(models.QuerySet["ReviewClaim"]):
    def active(self, at: datetime | None = None) -> "ReviewClaimQuerySet":
        """The claims not yet expired at ``at`` (by default the database's clock, now).

        Expiry is read, never swept: an expired row stays until the item's
        next claim replaces it, and no page shows it meanwhile.
        """
        return self.filter(expires_at__gt=at if at is not None else Now())


def active_claims(at: datetime | None = None, *, scope_ids: Iterable[int] = ()) -> Prefetch:
    """A prefetch of each item's live claim (a list of at most one) as ``active_claims``.

    ``scope_ids``, the scopes the listed items are in, ties the read to them:
    a claim lives in its item's scope (docs/scale-out.md).
    """
    claims = ReviewClaim.objects.active(at).select_related("claimed_by")
    if scope_ids:
        claims = claims.filter(scope_id__in=list(scope_ids))
    return Prefetch("review_claims", queryset=claims, to_attr="active_claims")


class ReviewClaim(models.Model):
    """A steward's note that they are reviewing one item: a conflict or a system fact.

    A note, not a lock: another steward sees it and may still rule. The
    database holds at most one row per item (a claim that has expired is
    overwritten by the next one), so two stewards claiming at the same
    instant end with one claim. A ruling on the item deletes it.
    """

    scope = models.ForeignKey(Scope, on_delete=models.CASCADE, related_name="review_claims")
    conflict = models.ForeignKey(
        "Conflict", null=True, blank=True, on_delete=models.CASCADE, related_name="review_claims"
    )
    fact = models.ForeignKey(
        "Fact", null=True, blank=True, on_delete=models.CASCADE, related_name="review_claims"
    )
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_claims"
    )
    claimed_at = models.DateTimeField()
    expires_at = models.DateTimeField()

    objects = ReviewClaimQuerySet.as_manager()

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(conflict__isnull=True) ^ Q(fact__isnull=True),
                name="review_claim_one_item",
            ),
            models.CheckConstraint(
                condition=Q(expires_at__gt=F("claimed_at")), name="review_claim_expires_later"
            ),
            models.UniqueConstraint(fields=["conflict"], name="review_claim_once_per_conflict"),
            models.UniqueConstraint(fields=["fact"], name="review_claim_once_per_fact"),
        ]

    def __str__(self) -> str:
        item = f"conflict {self.conflict_id}" if self.conflict_id else f"fact {self.fact_id}"
        return f"{item} claimed by {self.claimed_by_id} until {self.expires_at:%H:%M}"

    @property
    def note(self) -> str:
        """What a page says of a live claim: being reviewed by NAME (until HH:MM)."""
        until = timezone.localtime(self.expires_at).strftime("%H:%M")
        return f"being reviewed by {self.claimed_by.get_username()} (until {until})"
