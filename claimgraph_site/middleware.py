"""The console's middleware, passed over by requests to the JSON API.

Sessions, the signed-in user, flash messages, htmx details (and the status
messages htmx answers carry), the styled 405 page and static files
serve the console's pages only. The API authenticates by bearer token alone
and never reads a session, a cookie or ``request.user`` (``api.auth``),
so for a request under ``/api/v1/`` each of these hands the request straight
on: an agent's write pays for none of them. What guards every response stays
on every path, in the settings' order: SecurityMiddleware (HTTPS, HSTS,
nosniff, referrer policy), CommonMiddleware (which checks the Host header
against ALLOWED_HOSTS), CsrfViewMiddleware (django-ninja marks its views
exempt, since no cookie authenticates there), X-Frame-Options and the
Content-Security-Policy.

Whitenoise answers with a file read by a synchronous iterator, which Django
under ASGI can only serve by reading the whole file in a thread first, with a
warning on each one; under ASGI its file is read in blocks by an asynchronous
iterator instead.
"""

from collections.abc import AsyncIterator
from typing import IO

from asgiref.sync import sync_to_async
from django.contrib.auth.middleware import AuthenticationMiddleware as _Authentication
from django.contrib.messages.middleware import MessageMiddleware as _Messages
from django.contrib.sessions.middleware import SessionMiddleware as _Sessions
from django.core.handlers.asgi import ASGIRequest
from django.http import FileResponse, HttpRequest, HttpResponseBase
from django_htmx.middleware import HtmxMiddleware as _Htmx
from whitenoise.middleware import WhiteNoiseMiddleware as _WhiteNoise

from api import API_PREFIX
from console.middleware import HtmxMessagesMiddleware as _HtmxMessages
from console.middleware import MethodNotAllowedPageMiddleware as _NotAllowedPage


def _console_only(middleware: type) -> type:
    """A subclass of ``middleware`` that hands a request to the API straight on."""

    class ConsoleOnly(middleware):
        def __call__(self, request: HttpRequest) -> HttpResponseBase:
            if request.path_info.startswith(API_PREFIX):
                return self.get_response(request)
            return super().__call__(request)

    ConsoleOnly.__name__ = ConsoleOnly.__qualname__ = middleware.__name__
    ConsoleOnly.__doc__ = f"{middleware.__module__}.{middleware.__name__}, for the console only."
    return ConsoleOnly


class WhiteNoiseMiddleware(_console_only(_WhiteNoise)):
    """whitenoise's middleware for the console only, streaming asynchronously under ASGI."""

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = super().__call__(request)
        if (
            isinstance(request, ASGIRequest)
            and isinstance(response, FileResponse)
            and response.file_to_stream is not None
            and not response.is_async
        ):
            file = response.file_to_stream
            # The file stays registered to be closed with the response.
            response.streaming_content = _blocks(file, response.block_size)
        return response


async def _blocks(file: IO[bytes], size: int) -> AsyncIterator[bytes]:
    read = sync_to_async(file.read, thread_sensitive=False)
    while block := await read(size):
        yield block


SessionMiddleware = _console_only(_Sessions)
AuthenticationMiddleware = _console_only(_Authentication)
MessageMiddleware = _console_only(_Messages)
HtmxMiddleware = _console_only(_Htmx)
HtmxMessagesMiddleware = _console_only(_HtmxMessages)
MethodNotAllowedPageMiddleware = _console_only(_NotAllowedPage)
