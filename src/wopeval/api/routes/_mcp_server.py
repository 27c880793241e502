"""The MCP server behind `/host/wopeval/mcp/{token}` (api/routes/mcp.py): the official `mcp`
SDK's Streamable-HTTP server, stateless and answering in JSON.

Imported when the first MCP request arrives (`McpSessions`), not with the app: the
SDK is about a third of a host's import time, which a host never called over MCP
(every CLI command's embedded host, most of the time) need not pay.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import mcp_types
from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from pydantic import JsonValue
from starlette.types import Receive, Scope, Send

from wopeval.agents import ToolCallError
from wopeval.engine.recording.invocation import Invocation
from wopeval.engine.runlog.steps import RunClosed

Handler = Callable[[Invocation, Scope, Receive, Send], Awaitable[None]]
"""Serves one MCP request of one invocation."""

_INVOCATION = "wopeval.invocation"
"""The ASGI scope key under which a request carries its invocation to the handlers."""


@contextlib.asynccontextmanager
async def serving() -> AsyncIterator[Handler]:
    """The MCP server running, as the function that hands it one request."""
    server: Server[Any] = Server("wopeval", on_list_tools=_list_tools, on_call_tool=_call_tool)
    manager = StreamableHTTPSessionManager(server, json_response=True, stateless=True)

    async def handle(invocation: Invocation, scope: Scope, receive: Receive, send: Send) -> None:
        await manager.handle_request({**scope, _INVOCATION: invocation}, receive, send)

    async with manager.run():
        yield handle


def _invocation(context: ServerRequestContext[Any]) -> Invocation:
    request = context.request
    invocation = getattr(request, "scope", {}).get(_INVOCATION)
    if not isinstance(invocation, Invocation):
        raise RuntimeError("an MCP request reached the server without its invocation")
    return invocation


async def _list_tools(
    context: ServerRequestContext[Any], params: mcp_types.PaginatedRequestParams | None
) -> mcp_types.ListToolsResult:
    invocation = _invocation(context)
    names = invocation.tool_names()
    return mcp_types.ListToolsResult(
        tools=[
            mcp_types.Tool(
                name=names.offered(name),
                description=listing.description or None,
                input_schema=listing.input_schema,
            )
            for name, listing in invocation.offered().tools
        ]
    )


async def _call_tool(
    context: ServerRequestContext[Any], params: mcp_types.CallToolRequestParams
) -> mcp_types.CallToolResult:
    invocation = _invocation(context)
    try:
        # The boundary refuses a tool the agent is not granted (`tool_not_offered`).
        value = await invocation.call_tool(params.name, params.arguments or {}, named_by="offered")
    except ToolCallError as failure:
        return _error(failure.error)
    except RunClosed:
        # The run ended under the call (a cancel): the agent sees a plain tool error.
        return _error({"code": "invocation_ended", "message": "the invocation has ended"})
    if invocation.is_mcp_tool(params.name):
        return _as_recorded(value)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=text)],
        structured_content=value if isinstance(value, dict) else None,
    )


def _as_recorded(value: JsonValue) -> mcp_types.CallToolResult:
    """An MCP tool's result as its server gave it (the boundary records content blocks)."""
    if isinstance(value, dict):
        return mcp_types.CallToolResult.model_validate(value)
    return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=str(value))])


def _error(error: dict[str, Any]) -> mcp_types.CallToolResult:
    """A tool error as an `isError` result: an MCP tool's own content, else the error as JSON."""
    details = error.get("details")
    if error.get("code") == "mcp_tool_error" and isinstance(details, dict):
        result = mcp_types.CallToolResult.model_validate(details)
        return result.model_copy(update={"is_error": True})
    text = json.dumps(error, ensure_ascii=False)
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=text)], is_error=True
    )
