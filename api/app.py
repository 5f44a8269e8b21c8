"""The JSON API for agents, mounted at /api/v1/ (SPEC §10).

Each app owns its router (``api.memory``, ``api.admissions``); this module
assembles them into one API with one OpenAPI document, and holds what every
operation shares: bearer-token authentication, the per-token write limit and
the translation of every refusal into the JSON error shape
``{"code", "message", "field"?}``.

Only a bearer token authenticates: a browser's session cookie is ignored
here, so a page on another site cannot ride a signed-in steward's session
(no cookie auth, so no CSRF to check).
"""

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI, Router
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.renderers import JSONRenderer
from ninja.security import HttpBearer

from accounts.models import ApiToken
from accounts.tokens import RateLimited, token_for_secret
from api import admissions as admissions_api
from api import agents as agents_api
from api import memory as memories_api
from api.schemas import AnswerEncoder, EvidenceItem
from memories.errors import Forbidden, NotFound, Rejected, StateConflict

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


class _Renderer(JSONRenderer):
    encoder_class = AnswerEncoder


api = NinjaAPI(
    title="claimgraph",
    version="1",
    description=(
        "A shared memory for AI agents. Authenticate with `Authorization: Bearer <token>` "
        "(issued on the account page or by `manage.py issue_token`). Errors are "
        '`{"code", "message", "field"?}`.'
    ),
    urls_namespace="api",
    openapi_url="/openapi.json",
    docs_url=None,
    auth=BearerToken(),
    renderer=_Renderer(),
)


def error(
    request: HttpRequest, status: int, code: str, message: str, field: str | None = None
) -> HttpResponse:
    body: dict[str, str] = {"code": code, "message": message}
    if field:
        body["field"] = field
    return api.create_response(request, body, status=status)


@api.exception_handler(AuthenticationError)
def unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = error(
        request,
        401,
        "unauthenticated",
        "a valid API token is required: send Authorization: Bearer <token>",
    )
    response["WWW-Authenticate"] = 'Bearer realm="claimgraph"'
    return response


@api.exception_handler(RateLimited)
def rate_limited(request: HttpRequest, exc: RateLimited) -> HttpResponse:
    response = error(
        request,
        429,
        "rate_limited",
        f"this token has used its {settings.CLAIMGRAPH_API_WRITE_RATE} writes a minute;"
        f" try again in {exc.retry_after} s",
    )
    response["Retry-After"] = str(exc.retry_after)
    return response


@api.exception_handler(Rejected)
def rejected(request: HttpRequest, exc: Rejected) -> HttpResponse:
    return error(request, 400, "invalid", f"{exc.field} {exc.message}", exc.field)


@api.exception_handler(ValidationError)
def invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    # Report the first problem, named by its field (the schema's own words).
    first = exc.errors[0] if exc.errors else {}
    field = _field_name(first.get("loc", ()))
    message = first.get("msg", "invalid input")
    return error(request, 400, "invalid", f"{field}: {message}" if field else message, field)


def _field_name(loc: tuple | list) -> str | None:
    # ninja's locations read ("body", "<parameter>", "confidence") or
    # ("query", "scope"); list positions are kept so a bad evidence item
    # reads "evidence.2.ref".
    parts = [str(part) for part in loc[1:] if str(part) not in _NOT_FIELDS]
    if parts and parts[0] in _BODY_PARAMETERS:
        parts = parts[1:]
    return ".".join(part for part in parts if "[" not in part) or None


# The names the routers give their body parameters, never a field of a body;
# and the tags pydantic adds to a location inside a union or validator: a
# type's name, or a model's class name (an evidence item is a model or a string).
_BODY_PARAMETERS = frozenset({"payload"})
_NOT_FIELDS = frozenset(
    {"str", "int", "float", "bool", "list", "dict", "none", EvidenceItem.__name__}
)


@api.exception_handler(RequestDataTooBig)
def too_large(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return error(request, 413, "too_large", f"the request body is larger than {limit} bytes")


@api.exception_handler(HttpError)
def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, RequestDataTooBig):
        return too_large(request, exc.__cause__)
    if exc.status_code == 400:
        # django-ninja raises this when the body is not JSON at all.
        return error(request, 400, "malformed", "the request body is not valid JSON")
    return error(request, exc.status_code, "error", str(exc))


@api.exception_handler(NotFound)
def not_found(request: HttpRequest, exc: NotFound) -> HttpResponse:
    # The same body whether the row is missing or outside the caller's
    # scopes: the answer must not confirm that it exists.
    return error(request, 404, "not_found", f"{exc.what} not found")


@api.exception_handler(Http404)
def http_404(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error(request, 404, "not_found", "not found")


@api.exception_handler(Forbidden)
def forbidden(request: HttpRequest, exc: Forbidden) -> HttpResponse:
    return error(request, 403, "forbidden", str(exc))


@api.exception_handler(StateConflict)
def state_conflict(request: HttpRequest, exc: StateConflict) -> HttpResponse:
    return error(request, 409, "state_conflict", str(exc))


api.add_router("", memories_api.router)
api.add_router("", admissions_api.router)
api.add_router("", agents_api.router)

# Mounted last, so it only sees what no operation above matched.
fallback = Router()


@fallback.api_operation(
    ["GET", "POST", "PUT", "PATCH", "DELETE"], "/{path:rest}", auth=None, include_in_schema=False
)
def no_such_operation(request: HttpRequest, rest: str):
    """Anything under /api/v1/ that is no operation answers in JSON too, never an HTML page."""
    raise NotFound("operation")


api.add_router("", fallback)
