"""The host of an API process (`wopeval serve`, the CLI's embedded host, test hosts): its
lease, store, keys, catalog, engine and background tasks, started and stopped in order.

Start-up order matters: the database's lease comes first, so a process that
is refused has touched nothing; recovery comes after it, so what it finds
unfinished (active runs, unanswered idempotency keys) belongs to no one alive.

In queue mode (a `queue` factory given) any number of API processes share the
database with the workers: each takes the lease shared, recovers nothing at
start-up (a run's liveness is its jobs, which the workers watch), and listens
for the other processes' commits (`engine/live/wakeups.py`).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import httpx
from pydantic import JsonValue

from wopeval.api.auth import Authenticator
from wopeval.api.upstream_pools import UpstreamPools
from wopeval.engine.catalog.catalog import Catalog
from wopeval.engine.catalog.catalog_digest import catalog_digest
from wopeval.engine.health import HealthReport, all_ok, database_check
from wopeval.engine.host import Engine
from wopeval.engine.live.notifier import Notifier
from wopeval.engine.live.read_cache import ReadCache
from wopeval.engine.live.tail import Tails
from wopeval.engine.live.wakeups import Wakeups
from wopeval.engine.runs.run_queue import QueueFactory
from wopeval.hosting import collector, ownership
from wopeval.hosting.catalog import load_catalog
from wopeval.hosting.credentials import embedded_keys, serving_keys
from wopeval.hosting.housekeeping import housekeep, release_unanswered_keys
from wopeval.hosting.outbound import outbound_client
from wopeval.settings import Settings
from wopeval.store import Lease, Store, take_lease
from wopeval.tools import McpServers

log = logging.getLogger("wopeval.host")
LISTEN_DEADLINE_SECONDS = 30.0
"""How long a queue-mode API process waits for its listener before it serves anyway."""


@dataclass(frozen=True)
class Serving:
    """A host that serves (`wopeval serve`, test hosts): the only kind that writes keys."""

    url: str | None = None
    """Where it listens; announced in the data directory for the CLI to find, when given."""


@dataclass(frozen=True)
class Embedded:
    """A CLI command's own in-process host: it reads the stored keys and writes none
    (unless `leave_dev_key`)."""

    session_key: str
    """This command's credential for tenant `dev`, held in memory only."""
    leave_dev_key: bool = False
    """Also make the `dev` tenant's key as a serving host does, when there is none
    (`wopeval demo`, whose docs say to sign in with it)."""


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
    upstreams: UpstreamPools
    """The model proxy's connection pools, opened as agents first reach their upstreams."""
    own_lease: Lease | None
    """The lease this host took itself, released when it stops."""
    tails: Tails
    """The shared readers of followed runs' logs (SSE)."""
    mcp: McpServers
    """Connections to the project's MCP servers."""
    wakeups: Wakeups | None = None
    """Queue mode: the listener that wakes this process's readers."""
    housekeeper: asyncio.Task[None] | None = None
    lease_watch: asyncio.Task[None] | None = None

    @classmethod
    async def start(
        cls,
        settings: Settings,
        *,
        role: Role = SERVING,
        lease: Lease | None = None,
        queue: QueueFactory | None = None,
    ) -> Host:
        """Start on `settings`; `lease` is one the caller holds (and releases), else the
        host takes its own (`ownership.DatabaseOwned` when another process has it). With
        `queue` the host is a queue-mode API process (PostgreSQL only)."""
        own_lease: Lease | None = None
        if lease is None and queue is not None:
            own_lease = await asyncio.to_thread(
                take_lease, settings.resolved_database_url(), shared=True
            )
        elif lease is None:
            own_lease = await asyncio.to_thread(ownership.claim, settings)
        try:
            ownership.private_directory(settings.data_dir)
            store = await Store.open(settings.resolved_database_url())
        except BaseException:
            if own_lease is not None:
                own_lease.release()
            raise
        http = outbound_client(settings)
        mcp = McpServers()
        try:
            # The project first: a start that fails on it writes no key either.
            catalog = await load_catalog(settings, store, http, mcp)
            if isinstance(role, Embedded):
                auth = await embedded_keys(
                    settings, store, role.session_key, leave_dev_key=role.leave_dev_key
                )
            else:
                auth = await serving_keys(settings, store)
            digest = catalog_digest(catalog, settings.project)
            engine = Engine(
                settings=settings,
                store=store,
                catalog=catalog,
                # Workers change a queue-mode host's runs: it keeps no answers of their
                # reads (engine/live/read_cache.py).
                notifier=Notifier(ReadCache() if queue is None else None),
                catalog_digest=digest,
                queue=None if queue is None else queue(catalog, digest),
            )
            if queue is None:
                await release_unanswered_keys(store)
                await engine.recover()
        except BaseException:
            await mcp.close()
            await http.aclose()
            await store.close()
            if own_lease is not None:
                own_lease.release()
            raise
        tails = Tails(store, engine.notifier)
        host = cls(
            settings,
            role,
            store,
            catalog,
            engine,
            auth,
            http,
            UpstreamPools(),
            own_lease,
            tails,
            mcp,
        )
        if queue is not None:
            host.wakeups = Wakeups(settings.resolved_database_url(), engine.notifier)
            host.wakeups.start()
            if not await host.wakeups.wait_listening(LISTEN_DEADLINE_SECONDS):
                log.warning("the run listener is not connected yet; readers re-poll meanwhile")
        collector.settle_after_startup()
        host.housekeeper = asyncio.create_task(
            housekeep(
                store,
                engine.notifier,
                settings.retention_days,
                settings.purge_interval_seconds,
                stale_claims=queue is not None,
            ),
            name="housekeeping",
        )
        held = lease or own_lease
        if held is not None:
            host.lease_watch = asyncio.create_task(
                ownership.watch_lease(held, settings.lease_check_seconds), name="lease-watch"
            )
        if isinstance(role, Serving) and role.url is not None:
            ownership.announce(settings, role.url)
        return host

    async def stop(self) -> None:
        if isinstance(self.role, Serving) and self.role.url is not None:
            ownership.withdraw(self.settings)
        for task in (self.lease_watch, self.housekeeper):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        if self.wakeups is not None:
            await self.wakeups.stop()
        await self.engine.shutdown()
        await self.tails.close()
        await self.mcp.close()
        await self.http.aclose()
        await self.upstreams.aclose()
        await self.store.close()
        if self.own_lease is not None:
            self.own_lease.release()

    async def health(self) -> HealthReport:
        """This API process's readiness (engine/health.py)."""
        database = await database_check(self.store)
        document: dict[str, JsonValue] = {
            "role": "api",
            "executor": "in-process" if self.engine.queue is None else "queue",
            "database": database,
        }
        checks = [database]
        if self.wakeups is not None:
            state = self.wakeups.state
            listener: dict[str, JsonValue] = {
                "ok": state.listening,
                "connects": state.connects,
                "lastError": state.last_error,
            }
            document["listener"] = listener
            checks.append(listener)
        if self.engine.queue is not None:
            try:
                async with self.store.reading() as uow:
                    counts = await self.engine.queue.health(uow)
                queue: dict[str, JsonValue] = {"ok": True, **counts}
            except Exception as exc:  # an unreachable queue is what readiness reports
                queue = {"ok": False, "error": f"{type(exc).__name__}: {exc}".strip()}
            document["queue"] = queue
            checks.append(queue)
        ready = all_ok(*checks)
        document["ready"] = ready
        return HealthReport(document, ready)
