"""The model proxy's connection pools (api/upstream_pools.py): one per upstream origin, each
connection kept for the next exchange, every one closed when the host stops."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from wopeval.hosting.host import Host
from wopeval.settings import Settings


class Counted:
    """An HTTP/1.1 server on loopback that answers every request `{}` and counts the
    connections its clients opened and still hold."""

    def __init__(self) -> None:
        self.opened = 0
        self.open = 0
        self.url = ""

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.opened += 1
        self.open += 1
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                length = next(
                    int(line.split(b":")[1]) for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )  # fmt: skip
                await reader.readexactly(length)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client closed the connection
        finally:
            self.open -= 1
            writer.close()


async def test_one_pool_per_upstream_each_connection_kept_all_closed_when_the_host_stops(
    tmp_path: Path,
) -> None:
    servers = [Counted(), Counted()]
    started = [await asyncio.start_server(server.serve, "127.0.0.1", 0) for server in servers]
    for server, listening in zip(servers, started, strict=True):
        server.url = f"http://127.0.0.1:{listening.sockets[0].getsockname()[1]}/v1/x"
    host = await Host.start(Settings(data_dir=tmp_path, api_keys={"acme": "k" * 32}))
    try:
        pools = host.upstreams
        for server in (*servers, servers[0]):
            answer = await pools.post(server.url, {}, b"{}", 5.0)
            assert (answer.status, await answer.aread()) == (200, b"{}")
            await answer.aclose()
        assert pools.pool_count() == 2
        assert [server.opened for server in servers] == [1, 1], "a connection was not kept"
    finally:
        await host.stop()
    await asyncio.sleep(0.2)  # a connection the host closed is seen closed by now
    try:
        assert [server.open for server in servers] == [0, 0], "the host left connections open"
        with pytest.raises(RuntimeError):
            await pools.post(servers[0].url, {}, b"{}", 5.0)
    finally:
        for listening in started:
            listening.close()
