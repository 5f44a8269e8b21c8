"""Issuing and revoking API tokens: the only writers of ``ApiToken`` rows."""

import hashlib
import secrets
from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from accounts.models import ApiToken
from memories.core.decisions import check_text
from memories.store.errors import NotFound, Rejected, StateConflict

# Recognisable in logs and secret scanners; the rest is 256 random bits.
TOKEN_PREFIX = "cg_"
SHOWN_PREFIX_LENGTH = 10
MAX_NAME_LENGTH = 100


def digest_of(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def issue_token(*, actor: User, name: str, now: datetime | None = None) -> tuple[ApiToken, str]:
    """Create a token for ``actor``; return it with its secret, which is never shown again.

    Refused (StateConflict) when the account already holds
    ``CLAIMGRAPH_MAX_TOKENS_PER_ACCOUNT`` live (unrevoked) tokens; 0 lifts the cap.
    """
    if not actor.is_authenticated or not actor.is_active:
        raise NotFound("account")
    name = (name or "").strip()
    if not name:
        raise Rejected("name", "is required: say what the token is for")
    check_text(name, "name", MAX_NAME_LENGTH)
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        # The account's row is the lock: two issues at once count each other.
        User.objects.select_for_update().filter(pk=actor.pk).first()
        cap = settings.CLAIMGRAPH_MAX_TOKENS_PER_ACCOUNT
        live = ApiToken.objects.filter(user=actor, revoked_at__isnull=True).count()
        if cap and live >= cap:
            raise StateConflict(
                f"this account already has {live} live tokens, the most it may hold"
                f" (CLAIMGRAPH_MAX_TOKENS_PER_ACCOUNT = {cap}): revoke one to issue another"
            )
        token = ApiToken.objects.create(
            user=actor,
            name=name,
            prefix=secret[:SHOWN_PREFIX_LENGTH],
            digest=digest_of(secret),
            created_at=now or timezone.now(),
        )
    return token, secret


def revoke_token(*, actor: User, token_id: int | str, now: datetime | None = None) -> ApiToken:
    """Revoke one of ``actor``'s own tokens; anyone else's answers as missing."""
    try:
        pk = int(token_id)
    except (TypeError, ValueError):
        raise NotFound("token") from None
    with transaction.atomic():
        token = ApiToken.objects.select_for_update().filter(pk=pk, user_id=actor.pk).first()
        if token is None:
            raise NotFound("token")
        if token.is_revoked:
            raise StateConflict("the token is already revoked")
        token.revoked_at = now or timezone.now()
        token.save(update_fields=["revoked_at"])
    return token
