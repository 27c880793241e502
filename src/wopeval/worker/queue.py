"""The API side of queue mode: a `RunQueue` (engine/runs/run_queue.py) on Procrastinate's tables.

An API process never executes a run. It enqueues the run's work in the
transaction that creates it, ends a cancelled run in the transaction that
cancels its jobs, and, when a resumed eval had all its trials land while it
was paused, ends it with the resume.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import JsonValue

from wopeval.engine.catalog.catalog import Catalog
from wopeval.engine.eval_runs.trial_landing import complete_if_done, invoked_agent_ids
from wopeval.engine.runlog.fence import Fence, Landing, Locked
from wopeval.engine.runlog.steps import RunUpdate, Step
from wopeval.engine.runs.run_queue import QueueFactory, RunQueue, Work
from wopeval.settings import QueueSettings
from wopeval.store import RunRecord, UnitOfWork
from wopeval.worker import sql
from wopeval.worker.plans import load_plan
from wopeval.worker.queues import JobArgs, chunks, queue_name


@dataclass(frozen=True)
class _Cancelling:
    async def admit(self, uow: UnitOfWork, locked: Locked, step: Step) -> Landing:
        await sql.cancel_jobs_of(uow, locked.run.run_id)
        return Landing(update=RunUpdate(agent_ids=await invoked_agent_ids(uow, locked, set())))


@dataclass(frozen=True)
class _Resuming:
    catalog: Catalog

    async def admit(self, uow: UnitOfWork, locked: Locked, step: Step) -> Landing:
        run = locked.run
        plan = await load_plan(uow, run.handle, self.catalog)
        return Landing() if plan is None else await complete_if_done(uow, locked, plan)


class ProcrastinateQueue:
    """Enqueues on the queue of this process's catalog digest (worker/queues.py)."""

    def __init__(self, catalog: Catalog, digest: str, settings: QueueSettings) -> None:
        self._catalog = catalog
        self.name = queue_name(digest)
        self._chunk_size = settings.chunk_size

    async def enqueue(self, uow: UnitOfWork, record: RunRecord, work: Work) -> None:
        if work.pairs is None:
            jobs = [JobArgs(record.run_id, record.tenant)]
        else:
            jobs = [
                JobArgs(record.run_id, record.tenant, tuple(chunk))
                for chunk in chunks(work.pairs, self._chunk_size)
            ]
        await sql.defer(uow, self.name, jobs)

    def cancelling(self) -> Fence:
        return _Cancelling()

    def resuming(self) -> Fence:
        return _Resuming(self._catalog)

    async def health(self, uow: UnitOfWork) -> dict[str, JsonValue]:
        return await sql.queue_counts(uow, self.name)


def factory(settings: QueueSettings) -> QueueFactory:
    def make(catalog: Catalog, digest: str) -> RunQueue:
        return ProcrastinateQueue(catalog, digest, settings)

    return make
