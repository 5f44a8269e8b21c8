"""Secrets and signatures, per the Standard Webhooks specification.

The signing itself is the ``standardwebhooks`` package's; this module says
which secrets sign (the current one, and the previous one during a
rotation's overlap) and what the body's bytes are.
"""

import base64
import json
import secrets
from datetime import datetime, timedelta

from django.conf import settings
from standardwebhooks import Webhook

SECRET_PREFIX = "whsec_"
# 32 random bytes: the key HMAC-SHA256 is given.
SECRET_BYTES = 32


def new_secret() -> str:
    """A fresh ``whsec_…`` secret (base64 of 32 random bytes), as the spec writes one."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def body_bytes(document: dict) -> bytes:
    """The one serialization of a body: keys sorted, no spaces, UTF-8. Signed as sent.

    Deterministic, so every retry and redelivery of an event sends (and
    signs) the very same bytes.
    """
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def signing_secrets(
    secret: str, previous_secret: str, rotated_at: datetime | None, *, now: datetime
) -> list[str]:
    """The secrets that sign at ``now``: the current one, and the previous during the overlap."""
    signing = [secret]
    overlap = timedelta(hours=settings.CLAIMGRAPH_WEBHOOK_ROTATION_OVERLAP_HOURS)
    if previous_secret and rotated_at is not None and now < rotated_at + overlap:
        signing.append(previous_secret)
    return signing


def signed_headers(
    *, message_id: str, body: bytes, secrets_: list[str], now: datetime
) -> dict[str, str]:
    """The three Standard Webhooks headers for ``body``, one signature per secret.

    Several signatures are space-separated in ``webhook-signature``; a
    receiver accepts the message when any of them verifies with its secret.
    """
    signatures = [Webhook(secret).sign(message_id, now, body) for secret in secrets_]
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": " ".join(signatures),
    }
