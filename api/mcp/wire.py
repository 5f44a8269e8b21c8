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

Over HTTP, the headers a client sends about its request (issue 31 §4). The
SDK checks them only for a 2026-07-28 request; for an earlier one it reads
``MCP-Protocol-Version`` to route and ignores ``Mcp-Method`` and ``Mcp-Name``,
and it routes a version it does not know to the 2026 path, whose answer
talks about ``params._meta``. So, before the SDK:

1. ``MCP-Protocol-Version``, when sent, must be a revision the SDK speaks
   (the handshake ones and the 2026 one); otherwise 400 with the
   Unsupported Protocol Version error (-32022) and ``data.supported``, the
   shape the SDK's own client reads to retry at a version both speak.
   Absent, the SDK assumes the spec's default (2025-03-26).
2. ``Mcp-Method`` and ``Mcp-Name`` are optional before 2026 (a 2025 client
   sends neither), but when present they must say what the body says: the
   method, and for a method that names something (``tools/call``,
   ``prompts/get``, ``resources/read``) that name. A proxy or a gateway
   routes by them, so a request whose headers say one thing and whose body
   another is refused with 400 and Header Mismatch (-32020), the code the
   2026 revision gives this fault and the SDK answers for a 2026 request:
   one fault, one code, whichever revision the client speaks. A header sent
   twice is refused the same way (two readers could take different copies).
"""

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pydantic_core
from mcp.server.stdio import stdio_server
from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    NAME_BEARING_METHODS,
    decode_header_value,
    find_duplicated_routing_header,
)
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

# Every revision the SDK serves, oldest first: what an unknown version is told.
SUPPORTED_VERSIONS = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)


def _refusal(code: int, message: str, *, id: Any = None, data: Any = None) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=id, error=types.ErrorData(code=code, message=message, data=data)
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


def unsupported_version(headers: Iterable[tuple[str, str]]) -> types.JSONRPCError | None:
    """The refusal of an ``MCP-Protocol-Version`` header naming a revision not served (rule 1).

    ``headers`` are the raw (name, value) pairs, names in lower case as ASGI
    gives them. None when the header is absent or names a served revision.
    """
    sent = [value for name, value in headers if name == MCP_PROTOCOL_VERSION_HEADER]
    if not sent or (len(sent) == 1 and sent[0] in SUPPORTED_VERSIONS):
        return None
    requested = sent[0] if len(sent) == 1 else ", ".join(sent)
    return _refusal(
        types.UNSUPPORTED_PROTOCOL_VERSION,
        f"Unsupported protocol version: the MCP-Protocol-Version header says {requested!r};"
        f" this server speaks {', '.join(SUPPORTED_VERSIONS)}",
        data={"supported": list(SUPPORTED_VERSIONS), "requested": requested},
    )


def header_mismatch(raw: Any, headers: Iterable[tuple[str, str]]) -> types.JSONRPCError | None:
    """The refusal of ``Mcp-Method`` / ``Mcp-Name`` headers that contradict the body (rule 2).

    ``raw`` is the parsed body; ``headers`` the raw (name, value) pairs, names
    in lower case. None when neither header is sent, or both agree with it.
    """
    pairs = list(headers)
    said = {name: value for name, value in pairs if name in (MCP_METHOD_HEADER, MCP_NAME_HEADER)}
    if not said:
        return None
    request_id = raw.get("id") if isinstance(raw, dict) else None
    if not isinstance(request_id, (int, str)) or isinstance(request_id, bool):
        request_id = None

    def mismatch(message: str) -> types.JSONRPCError:
        return _refusal(types.HEADER_MISMATCH, message, id=request_id)

    duplicated = find_duplicated_routing_header(pairs)
    if duplicated is not None:
        return mismatch(f"the {_title(duplicated)} header is sent more than once")
    if not isinstance(raw, dict):
        return mismatch("routing headers describe one message, and the body is not one")
    method = raw.get("method")
    if MCP_METHOD_HEADER in said and said[MCP_METHOD_HEADER] != method:
        return mismatch(
            f"the Mcp-Method header says {said[MCP_METHOD_HEADER]!r}"
            f" and the body's method is {method!r}"
        )
    if MCP_NAME_HEADER in said:
        key = NAME_BEARING_METHODS.get(method) if isinstance(method, str) else None
        if key is None:
            return mismatch(f"the Mcp-Name header names something; the method {method!r} does not")
        params = raw.get("params")
        named = params.get(key) if isinstance(params, dict) else None
        header = decode_header_value(said[MCP_NAME_HEADER])
        if header is None or header != named:
            shown = header if header is not None else said[MCP_NAME_HEADER]
            return mismatch(f"the Mcp-Name header says {shown!r} and the body's {key} is {named!r}")
    return None


def _title(header: str) -> str:
    """A header's name as the spec spells it, for a message."""
    return {
        MCP_PROTOCOL_VERSION_HEADER: "MCP-Protocol-Version",
        MCP_METHOD_HEADER: "Mcp-Method",
        MCP_NAME_HEADER: "Mcp-Name",
    }.get(header, header)


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
