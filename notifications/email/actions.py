"""Changing one account's digest: choosing it, and turning it off."""

from collections.abc import Mapping, Sequence

from django.db import transaction

from memories.store.errors import Forbidden, Rejected
from notifications.email.contents import DIGEST_KINDS, stewarded_scope_ids
from notifications.email.models import DigestPreference, DigestSubscription, Frequency


def choose_digest(
    *,
    actor,
    frequency: str,
    subscriptions: Mapping[int, Sequence[str]],
    own_challenges: bool,
) -> DigestPreference:
    """Record ``actor``'s digest: how often, and which kinds of which scopes it stewards.

    Refuses (``Forbidden``) a scope the actor does not steward: only a
    scope's stewards hear of it. A scope with no kinds is not subscribed.
    """
    if frequency not in Frequency.values:
        raise Rejected("frequency", f"must be one of {', '.join(Frequency.values)}")
    for kinds in subscriptions.values():
        unknown = sorted(set(kinds) - set(DIGEST_KINDS))
        if unknown:
            raise Rejected("subscriptions", f"{unknown[0]} is not a kind a digest tells of")
    chosen = {scope_id: sorted(set(kinds)) for scope_id, kinds in subscriptions.items() if kinds}
    if set(chosen) - stewarded_scope_ids(actor):
        raise Forbidden("only a scope's stewards subscribe to it")
    with transaction.atomic():
        preference, _ = DigestPreference.objects.select_for_update().get_or_create(user=actor)
        preference.frequency = frequency
        preference.own_challenges = own_challenges
        preference.chosen = True
        preference.save(update_fields=["frequency", "own_challenges", "chosen", "updated_at"])
        preference.subscriptions.all().delete()
        DigestSubscription.objects.bulk_create(
            DigestSubscription(preference=preference, scope_id=scope_id, kinds=kinds)
            for scope_id, kinds in sorted(chosen.items())
        )
    return preference


def stop_digest(*, user) -> DigestPreference:
    """Turn ``user``'s digest off (the unsubscribe link): its other choices are kept."""
    with transaction.atomic():
        preference, _ = DigestPreference.objects.select_for_update().get_or_create(user=user)
        preference.frequency = Frequency.OFF
        preference.save(update_fields=["frequency", "updated_at"])
    return preference
