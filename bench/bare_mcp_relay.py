"""The floor under the MCP endpoint's hop: a bare MCP relay on the host's stack, no wopeval code
on a call's path.

`mcp_endpoint.py` measures what an invocation's MCP endpoint adds to an agent's tool call.
This is what any Python relay built on the same stack must add, for the same bench to
measure beside it: uvicorn configured as `wopeval serve` configures it (`served_config`: h11,
the auto event loop, its access log on; the serve's backlog) serving a raw ASGI app, and
for each tool server ONE official SDK client session (`mcp.Client`, as the host's
`tools/_mcp_client.py` opens it), held open for the relay's life. No recording, no
token, no middlewares, no FastAPI.

The app takes the agent's Streamable HTTP POSTs statelessly and answers each in JSON
(what the host's endpoint answers): a notification 202; `server/discover` (the
SDK client's first request) and `tools/list` with answers made once at the start;
`tools/call` by calling the tool server through the held session, its result as the
session gave it. What it takes from wopeval is set up before any call, so that it is the
host's and not a copy: its listening socket (`hosting/loopback.py`) and the host's spawn
of a stdio server, which importing `tools/_mcp_client.py` installs in the SDK. POST
`/stdio` is the stdio server's, `/http` the Streamable HTTP server's. A GET of `/ready`
answers 200 once both sessions are open.

    python bench/bare_mcp_relay.py --port 8123 --stdio "python bench/mcp_echo_server.py" \\
        --http http://127.0.0.1:8124/mcp
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
from typing import Any

import mcp_types
import uvicorn
from mcp import Client, MCPError, StdioServerParameters
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.types import Receive, Scope, Send

import wopeval.tools._mcp_client  # noqa: F401  (installs the host's stdio spawn in the SDK)
from wopeval.hosting.loopback import loopback_socket, served_config

BACKLOG = 2048
"""`wopeval serve`'s (cli/serve.py)."""
CALL_TIMEOUT_SECONDS = 60.0
"""The bench project's `timeout_seconds`, which the host passes on each call."""
JSON = [(b"content-type", b"application/json")]


class Relay:
    """One tool server's held session, and the answers that do not change."""

    def __init__(self, client: Client, tools: mcp_types.ListToolsResult) -> None:
        self.client = client
        self.listed = dump(tools)
        discovered = mcp_types.DiscoverResult(
            supported_versions=list(MODERN_PROTOCOL_VERSIONS),
            capabilities=mcp_types.ServerCapabilities(tools=mcp_types.ToolsCapability()),
        )
        self.discovered = dump(discovered)

    async def result(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "tools/call":
            called = await self.client.call_tool(
                params["name"], params.get("arguments"), read_timeout_seconds=CALL_TIMEOUT_SECONDS
            )
            return dump(called)
        if method == "tools/list":
            return self.listed
        if method == "server/discover":
            return self.discovered
        raise MCPError(code=mcp_types.METHOD_NOT_FOUND, message=f"not relayed: {method}")


def dump(result: mcp_types.Result) -> dict[str, Any]:
    """A result as the 2026-07-28 wire has it (`resultType` on every result)."""
    dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    dumped.setdefault("resultType", "complete")
    return dumped


class RelayApp:
    """The raw ASGI app: its lifespan holds the sessions (entered and left in one task,
    as the SDK's cancel scopes need), each POST is one JSON-RPC message."""

    def __init__(self, targets: dict[str, StdioServerParameters | str]) -> None:
        self._targets = targets
        self._relays: dict[str, Relay] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        relay = self._relays.get(scope["path"])
        if scope["method"] == "GET" and scope["path"] == "/ready":
            await answer(send, 200, b"ready")
            return
        if relay is None or scope["method"] != "POST":
            await answer(send, 404, b"")
            return
        message = json.loads(await body_of(receive))
        if "id" not in message:  # a notification: nothing to do on a stateless relay
            await answer(send, 202, b"")
            return
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        try:
            reply["result"] = await relay.result(message["method"], message.get("params") or {})
        except MCPError as error:
            reply["error"] = error.error.model_dump(mode="json", exclude_none=True)
        await answer(send, 200, json.dumps(reply, separators=(",", ":")).encode())

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        await receive()  # lifespan.startup
        async with contextlib.AsyncExitStack() as stack:
            for path, target in self._targets.items():
                client = await stack.enter_async_context(Client(target, cache=None))
                self._relays[path] = Relay(client, await client.list_tools())
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
        await send({"type": "lifespan.shutdown.complete"})


async def body_of(receive: Receive) -> bytes:
    body = bytearray()
    while True:
        message = await receive()
        body.extend(message.get("body", b""))
        if not message.get("more_body"):
            return bytes(body)


async def answer(send: Send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": JSON})
    await send({"type": "http.response.body", "body": body})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--stdio", metavar="COMMAND", help="a stdio MCP server, relayed at /stdio")
    parser.add_argument("--http", metavar="URL", help="a Streamable HTTP MCP server, at /http")
    options = parser.parse_args()
    targets: dict[str, StdioServerParameters | str] = {}
    if options.stdio:
        command, *args = shlex.split(options.stdio)
        targets["/stdio"] = StdioServerParameters(command=command, args=args)
    if options.http:
        targets["/http"] = options.http
    # As `wopeval serve` builds its server: the defaults (access log on), the serve's backlog,
    # the host's own listening socket (made TCP by name, so asyncio sets TCP_NODELAY).
    sock = loopback_socket(options.port)
    sock.listen(BACKLOG)
    config = served_config(RelayApp(targets), log_level="info", backlog=BACKLOG)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
