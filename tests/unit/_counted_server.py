"""An HTTP/1.1 server on loopback that counts its clients' connections, for the tests of the
host's outbound client and of the model proxy's upstream pools."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Protocol

from wopeval.api.upstream_pools import UpstreamPools


class CountedConnections:
    """Counts the connections its clients opened and those they still hold; `answer` answers
    each request (by default `{}`, once its body is read)."""

    def __init__(self) -> None:
        self.opened = 0
        self.open = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.opened += 1
        self.open += 1
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                await self.answer(head, reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client closed the connection
        finally:
            self.open -= 1
            writer.close()

    async def answer(
        self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await read_body(head, reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
        await writer.drain()


async def read_body(head: bytes, reader: asyncio.StreamReader) -> bytes:
    """The body of the request whose head is `head` (its `Content-Length`'s bytes)."""
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )  # fmt: skip
    return await reader.readexactly(length)


class Serves(Protocol):
    """A loopback server's connection handler (`CountedConnections`, a test's proxy)."""

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None: ...


async def exchange(pools: UpstreamPools, url: str) -> None:
    """One request through `pools` to a `CountedConnections` server, answered `{}`."""
    answer = await pools.post(url, {}, b"{}", 5.0)
    assert (answer.status, await answer.aread()) == (200, b"{}")
    await answer.aclose()


@asynccontextmanager
async def serving(server: Serves, tls: ssl.SSLContext | None = None) -> AsyncIterator[int]:
    """`server` listening on a loopback port (yielded) until the block ends."""
    listening = await asyncio.start_server(server.serve, "127.0.0.1", 0, ssl=tls)
    try:
        yield listening.sockets[0].getsockname()[1]
    finally:
        listening.close()


@asynccontextmanager
async def pooled(server: CountedConnections) -> AsyncIterator[tuple[UpstreamPools, str]]:
    """`server` serving, and upstream pools (closed before it) with a URL of it to post to."""
    async with serving(server) as port:
        pools = UpstreamPools()
        try:
            yield pools, f"http://127.0.0.1:{port}/v1/x"
        finally:
            await pools.aclose()
