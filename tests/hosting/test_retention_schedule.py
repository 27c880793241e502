"""Retention inside the host: expired tool content is erased on a schedule, recent content kept."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from sqlalchemy import select, update

from _backends import Backend
from _hosts import TENANT, running_host
from wopeval.engine.runlog.steps import now
from wopeval.hosting.host import Host
from wopeval.store.tables import runs, tool_calls
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest

DEADLINE_SECONDS = 30.0
SCRIPT = {
    "calls": [{"tool": "conformance.eval:counter", "args": {"op": "inc", "key": "retention"}}],
    "answer": "done",
}


async def _run(host: Host, principal: Principal) -> str:
    record = await host.engine.create_workflow_run(
        principal, CreateRunRequest(workflowId="conformance-agent-counter", inputs=SCRIPT)
    )
    await host.engine.wait_idle()
    return record.run_id


async def _erased(host: Host, run_id: str) -> bool:
    async with host.store.reading() as uow:
        result = await uow.connection.execute(
            select(tool_calls.c.erased_at, tool_calls.c.inputs).where(tool_calls.c.run_id == run_id)
        )
        rows = list(result)
    assert rows, "the run recorded its call"
    return all(row.erased_at is not None and row.inputs is None for row in rows)


def test_the_host_purges_expired_tool_content_on_its_schedule(
    backend: Backend, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with running_host(
            backend, tmp_path, retention_days=7, purge_interval_seconds=0.1
        ) as host:
            principal = Principal(TENANT, "key-test")
            expired, recent = await _run(host, principal), await _run(host, principal)
            async with host.store.transaction() as uow:
                await uow.connection.execute(
                    update(runs)
                    .where(runs.c.run_id == expired)
                    .values(completed_at=now() - timedelta(days=8))
                )
            loop = asyncio.get_running_loop()
            deadline = loop.time() + DEADLINE_SECONDS
            while not await _erased(host, expired):
                assert loop.time() < deadline, "the scheduled purge never erased the expired run"
                await asyncio.sleep(0.05)
            assert not await _erased(host, recent)

    asyncio.run(scenario())
