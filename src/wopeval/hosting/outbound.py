"""The host's one HTTP client for what it calls out to: http tools and http agents (the model
proxy keeps its own connection pools, api/upstream_pools.py)."""

from __future__ import annotations

import httpx

from wopeval.settings import Settings

IDLE_CONNECTION_SECONDS = 4.0
"""How long an idle connection is kept for the next call: under the 5 s after which uvicorn
(most Python servers) and Node close one. At httpx's own 5 s a call could go out on a
connection its server was closing that moment and fail though the server never read it (as
the MCP client's did, tools/mcp.py, and the model proxy's pools', api/upstream_pools.py)."""

OUTBOUND_LIMITS = httpx.Limits(
    max_connections=None,
    max_keepalive_connections=None,
    keepalive_expiry=IDLE_CONNECTION_SECONDS,
)
"""No cap on connections, and each one kept for reuse while idle for less than
`IDLE_CONNECTION_SECONDS`. httpx's defaults, 100 connections of which 20 are kept, close a
connection after each call beyond the 20th at once: 32 agents through the model proxy made
a TCP connection per exchange (bench/model_proxy.py saw ~1,400 sockets in TIME-WAIT), and
100 held http-agent invocations would leave every other outbound call waiting for the
pool. The host's concurrency is bounded by its runs, not here."""


class TransportOnFirstUse(httpx.AsyncBaseTransport):
    """httpx's own transport, made when the first request goes out.

    Making it loads the system's certificate store (~25 ms), which every command's host
    would pay at start although most never call out (issue 28). Environment proxies are
    unaffected: httpx mounts its proxy transports beside this default one.
    """

    def __init__(self) -> None:
        self.made: httpx.AsyncHTTPTransport | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.made is None:
            self.made = httpx.AsyncHTTPTransport(limits=OUTBOUND_LIMITS)
        return await self.made.handle_async_request(request)

    async def aclose(self) -> None:
        if self.made is not None:
            await self.made.aclose()


def outbound_client(settings: Settings) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        timeout=settings.tool_timeout_seconds,
        limits=OUTBOUND_LIMITS,
        transport=TransportOnFirstUse(),
    )
