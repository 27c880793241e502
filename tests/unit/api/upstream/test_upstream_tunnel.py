"""The model proxy's `https://` upstreams through the HTTPS proxy the environment names
(api/upstream_pools.py, `_environment_proxy`): a `CONNECT` tunnel through the proxy, TLS
started on the tunnel's stream (api/upstream_streams.py, `LoopStream.start_tls`), the
server's certificate verified for the upstream's name, the tunnel kept for the next
exchange, `NO_PROXY` honoured. Production egress through a corporate proxy to a model
provider is this path."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpcore
import httpx
import pytest

from wopeval.api.upstream_pools import UPSTREAM_ERRORS, UpstreamPools, hand_back, whole_body

from ..._certificates import CertificateAuthority
from ..._counted_server import CountedConnections, read_body, serving

_MODELS = "models.test"
"""The upstream's name: only the proxy resolves it (to the loopback model server)."""
_URL = f"https://{_MODELS}/v1/chat/completions"
_CONNECT = b"CONNECT models.test:443 HTTP/1.1"
"""The tunnel's request line: the upstream's host and (https's default) port."""
_BODY = b'{"model": "m", "messages": [{"role": "user", "content": "plaintext-marker-7f3a"}]}'
_ANSWER = b'{"choices": [{"message": {"content": "answer-marker-91c2"}}]}'
_LARGE = b"x" * 3_000_000


class ConnectProxy:
    """An HTTPS proxy on loopback: answers `CONNECT host:port` with `200` and pipes bytes
    both ways between its client and the model server at `upstream_port`, whatever host was
    asked for; keeps each request line it read and every byte it piped."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.requests: list[bytes] = []
        """Each request line the proxy read, in order: a `CONNECT`'s opens a tunnel."""
        self.to_upstream = bytearray()
        self.to_client = bytearray()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            return
        line = head.split(b"\r\n", 1)[0]
        self.requests.append(line)
        if not line.startswith(b"CONNECT "):
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            writer.close()
            return
        upstream_reader, upstream_writer = await asyncio.open_connection(
            "127.0.0.1", self.upstream_port
        )
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await asyncio.gather(
            _pipe(reader, upstream_writer, self.to_upstream),
            _pipe(upstream_reader, writer, self.to_client),
        )


async def _pipe(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, piped: bytearray
) -> None:
    try:
        while data := await reader.read(65536):
            piped += data
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass  # either side gone: the tunnel ends
    finally:
        writer.close()


class ModelServer(CountedConnections):
    """Keeps each request body it read. Answers `_ANSWER` whole, a `/large` request
    `_LARGE` whole, and a `/stream` request `streamed` as chunks, each written once the
    client has taken the one before (told through `taken`): the answer is relayed as it is
    written, not once it has ended."""

    def __init__(self, streamed: tuple[bytes, ...] = ()) -> None:
        super().__init__()
        self.bodies: list[bytes] = []
        self._streamed = streamed
        self.taken: asyncio.Queue[None] = asyncio.Queue()

    async def answer(
        self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.bodies.append(await read_body(head, reader))
        path = head.split(b" ", 2)[1]
        if path.endswith(b"/stream"):
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            for index, chunk in enumerate(self._streamed):
                if index:
                    await self.taken.get()
                writer.write(b"%x\r\n%b\r\n" % (len(chunk), chunk))
                await writer.drain()
            writer.write(b"0\r\n\r\n")
        else:
            body = _LARGE if path.endswith(b"/large") else _ANSWER
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%b" % (len(body), body))
        await writer.drain()


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No proxy but those a test names, whatever the machine's environment names."""
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


@asynccontextmanager
async def through_proxy(
    server: ModelServer, server_tls: ssl.SSLContext, environment: pytest.MonkeyPatch
) -> AsyncIterator[tuple[UpstreamPools, ConnectProxy]]:
    """`server` serving TLS on loopback, a `ConnectProxy` to it named by `HTTPS_PROXY`, and
    upstream pools (closed first); yields the pools and the proxy."""
    async with serving(server, server_tls) as port:
        proxy = ConnectProxy(port)
        async with serving(proxy) as proxy_port:
            environment.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy_port}")
            pools = UpstreamPools()
            try:
                yield pools, proxy
            finally:
                await pools.aclose()


async def _read(answer: httpcore.Response) -> bytes:
    """A whole answer's body, its connection then handed back, as the proxy does once the
    answer is written."""
    body = await whole_body(answer)
    await hand_back(answer)
    return body


@asynccontextmanager
async def through_trusted_proxy(
    server: ModelServer, directory: Path, environment: pytest.MonkeyPatch
) -> AsyncIterator[tuple[UpstreamPools, ConnectProxy]]:
    """`through_proxy` with `server` holding a certificate for `_MODELS` from a test CA
    the host's upstream TLS trusts."""
    authority = CertificateAuthority(directory)
    _trusting(authority, environment)
    async with through_proxy(server, authority.server_tls(_MODELS), environment) as opened:
        yield opened


