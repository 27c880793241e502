"""The model proxy's connections to its agents' model servers: one httpcore connection pool
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
"""

from __future__ import annotations

import urllib.request
from dataclasses import dataclass

import httpcore
import httpx

from wopeval import __version__

UPSTREAM_ERRORS = (
    httpcore.TimeoutException,
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.ProxyError,
    httpcore.UnsupportedProtocol,
)
"""What an upstream that did not answer raises (httpcore's errors share no base class)."""
KEEPALIVE_SECONDS = 5.0
_USER_AGENT = f"wopeval/{__version__}".encode()


@dataclass(frozen=True, slots=True)
class _Target:
    url: httpcore.URL
    host: bytes
    """The `Host` header: the URL's host (bracketed when IPv6) and its port unless default."""
    origin: tuple[bytes, bytes, int | None]


class UpstreamPools:
    """The host's connection pools to model upstreams, one per origin."""

    def __init__(self) -> None:
        self._pools: dict[tuple[bytes, bytes, int | None], httpcore.AsyncConnectionPool] = {}
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
        return await self._pool(target.origin).handle_async_request(request)

    def _target(self, url: str) -> _Target:
        target = self._targets.get(url)
        if target is None:
            # httpx's parsing, as its client did it: IDNA hosts, percent-encoding, ports.
            parsed = httpx.URL(url)
            core = httpcore.URL(
                scheme=parsed.raw_scheme,
                host=parsed.raw_host,
                port=parsed.port,
                target=parsed.raw_path,
            )
            origin = (parsed.raw_scheme, parsed.raw_host, parsed.port)
            target = self._targets[url] = _Target(core, parsed.netloc, origin)
        return target

    def _pool(self, origin: tuple[bytes, bytes, int | None]) -> httpcore.AsyncConnectionPool:
        pool = self._pools.get(origin)
        if pool is None:
            if self._closed:
                raise RuntimeError("the host's upstream pools are closed")
            scheme, host = origin[0].decode(), origin[1].decode()
            pool = self._pools[origin] = httpcore.AsyncConnectionPool(
                ssl_context=httpx.create_ssl_context() if scheme == "https" else None,
                proxy=_environment_proxy(scheme, host),
                max_connections=None,
                max_keepalive_connections=None,
                keepalive_expiry=KEEPALIVE_SECONDS,
            )
        return pool

    def pool_count(self) -> int:
        return len(self._pools)

    async def aclose(self) -> None:
        """Close every pool and its connections; no pool is opened after."""
        self._closed = True
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.aclose()


def _environment_proxy(scheme: str, host: str) -> httpcore.Proxy | None:
    """The proxy the environment names for `scheme`, unless `NO_PROXY` exempts `host`."""
    proxies = urllib.request.getproxies()
    url = proxies.get(scheme) or proxies.get("all")
    if not url or urllib.request.proxy_bypass(host):
        return None
    return httpcore.Proxy(url if "://" in url else f"http://{url}")
