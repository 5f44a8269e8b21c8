"""What the SDK's transports let through silently, answered as JSON-RPC says (issue 29 §12).

The SDK reads a message whose ``id`` is not an integer or a string (null, a
float, an object, a boolean) as a notification, since it has a method: over HTTP
it answers 202 and runs nothing, and a ``tools/call`` with no id at all goes the
same way. Such a message is an Invalid Request (-32600) with a null id, answered
before it reaches the SDK. Over stdio the SDK drops a line that is not JSON-RPC
(it hands the error to a dispatcher that only logs it), so the client would wait
forever: the line gets a Parse error (-32700) or an Invalid Request instead, and
so does a request its reader took for a notification (a bad id or none). The
messages, their parsing and the streams are the SDK's own; only the refusal is
ours.
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pydantic_core
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError


def _refusal(code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=message)
    )


def invalid_request(raw: Any) -> types.JSONRPCError | None:
    """The Invalid Request answer to a parsed message the SDK would take for a notification.

    None for anything else (a valid request, a real notification, a response, or
    a shape the SDK itself refuses).
    """
    if not isinstance(raw, dict) or "method" not in raw:
        return None
    try:
        types.JSONRPCRequest.model_validate(raw, by_name=False)
    except ValidationError:
        pass
    else:
        return None
    if "id" in raw:
        return _refusal(
            types.INVALID_REQUEST,
            "Invalid Request: a request's id must be an integer or a string",
        )
    method = raw.get("method")
    if isinstance(method, str) and not method.startswith("notifications/"):
        return _refusal(types.INVALID_REQUEST, "Invalid Request: a request needs an id")
    return None


def misread_request(message: Any) -> types.JSONRPCError | None:
    """The Invalid Request answer to a request the stdio reader took for a notification.

    The SDK's reader has already dropped the id (null, a float, an object, a
    boolean, or none at all), so what is left is a notification whose method is
    not one: every MCP notification's method starts with ``notifications/``.
    """
    if not isinstance(message, types.JSONRPCNotification):
        return None
    if message.method.startswith("notifications/"):
        return None
    return _refusal(
        types.INVALID_REQUEST,
        "Invalid Request: a request needs an id that is an integer or a string",
    )


def refusal_json(refusal: types.JSONRPCError) -> dict[str, Any]:
    return refusal.model_dump(mode="json", by_alias=True)


def parse_error(exc: Exception) -> types.JSONRPCError:
    """The Parse error answer to a line that is not JSON, or not a JSON-RPC message."""
    if isinstance(exc, ValidationError) and not any(
        error["type"] == "json_invalid" for error in exc.errors()
    ):
        return _refusal(types.INVALID_REQUEST, "Invalid Request: not a JSON-RPC message")
    return _refusal(types.PARSE_ERROR, "Parse error: not a JSON-RPC message")


@asynccontextmanager
async def answering_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio streams, with every line the SDK could not read answered.

    Between the SDK's reader and the server: an exception the reader sends (a
    line it could not parse) becomes a JSON-RPC error written back.
    """
    async with stdio_server() as (read_stream, write_stream):
        to_server, from_reader = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def relay() -> None:
            async with to_server:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        await write_stream.send(SessionMessage(parse_error(item)))
                    elif (refusal := misread_request(item.message)) is not None:
                        await write_stream.send(SessionMessage(refusal))
                    else:
                        await to_server.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(relay)
            yield from_reader, write_stream
            group.cancel_scope.cancel()


def parsed(body: bytes) -> Any:
    """The body as JSON, or None when it is not (the SDK answers that itself)."""
    try:
        return pydantic_core.from_json(body)
    except ValueError:
        return None