def _trusting(authority: CertificateAuthority, environment: pytest.MonkeyPatch) -> None:
    """The host's upstream TLS trusts `authority` only (as test_upstream_streams.py's direct
    TLS does): the context it verifies with, not the verification, is the test's."""
    environment.setattr(httpx, "create_ssl_context", authority.client_tls)


async def test_an_https_upstream_is_reached_through_one_connect_tunnel_carrying_only_tls(
    tmp_path: Path, environment: pytest.MonkeyPatch
) -> None:
    server = ModelServer()
    async with through_trusted_proxy(server, tmp_path, environment) as (pools, proxy):
        for _ in range(2):
            answer = await pools.post(_URL, {}, _BODY, 5.0)
            assert answer.extensions["network_stream"].get_extra_info("ssl_object")
            assert (answer.status, await _read(answer)) == (200, _ANSWER)
    assert server.bodies == [_BODY, _BODY]
    assert proxy.requests == [_CONNECT], "not one tunnel"
    assert server.opened == 1
    # What the proxy piped is TLS from its first byte (a handshake record), none of it the
    # request's or the answer's plaintext.
    assert proxy.to_upstream[:1] == b"\x16"
    assert proxy.to_client[:1] == b"\x16"
    assert b"plaintext-marker" not in proxy.to_upstream
    assert b"answer-marker" not in proxy.to_client


@pytest.mark.parametrize("refused", ["untrusted", "another name"])
async def test_a_server_s_certificate_is_verified_on_the_tunnel(
    refused: str, tmp_path: Path, environment: pytest.MonkeyPatch
) -> None:
    """A proxy that (or a network behind it that) answers for the model server with a
    certificate the host does not trust, or one for another name, is refused unanswered."""
    authority = CertificateAuthority(tmp_path)
    _trusting(authority, environment)
    if refused == "untrusted":
        server_tls = CertificateAuthority(tmp_path, "not trusted").server_tls(_MODELS)
    else:
        server_tls = authority.server_tls("other.test")
    server = ModelServer()
    async with through_proxy(server, server_tls, environment) as (pools, proxy):
        with pytest.raises(UPSTREAM_ERRORS, match="CERTIFICATE_VERIFY_FAILED"):
            await pools.post(_URL, {}, _BODY, 5.0)
    assert proxy.requests == [_CONNECT]  # refused on the tunnel, not before it
    assert server.bodies == []
    assert b"plaintext-marker" not in proxy.to_upstream


async def test_no_proxy_exempts_an_upstream_s_host_from_the_proxy(
    tmp_path: Path, environment: pytest.MonkeyPatch
) -> None:
    authority = CertificateAuthority(tmp_path)
    _trusting(authority, environment)
    environment.setenv("NO_PROXY", "127.0.0.1")
    server = ModelServer()
    server_tls = authority.server_tls(_MODELS, "127.0.0.1")
    async with through_proxy(server, server_tls, environment) as (pools, proxy):
        direct = f"https://127.0.0.1:{proxy.upstream_port}/v1/x"
        answer = await pools.post(direct, {}, _BODY, 5.0)
        assert (answer.status, await _read(answer)) == (200, _ANSWER)
        assert proxy.requests == [], "an exempted host went through the proxy"
        # The same environment's proxy still carries a host it does not exempt.
        answer = await pools.post(_URL, {}, _BODY, 5.0)
        assert (answer.status, await _read(answer)) == (200, _ANSWER)
    assert proxy.requests == [_CONNECT]
    assert server.opened == 2


async def test_a_streamed_answer_arrives_through_the_tunnel_chunk_by_chunk_and_whole(
    tmp_path: Path, environment: pytest.MonkeyPatch
) -> None:
    events = tuple(b'data: {"n": %d, "content": "answer-marker"}\n\n' % n for n in range(5))
    server = ModelServer(streamed=events)
    async with through_trusted_proxy(server, tmp_path, environment) as (pools, proxy):
        answer = await pools.post(f"https://{_MODELS}/v1/stream", {}, _BODY, 5.0)
        received = b""
        async for part in answer.aiter_stream():
            received += part
            if received.endswith(b"\n\n"):
                server.taken.put_nowait(None)  # the server writes the next one only now
        assert (answer.status, received) == (200, b"".join(events))
        await answer.aclose()
        answer = await pools.post(_URL, {}, _BODY, 5.0)  # on the same tunnel
        assert await _read(answer) == _ANSWER
    assert proxy.requests == [_CONNECT]
    assert server.opened == 1
    assert b"answer-marker" not in proxy.to_client


async def test_a_large_answer_through_the_tunnel_is_read_whole(
    tmp_path: Path, environment: pytest.MonkeyPatch
) -> None:
    """Past what a connection holds unread before its reading pauses (upstream_streams.py,
    `_HELD_BYTES`): under TLS the reading paused and resumed is the TLS transport's."""
    server = ModelServer()
    async with through_trusted_proxy(server, tmp_path, environment) as (pools, proxy):
        for _ in range(2):
            answer = await pools.post(f"https://{_MODELS}/v1/large", {}, _BODY, 5.0)
            await asyncio.sleep(0.2)  # left unread: what arrives meanwhile pauses the reading
            assert await _read(answer) == _LARGE
    assert proxy.requests == [_CONNECT]
    assert server.opened == 1
