"""A real store for the engine unit tier: SQLite in the test's temporary directory."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

from _handles import handle_of
from wopeval.engine.live.notifier import Notifier
from wopeval.engine.runlog.log_writer import LogWriter
from wopeval.engine.runlog.runlog import RunLog
from wopeval.engine.runlog.steps import Step, now
from wopeval.store import RunRecord, Store, next_created_seq, sqlite_url
from wopeval.wire import events, ids
from wopeval.wire.runs import CreateRunRequest, RunKind, RunStatus, owner_for

TENANT = "acme"


@asynccontextmanager
async def opened(url: str) -> AsyncIterator[Store]:
    """The store at `url` (SQLite or PostgreSQL), closed after the block."""
    store = await Store.open(url)
    try:
        yield store
    finally:
        await store.close()


def open_store(directory: Path) -> contextlib.AbstractAsyncContextManager[Store]:
    """A SQLite store in `directory`."""
    return opened(sqlite_url(directory))


def new_record(tenant: str = TENANT) -> RunRecord:
    at = now()
    return RunRecord(
        run_id=ids.mint_run_id(tenant),
        tenant=tenant,
        kind=RunKind.WORKFLOW,
        workflow_id="unit-workflow",
        status=RunStatus.RUNNING,
        owner=owner_for(tenant, "unit-key"),
        request=CreateRunRequest(),
        plan=None,
        created_at=at,
        started_at=at,
        completed_at=None,
        error=None,
        outputs=None,
        summary=None,
        suite_id=None,
        created_seq=next_created_seq(),
    )


async def open_run(writer: LogWriter, status: RunStatus = RunStatus.RUNNING) -> RunLog:
    """Insert a run with its `run.started` (sequence 0) and return its handle."""
    record = replace(new_record(), status=status)
    step = Step()
    step.emit(events.RunStarted(workflowId=record.workflow_id, owner=record.owner))
    stored = await writer.insert(record, step, None)
    return RunLog(writer, stored.run_id, stored.tenant)


def writer_for(store: Store, notifier: Notifier | None = None) -> LogWriter:
    return LogWriter(store, Notifier() if notifier is None else notifier)


async def sequences(store: Store, run_id: str) -> list[tuple[int, str]]:
    """`(sequence, type)` of every stored event of the run, in order."""
    async with store.reading() as uow:
        docs = await uow.events.all_docs(await handle_of(uow, run_id))
    parsed = [json.loads(doc) for doc in docs]
    return [(doc["sequence"], doc["type"]) for doc in parsed]
