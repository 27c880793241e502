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
answering in JSON (`_mcp_server.py`, started by the first MCP request), in front of
which the hot requests (the handshake, `tools/list`, `tools/call`) are answered
directly, the SDK's way (`DirectServer`): every request names its invocation by the
token in its path, so there is no session to keep. The token is the capability
(engine/recording/grants.py), checked as the model proxy checks it
(api/invocation_token.py): a request that also carries an API key must be of
the token's tenant; every refusal is the same 404, whatever the reason. Which
tools the agent may call is the boundary's to say (`Invocation.call_tool`),
not this endpoint's.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from fastapi import APIRouter
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from wopeval.api.deps import InvocationAccess
from wopeval.api.errors import envelope_response
from wopeval.api.invocation_token import invocation_for
from wopeval.engine.recording.grants import MCP_PATH
from wopeval.engine.recording.invocation import Invocation
from wopeval.wire import errors

if TYPE_CHECKING:
    from wopeval.api.routes._mcp_server import DirectServer

router = APIRouter(tags=["host"])

REFUSED = "No such MCP endpoint."


async def mcp_endpoint(request: Request) -> Response:
    """The MCP endpoint of one running invocation, for as long as it runs (a plain Starlette
    route, below FastAPI's parameter and dependency handling, as the model proxy's)."""
    access: InvocationAccess = request.app.state.invocation_access
    token = request.path_params["token"]
    invocation = invocation_for(token, request.headers, access, REFUSED)
    sessions: McpSessions = request.app.state.mcp_sessions
    return _Exchange(sessions, invocation)


router.add_route(
    MCP_PATH + "{token}", mcp_endpoint, methods=["GET", "POST", "DELETE"], include_in_schema=False
)


class McpExchanges:
    """Pure ASGI, among the innermost of the host's layers: a `POST` to an invocation's MCP
    endpoint (every `tools/call`) is answered here, as the route answers it, below FastAPI's
    exception layer and router (the route match, the request wrapper and the exception
    handlers' send wrapper, ~6 % of the host's CPU on a tool call, issue 29). Every layer of
    the host around it (the version header, the request guard with its size limit and strict
    JSON, the crash guard) still wraps it. The token's refusal is the route's one 404
    envelope, as the exception handler renders it; a `GET` or `DELETE`, or a path under a
    `root_path`, goes on to the router, which answers it as before."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = _claimed(scope)
        if token is None:
            await self.app(scope, receive, send)
            return
        state = scope["app"].state
        try:
            invocation = invocation_for(
                token, Headers(scope=scope), state.invocation_access, REFUSED
            )
        except errors.WireError as refusal:
            await envelope_response(refusal)(scope, receive, send)
            return
        await _Exchange(state.mcp_sessions, invocation)(scope, receive, send)


def _claimed(scope: Scope) -> str | None:
    """The token of a request the MCP layer answers: a `POST` to the route's path (one
    segment after the prefix, as the route's `{token}` matches it), not under a `root_path`
    (whose match is the router's)."""
    if scope["type"] != "http" or scope["method"] != "POST" or scope.get("root_path"):
        return None
    path: str = scope["path"]
    if not path.startswith(MCP_PATH):
        return None
    token = path[len(MCP_PATH) :]
    return token if token and "/" not in token else None


def serves(scope: Scope) -> bool:
    """Whether the MCP layer answers the request (the request guard's match of it)."""
    return _claimed(scope) is not None


class _Exchange(Response):
    """Hands the request, with its invocation, to the SDK's Streamable-HTTP server."""

    def __init__(self, sessions: McpSessions, invocation: Invocation) -> None:
        super().__init__()
        self._sessions = sessions
        self._invocation = invocation

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handle = await self._sessions.server()
        await handle(self._invocation, scope, receive, send)


class McpSessions:
    """The app's MCP server: `run()` it for the app's lifetime; it starts, importing the
    `mcp` SDK, when the first MCP request needs it (`_mcp_server.py` says why)."""

    def __init__(self) -> None:
        self._wanted = asyncio.Event()
        self._ready: asyncio.Future[DirectServer] | None = None

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        ready: asyncio.Future[DirectServer] = asyncio.get_running_loop().create_future()
        self._ready = ready
        serving = asyncio.create_task(self._serve(ready), name="mcp-sessions")
        try:
            yield
        finally:
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)

    async def server(self) -> DirectServer:
        """The running server's request handler, started on the first call."""
        if self._ready is None:
            raise RuntimeError("the MCP sessions are not running")
        self._wanted.set()
        # Shielded: a request that gives up waiting must not cancel the start for the others.
        return await asyncio.shield(self._ready)

    async def _serve(self, ready: asyncio.Future[DirectServer]) -> None:
        await self._wanted.wait()
        try:
            from wopeval.api.routes._mcp_server import serving

            async with serving() as handle:
                ready.set_result(handle)
                await asyncio.Event().wait()  # until `run()` ends and cancels this
        except Exception as failure:  # the requests waiting get it
            if not ready.done():
                ready.set_exception(failure)
            raise
