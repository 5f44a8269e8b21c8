"""Every refusal under /api/v1/ in the API's JSON shape ``{"code", "message", "field"?}``.

Bad input in several fields at once answers every one of them
(``field_errors``): ``{"code": "invalid", "message", "errors": [{"field",
"code", "message"}, ...]}``; one bad field keeps the single shape.

Whatever goes wrong under /api/v1/ answers in that shape (SPEC §10): an
unknown path, a method a path does not take, a body that is too large, not
JSON or not UTF-8, too many query parameters, even a defect of ours (a 500,
logged); never an HTML page. ``HANDLERS`` maps each exception to its answer
for ``api.app`` to install; ``bad_request`` and ``server_error_page`` are
Django's handler400 and handler500 (``claimgraph_site.urls``), and
``unavailable_answer`` the 503 of an outage (``claimgraph_site.outages``).
"""

import logging
from collections.abc import Callable, Sequence
from functools import wraps
from inspect import iscoroutinefunction
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent
from django.core.signals import got_request_exception
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.utils.log import log_response
from django.views import defaults
from ninja.errors import AuthenticationError, HttpError, ValidationError

from accounts.tokens import RateLimited
from api import API_PREFIX
from api.bodies import CONTENT_TYPE, RENDERER, NotUtf8, UnsupportedBody
from api.schemas import EvidenceItem
from memories.store.errors import (
    OUTAGE_ERRORS,
    RETRY_AFTER_SECONDS,
    Forbidden,
    NotFound,
    Rejected,
    StateConflict,
    UnknownEntity,
    UnknownName,
    outage_code,
)

logger = logging.getLogger("claimgraph_site.outages")


def error(
    request: HttpRequest,
    status: int,
    code: str,
    message: str,
    field: str | None = None,
    errors: Sequence[dict[str, Any]] | None = None,
    did_you_mean: Sequence[str] | None = None,
) -> HttpResponse:
    """The error shape, rendered as every answer of the API is."""
    body: dict[str, Any] = {"code": code, "message": message}
    if field:
        body["field"] = field
    if did_you_mean is not None:
        body["did_you_mean"] = list(did_you_mean)
    if errors:
        body["errors"] = list(errors)
    content = RENDERER.render(request, body, response_status=status)
    return HttpResponse(content, status=status, content_type=CONTENT_TYPE)


def field_errors(request: HttpRequest, problems: Sequence[dict[str, Any]]) -> HttpResponse:
    """400 ``invalid`` for bad input: one problem in the single shape, several as a list.

    Each problem is ``{"field", "code", "message"}`` (``field`` None when
    the body as a whole is at fault), its message a whole sentence that
    names the field, so the list reads without the fields beside it. The
    first field at fault is kept once: a value refused by two checks (a
    type, then a union's other branch) is one problem to its sender.
    """
    seen: set[Any] = set()
    unique = []
    for problem in problems:
        if problem["field"] not in seen:
            seen.add(problem["field"])
            unique.append(problem)
    if len(unique) == 1:
        only = unique[0]
        return error(
            request,
            400,
            "invalid",
            only["message"],
            only["field"],
            did_you_mean=only.get("did_you_mean"),
        )
    listed = [{key: value for key, value in p.items() if value is not None} for p in unique]
    fields = ", ".join(str(p["field"]) for p in unique if p["field"])
    return error(
        request,
        400,
        "invalid",
        f"{len(unique)} problems, all listed in errors: {fields}",
        errors=listed,
    )


# What a request without a valid token is told, by the API and by MCP alike.
UNAUTHENTICATED = "a valid API token is required: send Authorization: Bearer <token>"


def unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = error(request, 401, "unauthenticated", UNAUTHENTICATED)
    response["WWW-Authenticate"] = 'Bearer realm="claimgraph"'
    return response


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


def rejected(request: HttpRequest, exc: Rejected) -> HttpResponse:
    return field_errors(request, rejected_problems(exc))


def rejected_problems(exc: Rejected) -> list[dict[str, Any]]:
    """Each field a refusal of the actions names, as one problem of ``field_errors``."""
    return [_problem(p) for p in exc.problems]


def _problem(refusal: Rejected) -> dict[str, Any]:
    problem = {
        "field": refusal.field,
        "code": refusal.code,
        "message": f"{refusal.field} {refusal.message}",
    }
    if isinstance(refusal, UnknownName):
        problem["message"] += _suggestion(refusal.did_you_mean)
        problem["did_you_mean"] = list(refusal.did_you_mean)
    return problem


def _suggestion(names: Sequence[str]) -> str:
    return f"; did you mean {', '.join(repr(name) for name in names)}?" if names else ""


def invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    """Every problem the schema found, each named by its field (the schema's own words)."""
    problems = []
    for found in exc.errors or [{}]:
        field = _field_name(found.get("loc", ()))
        # Our own checks raise ValueError, which pydantic prefixes with words
        # that tell a client nothing.
        message = found.get("msg", "invalid input").removeprefix("Value error, ")
        problems.append(
            {
                "field": field,
                "code": _PROBLEM_CODES.get(found.get("type", "")) or found.get("code", "invalid"),
                "message": f"{field}: {message}" if field else message,
            }
        )
    return field_errors(request, problems)


