"""uvicorn's HTTP protocol with a deadline on a request's headers (Operations: Timeouts).

uvicorn closes a keep-alive connection left idle after an answer
(``timeout_keep_alive``), but nothing bounds the time before the first
request, nor the time a client takes to send a request's headers: a client
that opens a connection, or sends half its headers, and stops would hold the
connection for as long as it likes. This protocol starts a timer when a
connection opens and when a request begins, stops it when the headers are
complete, and closes the connection if it fires first. The body is not
bounded here: an upload may take its time, and the request's size limits
apply (claimgraph_site/request_limits.py).

It also gives uvicorn's own answer to a request it cannot parse (a 400
before any application runs) the security headers every other answer
carries.

``CLAIMGRAPH_HEADER_TIMEOUT_SECONDS`` sets the bound (default 20 s).
Used by the gunicorn worker (``claimgraph_site.lib.http_protocol.Worker``,
gunicorn.conf.py) and by ``make run`` (``uvicorn --http``).
"""

import asyncio
import os

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn_worker import UvicornWorker

DEFAULT_HEADER_TIMEOUT_SECONDS = 20.0
# The headers of the site's refusals that need no settings to be right for a
# plain-text answer (claimgraph_site.settings and api/mcp/http.py set the same).
UNPARSEABLE_HEADERS = (
    b"x-content-type-options: nosniff\r\n"
    b"x-frame-options: DENY\r\n"
    b"content-security-policy: default-src 'none'\r\n"
    b"referrer-policy: same-origin\r\n"
    b"cache-control: no-store\r\n"
)


DEFAULT_KEEPALIVE_SECONDS = 30


def _seconds(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        seconds = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number of seconds, not {raw!r}") from None
    if seconds <= 0:
        raise ValueError(f"{name} must be above 0, not {raw!r}")
    return seconds


def header_timeout_seconds() -> float:
    return _seconds("CLAIMGRAPH_HEADER_TIMEOUT_SECONDS", DEFAULT_HEADER_TIMEOUT_SECONDS)


def keepalive_seconds() -> int:
    """``CLAIMGRAPH_KEEPALIVE_SECONDS``, whole seconds as gunicorn's ``keepalive`` takes them."""
    return max(1, round(_seconds("CLAIMGRAPH_KEEPALIVE_SECONDS", DEFAULT_KEEPALIVE_SECONDS)))


class HeaderDeadlineProtocol(HttpToolsProtocol):
    """httptools' protocol, closing a connection whose request headers do not arrive in time."""

    header_timeout = header_timeout_seconds()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_deadline: asyncio.TimerHandle | None = None
        self._start_header_deadline()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        # A keep-alive connection's next request: its headers are timed afresh.
        self._start_header_deadline()

    def on_headers_complete(self) -> None:
        self._stop_header_deadline()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_deadline()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        body = msg.encode("ascii", "replace")
        self.transport.write(
            b"HTTP/1.1 400 Bad Request\r\n"
            + UNPARSEABLE_HEADERS
            + b"content-type: text/plain; charset=utf-8\r\n"
            + b"content-length: "
            + str(len(body)).encode("ascii")
            + b"\r\nconnection: close\r\n\r\n"
            + body
        )
        self.transport.close()

    def _start_header_deadline(self) -> None:
        self._stop_header_deadline()
        self._header_deadline = self.loop.call_later(self.header_timeout, self._headers_too_late)

    def _stop_header_deadline(self) -> None:
        if getattr(self, "_header_deadline", None) is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _headers_too_late(self) -> None:
        self._header_deadline = None
        if not self.transport.is_closing():
            self.transport.close()


class Worker(UvicornWorker):
    """gunicorn's uvicorn worker, speaking HTTP through :class:`HeaderDeadlineProtocol`."""

    CONFIG_KWARGS = {
        **UvicornWorker.CONFIG_KWARGS,
        "http": "claimgraph_site.lib.http_protocol:HeaderDeadlineProtocol",
    }
