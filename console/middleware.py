"""The console's answers outside any one view: status messages for htmx, styled 405s.

Both are installed for the console only (``claimgraph_site.middleware``): the
JSON API has its own shapes for every answer.
"""

from collections.abc import Callable

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import render
from django.template.loader import render_to_string

# The region of base.html that says what an action did (role=status).
MESSAGES_REGION = '<div id="messages" hx-swap-oob="innerHTML">{}</div>'


class HtmxMessagesMiddleware:
    """Add the pending messages to an htmx answer, as an out-of-band swap of ``#messages``.

    Without JavaScript a message is shown by the next full page (post/redirect/get).
    An htmx answer swaps a fragment instead, which would leave the message unread
    until some later page: so the answer carries the status region too, and htmx
    replaces the region's content wherever the fragment itself goes. A redirect
    (``HX-Redirect``, ``HX-Location``, a 3xx) leaves the messages for the page it leads
    to, and a page that already showed its messages adds nothing.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not self._carries_messages(request, response):
            return response
        storage = messages.get_messages(request)
        if storage.used or not len(storage):
            return response
        inner = render_to_string("base.html#message-list", {"messages": storage}, request)
        response.content += MESSAGES_REGION.format(inner).encode(response.charset)
        return response

    @staticmethod
    def _carries_messages(request: HttpRequest, response: HttpResponse) -> bool:
        return (
            bool(request.headers.get("HX-Request"))
            and not response.streaming
            and not 300 <= response.status_code < 400
            and not response.has_header("HX-Redirect")
            and not response.has_header("HX-Location")
            and response.get("Content-Type", "").startswith("text/html")
        )


class MethodNotAllowedPageMiddleware:
    """Answer a method an action does not take with a page in the console's layout.

    ``require_POST`` answers a GET on an action URL (a link followed, an address
    typed) with an empty 405; this keeps its status and ``Allow`` header and says
    in words what the address is for.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not isinstance(response, HttpResponseNotAllowed) or response.content:
            return response
        allowed = response["Allow"]
        page = render(
            request,
            "405.html",
            {"method": request.method, "allowed": allowed.split(", ")},
            status=405,
        )
        page["Allow"] = allowed
        return page
