"""What a queue worker's process runs on: its lease, store, catalog, engine and HTTP server.

The worker takes the database's lease shared (as queue mode's API processes
do) and exits when an in-process host takes it over (`ownership.watch_lease`).
Its catalog is a host's (`hosting/catalog.py`); its engine announces every
commit by NOTIFY, for the API processes' readers. Its HTTP server answers
`/host/wopeval/health` and the MCP endpoint and model proxy of each invocation
it runs, at the address its agents are given. What runs the queue
(Procrastinate's worker, the jobs, the run watch) is `wopeval.worker`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import httpx
import uvicorn

from wopeval.api.app import create_worker_app
from wopeval.api.deps import InvocationAccess
from wopeval.api.routes.mcp import McpSessions
from wopeval.api.upstream_pools import UpstreamPools
from wopeval.engine.catalog.catalog import Catalog
from wopeval.engine.catalog.catalog_digest import catalog_digest
from wopeval.engine.health import HealthSource
from wopeval.engine.host import Engine
from wopeval.engine.live.notifier import Notifier
from wopeval.hosting.catalog import load_catalog
from wopeval.hosting.credentials import stored_keys
from wopeval.hosting.loopback import bound_socket, served_config
from wopeval.hosting.outbound import outbound_client
from wopeval.hosting.ownership import watch_lease
from wopeval.settings import Settings
from wopeval.store import Store, take_lease
from wopeval.tools import McpServers

BACKLOG = 128


@dataclass(frozen=True)
class WorkerHost:
    settings: Settings
    """The worker's settings, with its own server as the invocations' `public_url`
    unless one was configured."""
    store: Store
    http: httpx.AsyncClient
    upstreams: UpstreamPools
    """The model proxy's connection pools, opened as agents first reach their upstreams."""
    catalog: Catalog
    catalog_digest: str
    engine: Engine
    sock: socket.socket
    """The listening socket of its HTTP server (the bound port, not `--port 0`)."""
    url: str
    """Where its HTTP server listens."""

    @classmethod
    @contextlib.asynccontextmanager
    async def opened(cls, settings: Settings) -> AsyncIterator[WorkerHost]:
        """The worker's process from its lease to its engine, closed in reverse order."""
        database_url = settings.resolved_database_url()
        lease = await asyncio.to_thread(take_lease, database_url, shared=True)
        try:
            store = await Store.open(database_url)
            http = outbound_client(settings)
            upstreams = UpstreamPools()
            mcp = McpServers()
            watch = asyncio.create_task(
                watch_lease(lease, settings.lease_check_seconds), name="lease-watch"
            )
            try:
                with _listening(settings) as (sock, url):
                    settings = settings.model_copy(
                        update={"public_url": settings.public_url or url}
                    )
                    catalog = await load_catalog(settings, store, http, mcp)
                    digest = catalog_digest(catalog, settings.project)
                    engine = Engine(
                        settings=settings,
                        store=store,
                        catalog=catalog,
                        notifier=Notifier(),
                        catalog_digest=digest,
                        broadcast=True,
                    )
                    try:
                        yield cls(
                            settings, store, http, upstreams, catalog, digest, engine, sock, url
                        )
                    finally:
                        await engine.writer.stop()
            finally:
                watch.cancel()
                await asyncio.gather(watch, return_exceptions=True)
                await mcp.close()
                await http.aclose()
                await upstreams.aclose()
                await store.close()
        finally:
            lease.release()

    async def http_server(self, report: HealthSource) -> tuple[uvicorn.Server, McpSessions]:
        """Its HTTP server (to serve on `sock`), reporting `report`, and the MCP sessions
        to run while it serves. An agent's key is checked against the serving processes'
        stored keys."""
        access = InvocationAccess(self.engine.grants, await stored_keys(self.store), self.upstreams)
        app, sessions = create_worker_app(
            report, access, max_body_bytes=self.settings.max_body_bytes
        )
        config = served_config(app, log_level="warning", access_log=False, lifespan="off")
        return _SignalFreeServer(config), sessions


@contextlib.contextmanager
def _listening(settings: Settings) -> Iterator[tuple[socket.socket, str]]:
    sock = bound_socket(settings.host, settings.port)
    try:
        sock.listen(BACKLOG)
        yield sock, _url(settings.host, sock.getsockname()[1])
    finally:
        sock.close()


class _SignalFreeServer(uvicorn.Server):
    """The health server leaves SIGTERM to the worker, which drains before it stops."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _url(host: str, port: int) -> str:
    address = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    return f"http://[{address}]:{port}" if ":" in address else f"http://{address}:{port}"
