"""A Streamable HTTP MCP server's idle connection is let go before the server closes it.

uvicorn (most Python MCP servers) and Node close a kept-alive connection after 5 s idle, and
httpx keeps one for 5 s: a call sent at that moment went out on a connection the server was
closing, and the agent's tool call failed as `mcp_connection_lost` though the server never
read it. Here the server is a real uvicorn, on loopback, with its own 5 s; a call after 4 s
idle must arrive on a new connection."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator

import pytest
import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send

from wopeval.tools._mcp_client import McpConnection
from wopeval.tools.mcp import IDLE_CONNECTION_SECONDS, HttpEndpoint, McpServerSpec

SERVER_KEEP_ALIVE_SECONDS = 5.0
"""uvicorn's default, the server's side of the race."""


class ClientPorts:
    """The app, noting the client port (the connection) each HTTP request came on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.ports: list[int] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("client"):
            self.ports.append(scope["client"][1])
        await self.app(scope, receive, send)


@pytest.fixture
def echo_server() -> Iterator[tuple[str, ClientPorts]]:
    server = MCPServer("echo", log_level="WARNING")

    @server.tool()
    def echo(text: str) -> str:
        return text

    app = ClientPorts(server.streamable_http_app(stateless_http=True))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        app, http="h11", timeout_keep_alive=int(SERVER_KEEP_ALIVE_SECONDS), log_level="warning"
    )
    served = uvicorn.Server(config)
    thread = threading.Thread(target=served.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not served.started:
        threading.Event().wait(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", app
    finally:
        served.should_exit = True
        thread.join(10)


async def test_a_call_after_the_idle_keep_goes_out_on_a_new_connection(
    echo_server: tuple[str, ClientPorts],
) -> None:
    url, app = echo_server
    assert IDLE_CONNECTION_SECONDS < SERVER_KEEP_ALIVE_SECONDS
    connection = McpConnection(McpServerSpec("echo", HttpEndpoint(url), 10.0, lambda line: line))
    try:
        await connection.call("echo", {"text": "first"})
        reused_port = app.ports[-1]
        await connection.call("echo", {"text": "at once"})
        assert app.ports[-1] == reused_port, "a connection in use was not kept at all"
        await asyncio.sleep(IDLE_CONNECTION_SECONDS + 0.3)  # still open on the server's side
        answer = await connection.call("echo", {"text": "after the idle keep"})
    finally:
        await connection.close()
    assert not answer.is_error
    assert app.ports[-1] != reused_port, "an idle connection was kept as long as the server's"
