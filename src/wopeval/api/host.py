"""Start-up and shutdown of a host: store, keys, catalog, engine (G14: settings passed in)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx

from wopeval.api.auth import Authenticator, hash_key, key_id
from wopeval.engine.catalog import Catalog, seed_conformance
from wopeval.engine.erasure import purge_expired
from wopeval.engine.host import Engine
from wopeval.engine.notifier import Notifier
from wopeval.engine.project import connect_mcp_servers, load_project
from wopeval.engine.runlog import now
from wopeval.settings import Settings
from wopeval.store import IDEMPOTENCY_RETENTION, Store, replace_keys
from wopeval.tools import COUNTER_LISTING, CounterTool, McpServers

DEV_TENANT = "dev"
log = logging.getLogger("wopeval.host")


@dataclass
class Host:
    settings: Settings
    store: Store
    catalog: Catalog
    engine: Engine
    auth: Authenticator
    http: httpx.AsyncClient
    mcp: McpServers
    housekeeper: asyncio.Task[None] | None = None

    @classmethod
    async def start(cls, settings: Settings) -> Host:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        store = await Store.open(settings.resolved_database_url())
        http = httpx.AsyncClient(timeout=settings.tool_timeout_seconds)
        mcp = McpServers()
        try:
            auth = await _authenticator(settings, store)
            catalog = Catalog()
            seed_conformance(catalog)
            catalog.tools.add(CounterTool(store), COUNTER_LISTING)
            if settings.project is not None:
                servers = load_project(
                    settings.project, catalog, http, tool_timeout=settings.tool_timeout_seconds
                )
                await connect_mcp_servers(servers, catalog, mcp)
            engine = Engine(settings=settings, store=store, catalog=catalog, notifier=Notifier())
            await engine.recover()
        except BaseException:
            await mcp.close()
            await http.aclose()
            await store.close()
            raise
        host = cls(settings, store, catalog, engine, auth, http, mcp)
        # What start-up loaded lives as long as the process: keep it out of every
        # later collection, which otherwise stalls eval runs for tenths of a second.
        gc.freeze()
        host.housekeeper = asyncio.create_task(
            _housekeep(store, settings.retention_days, settings.purge_interval_seconds),
            name="housekeeping",
        )
        return host

    async def stop(self) -> None:
        if self.housekeeper is not None:
            self.housekeeper.cancel()
            await asyncio.gather(self.housekeeper, return_exceptions=True)
        await self.engine.shutdown()
        await self.mcp.close()
        await self.http.aclose()
        await self.store.close()


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


async def _authenticator(settings: Settings, store: Store) -> Authenticator:
    async with store.transaction() as uow:
        if settings.api_keys:
            entries = [(hash_key(k), key_id(k), t) for t, k in settings.api_keys.items()]
            await replace_keys(uow.keys, entries, now())
        else:
            entries = [e for e in await uow.keys.all() if e[2] == DEV_TENANT]
            if not entries:
                key = _new_dev_key(settings.data_dir)
                entries = [(hash_key(key), key_id(key), DEV_TENANT)]
            await replace_keys(uow.keys, entries, now())
    return Authenticator(entries)


def _new_dev_key(data_dir: Path) -> str:
    """Generate the `dev` tenant's key, print it once, and leave it in a 0600 file."""
    key = "wop_" + secrets.token_urlsafe(32)
    path = data_dir / "dev-api-key"
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(key + "\n")
    print(
        f"wopeval: generated the API key of tenant 'dev' (saved to {path}):\n  {key}",
        file=sys.stderr,
    )
    return key
