"""Start-up and shutdown of a host: lease, store, keys, catalog, engine (G14: settings passed in).

Start-up order matters: the database's lease comes first, so a process that
is refused has touched nothing; recovery comes after it, so what it finds
unfinished (active runs, unanswered idempotency keys) belongs to no one alive.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from dataclasses import dataclass

import httpx

from wopeval.api import ownership
from wopeval.api.auth import Authenticator
from wopeval.api.credentials import embedded_keys, serving_keys
from wopeval.engine.catalog import Catalog, seed_conformance
from wopeval.engine.erasure import purge_expired
from wopeval.engine.host import Engine
from wopeval.engine.notifier import Notifier
from wopeval.engine.project import connect_mcp_servers, load_project
from wopeval.engine.runlog import now
from wopeval.engine.tail import Tails
from wopeval.settings import Settings
from wopeval.store import IDEMPOTENCY_RETENTION, Lease, Store
from wopeval.tools import COUNTER_LISTING, CounterTool, McpServers

log = logging.getLogger("wopeval.host")


@dataclass(frozen=True)
class Serving:
    """A host that serves (`wopeval serve`, test hosts): the only kind that writes keys."""

    url: str | None = None
    """Where it listens; announced in the data directory for the CLI to find, when given."""


@dataclass(frozen=True)
class Embedded:
    """A CLI command's own in-process host: it reads the stored keys and writes none."""

    session_key: str
    """This command's credential for tenant `dev`, held in memory only."""


Role = Serving | Embedded
SERVING = Serving()


@dataclass
class Host:
    settings: Settings
    role: Role
    store: Store
    catalog: Catalog
    engine: Engine
    auth: Authenticator
    http: httpx.AsyncClient
    own_lease: Lease | None
    """The lease this host took itself, released when it stops."""
    tails: Tails
    """The shared readers of followed runs' logs (SSE)."""
    mcp: McpServers
    """Connections to the project's MCP servers."""
    housekeeper: asyncio.Task[None] | None = None

    @classmethod
    async def start(
        cls, settings: Settings, *, role: Role = SERVING, lease: Lease | None = None
    ) -> Host:
        """Start on `settings`; `lease` is one the caller holds (and releases), else the
        host takes its own (`ownership.DatabaseOwned` when another process has it)."""
        own_lease = (
            None if lease is not None else await asyncio.to_thread(ownership.claim, settings)
        )
        try:
            ownership.private_directory(settings.data_dir)
            store = await Store.open(settings.resolved_database_url())
        except BaseException:
            if own_lease is not None:
                own_lease.release()
            raise
        http = httpx.AsyncClient(timeout=settings.tool_timeout_seconds)
        mcp = McpServers()
        try:
            if isinstance(role, Embedded):
                auth = await embedded_keys(settings, store, role.session_key)
            else:
                auth = await serving_keys(settings, store)
            catalog = Catalog()
            seed_conformance(catalog)
            catalog.tools.add(CounterTool(store), COUNTER_LISTING)
            if settings.project is not None:
                servers = load_project(
                    settings.project, catalog, http, tool_timeout=settings.tool_timeout_seconds
                )
                await connect_mcp_servers(servers, catalog, mcp, offline=not settings.live_tools)
            engine = Engine(settings=settings, store=store, catalog=catalog, notifier=Notifier())
            await _release_unanswered_keys(store)
            await engine.recover()
        except BaseException:
            await mcp.close()
            await http.aclose()
            await store.close()
            if own_lease is not None:
                own_lease.release()
            raise
        tails = Tails(store, engine.notifier)
        host = cls(settings, role, store, catalog, engine, auth, http, own_lease, tails, mcp)
        # What start-up loaded lives as long as the process: keep it out of every
        # later collection, which otherwise stalls eval runs for tenths of a second.
        gc.freeze()
        host.housekeeper = asyncio.create_task(
            _housekeep(store, settings.retention_days, settings.purge_interval_seconds),
            name="housekeeping",
        )
        if isinstance(role, Serving) and role.url is not None:
            ownership.announce(settings, role.url)
        return host

    async def stop(self) -> None:
        if isinstance(self.role, Serving) and self.role.url is not None:
            ownership.withdraw(self.settings)
        if self.housekeeper is not None:
            self.housekeeper.cancel()
            await asyncio.gather(self.housekeeper, return_exceptions=True)
        await self.engine.shutdown()
        await self.tails.close()
        await self.mcp.close()
        await self.http.aclose()
        await self.store.close()
        if self.own_lease is not None:
            self.own_lease.release()


async def _release_unanswered_keys(store: Store) -> None:
    """Free the idempotency keys a stopped host left in flight: none of them has a run."""
    async with store.transaction() as uow:
        released = await uow.idempotency.release_all_unanswered()
    if released:
        log.info("released %d idempotency keys left in flight by a stopped host", released)


async def _housekeep(store: Store, retention_days: int | None, interval: float) -> None:
    """On a schedule: drop idempotency records past their 24 h and, with a retention
    period set, erase expired recorded tool content."""
    while True:
        try:
            async with store.transaction() as uow:
                await uow.idempotency.purge_before(now() - IDEMPOTENCY_RETENTION)
            if retention_days is not None:
                erased = await purge_expired(store, retention_days)
                if erased.runs:
                    log.info("retention erased the tool content of %d runs", erased.runs)
        except Exception:
            log.exception("housekeeping failed; retrying at the next interval")
        await asyncio.sleep(interval)
