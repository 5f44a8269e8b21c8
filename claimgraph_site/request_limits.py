"""A plain 400 page for console requests Django refuses to read.

Django parses the query string (and a form's body) on first use, and refuses
one with more than ``DATA_UPLOAD_MAX_NUMBER_FIELDS`` parameters, or a body
over ``DATA_UPLOAD_MAX_MEMORY_SIZE``, by raising. Without DEBUG that becomes
Django's 400; with DEBUG, Django's error page reads the same query string
again to list it, raises again, and the browser gets a 500. This middleware
reads both first, before any view or other middleware does, and answers a
refusal with the console's own 400 page in either mode.

Requests under ``/api/v1/`` are passed straight on: the API answers its own
errors in JSON (``api.errors``).
"""

import logging
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import HttpRequest, HttpResponseBadRequest, HttpResponseBase
from django.http.multipartparser import MultiPartParserError
from django.template.defaultfilters import filesizeformat
from django.template.loader import render_to_string
from django.utils.formats import number_format

from api import API_PREFIX

# The content types whose body Django parses into request.POST.
_FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
# What Django raises for a query string or form it refuses to read.
_UNREADABLE = (TooManyFieldsSent, TooManyFilesSent, RequestDataTooBig, MultiPartParserError)


def _why(error: Exception) -> str:
    """The refusal in words for the page."""
    if isinstance(error, TooManyFieldsSent):
        limit = number_format(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS, force_grouping=True)
        return f"The request has too many parameters (more than {limit}); nothing was read."
    if isinstance(error, TooManyFilesSent):
        limit = number_format(settings.DATA_UPLOAD_MAX_NUMBER_FILES, force_grouping=True)
        return f"The request has too many files (more than {limit}); nothing was read."
    if isinstance(error, RequestDataTooBig):
        limit = filesizeformat(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        return f"The request is too large (more than {limit}); nothing was read."
    return "The form could not be read; nothing was done."


class RequestLimitsMiddleware:
    """Answer a console request Django cannot read with a 400 page, never a 500.

    Install it after the middleware that sets the security headers (the CSP
    included), so the 400 carries them like any page. The page is rendered
    without the request, so it needs nothing set up before it.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if request.path_info.startswith(API_PREFIX):
            return self.get_response(request)
        try:
            request.GET  # noqa: B018 -- parsed now, so a refusal is answered here
            if request.method == "POST" and request.content_type in _FORM_TYPES:
                # Every console POST reads its form anyway (the CSRF check
                # does first); reading it here only moves the refusal earlier.
                request.POST  # noqa: B018
        except _UNREADABLE as error:
            return self.refuse(request, error)
        return self.get_response(request)

    @staticmethod
    def refuse(request: HttpRequest, error: Exception) -> HttpResponseBadRequest:
        # The logger Django itself reports these refusals to.
        logging.getLogger(f"django.security.{type(error).__name__}").warning(
            "%s: %s", request.path, error, extra={"status_code": 400, "request": request}
        )
        return HttpResponseBadRequest(
            render_to_string("bad_request.html", {"message": _why(error)})
        )
