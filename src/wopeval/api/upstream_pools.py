"""The model proxy's connections to its agents' model servers: one pool of kept connections
per upstream origin (scheme, host, port), kept by the host while it runs and closed when it
stops (api/routes/model_proxy.py).

The proxy relays bytes: it sends the agent's body as received and hands back the status
and the body, whole or chunk by chunk. httpx's client around the same pools does work
the relay has no use for (its request and response models, auth and redirect hooks,
content decoding; issue 29, bench/README.md's model_proxy section), so the proxy speaks
to httpcore, httpx's own transport, directly. Each pool holds every exchange at once and
keeps its connections 5 s idle, as the host's outbound client does (hosting/outbound.py),
and goes through the proxy the environment names for its origin as httpx's client did
(`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, less `NO_PROXY`): a host whose egress needs
one still reaches its models. No `Accept-Encoding` is sent, so an answer comes as its
server wrote it and is relayed and recorded without decoding.

The kept connections are held here, not in httpcore's `AsyncConnectionPool`: on each
request and each response's end that pool walks every connection it holds, asks each
idle one whether its socket is readable (a `poll` system call apiece) and counts the
idle ones again for each idle one. After 32 agents' exchanges it held ~40 idle
connections for their 5 s, and every exchange in those seconds paid ~1.5–2 ms of CPU
for the walk (issue 29: the Responses and Messages figures measured after chat's
32-agent phase were twice chat's). Here a request takes the most recently used idle
connection, and only that one is asked whether the server has closed it; connections
idle past their keep-alive are closed oldest first as requests come. httpcore's pool
still makes each connection (`create_connection`: the environment's proxy, TLS), on the
event loop's own transports (api/upstream_streams.py).
"""

from __future__ import annotations

import time
import urllib.request
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass

import anyio
import httpcore
import httpx

from wopeval import __version__
from wopeval.api.upstream_streams import LoopBackend

UPSTREAM_ERRORS = (
    httpcore.TimeoutException,
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.ProxyError,
    httpcore.UnsupportedProtocol,
)
"""What an upstream that did not answer raises (httpcore's errors share no base class)."""
KEEPALIVE_SECONDS = 4.0
"""How long an idle upstream connection is kept: under the 5 s after which uvicorn (and so
vLLM and most Python model servers) and Node close an idle one. At the same 5 s an
exchange could go out on a connection the server was closing that moment and fail as
unreachable (a `502` to the agent; seen in the model-proxy bench's 32-agent phases)."""
_USER_AGENT = f"wopeval/{__version__}".encode()
_LOOP_BACKEND = LoopBackend()
"""The sockets on the event loop's transports, not anyio's streams (api/upstream_streams.py)."""


@dataclass(frozen=True, slots=True)
class _Target:
    url: httpcore.URL
    host: bytes
    """The `Host` header: the URL's host (bracketed when IPv6) and its port unless default."""
    origin: tuple[bytes, bytes, int | None]


class UpstreamPools:
    """The host's connection pools to model upstreams, one per origin."""

    def __init__(self) -> None:
        self._pools: dict[tuple[bytes, bytes, int | None], _OriginPool] = {}
        self._targets: dict[str, _Target] = {}
        """Each upstream URL parsed once (an agent's upstreams are its configuration's)."""
        self._closed = False

    async def post(
        self, url: str, headers: dict[str, str], body: bytes, timeout_seconds: float
    ) -> httpcore.Response:
        """POST `body` to `url`; the answer once its head has arrived (its body unread: the
        caller reads it, whole or as a stream, and closes it). Raises one of
        `UPSTREAM_ERRORS`."""
        target = self._target(url)
        sent = [
            (b"Host", target.host),
            (b"User-Agent", _USER_AGENT),
            (b"Content-Type", b"application/json"),
            (b"Content-Length", str(len(body)).encode()),
            *((name.encode(), value.encode()) for name, value in headers.items()),
        ]
        timeout = dict.fromkeys(("connect", "read", "write", "pool"), timeout_seconds)
        request = httpcore.Request(
            b"POST", target.url, headers=sent, content=body, extensions={"timeout": timeout}
        )
        return await self._pool(target).send(request)

    def _target(self, url: str) -> _Target:
        target = self._targets.get(url)
        if target is None:
            # httpx's parsing, as its client did it: IDNA hosts, percent-encoding, ports.
            parsed = httpx.URL(url)
            if parsed.scheme not in ("http", "https"):
                raise httpcore.UnsupportedProtocol(f"An upstream URL must be http(s): {url!r}.")
            core = httpcore.URL(
                scheme=parsed.raw_scheme,
                host=parsed.raw_host,
                port=parsed.port,
                target=parsed.raw_path,
            )
            origin = (parsed.raw_scheme, parsed.raw_host, parsed.port)
            target = self._targets[url] = _Target(core, parsed.netloc, origin)
        return target

    def _pool(self, target: _Target) -> _OriginPool:
        pool = self._pools.get(target.origin)
        if pool is None:
            if self._closed:
                raise RuntimeError("the host's upstream pools are closed")
            scheme, host = target.origin[0].decode(), target.origin[1].decode()
            maker = httpcore.AsyncConnectionPool(
                ssl_context=httpx.create_ssl_context() if scheme == "https" else None,
                proxy=_environment_proxy(scheme, host),
                keepalive_expiry=KEEPALIVE_SECONDS,
                network_backend=_LOOP_BACKEND,
            )
            pool = self._pools[target.origin] = _OriginPool(maker, target.url.origin)
        return pool

    def pool_count(self) -> int:
        return len(self._pools)

    async def aclose(self) -> None:
        """Close every pool and its connections; no pool is opened after."""
        self._closed = True
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.aclose()


