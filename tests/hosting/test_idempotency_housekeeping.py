"""The host drops idempotency records once their 24 hours are over, and keeps fresh ones."""

from __future__ import annotations

import asyncio
from pathlib import Path

from _backends import Backend
from _hosts import TENANT, running_host
from wopeval.engine.runlog.steps import now
from wopeval.store import IDEMPOTENCY_RETENTION

DEADLINE_SECONDS = 30.0


def test_expired_idempotency_records_are_dropped_on_schedule(
    backend: Backend, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with running_host(backend, tmp_path, purge_interval_seconds=0.1) as host:
            stale_at = now() - IDEMPOTENCY_RETENTION * 2
            async with host.store.transaction() as uow:
                await uow.idempotency.claim(TENANT, "createRun", "k" * 22, "digest", stale_at)
                await uow.idempotency.claim(TENANT, "createRun", "f" * 22, "digest", now())
            loop = asyncio.get_running_loop()
            deadline = loop.time() + DEADLINE_SECONDS
            while True:
                async with host.store.reading() as uow:
                    stale = await uow.idempotency.get(TENANT, "createRun", "k" * 22)
                    fresh = await uow.idempotency.get(TENANT, "createRun", "f" * 22)
                if stale is None:
                    break
                assert loop.time() < deadline, "the expired record was never dropped"
                await asyncio.sleep(0.05)
            assert fresh is not None

    asyncio.run(scenario())
