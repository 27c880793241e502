"""The host's outbound HTTP client (http tools, http agents) holds as many connections at
once as the host has calls out, and keeps each for reuse."""

from __future__ import annotations

import asyncio
from pathlib import Path

from wopeval.hosting.host import Host
from wopeval.hosting.outbound import IDLE_CONNECTION_SECONDS, TransportOnFirstUse
from wopeval.settings import Settings

from .._counted_server import CountedConnections

CALLS = 120
"""More than httpx's default cap of 100 connections, and far more than the 20 it keeps."""


class HeldAnswers(CountedConnections):
    """Answers its first `CALLS` requests only once all of them are in (none can arrive
    while another waits for a connection)."""

    def __init__(self) -> None:
        super().__init__()
        self._arrived = 0
        self._everyone = asyncio.Event()

    async def answer(
        self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self._arrived += 1
        if self._arrived == CALLS:
            self._everyone.set()
        await self._everyone.wait()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()


async def test_the_hosts_client_holds_every_call_at_once_and_keeps_each_connection(
    tmp_path: Path,
) -> None:
    answers = HeldAnswers()
    server = await asyncio.start_server(answers.serve, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    host = await Host.start(Settings(data_dir=tmp_path, api_keys={"acme": "k" * 32}))
    try:
        calls = (host.http.get(url) for _ in range(CALLS))
        try:
            done = await asyncio.wait_for(asyncio.gather(*calls), 30)
        except TimeoutError:
            raise AssertionError("the host's client made calls wait for a connection") from None
        assert {answer.status_code for answer in done} == {200}
        await asyncio.sleep(0.5)  # a connection the client closed is seen closed by now
        assert answers.open == CALLS, "the client closed connections it could reuse"
    finally:
        await host.stop()
        server.close()


async def test_the_hosts_client_makes_its_transport_when_its_first_call_goes_out(
    tmp_path: Path,
) -> None:
    # Making it loads the certificate store: a command's host that never calls out skips it.
    answers = CountedConnections()
    server = await asyncio.start_server(answers.serve, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    host = await Host.start(Settings(data_dir=tmp_path, api_keys={"acme": "k" * 32}))
    try:
        transport = host.http._transport  # httpx's default transport: every call's
        assert isinstance(transport, TransportOnFirstUse)
        assert transport.made is None
        assert (await host.http.post(url, content=b"{}")).status_code == 200
        made = transport.made
        assert made is not None
        assert (await host.http.post(url, content=b"{}")).status_code == 200
        assert transport.made is made
    finally:
        await host.stop()
        server.close()


async def test_the_hosts_client_lets_an_idle_connection_go_before_a_server_closes_it(
    tmp_path: Path,
) -> None:
    """uvicorn and Node close a connection idle for 5 s, httpx's own keep: a call sent at that
    moment failed though the server never read it. The host's keeps one 4 s."""
    answers = CountedConnections()  # keeps every connection open: only the client lets go
    server = await asyncio.start_server(answers.serve, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    host = await Host.start(Settings(data_dir=tmp_path, api_keys={"acme": "k" * 32}))
    try:
        assert (await host.http.post(url, content=b"{}")).status_code == 200
        assert (await host.http.post(url, content=b"{}")).status_code == 200
        assert answers.opened == 1, "a connection was not kept at all"
        await asyncio.sleep(IDLE_CONNECTION_SECONDS + 0.3)
        assert (await host.http.post(url, content=b"{}")).status_code == 200
        assert answers.opened == 2, "an idle connection was kept as long as a server's"
    finally:
        await host.stop()
        server.close()