async def whole_body(response: httpcore.Response) -> bytes:
    """The body of an answer `UpstreamPools.post` gave, read to its end; its connection is
    closed when the read failed, else kept until the caller hands it back (`hand_back`): the
    proxy does once the answer's last byte has gone to its agent, as a relay does, not on the
    exchange's way (~5 % of the host's CPU on a whole exchange, issue 29). The connection's
    own stream is read in this coroutine: httpcore's `aread` reads it through two more async
    generators (its own and `_Returning`'s) and checks the stream's type against `typing`'s
    generic aliases on each call, which a whole exchange paid ~10 µs for."""
    return await _returning(response).read()


async def hand_back(response: httpcore.Response) -> None:
    """The connection of an answer whose body `whole_body` read given back to its pool: kept
    for the next exchange (closed if it cannot be). Once only; again, nothing happens."""
    await _returning(response).aclose()


def _returning(response: httpcore.Response) -> _Returning:
    stream = response.stream
    assert isinstance(stream, _Returning)  # an answer of `UpstreamPools.post`
    return stream


_Connection = httpcore.AsyncConnectionInterface


class _OriginPool:
    """One origin's connections: those idle, the most recently used last, and those in use."""

    def __init__(self, maker: httpcore.AsyncConnectionPool, origin: httpcore.Origin) -> None:
        self._maker = maker
        """Makes each connection, as its pool would (the proxy, TLS); holds none itself."""
        self._origin = origin
        self._idle: deque[tuple[float, _Connection]] = deque()
        """Each idle connection with the time it went idle, oldest first."""
        self._busy: set[_Connection] = set()

    async def send(self, request: httpcore.Request) -> httpcore.Response:
        """`request` on a kept connection, or a new one; its response's end gives the
        connection back."""
        await self._close_stale()
        while True:
            connection = await self._take()
            self._busy.add(connection)
            try:
                response = await connection.handle_async_request(request)
            except httpcore.ConnectionNotAvailable:
                await self.give_back(connection)  # closed meanwhile: another one
                continue
            except BaseException:
                await self.give_back(connection)
                raise
            assert isinstance(response.stream, AsyncIterable)  # an async connection's body
            stream = _Returning(response.stream, connection, self)
            return httpcore.Response(
                status=response.status,
                headers=response.headers,
                content=stream,
                extensions=response.extensions,
            )

    async def _take(self) -> _Connection:
        """The most recently used idle connection the server has not closed, or a new one."""
        while self._idle:
            _, connection = self._idle.pop()
            if connection.is_available() and not connection.has_expired():
                return connection
            await connection.aclose()
        return self._maker.create_connection(self._origin)

    async def _close_stale(self) -> None:
        """Close the connections idle past their keep-alive (the oldest are first)."""
        expired_before = time.monotonic() - KEEPALIVE_SECONDS
        while self._idle and self._idle[0][0] < expired_before:
            _, connection = self._idle.popleft()
            await connection.aclose()

    async def give_back(self, connection: _Connection) -> None:
        """A connection whose exchange ended: kept when it is idle, closed otherwise."""
        self._busy.discard(connection)
        if connection.is_idle() and not connection.is_closed():
            self._idle.append((time.monotonic(), connection))
        else:
            await connection.aclose()

    async def aclose(self) -> None:
        connections = [c for _, c in self._idle] + list(self._busy)
        self._idle.clear()
        self._busy.clear()
        for connection in connections:
            await connection.aclose()


class _Returning:
    """A response's body, which gives its connection back to its pool once closed."""

    def __init__(
        self, stream: AsyncIterable[bytes], connection: _Connection, pool: _OriginPool
    ) -> None:
        self._stream = stream
        self._connection = connection
        self._pool = pool
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for part in self._stream:
                yield part
        except BaseException:
            await self.aclose()
            raise

    async def read(self) -> bytes:
        """The whole body (`whole_body`); the connection closed if the read failed."""
        try:
            return b"".join([part async for part in self._stream])
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        # Shielded, as httpcore's pool does: a cancelled relay still hands its connection back.
        with anyio.CancelScope(shield=True):
            closing = getattr(self._stream, "aclose", None)
            if closing is not None:
                await closing()
            await self._pool.give_back(self._connection)


def _environment_proxy(scheme: str, host: str) -> httpcore.Proxy | None:
    """The proxy the environment names for `scheme`, unless `NO_PROXY` exempts `host`."""
    proxies = urllib.request.getproxies()
    url = proxies.get(scheme) or proxies.get("all")
    if not url or urllib.request.proxy_bypass(host):
        return None
    return httpcore.Proxy(url if "://" in url else f"http://{url}")
