"""The database unreachable: 503 with ``Retry-After``, never a 500 (SPEC §10, §11).

When PostgreSQL goes away (stopped, restarted, killed, a connection dropped by
the server or the network) psycopg raises ``OperationalError`` or
``InterfaceError``, which Django re-raises as its own classes of those names.
None of that is the request's fault and all of it passes, so the answer is
503 ``Service Unavailable``: ``{"code": "unavailable", "message": …}`` under
``/api/v1/``, a plain page (``templates/503.html``) on the console, each with
``Retry-After``.

Such an error can surface in three places, and each is caught here:

- in a view or while a page renders: :meth:`DatabaseOutageMiddleware.process_exception`;
- in django-ninja's own handling of an API operation (it answers an unhandled
  exception itself when DEBUG is on): the same answer is registered as the
  API's own handler for ``memories.store.errors.OUTAGE_ERRORS`` (``api.errors``);
- in another middleware after the view, e.g. the session saved on the way out:
  Django has by then turned the exception into a 500, so the
  ``got_request_exception`` signal marks the request and the middleware,
  which stands outside every middleware that can query, swaps the 500 for a 503.

Nothing here reconnects: Django closes a connection that raised such an error
when the request ends, and a persistent connection that died between requests
fails its health check (the settings' ``CONN_HEALTH_CHECKS``, made as a request
comes in) and is replaced, so the next request opens a new connection and
succeeds as soon as the server answers again.
"""

import logging
import sys
from collections.abc import Awaitable, Callable

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.core.signals import got_request_exception
from django.db import connections
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.template.loader import render_to_string
from django.utils.csp import CSP, build_policy

from api import API_PREFIX
from api.errors import unavailable_answer
from memories.store.errors import OUTAGE_ERRORS, RETRY_AFTER_SECONDS, outage_code

logger = logging.getLogger(__name__)

_MARK = "_claimgraph_database_outage"


def is_outage(exception: BaseException | None) -> bool:
    return isinstance(exception, OUTAGE_ERRORS)


def unavailable(request: HttpRequest, exception: BaseException) -> HttpResponse:
    """The 503 for ``request``: JSON under ``/api/v1/``, the plain page elsewhere.

    Reads nothing from the database (no user, no session, no navigation), so
    it can be rendered when there is none.
    """
    logger.warning(
        "database unavailable, answered 503 to %s %s: %s: %s",
        request.method,
        request.path,
        type(exception).__name__,
        str(exception).strip(),
    )
    if request.path_info.startswith(API_PREFIX):
        response: HttpResponse = unavailable_answer(request, exception)
    else:
        busy = outage_code(exception)[0] == "database_busy"
        page = render_to_string("503.html", {"retry_after": RETRY_AFTER_SECONDS, "busy": busy})
        response = HttpResponse(page, status=503)
        # The page has no script, so the site's policy without a nonce; set
        # here because a 503 that replaces a 500 passes no inner middleware.
        if policy := build_policy(settings.SECURE_CSP):
            response[CSP.HEADER_ENFORCE] = policy
        response["X-Frame-Options"] = settings.X_FRAME_OPTIONS
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    # Never cached by a proxy: the next request may well succeed.
    response["Cache-Control"] = "no-store"
    # The session cannot be saved either; trying would only raise again on the way out.
    session = getattr(request, "session", None)
    if session is not None:
        session.modified = False
    return response


class DatabaseOutageMiddleware:
    """Answers 503 for an outage raised in a view, or in a middleware inside this one.

    Stands right after SecurityMiddleware (so its answers still get HSTS and
    nosniff) and outside the session, authentication and message middleware.
    """

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase | Awaitable]) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest):
        if iscoroutinefunction(self):
            return self.__acall__(request)
        _health_check_connections()
        return self._replace_a_500_from_an_outage(request, self.get_response(request))

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        return self._replace_a_500_from_an_outage(request, await self.get_response(request))

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        return unavailable(request, exception) if is_outage(exception) else None

    @staticmethod
    def _replace_a_500_from_an_outage(
        request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        outage = getattr(request, _MARK, None)
        if outage is not None and response.status_code == 500:
            return unavailable(request, outage)
        return response


def _health_check_connections() -> None:
    """Replace a persistent connection that died since the last request, before it is used.

    Django runs this check (CONN_HEALTH_CHECKS) lazily, when the ORM first asks
    for a cursor in a request. The API's first statement, the token check, runs
    on a psycopg cursor over Django's connection, which bypasses that, so the
    check is made here, once per request, as the request comes in. Not in
    async mode: there each request gets a connection of its own.
    """
    for alias_connection in connections.all(initialized_only=True):
        alias_connection.close_if_health_check_failed()


@receiver(got_request_exception, dispatch_uid="claimgraph_site.outages")
def _mark_an_outage(sender: object, request: HttpRequest | None = None, **kwargs: object) -> None:
    # Sent while Django handles the exception, so it is the one being handled.
    exception = sys.exc_info()[1]
    if request is not None and is_outage(exception):
        setattr(request, _MARK, exception)
