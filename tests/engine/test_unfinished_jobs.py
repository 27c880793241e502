"""A worker's maintenance takes a job the queue holds as the worker's and that runs nowhere in
it (its end went unrecorded: worker/maintenance.py, `_Unfinished`) only when it finds it so
at two looks in a row: a job just fetched is held a moment before its work starts, and one
look alone would take it then, its work running twice. A job whose work runs here is never
taken. On a real PostgreSQL queue (Procrastinate's tables, as a worker's database has them);
the end-to-end case, a fleet whose job ended unrecorded, is
tests/scale/test_lost_connections.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text

from _backends import Backend, PostgresDatabases
from _hosts import TENANT, running_host
from wopeval.hosting.host import Host
from wopeval.settings import QueueSettings
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest
from wopeval.worker import sql
from wopeval.worker.maintenance import Maintenance
from wopeval.worker.queues import JobArgs

pytestmark = pytest.mark.postgres

QUEUE = "wopeval-test"
SCRIPT = {"calls": [], "answer": "done"}


@pytest.fixture
async def host(postgres_databases: PostgresDatabases, tmp_path: Path) -> AsyncIterator[Host]:
    async with running_host(Backend("postgres", postgres_databases), tmp_path) as started:
        yield started


async def _held_job(host: Host) -> tuple[int, int]:
    """A worker, and a job of an ended run that the queue holds as that worker's: (worker
    id, job id)."""
    record = await host.engine.create_workflow_run(
        Principal(TENANT, "key-test"),
        CreateRunRequest(workflowId="conformance-agent-counter", inputs=SCRIPT),
    )
    await host.engine.wait_idle()
    async with host.store.transaction() as uow:
        await sql.defer(uow, QUEUE, [JobArgs(record.run_id, TENANT)])
        worker_id = (
            await uow.connection.execute(
                text("INSERT INTO procrastinate_workers DEFAULT VALUES RETURNING id")
            )
        ).scalar_one()
        job_id = (
            await uow.connection.execute(
                text(
                    "UPDATE procrastinate_jobs SET status = 'doing', worker_id = :worker"
                    " WHERE queue_name = :queue RETURNING id"
                ),
                {"worker": worker_id, "queue": QUEUE},
            )
        ).scalar_one()
    return worker_id, job_id


async def _status(host: Host, job_id: int) -> str:
    async with host.store.reading() as uow:
        found = await uow.connection.execute(
            text("SELECT status::text FROM procrastinate_jobs WHERE id = :job"), {"job": job_id}
        )
        return str(found.scalar_one())


async def test_a_held_job_running_nowhere_is_taken_at_the_second_look_not_the_first(
    host: Host,
) -> None:
    worker_id, job_id = await _held_job(host)
    maintenance = Maintenance(host.engine, QUEUE, QueueSettings(), lambda: worker_id, set())
    await maintenance.once()
    assert await _status(host, job_id) == "doing", "taken at the first look"
    await maintenance.once()
    assert await _status(host, job_id) != "doing", "never taken"


async def test_a_held_job_whose_work_runs_here_is_never_taken(host: Host) -> None:
    worker_id, job_id = await _held_job(host)
    executing = {job_id}
    maintenance = Maintenance(host.engine, QUEUE, QueueSettings(), lambda: worker_id, executing)
    for _ in range(3):
        await maintenance.once()
    assert await _status(host, job_id) == "doing"