# pydantic's words for the problems a client can act on by kind; every other
# kind (a wrong type, a value out of range, a bad choice) is "invalid".
_PROBLEM_CODES = {"missing": "required", "extra_forbidden": "unknown_field"}


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


def too_large(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return error(request, 413, "too_large", f"the request body is larger than {limit} bytes")


def too_many_parameters(request: HttpRequest, exc: TooManyFieldsSent) -> HttpResponse:
    limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
    return error(
        request, 400, "too_many_parameters", f"the request has more than {limit} parameters"
    )


def suspicious(request: HttpRequest, exc: SuspiciousOperation) -> HttpResponse:
    # What Django answers with its HTML 400 page; the specific kinds above
    # (too large, too many parameters) have their own codes.
    return error(request, 400, "bad_request", "the request is malformed")


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


def not_found(request: HttpRequest, exc: NotFound) -> HttpResponse:
    # The same body whether the row is missing or outside the caller's
    # scopes: the answer must not confirm that it exists.
    return error(request, 404, "not_found", f"{exc.what} not found")


def http_404(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error(request, 404, "not_found", "not found")


def unknown_entity(request: HttpRequest, exc: UnknownEntity) -> HttpResponse:
    # Only names in scopes the caller reads: the scope was found readable first.
    message = f"{exc.what} not found" + _suggestion(exc.did_you_mean)
    return error(request, 404, "not_found", message, exc.field, did_you_mean=exc.did_you_mean)


def forbidden(request: HttpRequest, exc: Forbidden) -> HttpResponse:
    return error(request, 403, exc.code, str(exc), exc.field)


def state_conflict(request: HttpRequest, exc: StateConflict) -> HttpResponse:
    return error(request, 409, exc.code, str(exc))


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


def unavailable_answer(request: HttpRequest, exc: BaseException | None = None) -> HttpResponse:
    """The database unreachable: 503 "unavailable" with Retry-After, never cached.

    Also what the site's outage middleware answers under /api/v1/ for an
    outage raised outside an operation (claimgraph_site.outages).
    """
    code, message = outage_code(exc)
    response = error(request, 503, code, message)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response


def unavailable(request: HttpRequest, exc: Exception) -> HttpResponse:
    # Without this django-ninja would answer an outage itself with DEBUG on,
    # as a 500 with a text traceback.
    logger.warning(
        "database unavailable, answered 503 to %s %s: %s: %s",
        request.method,
        request.path,
        type(exc).__name__,
        str(exc).strip(),
    )
    return unavailable_answer(request, exc)


# Each exception's answer. django-ninja picks the handler of the nearest
# class in the exception's MRO, so ``Exception`` only catches what nothing
# else here names.
HANDLERS: dict[type[Exception], Callable[[HttpRequest, Any], HttpResponse]] = {
    AuthenticationError: unauthenticated,
    RateLimited: rate_limited,
    Rejected: rejected,
    ValidationError: invalid,
    RequestDataTooBig: too_large,
    TooManyFieldsSent: too_many_parameters,
    SuspiciousOperation: suspicious,
    HttpError: http_error,
    NotFound: not_found,
    UnknownEntity: unknown_entity,
    Http404: http_404,
    Forbidden: forbidden,
    StateConflict: state_conflict,
    Exception: server_error,
    **dict.fromkeys(OUTAGE_ERRORS, unavailable),
}


def json_not_allowed(view: Callable) -> Callable:
    """``view``, with Django's plain 405 answered in the API's shape instead.

    django-ninja answers a method that a path does not take with Django's
    ``HttpResponseNotAllowed``, from inside the path's view and outside any
    exception handler, so the view itself is wrapped.
    """

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


# --- Django's own error answers ------------------------------------------------------
# Some refusals happen before any view: the Host check (CommonMiddleware) or an
# exception in a middleware, or outside the API's handlers (a console Http404).
# Django answers those with handler400/403/404/500 (claimgraph_site.urls),
# which under /api/v1/ answer in JSON too and elsewhere render the console's
# styled pages (templates/403.html, 404.html).
# With DEBUG on, Django shows its technical pages instead and calls neither.


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path_info.startswith(API_PREFIX):
        return error(request, 400, "bad_request", "the request is malformed")
    return defaults.bad_request(request, exception)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """A 404 raised outside the API's own handlers: JSON under /api/v1/, else 404.html."""
    if request.path_info.startswith(API_PREFIX):
        return error(request, 404, "not_found", "not found")
    return defaults.page_not_found(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    """A PermissionDenied outside the API's own handlers: JSON under /api/v1/, else 403.html."""
    if request.path_info.startswith(API_PREFIX):
        return error(request, 403, "forbidden", "not allowed")
    return defaults.permission_denied(request, exception)


def server_error_page(request: HttpRequest) -> HttpResponse:
    if request.path_info.startswith(API_PREFIX):
        return error(request, 500, "server_error", "the server failed; the failure is logged")
    return defaults.server_error(request)
