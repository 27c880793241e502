"""The MCP server behind `/host/wopeval/mcp/{token}` (api/routes/mcp.py): the official `mcp`
SDK's Streamable-HTTP server, stateless and answering in JSON, with the hot requests
answered directly (`DirectServer`).

Imported when the first MCP request arrives (`McpSessions`), not with the app: the
SDK is about a third of a host's import time, which a host never called over MCP
(every CLI command's embedded host, most of the time) need not pay.

**The direct path.** An agent's session is a handful of requests, each a POST of one
JSON-RPC message: `initialize` and its `notifications/initialized` (the handshake era,
2024-11-05 to 2025-11-25), or none of those (2026-07-28, each request carrying its
envelope in `_meta`), then `tools/list`, and `tools/call` after `tools/call`. For those
the SDK's stateless server builds a transport, memory streams, a dispatcher task and a
connection per request (the handshake era), or lists every tool to check the
`Mcp-Param-*` headers of each call (2026-07-28), and runs its middleware chain around
the handler. `DirectServer` answers them itself, with the SDK's own pieces where they
are public (its Accept and header ladders, the per-version surface that validates a
request and shapes a result, the server's initialization options and `serverInfo`
stamp) and the same handlers (`_listing`, `_called`). What it does not recognise as
one of those requests, well formed, it hands to the SDK unchanged, body and all: every
refusal (a malformed body, a batch, a bad header, bad params, an unknown method, a
DELETE) is the SDK's own answer. A GET (the stream a client may open for what the server
sends unasked) is 405 whatever the era: a stateless server never sends anything unasked,
and the SDK's handshake-era transport would hold the stream open, empty. The equivalence
is tested request by request (tests/unit/api/test_mcp_direct.py).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

import mcp_types
import pydantic_core
from mcp.server import Server, ServerRequestContext
from mcp.server.runner import modern_error_data
from mcp.server.streamable_http import check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_PARAM_HEADER_PREFIX,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
    validate_mcp_param_headers,
)
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp_types import methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, JsonValue, ValidationError
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from wopeval.agents import ToolCallError
from wopeval.engine.recording.invocation import Invocation
from wopeval.engine.runlog.steps import RunClosed, StepNotLanded

logger = logging.getLogger(__name__)

_INVOCATION = "wopeval.invocation"
"""The ASGI scope key under which a request carries its invocation to the handlers."""
NOT_RECORDED = (
    "The host could not record this call (its database was out of reach); its run has failed."
)


@contextlib.asynccontextmanager
async def serving() -> AsyncIterator[DirectServer]:
    """The MCP server running, as the `DirectServer` that takes each request."""
    server: Server[Any] = Server("wopeval", on_list_tools=_list_tools, on_call_tool=_call_tool)
    manager = StreamableHTTPSessionManager(server, json_response=True, stateless=True)
    async with manager.run():
        yield DirectServer(server, manager)


# ── the tools, as both paths serve them ─────────────────────────────


def _listing(invocation: Invocation) -> mcp_types.ListToolsResult:
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


async def _called(
    invocation: Invocation, params: mcp_types.CallToolRequestParams
) -> mcp_types.CallToolResult:
    try:
        # The boundary refuses a tool the agent is not granted (`tool_not_offered`).
        value = await invocation.call_tool(params.name, params.arguments or {}, named_by="offered")
    except ToolCallError as failure:
        return _error(failure.error)
    except RunClosed:
        # The run ended under the call (a cancel): the agent sees a plain tool error.
        return _error({"code": "invocation_ended", "message": "the invocation has ended"})
    except StepNotLanded:
        # The call or its result could not be recorded (the database out of reach): the
        # agent gets no result, and a JSON-RPC error, not a tool's, since no tool failed.
        # Its run ends failed whatever the agent does next (runlog.Journal); the store's
        # own message is in the host's log.
        raise MCPError(code=mcp_types.INTERNAL_ERROR, message=NOT_RECORDED) from None
    if invocation.is_mcp_tool(params.name):
        return _as_recorded(value)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=text)],
        structured_content=value if isinstance(value, dict) else None,
    )


def _input_schema(invocation: Invocation, name: str) -> Any:
    """The input schema `tools/list` gives the tool offered as `name`; None when it lists none."""
    canonical = invocation.tool_names().canonical(name)
    listing = None if canonical is None else invocation.offered().by_name.get(canonical)
    return None if listing is None else listing.input_schema


def _invocation(context: ServerRequestContext[Any]) -> Invocation:
    request = context.request
    invocation = getattr(request, "scope", {}).get(_INVOCATION)
    if not isinstance(invocation, Invocation):
        raise RuntimeError("an MCP request reached the server without its invocation")
    return invocation


async def _list_tools(
    context: ServerRequestContext[Any], params: mcp_types.PaginatedRequestParams | None
) -> mcp_types.ListToolsResult:
    return _listing(_invocation(context))


async def _call_tool(
    context: ServerRequestContext[Any], params: mcp_types.CallToolRequestParams
) -> mcp_types.CallToolResult:
    return await _called(_invocation(context), params)


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


# ── the direct path ─────────────────────────────────────────────────

_NOTIFICATIONS = frozenset({"notifications/initialized", "notifications/cancelled"})
_HANDSHAKE_METHODS = frozenset({"initialize", "ping", "tools/list", "tools/call"})
# 2026-07-28 has no handshake: an `initialize` there is the SDK's to refuse.
_MODERN_METHODS = frozenset({"ping", "tools/list", "tools/call"})
_REQUEST_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
_NOTIFICATION_KEYS = frozenset({"jsonrpc", "method", "params"})
_PARAM_HEADER = MCP_PARAM_HEADER_PREFIX.lower()


class _Refer(Exception):
    """The request is not one the direct path answers: the SDK's server takes it."""


