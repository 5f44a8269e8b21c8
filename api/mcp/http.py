"""MCP over Streamable HTTP at /mcp/, behind the JSON API's bearer tokens (SPEC §10).

The SDK's Starlette app, configured so that it answers like the rest of the
site:

- **Tokens**: the same API tokens, recognised by the same statement
  (``accounts.tokens``); a missing or bad token gets 401 before any tool runs,
  and each tool acts as the token's account and charges it for each write.
- **Stateless**: every POST stands alone (no session kept in a worker's
  memory), so any gunicorn worker on any machine can answer any call, as for
  the JSON API. The tools need no server-to-client requests.
- **What Django's middleware does for its own responses** (``SiteGuard``):
  the Host check by Django's own rule and ``ALLOWED_HOSTS``, an ``Origin``
  check like the CSRF check's (a page on another site cannot drive the
  tools), the HTTPS redirect, and the security headers (HSTS, nosniff,
  referrer policy, frame and opener policies, and a CSP that lets nothing
  render). The SDK's own Host check is left off: its list of exact names
  cannot say what ``ALLOWED_HOSTS`` says (``.example.org``, ``*``), so one
  rule, Django's, decides.
- **Ready for the 2026-07-28 revision** (``RequestChecks``, rules in
  ``api/mcp/wire.py``): an ``MCP-Protocol-Version`` the SDK does not speak
  is refused with 400 naming the ones it does; ``Mcp-Method`` and
  ``Mcp-Name``, when sent, must say what the body says (400 otherwise), so
  a gateway routing by them routes what runs; a session id is ignored (each
  POST stands alone); a 2026 request goes to the SDK's own per-request path.
- A database that cannot be reached answers 503 with ``Retry-After``.
- **Connections as around a Django request**: the token check, at the
  request's start, drops a connection too old or broken; the tool uses that
  one connection; the request's end closes it or keeps it by
  ``CONN_MAX_AGE``. One connection a call at most, as for the JSON API.
"""

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.conf import settings
from django.db import DatabaseError, close_old_connections
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain
from mcp.server import MCPServer
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings
from ninja.errors import AuthenticationError
from pydantic import ConfigDict, Field
from starlette.datastructures import Headers
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from accounts.models import ApiToken
from accounts.tokens import token_for_secret
from api.errors import UNAUTHENTICATED
from api.mcp.server import Caller, build_server
from api.mcp.wire import (
    header_mismatch,
    invalid_request,
    parsed,
    refusal_json,
    unsupported_version,
)
from memories.store.errors import outage_code

# Tokens are issued by claimgraph itself (the account page, `issue_token`),
# not by an OAuth server. The SDK's auth settings require an issuer; with no
# resource server URL and no authorization provider it is advertised nowhere.
ISSUER = "https://claimgraph.invalid"

RETRY_AFTER = {"Retry-After": "5"}

# A response under /mcp/ is JSON for a program, never a page to render.
CONTENT_SECURITY_POLICY = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'"


class TokenAccess(AccessToken):
    """The SDK's access token, carrying the API token (and its account) it was found as."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    api_token: ApiToken = Field(exclude=True)


class ApiTokens:
    """The SDK's token verifier over claimgraph's API tokens."""

    async def verify_token(self, token: str) -> AccessToken | None:
        found = await sync_to_async(_recognise, thread_sensitive=True)(token)
        if found is None:
            return None
        return TokenAccess(
            token=token,
            client_id=f"claimgraph-token-{found.pk}",
            subject=str(found.user_id),
            scopes=[],
            api_token=found,
        )


def _recognise(secret: str) -> ApiToken | None:
    # The request's start, as Django's request_started: the connection it
    # leaves open is the tool's, and SiteGuard closes it (or keeps it, by
    # CONN_MAX_AGE) when the request ends. Closing it here as well made every
    # call open two connections where CONN_MAX_AGE is 0.
    close_old_connections()
    # Reads only: a write is charged when a tool that writes runs.
    return token_for_secret(secret.strip())


# The request's end, as Django's request_finished: in the sync thread, whose
# connection the token check and the tool used.
_request_finished = sync_to_async(close_old_connections, thread_sensitive=True)


def http_caller(request: Any) -> Caller:
    """The token's account, from the request the bearer middleware authenticated."""
    user = request.scope.get("user") if request is not None else None
    access = getattr(user, "access_token", None)
    if not isinstance(access, TokenAccess):  # not behind the bearer middleware
        raise AuthenticationError()
    return Caller(user=access.api_token.user, token=access.api_token)


@dataclass(frozen=True)
class McpHttp:
    """The ASGI app to mount at /mcp, and the server whose session manager must run."""

    app: ASGIApp
    server: MCPServer


