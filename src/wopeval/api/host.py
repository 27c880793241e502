"""Start-up and shutdown of a host: lease, store, keys, catalog, engine (G14: settings passed in).

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
import gc
import logging
import os
import sys
from dataclasses import dataclass
from datetime import timedelta

import httpx
from pydantic import JsonValue

from wopeval.api import ownership
from wopeval.api.auth import Authenticator
from wopeval.api.credentials import embedded_keys, serving_keys
from wopeval.engine.catalog.catalog import Catalog, seed_conformance
from wopeval.engine.catalog.catalog_digest import catalog_digest
from wopeval.engine.catalog.project import connect_mcp_servers, load_project
from wopeval.engine.health import HealthReport, all_ok, database_check
from wopeval.engine.host import Engine
from wopeval.engine.live.notifier import Notifier
from wopeval.engine.live.read_cache import ReadCache
from wopeval.engine.live.tail import Tails
from wopeval.engine.live.wakeups import Wakeups
from wopeval.engine.runlog.steps import now
from wopeval.engine.runs.erasure import purge_expired
from wopeval.engine.runs.run_queue import QueueFactory
from wopeval.settings import Settings
from wopeval.store import IDEMPOTENCY_RETENTION, Lease, Store, take_lease
from wopeval.tools import COUNTER_LISTING, CounterTool, McpServers

log = logging.getLogger("wopeval.host")
LISTEN_DEADLINE_SECONDS = 30.0
"""How long a queue-mode API process waits for its listener before it serves anyway."""
STALE_CLAIM = timedelta(minutes=10)
"""Queue mode: an idempotency key unanswered this long belongs to a request that died
with its process (no request takes so long), and is released by housekeeping."""


YOUNG_COLLECTION_THRESHOLD = 10_000
"""Container allocations between two collections of the youngest generation (Python's
default is 700). A run's step allocates hundreds (events, rows, payloads) that live
until it lands, so at 700 the collector ran every few steps, and every tenth of its
passes went on to the older generations and every hundredth through the whole heap.
Measured on the eval bench (1,000 tasks, SQLite): full collections fell from 13 to
none over three runs, ~0.9 s of collector time to ~0.1 s."""


def _collect_less_often() -> None:
    """Raise the youngest generation's threshold, never lower one the process set."""
    young, *older = gc.get_threshold()
    if young < YOUNG_COLLECTION_THRESHOLD:
        gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *older)


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
        http = httpx.AsyncClient(timeout=settings.tool_timeout_seconds)
        mcp = McpServers()
        try:
            # The project first: a start that fails on it writes no key either.
            catalog = await load_catalog(settings, store, http, mcp)
            if isinstance(role, Embedded):
                auth = await embedded_keys(settings, store, role.session_key)
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
        if queue is not None:
            host.wakeups = Wakeups(settings.resolved_database_url(), engine.notifier)
            host.wakeups.start()
            if not await host.wakeups.wait_listening(LISTEN_DEADLINE_SECONDS):
                log.warning("the run listener is not connected yet; readers re-poll meanwhile")
        # What start-up loaded lives as long as the process: keep it out of every
        # later collection, which otherwise stalls eval runs for tenths of a second.
        gc.freeze()
        _collect_less_often()
        host.housekeeper = asyncio.create_task(
            _housekeep(
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
                watch_lease(held, settings.lease_check_seconds), name="lease-watch"
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


async def load_catalog(
    settings: Settings, store: Store, http: httpx.AsyncClient, mcp: McpServers
) -> Catalog:
    """What a host (or a queue worker) can run: the seeded fixtures and the project."""
    catalog = Catalog()
    seed_conformance(catalog)
    catalog.tools.add(CounterTool(store), COUNTER_LISTING)
    if settings.project is not None:
        servers = load_project(
            settings.project, catalog, http, tool_timeout=settings.tool_timeout_seconds
        )
        await connect_mcp_servers(servers, catalog, mcp, offline=not settings.live_tools)
    return catalog


async def watch_lease(lease: Lease, interval: float) -> None:
    """Stop the process at once when another process holds its database's lease.

    A PostgreSQL lease lives in a session, which a database restart, a network drop or
    an administrator can end; the lease is then taken again on a new session. When
    another process took it first, that process owns the database (and has failed the
    runs it found active): this one exits without writing another row, as if killed,
    so two owners never run one database.
    """
    while True:
        await asyncio.sleep(interval)
        if not await asyncio.to_thread(lease.keep):
            log.critical(
                "the database's lease is held by another process now: stopping at once"
                " (exit %d) so that only one process runs this database",
                ownership.DATABASE_OWNED_EXIT,
            )
            sys.stderr.flush()
            os._exit(ownership.DATABASE_OWNED_EXIT)


async def _release_unanswered_keys(store: Store) -> None:
    """Free the idempotency keys a stopped host left in flight: none of them has a run."""
    async with store.transaction() as uow:
        released = await uow.idempotency.release_all_unanswered()
    if released:
        log.info("released %d idempotency keys left in flight by a stopped host", released)


async def _housekeep(
    store: Store,
    notifier: Notifier,
    retention_days: int | None,
    interval: float,
    *,
    stale_claims: bool,
) -> None:
    """On a schedule: drop idempotency records past their 24 h and, with a retention
    period set, erase expired recorded tool content. In queue mode (`stale_claims`),
    also release keys whose request died with its process (`STALE_CLAIM`)."""
    while True:
        try:
            async with store.transaction() as uow:
                await uow.idempotency.purge_before(now() - IDEMPOTENCY_RETENTION)
                if stale_claims:
                    await uow.idempotency.release_unanswered_before(now() - STALE_CLAIM)
            if retention_days is not None:
                erased = await purge_expired(store, retention_days)
                if erased.runs:
                    notifier.rewritten()
                    log.info("retention erased the tool content of %d runs", erased.runs)
        except Exception:
            log.exception("housekeeping failed; retrying at the next interval")
        await asyncio.sleep(interval)
