"""The one ASGI application: Django (console, admin, JSON API) and MCP at /mcp/, in one process.

Served by gunicorn with uvicorn workers in production and by uvicorn for
local work (README, Operations). Django is set up first: the MCP server's
modules import the models.
"""

import os
from contextlib import asynccontextmanager

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "claimgraph_site.settings")
# Database connections from a pool per process: see the settings.
os.environ.setdefault("CLAIMGRAPH_DATABASE_POOL", "1")
# A web request's statements and lock waits are bounded: see the settings.
os.environ.setdefault("CLAIMGRAPH_WEB_DATABASE_TIMEOUTS", "1")
django_application = get_asgi_application()

from asgiref.sync import sync_to_async  # noqa: E402
from django.db import connections  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import RedirectResponse  # noqa: E402
from starlette.routing import Mount, Route, request_response  # noqa: E402
from starlette.types import ASGIApp, Receive, Scope, Send  # noqa: E402

from api.mcp.http import SiteGuard, mcp_http_app  # noqa: E402


async def _to_mcp(request: Request) -> RedirectResponse:
    # "/mcp" as configured by hand: the same endpoint, method and body kept.
    query = request.url.query
    return RedirectResponse("/mcp/" + (f"?{query}" if query else ""), status_code=308)


def build_application(django_app: ASGIApp = django_application) -> Starlette:
    """A new site application (each runs its own MCP session manager, once)."""
    mcp = mcp_http_app()

    @asynccontextmanager
    async def lifespan(app: Starlette):
        async with mcp.server.session_manager.run():
            yield
        # Django's sync thread keeps its connections between requests.
        await sync_to_async(connections.close_all, thread_sensitive=True)()

    async def unrouted(scope: Scope, receive: Receive, send: Send) -> None:
        # Starlette's patterns end in "(?P<path>.*)$", and "." never matches a
        # newline: a path holding one (%0A) matches no route. It still goes where
        # its prefix says, so its answer is Django's or MCP's, with their headers
        # (and JSON under /api/v1/ and /mcp/), never Starlette's bare text 404.
        if scope["type"] == "http" and scope["path"].startswith("/mcp"):
            await mcp.app(scope, receive, send)
        elif scope["type"] == "http":
            await django_app(scope, receive, send)
        else:
            await site.router.not_found(scope, receive, send)

    site = Starlette(
        routes=[
            # SiteGuard: the redirect carries the security headers like any answer.
            Route("/mcp", SiteGuard(request_response(_to_mcp)), methods=["GET", "POST", "DELETE"]),
            Mount("/mcp", app=mcp.app),
            Mount("/", app=django_app),
        ],
        lifespan=lifespan,
    )
    site.router.default = unrouted
    return site


application = build_application()