class DirectServer:
    """Answers the hot, simple MCP requests itself; hands every other to the SDK's server.

    Calling it serves one request of one invocation; `sdk` serves one through the SDK's
    server alone (the tests compare the two).
    """

    def __init__(self, server: Server[Any], manager: StreamableHTTPSessionManager) -> None:
        # The SDK applies its cache hints to results; this path does not, so it takes a
        # server without any (ours).
        if server.cache_hints:
            raise ValueError("the direct MCP path serves a server without cache hints")
        self._server = server
        self._manager = manager
        self._initialization = server.create_initialization_options()
        # The SDK's property deep-copies its stamp on each access so that a caller may change
        # it; `_shaped` only reads it (into a fresh `_meta`), so one copy serves every result.
        self._server_info_stamp = server.server_info_stamp

    async def sdk(self, invocation: Invocation, scope: Scope, receive: Receive, send: Send) -> None:
        """One request through the SDK's Streamable-HTTP server."""
        await self._manager.handle_request({**scope, _INVOCATION: invocation}, receive, send)

    async def __call__(
        self, invocation: Invocation, scope: Scope, receive: Receive, send: Send
    ) -> None:
        if scope["method"] == "GET":
            # A stateless server has nothing to send on a stream of its own: 405, as the
            # SDK answers a 2026-07-28 GET. (Its handshake-era transport would hold the
            # GET open, empty, for as long as the client stays.)
            await Response(status_code=405, headers={"Allow": "POST"})(scope, _no_body, send)
            return
        received: list[Message] = []
        try:
            body = await _read_body(scope, receive, received)
            await self._answer(invocation, scope, body, send)
        except _Refer:
            await self.sdk(invocation, scope, _replaying(received, receive), send)

    async def _answer(self, invocation: Invocation, scope: Scope, body: bytes, send: Send) -> None:
        headers = Headers(scope=scope)
        content_type = headers.get("content-type", "")
        # Both of the SDK's Content-Type checks pass (one wants the type exactly, one its
        # prefix in any case); its `json_response` mode asks the client to accept JSON.
        plain_json = content_type == "application/json" or content_type.startswith(
            "application/json;"
        )
        if not plain_json or not check_accept_headers(Request(scope))[0]:
            raise _Refer
        # The SDK routes by the first Mcp-Protocol-Version header: none or a handshake-era
        # version is the handshake era's transport, a 2026 version the per-request one.
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
        if version is None or version in HANDSHAKE_PROTOCOL_VERSIONS:
            await self._handshake_era(invocation, version, body, scope, send)
        elif version in MODERN_PROTOCOL_VERSIONS:
            await self._modern(invocation, headers, body, scope, send)
        else:
            raise _Refer

    async def _handshake_era(
        self, invocation: Invocation, version: str | None, body: bytes, scope: Scope, send: Send
    ) -> None:
        try:
            message = pydantic_core.from_json(body)  # the SDK's parser on this path
        except ValueError:
            raise _Refer from None
        if _is_notification(message):
            # Accepted before it is read, as the SDK does; on a stateless server neither
            # changes anything (nothing is in flight to cancel, no session to ready).
            await Response(status_code=202, media_type="application/json")(scope, _no_body, send)
            return
        request_id, method, params = _request(message, _HANDSHAKE_METHODS)
        # A stateless connection takes the header's version, else the spec's default.
        version = version or mcp_types.DEFAULT_NEGOTIATED_VERSION
        self._validate(method, version, params)
        try:
            result = await self._result(invocation, method, version, params)
        except Exception as failure:
            error = handler_exception_to_error_data(failure)
            if error is None:
                # As the SDK's dispatcher answers a handler's crash on this era.
                logger.exception("handler for %r raised", method)
                error = mcp_types.ErrorData(code=0, message=str(failure))
            answer: BaseModel = mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
        else:
            answer = mcp_types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result)
        # This era answers a JSON-RPC error with HTTP 200, as it does a result.
        text = answer.model_dump_json(by_alias=True, exclude_unset=True)
        await Response(text, media_type="application/json")(scope, _no_body, send)

    async def _modern(
        self, invocation: Invocation, headers: Headers, body: bytes, scope: Scope, send: Send
    ) -> None:
        try:
            message = json.loads(body)  # the SDK's parser on this path
        except (ValueError, RecursionError):
            raise _Refer from None
        if _is_notification(message):
            await Response(status_code=202)(scope, _no_body, send)
            return
        request_id, method, params = _request(message, _MODERN_METHODS)
        if find_duplicated_routing_header(headers.items()) is not None:
            raise _Refer
        verdict = classify_inbound_request(message, headers=dict(headers))
        if isinstance(verdict, InboundLadderRejection):
            raise _Refer
        if method == "tools/call" and _mcp_param_rejection(invocation, params, headers):
            raise _Refer
        version = verdict.protocol_version
        self._validate(method, version, params)
        try:
            result = await self._result(invocation, method, version, params)
        except Exception as failure:
            error = modern_error_data(failure)
            refusal = mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
            data = refusal.model_dump(mode="json", by_alias=True, exclude_none=True)
            status = ERROR_CODE_HTTP_STATUS.get(error.code, 200)
        else:
            # What `JSONRPCResponse(...).model_dump(mode="json", by_alias=True,
            # exclude_none=True)` gives, without the model: its fields in this order, the
            # result (already the wire's JSON, `_shaped`) as it is, its nulls kept.
            data = {"jsonrpc": "2.0", "id": request_id, "result": result}
            status = 200
        text = json.dumps(data, separators=(",", ":"))
        await Response(text, status, media_type="application/json")(scope, _no_body, send)

    def _validate(self, method: str, version: str, params: dict[str, Any] | None) -> None:
        """What the SDK checks of a request before its handler runs; a request that fails
        any of it is the SDK's to refuse (before anything ran)."""
        try:
            methods.validate_client_request(method, version, params)
            if method == "initialize":
                mcp_types.InitializeRequestParams.model_validate(params or {}, by_name=False)
                return
            entry = self._server.get_request_handler(method)
            if entry is None:
                raise _Refer
            entry.params_type.model_validate(params or {}, by_name=False)
        except (KeyError, ValueError):  # pydantic's ValidationError is a ValueError
            raise _Refer from None

    async def _result(
        self, invocation: Invocation, method: str, version: str, params: dict[str, Any] | None
    ) -> dict[str, Any]:
        """The request's result, shaped for `version` as the SDK shapes it."""
        result: BaseModel
        if method == "tools/call":
            typed = mcp_types.CallToolRequestParams.model_validate(params or {}, by_name=False)
            result = await _called(invocation, typed)
        elif method == "tools/list":
            result = _listing(invocation)
        elif method == "ping":
            result = mcp_types.EmptyResult()
        else:
            result = self._initialized(params)
        return self._shaped(method, version, result)

    def _initialized(self, params: dict[str, Any] | None) -> mcp_types.InitializeResult:
        """`initialize`'s result: the client's version if this era has it, else its latest."""
        requested = mcp_types.InitializeRequestParams.model_validate(params or {}, by_name=False)
        version = requested.protocol_version
        if version not in HANDSHAKE_PROTOCOL_VERSIONS:
            version = HANDSHAKE_PROTOCOL_VERSIONS[-1]
        options = self._initialization
        return mcp_types.InitializeResult(
            protocol_version=version,
            capabilities=options.capabilities,
            server_info=mcp_types.Implementation(
                name=options.server_name,
                title=options.title,
                description=options.description,
                version=options.server_version,
                website_url=options.website_url,
                icons=options.icons,
            ),
            instructions=options.instructions,
        )

    def _shaped(self, method: str, version: str, result: BaseModel) -> dict[str, Any]:
        """A result as the SDK's runner puts it on the wire: sieved by the version's surface;
        in 2026-07-28, with its `resultType` and the server's `serverInfo` stamp."""
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        try:
            shaped = methods.serialize_server_result(method, version, dumped)
        except ValidationError:
            logger.exception("handler for %r returned an invalid result", method)
            raise MCPError(
                code=mcp_types.INTERNAL_ERROR, message="Handler returned an invalid result"
            ) from None
        if version in MODERN_PROTOCOL_VERSIONS:
            shaped.setdefault("resultType", "complete")
            meta = shaped.get("_meta")
            if meta is None or (isinstance(meta, dict) and meta.get(_SERVER_INFO) is None):
                stamp = {_SERVER_INFO: self._server_info_stamp}
                shaped["_meta"] = {**(meta or {}), **stamp}
        return shaped


