"""The model proxy's upstream sockets on the event loop's transports (api/upstream_streams.py):
no anyio cancel scope per read or write, TLS verified as httpcore's default backend does,
time limits, a large answer read whole, and a server's close or unasked-for answer seen on
an idle connection."""

from __future__ import annotations

import asyncio
import socket
from contextlib import AbstractContextManager
from pathlib import Path

import anyio
import httpcore
import httpx
import pytest

from wopeval.api.upstream_pools import UpstreamPools
from wopeval.api.upstream_streams import LoopBackend, LoopStream, _Received

from ..._certificates import CertificateAuthority
from ..._counted_server import CountedConnections, exchange, pooled, serving


async def test_an_exchange_enters_no_anyio_cancel_scope_per_read_or_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """anyio's streams entered a cancel scope for each read's and write's time limit: ~10 %
    of the host's CPU on a whole exchange (issue 29)."""
    scopes = 0
    fail_after = anyio.fail_after

    def counted(
        delay: float | None, shield: bool = False
    ) -> AbstractContextManager[anyio.CancelScope]:
        nonlocal scopes
        scopes += 1
        return fail_after(delay, shield)

    monkeypatch.setattr(anyio, "fail_after", counted)
    server = CountedConnections()
    async with pooled(server) as (pools, url):
        for _ in range(2):
            await exchange(pools, url)
    assert server.opened == 1
    assert scopes == 0


async def test_an_https_upstream_is_verified_and_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    authority = CertificateAuthority(tmp_path)
    server_tls, client_tls = authority.server_tls("127.0.0.1"), authority.client_tls()
    server = CountedConnections()
    async with serving(server, server_tls) as port:
        url = f"https://127.0.0.1:{port}/v1/x"
        pools = UpstreamPools()
        try:
            with pytest.raises(httpcore.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await pools.post(url, {}, b"{}", 5.0)  # the system's CAs do not know it
        finally:
            await pools.aclose()
        monkeypatch.setattr(httpx, "create_ssl_context", lambda: client_tls)
        pools = UpstreamPools()
        try:
            for _ in range(2):
                answer = await pools.post(url, {}, b"{}", 5.0)
                assert (answer.status, await answer.aread()) == (200, b"{}")
                assert answer.extensions["network_stream"].get_extra_info("ssl_object")
                await answer.aclose()
        finally:
            await pools.aclose()
    assert server.opened == 1  # kept for both exchanges (the refused one never served)


async def test_a_large_answer_is_read_whole_and_a_silent_upstream_times_out() -> None:
    class Large(CountedConnections):
        async def answer(
            self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
        ) -> None:
            if b"/slow" in head:
                await asyncio.sleep(5)
            body = b"x" * 3_000_000  # past what a connection holds before it pauses reading
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            await writer.drain()

    pool = httpcore.AsyncConnectionPool(network_backend=LoopBackend())
    async with serving(Large()) as port, pool:
        answer = await pool.request("GET", f"http://127.0.0.1:{port}/big")
        assert answer.content == b"x" * 3_000_000
        with pytest.raises(httpcore.ReadTimeout):
            await pool.request(
                "GET", f"http://127.0.0.1:{port}/slow", extensions={"timeout": {"read": 0.1}}
            )


async def test_an_idle_connection_with_an_unasked_for_answer_is_not_sent_on() -> None:
    """A server may answer an idle connection (a `408`) before it closes it: that answer is
    never taken for the next request's."""

    class TimesOutIdle(CountedConnections):
        async def answer(
            self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
        ) -> None:
            await super().answer(head, reader, writer)
            await asyncio.sleep(0.01)  # after the answer, not read with it
            writer.write(b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()

    server = TimesOutIdle()
    async with pooled(server) as (pools, url):
        for _ in range(2):
            await exchange(pools, url)
            await asyncio.sleep(0.1)  # the 408 reaches the host
    assert server.opened == 2


async def test_an_idle_connection_s_socket_is_asked_before_the_loop_has_read_it() -> None:
    """On a busy loop what the server sent (its close) may not be read yet when a request
    takes the connection: the socket itself is asked, as httpcore's own backends ask it."""
    ours, theirs = socket.socketpair()
    transport, received = await asyncio.get_running_loop().create_connection(_Received, sock=ours)
    try:
        stream = LoopStream(transport, received)
        assert not stream.get_extra_info("is_readable")
        theirs.close()  # no turn of the loop between this and the question
        assert not received.ended
        assert stream.get_extra_info("is_readable")
    finally:
        transport.close()
