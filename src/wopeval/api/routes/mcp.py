"""The tool boundary served as MCP: `/host/wopeval/mcp/{token}`, one endpoint per invocation.

An agent outside the host (the command and http lanes, or any agent that
speaks MCP) lists and calls its tools here. `tools/list` is the agent's
allowed tools with their input schemas, each by its provider-safe name
(`orders__refund` for `orders:refund`, engine/recording/tool_names.py), which agents
can hand to any model API unchanged; each `tools/call` names one of them, is
mapped back to the canonical name and handed to the invocation's
`call_tool`, so it is served from fixtures, run live, recorded and fails
closed exactly like a call the agent makes in-process.

The server is the official `mcp` SDK's Streamable-HTTP server, stateless and
answering in JSON: every request names its invocation by the token in its
path, so there is no session to keep. The token is the capability
(engine/recording/grants.py), checked as the model proxy checks it
(api/invocation_token.py): a request that also carries an API key must be of
the token's tenant; every refusal is the same 404, whatever the reason. Which
tools the agent may call is the boundary's to say (`Invocation.call_tool`),
not this endpoint's.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types
from fastapi import APIRouter, Request
from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from pydantic import JsonValue
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from wopeval.agents import ToolCallError
from wopeval.api.deps import InvocationAccessDep
from wopeval.api.invocation_token import invocation_for
from wopeval.engine.recording.grants import MCP_PATH
from wopeval.engine.recording.invocation import Invocation
from wopeval.engine.runlog.steps import RunClosed

router = APIRouter(tags=["host"])

_INVOCATION = "wopeval.invocation"
"""The ASGI scope key under which a resolved request carries its invocation to the handlers."""
REFUSED = "No such MCP endpoint."


@router.api_route(MCP_PATH + "{token}", methods=["GET", "POST", "DELETE"], include_in_schema=False)
async def mcp_endpoint(token: str, request: Request, access: InvocationAccessDep) -> Response:
    """The MCP endpoint of one running invocation, for as long as it runs."""
    invocation = invocation_for(token, request, access, REFUSED)
    sessions: StreamableHTTPSessionManager = request.app.state.mcp_sessions
    return _Exchange(sessions, invocation)


class _Exchange(Response):
    """Hands the request, with its invocation, to the SDK's Streamable-HTTP server."""

    def __init__(self, sessions: StreamableHTTPSessionManager, invocation: Invocation) -> None:
        super().__init__()
        self._sessions = sessions
        self._invocation = invocation

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._sessions.handle_request({**scope, _INVOCATION: self._invocation}, receive, send)


def session_manager() -> StreamableHTTPSessionManager:
    """The app's MCP server; `run()` it for the app's lifetime."""
    server: Server[Any] = Server("wopeval", on_list_tools=_list_tools, on_call_tool=_call_tool)
    return StreamableHTTPSessionManager(server, json_response=True, stateless=True)


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