_SERVER_INFO = mcp_types.SERVER_INFO_META_KEY


def _is_notification(message: object) -> bool:
    """One of the notifications this path acknowledges, well formed (JSON-RPC 2.0: no `id`)."""
    return (
        isinstance(message, dict)
        and message.keys() <= _NOTIFICATION_KEYS
        and message.get("jsonrpc") == "2.0"
        and message.get("method") in _NOTIFICATIONS
        and isinstance(message.get("params", {}), dict)
    )


def _request(
    message: object, served: frozenset[str]
) -> tuple[int | str, str, dict[str, Any] | None]:
    """A well-formed JSON-RPC request for one of `served`, as id, method and params."""
    if not isinstance(message, dict) or message.keys() - _REQUEST_KEYS:
        raise _Refer
    request_id, method, params = message.get("id"), message.get("method"), message.get("params")
    if message.get("jsonrpc") != "2.0" or method not in served:
        raise _Refer
    if not (params is None or isinstance(params, dict)):
        raise _Refer
    # bool is an int to Python, not to JSON-RPC; an id of any other type the SDK refuses.
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        raise _Refer
    return request_id, method, params


def _mcp_param_rejection(
    invocation: Invocation, params: dict[str, Any] | None, headers: Headers
) -> bool:
    """Whether the SDK would refuse this `tools/call`'s `Mcp-Param-*` headers (2026-07-28):
    the same check, against the schema `tools/list` gives the tool, without listing."""
    params = params or {}
    name, arguments = params.get("name"), params.get("arguments")
    if not isinstance(name, str) or not (arguments is None or isinstance(arguments, Mapping)):
        return False
    if not arguments and not any(key.startswith(_PARAM_HEADER) for key in headers):
        return False
    schema = _input_schema(invocation, name)
    if schema is None:
        return False
    return validate_mcp_param_headers(schema, arguments or {}, headers) is not None


async def _read_body(scope: Scope, receive: Receive, received: list[Message]) -> bytes:
    """The request's body, each message kept in `received`; what the SDK would refuse
    (too large, or cut short) is referred with what was read."""
    if scope["method"] != "POST":
        raise _Refer
    length = Headers(scope=scope).get("content-length")
    if length is None or not length.isdigit() or int(length) > DEFAULT_MAX_REQUEST_BODY_SIZE:
        raise _Refer
    body = bytearray()
    while True:
        message = await receive()
        received.append(message)
        if message["type"] != "http.request":
            raise _Refer
        body.extend(message.get("body", b""))
        if len(body) > DEFAULT_MAX_REQUEST_BODY_SIZE:
            raise _Refer
        if not message.get("more_body", False):
            return bytes(body)


def _replaying(received: list[Message], receive: Receive) -> Receive:
    """`receive` as if nothing had been read from it yet."""
    pending = list(received)

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return replay


async def _no_body() -> Message:
    """A `receive` for a response sent after the body was read (starlette's `Response`
    never calls it)."""
    return {"type": "http.disconnect"}
