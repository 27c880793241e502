"""The model proxy's connection pools (api/upstream_pools.py): one per upstream origin, each
connection kept for the next exchange, every one closed when the host stops; through the
proxy the environment names."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpcore
import pytest
import uvicorn

from wopeval.api import upstream_pools
from wopeval.api.upstream_pools import UPSTREAM_ERRORS, UpstreamPools, hand_back, whole_body
from wopeval.hosting.host import Host
from wopeval.settings import Settings

from ..._counted_server import CountedConnections, exchange, pooled


async def test_one_pool_per_upstream_each_connection_kept_all_closed_when_the_host_stops(
    tmp_path: Path,
) -> None:
    servers = [CountedConnections(), CountedConnections()]
    started = [await asyncio.start_server(server.serve, "127.0.0.1", 0) for server in servers]
    urls = [f"http://127.0.0.1:{s.sockets[0].getsockname()[1]}/v1/x" for s in started]
    host = await Host.start(Settings(data_dir=tmp_path, api_keys={"acme": "k" * 32}))
    try:
        pools = host.upstreams
        for url in (*urls, urls[0]):
            answer = await pools.post(url, {}, b"{}", 5.0)
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
            await pools.post(urls[0], {}, b"{}", 5.0)
    finally:
        for listening in started:
            listening.close()


async def test_an_upstream_is_reached_through_the_proxy_the_environment_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proxy = CountedConnections()
    listening = await asyncio.start_server(proxy.serve, "127.0.0.1", 0)
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{listening.sockets[0].getsockname()[1]}")
    pools = UpstreamPools()
    try:
        answer = await pools.post("http://models.invalid/v1/x", {}, b"{}", 5.0)
        assert (answer.status, await answer.aread()) == (200, b"{}")
        await answer.aclose()
        assert proxy.opened == 1
    finally:
        await pools.aclose()
        listening.close()


async def test_the_last_used_connection_is_reused_and_those_idle_past_the_keep_alive_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(upstream_pools, "KEEPALIVE_SECONDS", 0.3)
    server = CountedConnections()
    async with pooled(server) as (pools, url):
        await asyncio.gather(*(exchange(pools, url) for _ in range(3)))
        await exchange(pools, url)
        assert (server.opened, server.open) == (3, 3), "an idle connection was not reused"
        await asyncio.sleep(0.4)  # all three idle past their keep-alive
        await exchange(pools, url)
        await asyncio.sleep(0.1)
        assert (server.opened, server.open) == (4, 1), "an expired connection was kept"


def test_an_idle_connection_is_let_go_before_a_uvicorn_served_model_server_closes_it() -> None:
    """A server that closes idle connections at its keep-alive (uvicorn's 5 s: vLLM and most
    Python model servers) and a pool that keeps them as long race: a request sent as the
    server closes fails unanswered."""
    served = uvicorn.Config(app="model_server:app")  # uvicorn's defaults; nothing loaded
    margin = served.timeout_keep_alive - upstream_pools.KEEPALIVE_SECONDS
    assert margin >= 1, "the pool keeps an idle connection as long as the server does"


async def test_a_connection_the_upstream_closed_while_idle_is_not_sent_on() -> None:
    class ClosesAfterEachAnswer(CountedConnections):
        async def answer(
            self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
        ) -> None:
            await super().answer(head, reader, writer)
            writer.close()  # no `Connection: close`: the client learns it from the socket

    server = ClosesAfterEachAnswer()
    async with pooled(server) as (pools, url):
        for _ in range(3):
            await exchange(pools, url)
            await asyncio.sleep(0.05)  # the close reaches the host's socket
        assert server.opened == 3


async def test_an_exchange_asks_only_the_connection_it_takes_whether_the_upstream_closed_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Asking costs a system call per connection: with every idle one asked on each request
    and each response's end, an exchange after 32 agents' cost ~2 ms of CPU (issue 29)."""
    server = CountedConnections()
    asked = 0
    has_expired = httpcore.AsyncHTTPConnection.has_expired

    def counted(connection: httpcore.AsyncHTTPConnection) -> bool:
        nonlocal asked
        asked += 1
        return has_expired(connection)

    async with pooled(server) as (pools, url):
        await asyncio.gather(*(exchange(pools, url) for _ in range(8)))
        monkeypatch.setattr(httpcore.AsyncHTTPConnection, "has_expired", counted)
        await exchange(pools, url)
        assert asked == 1


async def test_a_whole_body_is_read_its_connection_kept_once_handed_back_not_before() -> None:
    """The proxy hands a whole answer's connection back once the answer has gone to its agent
    (api/routes/model_proxy.py): until then no other exchange is sent on it."""
    server = CountedConnections()
    async with pooled(server) as (pools, url):
        first = await pools.post(url, {}, b"{}", 5.0)
        assert (first.status, await whole_body(first)) == (200, b"{}")
        second = await pools.post(url, {}, b"{}", 5.0)
        assert server.opened == 2, "a connection was taken before it was handed back"
        assert await whole_body(second) == b"{}"
        for answer in (first, second, first):  # a second hand-back changes nothing
            await hand_back(answer)
        for _ in range(3):
            answer = await pools.post(url, {}, b"{}", 5.0)
            assert (answer.status, await whole_body(answer)) == (200, b"{}")
            await hand_back(answer)
        assert (server.opened, server.open) == (2, 2)


async def test_a_body_cut_short_is_an_upstream_error_and_its_connection_closed() -> None:
    class CutsTheBody(CountedConnections):
        async def answer(
            self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
        ) -> None:
            await reader.readexactly(2)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}")
            await writer.drain()
            writer.close()

    server = CutsTheBody()
    async with pooled(server) as (pools, url):
        for _ in range(2):
            answer = await pools.post(url, {}, b"{}", 5.0)
            with pytest.raises(UPSTREAM_ERRORS):
                await whole_body(answer)
        await asyncio.sleep(0.05)
        assert (server.opened, server.open) == (2, 0), "a broken connection was kept"
