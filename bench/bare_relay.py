"""The floor under the model proxy's hop: a pass-through relay with no wopeval code.

`model_proxy.py` runs it beside the host and the model server called directly, so what
the host adds to an exchange can be read against what any Python relay on the host's
own stack adds. Two kinds:

- `relay`: the host's stack, bare. uvicorn configured as `wopeval serve` configures it
  (h11, the host's HTTP protocol, and the `auto` event loop, uvloop when installed; the
  access log on, a line per request on stdout, as the host writes it)
  serving a raw ASGI app, no framework: the request's body read, sent to the model
  server with the same method, path and headers through httpcore, and the answer
  relayed, whole (read all, then one body message) or, when it is an event stream,
  chunk by chunk as each arrives. The upstream connections are httpcore's
  `AsyncHTTPConnection`s on httpcore's own network backend (anyio's streams), kept in
  a last-in-first-out list: httpcore's `AsyncConnectionPool` walks and polls every
  connection it holds on each request, which after 32 agents costs more than the
  exchange (the host keeps its connections the same way, api/upstream_pools.py).
  `--http` and `--loop` pick uvicorn's other protocols and loops, when installed.
- `splice`: below any HTTP: each agent's connection piped byte for byte to a
  connection of its own to the model server, on asyncio's transports. What a Python
  process in the path costs at the least: two reads and two writes an exchange (and
  one of each per streamed chunk), no parsing, no log.

No recording, no token, no authentication: the agent sends the model server's own key.
The one piece of wopeval, set up before any exchange, is the host's listening socket
(`hosting/loopback.py`), so that it is the host's and not a copy.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterable, Awaitable, Callable
from typing import Any

import httpcore
import uvicorn

from wopeval.hosting.loopback import HTTP_PROTOCOL, loopback_socket

KEEPALIVE_SECONDS = 4.0
"""How long an idle upstream connection is kept: under the model server's 5 s (uvicorn's),
so the relay never sends on a connection its server is closing."""

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class Relay:
    """The ASGI app: every request forwarded to `upstream`, its answer relayed back."""

    def __init__(self, host: str, port: int) -> None:
        self._origin = httpcore.Origin(b"http", host.encode(), port)
        self._host = f"{host}:{port}".encode()
        self._idle: list[httpcore.AsyncHTTPConnection] = []
        """Idle upstream connections, the most recently used last."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            for connection in self._idle:
                await connection.aclose()
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        target = scope["raw_path"]
        if scope["query_string"]:
            target += b"?" + scope["query_string"]
        headers = [(b"host", self._host)]
        headers += [(name, value) for name, value in scope["headers"] if name != b"host"]
        url = httpcore.URL(scheme=b"http", host=self._origin.host, port=self._origin.port,
                           target=target)  # fmt: skip
        request = httpcore.Request(scope["method"], url, headers=headers, content=body)
        connection, response = await self._exchange(request)
        try:
            await self._relay(response, send)
        finally:
            await response.aclose()
            if connection.is_available():
                self._idle.append(connection)
            else:
                await connection.aclose()

    async def _exchange(
        self, request: httpcore.Request
    ) -> tuple[httpcore.AsyncHTTPConnection, httpcore.Response]:
        """`request` on the last idle connection still open, or a new one; its answer's head."""
        while True:
            connection = self._idle.pop() if self._idle else None
            if connection is None:
                connection = httpcore.AsyncHTTPConnection(
                    self._origin, keepalive_expiry=KEEPALIVE_SECONDS
                )
            elif connection.has_expired():
                await connection.aclose()
                continue
            try:
                return connection, await connection.handle_async_request(request)
            except httpcore.ConnectionNotAvailable:
                await connection.aclose()

    @staticmethod
    async def _relay(response: httpcore.Response, send: Send) -> None:
        """The answer's status and content type, then its body: whole, or an event stream's
        chunks each as it arrives."""
        kept = [(n, v) for n, v in response.headers if n.lower() == b"content-type"]
        streamed = any(v.startswith(b"text/event-stream") for _, v in kept)
        assert isinstance(response.stream, AsyncIterable)  # an async connection's body
        if not streamed:
            body = b"".join([chunk async for chunk in response.stream])
            length = [(b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": response.status,
                        "headers": kept + length})  # fmt: skip
            await send({"type": "http.response.body", "body": body})
            return
        await send({"type": "http.response.start", "status": response.status, "headers": kept})
        async for chunk in response.stream:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


class _Upstream(asyncio.Protocol):
    """The model server's side of a splice: what it sends goes to the agent's side."""

    def __init__(self, agent: asyncio.Transport) -> None:
        self.agent = agent

    def data_received(self, data: bytes) -> None:
        self.agent.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.agent.close()


class _Splice(asyncio.Protocol):
    """An agent's connection, piped to a connection of its own to the model server."""

    def __init__(self, host: str, port: int) -> None:
        self.address = (host, port)
        self.upstream: asyncio.Transport | None = None
        self.waiting: list[bytes] = []
        """What the agent sent before the upstream connection was made."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.agent = transport
        asyncio.get_running_loop().create_task(self._connect())

    async def _connect(self) -> None:
        loop = asyncio.get_running_loop()
        upstream, _ = await loop.create_connection(lambda: _Upstream(self.agent), *self.address)
        self.upstream = upstream
        for data in self.waiting:
            upstream.write(data)
        self.waiting.clear()

    def data_received(self, data: bytes) -> None:
        if self.upstream is None:
            self.waiting.append(data)
        else:
            self.upstream.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.upstream is not None:
            self.upstream.close()


async def splice(port: int, host: str, upstream_port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Splice(host, upstream_port), "127.0.0.1", port)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("port", type=int, help="the loopback port to serve on")
    parser.add_argument("upstream_port", type=int, help="the model server's loopback port")
    parser.add_argument("--kind", choices=("relay", "splice"), default="relay")
    parser.add_argument("--http", default=HTTP_PROTOCOL, help="uvicorn's HTTP protocol (relay)")
    parser.add_argument("--loop", default="auto", help="uvicorn's event loop (relay)")
    options = parser.parse_args()
    if options.kind == "splice":
        asyncio.run(splice(options.port, "127.0.0.1", options.upstream_port))
        return
    app = Relay("127.0.0.1", options.upstream_port)
    config = uvicorn.Config(app, http=options.http, loop=options.loop, log_level="info")
    # The host's own listening socket (made TCP by name, so asyncio sets TCP_NODELAY).
    uvicorn.Server(config).run(sockets=[loopback_socket(options.port)])


if __name__ == "__main__":
    main()