def mcp_http_app() -> McpHttp:
    """A new Streamable HTTP app (a session manager runs once: one app per process)."""
    server = build_server(
        http_caller,
        token_verifier=ApiTokens(),
        auth=AuthSettings(issuer_url=ISSUER, resource_server_url=None),
    )
    app = server.streamable_http_app(
        streamable_http_path="/",
        stateless_http=True,
        json_response=True,
        max_request_body_size=settings.DATA_UPLOAD_MAX_MEMORY_SIZE or DEFAULT_MAX_REQUEST_BODY_SIZE,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    # A path the SDK's router does not know (``/mcp/x``, or one holding an encoded
    # newline, which its patterns never match) answers in JSON, as the rest of /mcp/.
    app.router.default = not_found
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE or DEFAULT_MAX_REQUEST_BODY_SIZE
    return McpHttp(app=SiteGuard(RequestChecks(app, limit)), server=server)


class RequestChecks:
    """An ASGI wrapper: what the SDK lets through about a POST, refused with 400 before it.

    An ``MCP-Protocol-Version`` header naming a revision not served; then,
    with the body read (up to the SDK's own limit; past it the SDK answers
    413 as before), a request whose id is invalid or missing, and
    ``Mcp-Method`` / ``Mcp-Name`` headers that contradict the body. The body
    is handed on unchanged; ``api/mcp/wire.py`` decides.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        headers = [
            (name.decode("latin-1").lower(), value.decode("latin-1"))
            for name, value in scope["headers"]
        ]
        refusal = unsupported_version(headers)
        if refusal is not None:
            await JSONResponse(refusal_json(refusal), status_code=400)(scope, receive, send)
            return
        read: list[Message] = []
        size = 0
        while True:
            message = await receive()
            read.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self.limit or not message.get("more_body", False):
                break
        complete = read[-1]["type"] == "http.request" and not read[-1].get("more_body", False)
        if complete and size <= self.limit:
            body = b"".join(message.get("body", b"") for message in read)
            raw = parsed(body)
            refusal = invalid_request(raw) or header_mismatch(raw, headers)
            if refusal is not None:
                await JSONResponse(refusal_json(refusal), status_code=400)(scope, receive, send)
                return

        async def replay() -> Message:
            return read.pop(0) if read else await receive()

        await self.app(scope, replay, send)


async def not_found(scope: Scope, receive: Receive, send: Send) -> None:
    """The JSON 404 of a path under /mcp/ that no route matches."""
    await _error(404, "not_found", "not found")(scope, receive, send)


# --- what Django's middleware does for its own responses -----------------------------


def _error(status: int, code: str, message: str, **headers: str) -> Response:
    return JSONResponse({"code": code, "message": message}, status_code=status, headers=headers)


def unauthenticated_body(sdk_body: bytes) -> bytes:
    """The 401 the SDK's bearer check answers, in the JSON API's error shape.

    OAuth's own fields (``error``, ``error_description``) stay beside the API's
    ``code`` and ``message``, so a client reading either finds what it expects.
    """
    try:
        said = json.loads(sdk_body) if sdk_body else {}
    except ValueError:
        said = {}
    if not isinstance(said, dict):
        said = {}
    answer = {
        **said,
        "code": "unauthenticated",
        "message": UNAUTHENTICATED,
    }
    return json.dumps(answer).encode()


def host_allowed(host: str) -> bool:
    """Whether Django would accept this Host header (``HttpRequest.get_host``'s rule)."""
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    domain, _ = split_domain_port(host)
    return bool(domain) and validate_host(domain, allowed)


def origin_allowed(origin: str | None, own: str) -> bool:
    """No Origin (not a browser), this site's own origin, or a trusted one: Django's CSRF rule.

    The whole origin is compared (scheme, host and port), as
    ``CsrfViewMiddleware`` does: ``own`` is this request's scheme and Host.
    """
    if origin is None or origin == own:
        return True
    trusted = settings.CSRF_TRUSTED_ORIGINS
    if origin in trusted:
        return True
    found = urlsplit(origin)
    for pattern in trusted:
        if "*" not in pattern:
            continue
        allowed = urlsplit(pattern)
        domain = allowed.netloc.lstrip("*")
        if found.scheme == allowed.scheme and is_same_domain(found.netloc, domain):
            return True
    return False


def _is_secure(scope: Scope, headers: Headers) -> bool:
    if scope.get("scheme") == "https":
        return True
    proxy = settings.SECURE_PROXY_SSL_HEADER
    if proxy:
        name, value = proxy
        header = name.removeprefix("HTTP_").replace("_", "-").lower()
        return headers.get(header, "").split(",")[0].strip() == value
    return False


def security_headers(*, secure: bool) -> list[tuple[bytes, bytes]]:
    """The headers Django's security middleware would add, for a JSON answer."""
    found = {
        "Content-Security-Policy": CONTENT_SECURITY_POLICY,
        "Cache-Control": "no-store",
    }
    if settings.SECURE_CONTENT_TYPE_NOSNIFF:
        found["X-Content-Type-Options"] = "nosniff"
    if settings.SECURE_REFERRER_POLICY:
        policy = settings.SECURE_REFERRER_POLICY
        found["Referrer-Policy"] = policy if isinstance(policy, str) else ",".join(policy)
    if settings.SECURE_CROSS_ORIGIN_OPENER_POLICY:
        found["Cross-Origin-Opener-Policy"] = settings.SECURE_CROSS_ORIGIN_OPENER_POLICY
    if settings.X_FRAME_OPTIONS:
        found["X-Frame-Options"] = settings.X_FRAME_OPTIONS
    if secure and settings.SECURE_HSTS_SECONDS:
        hsts = f"max-age={settings.SECURE_HSTS_SECONDS}"
        if settings.SECURE_HSTS_INCLUDE_SUBDOMAINS:
            hsts += "; includeSubDomains"
        if settings.SECURE_HSTS_PRELOAD:
            hsts += "; preload"
        found["Strict-Transport-Security"] = hsts
    return [(name.lower().encode(), value.encode()) for name, value in found.items()]


def _is_endpoint(scope: Scope) -> bool:
    """Whether the request is for the MCP endpoint itself (``/mcp/``), not a path
    under it that no route knows (a 404 whatever its method)."""
    return scope["path"].removeprefix(scope.get("root_path", "")) in ("", "/")


class SiteGuard:
    """An ASGI wrapper: the Host and Origin checks, HTTPS and the security headers."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        secure = _is_secure(scope, headers)
        extra = security_headers(secure=secure)
        started = False

        held: list[Message] = []

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                present = {name.lower() for name, _ in message.get("headers", [])}
                added = [(name, value) for name, value in extra if name not in present]
                message = {**message, "headers": [*message.get("headers", []), *added]}
                if message["status"] == 401:
                    held.append(message)
                    return
            elif held:
                # The SDK's bearer check refused the token: its answer is
                # held until its body is complete, then said in the API's shape.
                held.append(message)
                if message.get("more_body"):
                    return
                start, *bodies = held
                body = unauthenticated_body(b"".join(m.get("body", b"") for m in bodies))
                length = str(len(body)).encode()
                kept = [(n, v) for n, v in start["headers"] if n.lower() != b"content-length"]
                await send({**start, "headers": [*kept, (b"content-length", length)]})
                message = {"type": "http.response.body", "body": body}
            await send(message)

        host = headers.get("x-forwarded-host") if settings.USE_X_FORWARDED_HOST else None
        host = host or headers.get("host", "")
        refusal: Response | None = None
        if not host_allowed(host):
            refusal = _error(400, "invalid_host", "this server does not answer for that Host")
        elif settings.SECURE_SSL_REDIRECT and not secure:
            # 308, not Django's 301: a client repeats a POST as a POST.
            query = scope.get("query_string", b"").decode("latin-1")
            target = f"https://{settings.SECURE_SSL_HOST or host}{scope['path']}"
            refusal = RedirectResponse(target + (f"?{query}" if query else ""), status_code=308)
        elif not origin_allowed(headers.get("origin"), f"{'https' if secure else 'http'}://{host}"):
            refusal = _error(403, "forbidden", "requests from another site's pages are refused")
        elif scope["method"] != "POST" and _is_endpoint(scope):
            # No server stream (GET) and no session to end (DELETE): each call
            # is one POST. Answered at once, so nothing is held open.
            refusal = _error(405, "method_not_allowed", "only POST is answered here", Allow="POST")
        if refusal is not None:
            await refusal(scope, receive, guarded_send)
            return
        # As Django's handler does for each request: this request's sync work
        # (the token check, the tool) runs in a thread of its own, so a call
        # waiting on a lock holds up no other caller.
        async with ThreadSensitiveContext():
            await self._serve(scope, receive, guarded_send, lambda: started)

    async def _serve(self, scope: Scope, receive: Receive, send: Send, started) -> None:
        try:
            await self.app(scope, receive, send)
        except DatabaseError as exc:
            if started():
                raise
            code, message = outage_code(exc)
            unavailable = _error(503, code, message, **RETRY_AFTER)
            await unavailable(scope, receive, send)
        finally:
            await _request_finished()
