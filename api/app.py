"""The JSON API for agents, mounted at /api/v1/ (SPEC §10).

Each app owns its router (``api.memory``, ``api.admissions``); this module
assembles them into one API with one OpenAPI document, and holds what every
operation shares: bearer-token authentication, the per-token write limit and
the translation of every refusal into the JSON error shape
``{"code", "message", "field"?}``. Whatever goes wrong under /api/v1/ answers
in that shape (SPEC §10): an unknown path, a method a path does not take, a
body that is too large, not JSON or not UTF-8, too many query parameters,
even a defect of ours (a 500, logged); never an HTML page.

Only a bearer token authenticates: a browser's session cookie is ignored
here, so a page on another site cannot ride a signed-in steward's session
(no cookie auth, so no CSRF to check).
"""

import json
import logging
from collections.abc import Callable
from functools import wraps
from inspect import iscoroutinefunction
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent
from django.core.signals import got_request_exception
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.urls import URLPattern, register_converter
from django.utils.log import log_response
from django.views import defaults
from ninja import NinjaAPI, Router
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser
from ninja.renderers import JSONRenderer
from ninja.security import HttpBearer

from accounts.models import ApiToken
from accounts.tokens import RateLimited, token_for_secret
from api import admissions as admissions_api
from api import agents as agents_api
from api import memory as memories_api
from api.schemas import AnswerEncoder, EvidenceItem
from memories.errors import (
    OUTAGE_ERRORS,
    RETRY_AFTER_SECONDS,
    UNAVAILABLE_MESSAGE,
    Forbidden,
    NotFound,
    Rejected,
    StateConflict,
)

logger = logging.getLogger("claimgraph_site.outages")

# Where claimgraph_site.urls mounts this API; the site's middleware passes it over.
API_PREFIX = "/api/v1/"
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


class UnsupportedBody(Exception):
    """A body declared as something other than JSON in UTF-8 (415)."""


class NotUtf8(Exception):
    """A JSON body whose bytes are not UTF-8 (400)."""


class JsonBodies(Parser):
    """A body is JSON in UTF-8, sent as ``application/json``; nothing else is guessed at.

    django-ninja's own parser hands the bytes to ``json.loads``, which reads
    a body whatever its Content-Type and detects UTF-16 and UTF-32 by
    itself, so a ``text/plain`` body or a UTF-16 one was taken as JSON.
    """

    def parse_body(self, request: HttpRequest) -> Any:
        charset = request.content_params.get("charset", "utf-8").lower()
        if request.content_type != "application/json" or charset not in ("utf-8", "utf8"):
            raise UnsupportedBody(request.META.get("CONTENT_TYPE", ""))
        try:
            text = request.body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NotUtf8(str(exc)) from None
        return json.loads(text)


class _Api(NinjaAPI):
    """django-ninja's API, whose 405s are in the API's error shape too.

    django-ninja answers a method that a path does not take with Django's
    plain ``HttpResponseNotAllowed``, from inside the path's view and outside
    any exception handler, so each view is wrapped where the URL patterns are
    made.
    """

    @property
    def urls(self) -> tuple[list, str, str]:
        patterns, app_name, namespace = super().urls
        for pattern in patterns:
            if isinstance(pattern, URLPattern):
                pattern.callback = _json_not_allowed(pattern.callback)
        return patterns, app_name, namespace


