"""The digest's unsubscribe link: signed, so it works without signing in (RFC 8058).

The token names the account and is signed with the site's secret
(``django.core.signing``, under a salt of its own), so it cannot be made for
another account nor altered. It does not expire: an unsubscribe link in an
old message must still work. All it can do is turn the digest off.
"""

from django.contrib.auth import get_user_model
from django.core import signing
from django.urls import reverse

from notifications.links import absolute

SALT = "claimgraph.notifications.digest.unsubscribe"


class InvalidLink(Exception):
    """The token is not one this site signed, or names no account."""


def unsubscribe_token(user) -> str:
    return signing.dumps({"user": user.pk}, salt=SALT)


def unsubscribe_url(user) -> str:
    return absolute(reverse("digest-unsubscribe", args=[unsubscribe_token(user)]))


def account_of(token: str):
    """The account a token was made for; ``InvalidLink`` for any other token."""
    try:
        signed = signing.loads(token, salt=SALT)
    except signing.BadSignature:
        raise InvalidLink from None
    user_id = signed.get("user") if isinstance(signed, dict) else None
    if not isinstance(user_id, int):
        raise InvalidLink
    found = get_user_model()._default_manager.filter(pk=user_id).first()
    if found is None:
        raise InvalidLink
    return found
