"""Review claims (SPEC §9): "being reviewed by …", so two stewards do not rule on one item at once.

A claim is a note, not a lock: it says who is reviewing an item (an open
conflict, or a system fact awaiting or under review) and until when, and
another steward who sees it may still act. It expires
``CLAIMGRAPH_CLAIM_MINUTES`` after it was made; expiry is read from the clock
(``ReviewClaim.objects.active()``), so nothing has to sweep old claims. The
claimer may release it early, and a ruling on the item ends it
(``end_claims``, called by the ruling actions inside their transaction).

Claims are not written to the audit feed: they change nothing in the
memory, and the feed would drown in them.

Only a steward of the item's scope may claim or release: anyone else who
can see the item gets ``Forbidden``, and anyone who cannot gets
``NotFound``, exactly as for a missing item.
"""

from collections.abc import Iterable
from datetime import datetime, timedelta
from uuid import UUID

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from memories.store.errors import Forbidden, Rejected, StateConflict
from memories.store.lookups import readable_fact, visible_conflict
from memories.store.models import Bucket, Conflict, Fact, ReviewClaim, Scope
from memories.store.roles import is_steward_of


def claim_item(
    *,
    actor: User,
    conflict_id: UUID | str | None = None,
    fact_id: UUID | str | None = None,
    now: datetime | None = None,
) -> ReviewClaim:
    """Claim one item for ``actor`` (a steward of its scope) until the claim's minutes pass.

    Claiming an item one already holds renews the claim. An item another
    steward holds is refused with ``StateConflict`` naming them and the time
    their claim ends; an expired claim is simply replaced.
    """
    item = _item(actor, conflict_id=conflict_id, fact_id=fact_id)
    key = _key(item)
    now = now or timezone.now()
    expires = now + timedelta(minutes=settings.CLAIMGRAPH_CLAIM_MINUTES)
    fields = {"scope_id": item.scope_id, "claimed_by": actor, "claimed_at": now, **key}
    with transaction.atomic():
        held = ReviewClaim.objects.select_for_update().filter(**key).first()
        if held is None:
            try:
                # The unique constraint on the item decides a race: of two
                # stewards inserting at once, the second waits for the first
                # to commit and then fails here, and reads the winner's row.
                with transaction.atomic():
                    return ReviewClaim.objects.create(expires_at=expires, **fields)
            except IntegrityError:
                held = ReviewClaim.objects.select_for_update().filter(**key).first()
                if held is None:  # released again in between: nothing left to contend with
                    return ReviewClaim.objects.create(expires_at=expires, **fields)
        if held.expires_at > now and held.claimed_by_id != actor.pk:
            raise StateConflict(f"already {held.note}")
        held.claimed_by = actor
        held.claimed_at = now
        held.expires_at = expires
        held.save(update_fields=["claimed_by", "claimed_at", "expires_at"])
        return held


def release_claim(
    *,
    actor: User,
    conflict_id: UUID | str | None = None,
    fact_id: UUID | str | None = None,
    now: datetime | None = None,
) -> bool:
    """End ``actor``'s claim on an item; False when they held none.

    Only the claimer releases: another steward's live claim is refused with
    ``StateConflict`` (they may still rule, which ends it).
    """
    item = _item(actor, conflict_id=conflict_id, fact_id=fact_id)
    now = now or timezone.now()
    with transaction.atomic():
        held = ReviewClaim.objects.select_for_update().filter(**_key(item)).first()
        if held is None or held.expires_at <= now:
            return False
        if held.claimed_by_id != actor.pk:
            raise StateConflict(f"{held.note}; only they can release it")
        held.delete()
    return True


def end_claims(
    *,
    conflict_ids: Iterable[UUID] = (),
    fact_ids: Iterable[UUID] = (),
    scope_id: int | None = None,
) -> None:
    """A ruling on these items ends their claims (call inside the ruling's transaction).

    ``scope_id``, the items' scope, ties the delete to it, so that a store
    distributed by scope runs it on one shard (docs/scale-out.md).
    """
    conflicts, facts = list(conflict_ids), list(fact_ids)
    claims = (
        ReviewClaim.objects.all()
        if scope_id is None
        else ReviewClaim.objects.filter(scope_id=scope_id)
    )
    if conflicts:
        claims.filter(conflict_id__in=conflicts).delete()
    if facts:
        claims.filter(fact_id__in=facts).delete()


def _item(
    actor: User, *, conflict_id: UUID | str | None, fact_id: UUID | str | None
) -> Conflict | Fact:
    """The item named, if ``actor`` may see it (else NotFound) and is its scope's steward."""
    if (conflict_id is None) == (fact_id is None):
        raise Rejected("item", "name one conflict or one fact")
    item: Conflict | Fact
    if conflict_id is not None:
        item = visible_conflict(actor, conflict_id)
    else:
        item = readable_fact(actor, fact_id)
    _require_steward(actor, item.scope)
    if isinstance(item, Fact) and item.bucket != Bucket.SYSTEM:
        raise Rejected("fact", "only a shared (system) fact is reviewed")
    return item


def _require_steward(actor: User, scope: Scope) -> None:
    if not is_steward_of(actor, scope):
        raise Forbidden("only a steward of the scope may claim or release an item")


def _key(item: Conflict | Fact) -> dict[str, UUID]:
    return {"conflict_id": item.pk} if isinstance(item, Conflict) else {"fact_id": item.pk}