def _json_not_allowed(view: Callable) -> Callable:
    def answer(request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if not isinstance(response, HttpResponseNotAllowed):
            return response
        allowed = response["Allow"]
        refusal = error(
            request,
            405,
            "method_not_allowed",
            f"{request.method} is not an operation on this path; it takes {allowed}",
        )
        refusal["Allow"] = allowed
        return refusal

    if iscoroutinefunction(view):

        @wraps(view)
        async def async_view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            return answer(request, await view(request, *args, **kwargs))

        return async_view

    @wraps(view)
    def sync_view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return answer(request, view(request, *args, **kwargs))

    return sync_view


api = _Api(
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
    parser=JsonBodies(),
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
    # Our own checks raise ValueError, which pydantic prefixes with words
    # that tell a client nothing.
    message = first.get("msg", "invalid input").removeprefix("Value error, ")
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


@api.exception_handler(TooManyFieldsSent)
def too_many_parameters(request: HttpRequest, exc: TooManyFieldsSent) -> HttpResponse:
    limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
    return error(
        request, 400, "too_many_parameters", f"the request has more than {limit} parameters"
    )


@api.exception_handler(SuspiciousOperation)
def suspicious(request: HttpRequest, exc: SuspiciousOperation) -> HttpResponse:
    # What Django answers with its HTML 400 page; the specific kinds above
    # (too large, too many parameters) have their own codes.
    return error(request, 400, "bad_request", "the request is malformed")


@api.exception_handler(HttpError)
def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    # django-ninja raises HttpError(400) for any body its parser refused,
    # with the parser's exception as the cause.
    cause = exc.__cause__
    if isinstance(cause, RequestDataTooBig):
        return too_large(request, cause)
    if isinstance(cause, UnsupportedBody):
        return error(
            request,
            415,
            "unsupported_media_type",
            "the request body must be JSON in UTF-8, sent as Content-Type: application/json",
        )
    if isinstance(cause, NotUtf8):
        return error(request, 400, "malformed", "the request body is not UTF-8")
    if exc.status_code == 400:
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


@api.exception_handler(Exception)
def server_error(request: HttpRequest, exc: Exception) -> HttpResponse:
    """A defect of ours, not bad input: a 500, but in the API's shape, never a page.

    Logged with its traceback and signalled as Django signals an uncaught
    exception, so error reporting (and the test client, which re-raises it)
    still sees it. A more specific handler (an outage's 503) comes first.
    """
    got_request_exception.send(sender=None, request=request)
    response = error(request, 500, "server_error", "the server failed; the failure is logged")
    # As Django logs an uncaught exception (logger django.request, with the
    # traceback), and once: the response is marked as logged.
    log_response(
        "Internal Server Error: %s", request.path, response=response, request=request, exception=exc
    )
    return response


def unavailable_answer(request: HttpRequest) -> HttpResponse:
    """The database unreachable: 503 "unavailable" with Retry-After, never cached.

    Also what the site's outage middleware answers under /api/v1/ for an
    outage raised outside an operation (claimgraph_site.outages).
    """
    response = error(request, 503, "unavailable", UNAVAILABLE_MESSAGE)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response


def _unavailable(request: HttpRequest, exc: Exception) -> HttpResponse:
    # Without this django-ninja would answer an outage itself with DEBUG on,
    # as a 500 with a text traceback.
    logger.warning(
        "database unavailable, answered 503 to %s %s: %s: %s",
        request.method,
        request.path,
        type(exc).__name__,
        str(exc).strip(),
    )
    return unavailable_answer(request)


for _outage in OUTAGE_ERRORS:
    api.add_exception_handler(_outage, _unavailable)

api.add_router("", memories_api.router)
api.add_router("", admissions_api.router)
api.add_router("", agents_api.router)


class _AnyPath:
    """Whatever follows /api/v1/: nothing at all, line breaks included."""

    # Django's "path" converter needs a character and stops at a line
    # break; what it missed would fall through to Django's HTML 404.
    regex = r"[\s\S]*"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(_AnyPath, "anypath")

# Mounted last, so it only sees what no operation above matched.
fallback = Router()


@fallback.api_operation(
    ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"],
    "/{anypath:rest}",
    auth=None,
    include_in_schema=False,
)
def no_such_operation(request: HttpRequest, rest: str):
    """Anything under /api/v1/ that is no operation answers in JSON too, never an HTML page."""
    raise NotFound("operation")


api.add_router("", fallback)


# --- Django's own error answers ------------------------------------------------------
# Some refusals happen before any view: the Host check (CommonMiddleware) or an
# exception in a middleware. Django answers those with handler400 and
# handler500 (claimgraph_site.urls), which under /api/v1/ answer in JSON too.
# With DEBUG on, Django shows its technical pages instead and calls neither.


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path_info.startswith(API_PREFIX):
        return error(request, 400, "bad_request", "the request is malformed")
    return defaults.bad_request(request, exception)


def server_error_page(request: HttpRequest) -> HttpResponse:
    if request.path_info.startswith(API_PREFIX):
        return error(request, 500, "server_error", "the server failed; the failure is logged")
    return defaults.server_error(request)
