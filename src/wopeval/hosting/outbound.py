"""The host's one HTTP client for what it calls out to: http tools and http agents (the model
proxy keeps its own connection pools, api/upstream_pools.py)."""

from __future__ import annotations

import httpx

from wopeval.settings import Settings

OUTBOUND_LIMITS = httpx.Limits(max_connections=None, max_keepalive_connections=None)
"""No cap on connections, and each one kept for reuse until httpx's keep-alive expiry
(5 s idle). httpx's defaults, 100 connections of which 20 are kept, close a connection
after each call beyond the 20th at once: 32 agents through the model proxy made a TCP
connection per exchange (bench/model_proxy.py saw ~1,400 sockets in TIME-WAIT), and
100 held http-agent invocations would leave every other outbound call waiting for the
pool. The host's concurrency is bounded by its runs, not here."""


def outbound_client(settings: Settings) -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=settings.tool_timeout_seconds, limits=OUTBOUND_LIMITS)
