"""The seam between the engine and a job queue that executes its runs elsewhere.

In-process (the default, and the only choice on SQLite) the engine executes a
run's body as an asyncio task of the process that created it. With a
`RunQueue` (queue mode, PostgreSQL), creating a run also enqueues its work in
the transaction that inserts it, and worker processes execute it; commands
reach those workers through the run row (the fences below) and the queue.

The engine only knows this protocol: the queue itself (Procrastinate) lives in
`wopeval.worker`, which the CLI hands in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from pydantic import JsonValue

from wopeval.engine.catalog.catalog import Catalog
from wopeval.engine.runlog.fence import Fence
from wopeval.store import RunRecord, UnitOfWork


@dataclass(frozen=True)
class Work:
    """What a new run gives the queue: an eval's `(task_id, trial)` pairs, or a workflow run
    (`pairs` None), which is one job."""

    pairs: tuple[tuple[str, int], ...] | None = None


class RunQueue(Protocol):
    async def enqueue(self, uow: UnitOfWork, record: RunRecord, work: Work) -> None:
        """Enqueue the run's work in the transaction that inserts `record`."""
        ...

    def cancelling(self) -> Fence:
        """A fence for the step that ends a run `cancelled`: as it lands, the run's queued
        jobs are cancelled and its running ones aborted, in the same transaction."""
        ...

    def resuming(self) -> Fence:
        """A fence for the step that resumes a paused run: what finished while it was
        paused (its last trial) ends it now."""
        ...

    async def health(self, uow: UnitOfWork) -> dict[str, JsonValue]:
        """The queue's state for `/host/wopeval/health`; raises when it is unreachable."""
        ...


QueueFactory = Callable[[Catalog, str], RunQueue]
"""Makes a host's queue once its catalog is loaded: (catalog, the catalog's digest)."""
