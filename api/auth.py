"""Who is calling: the bearer token, and the write it is charged for (SPEC §10).

Only a bearer token authenticates: a browser's session cookie is ignored
here, so a page on another site cannot ride a signed-in steward's session
(no cookie auth, so no CSRF to check).
"""

from django.conf import settings
from django.http import HttpRequest
from ninja.security import HttpBearer

from accounts.models import ApiToken
from accounts.tokens import token_for_secret

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class BearerToken(HttpBearer):
    """``Authorization: Bearer <token>``; a write also spends one of the token's writes.

    The write limit is charged here because this is the one hook django-ninja
    runs before it reads the body, inside its error handling: a refused burst
    costs neither JSON parsing nor a database transaction.
    """

    def __call__(self, request: HttpRequest) -> ApiToken | None:
        # Not the parent's __call__: it logs malformed headers, secrets included.
        scheme, _, secret = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        # A write is charged in the statement that recognises the token.
        is_write = request.method not in READ_METHODS
        rate = settings.CLAIMGRAPH_API_WRITE_RATE if is_write else 0
        return token_for_secret(secret.strip(), writes_per_minute=rate)

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken | None:
        raise NotImplementedError("__call__ does the work")  # pragma: no cover
