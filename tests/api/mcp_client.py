"""The MCP SDK's own client, for tests: over Streamable HTTP against a live server, and stdio.

Each helper opens a session, runs its calls and closes it, from a fresh event
loop; the tests arrange their data with the ORM between calls, outside any
loop.
"""

import asyncio
import json
import socket
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import uvicorn
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from tests.deadlines import PROCESS_DEADLINE, wait_until
from tests.processes import database_environment

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class LiveSite:
    """A running site: its base URL, and a way to wait until it is answering nothing."""

    url: str
    server: uvicorn.Server

    def settle(self) -> None:
        """Wait until every request the server received has been answered.

        An SDK client leaves some requests to finish after its session has
        closed (``notifications/initialized`` is sent in the background), and
        the server goes on answering them: reading the token, say. A test's
        flush racing such a request can deadlock with it (TRUNCATE takes its
        locks table by table), so each test waits for the server to be idle
        before its database is flushed.
        """
        wait_until(
            lambda: not self.server.server_state.tasks,
            what="the live site's requests to be answered",
            every=0.02,
        )


@contextmanager
def live_site(application: Any = None) -> Iterator[LiveSite]:
    """The whole site (Django and MCP) under uvicorn on a free port."""
    from claimgraph_site.asgi import build_application

    application = application or build_application()
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(application, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()

    def started() -> bool:
        if not thread.is_alive():
            raise RuntimeError("uvicorn stopped before it started serving")
        return server.started

    wait_until(started, what="uvicorn to start", every=0.02)
    try:
        yield LiveSite(f"http://127.0.0.1:{port}", server)
    finally:
        server.should_exit = True
        thread.join(timeout=PROCESS_DEADLINE)
        listening.close()


Session = Callable[[ClientSession], Awaitable[Any]]


async def _over_http(
    url: str,
    secret: str | None,
    work: Session,
    *,
    headers: dict[str, str] | None = None,
    modern: bool = False,
) -> Any:
    sent = {"Authorization": f"Bearer {secret}"} if secret else {}
    async with (
        httpx2.AsyncClient(headers={**sent, **(headers or {})}, timeout=PROCESS_DEADLINE) as http,
        streamable_http_client(url, http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        if modern:
            await session.discover()
        else:
            await session.initialize()
        return await work(session)


def over_http(
    url: str,
    secret: str | None,
    work: Session,
    *,
    headers: dict[str, str] | None = None,
    modern: bool = False,
) -> Any:
    """Run ``work`` in one MCP session with the SDK's Streamable HTTP client.

    ``headers`` go on every request the client sends; ``modern`` speaks the
    2026-07-28 revision (``server/discover``, then a self-contained POST per
    call) instead of the ``initialize`` handshake.
    """
    return asyncio.run(_over_http(url, secret, work, headers=headers, modern=modern))


def call_http(url: str, secret: str, tool: str, arguments: dict[str, Any]) -> CallToolResult:
    return over_http(url, secret, lambda session: session.call_tool(tool, arguments))


def stdio_parameters(username: str) -> StdioServerParameters:
    """``manage.py mcp --user USERNAME`` against this test run's database."""
    env = database_environment()
    return StdioServerParameters(
        command=sys.executable,
        args=[str(ROOT / "manage.py"), "mcp", "--user", username],
        env=env,
        cwd=str(ROOT),
    )


def over_stdio(username: str, work: Session) -> Any:
    """Run ``work`` in one MCP session with a ``manage.py mcp`` process of its own."""

    async def run() -> Any:
        async with (
            stdio_client(stdio_parameters(username)) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            return await work(session)

    return asyncio.run(run())


def body(result: CallToolResult) -> dict[str, Any]:
    """A tool's answer: the JSON API's body (or error body), from its structured content."""
    assert result.structured_content is not None
    # The text content carries the same JSON (the last block, after any instruction).
    if result.is_error or "markdown" not in result.structured_content:
        assert json.loads(result.content[-1].text) == result.structured_content
    return result.structured_content
