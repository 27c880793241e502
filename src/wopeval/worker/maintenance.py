"""Recovery by lease: a worker's periodic look at work that lost its worker or its job.

Every `reconcile_seconds`, each worker (any of them may; the run row lock makes
them agree):

- **Stalled jobs.** A running job whose worker has sent no heartbeat for
  `stall_seconds` (killed, stopped, cut off) is failed and replaced by a new job
  for the same work, one stall more, in one transaction under the run's lock;
  the old worker, should it come back, is refused by its fence. The job that
  stalls `max_stalls` times (a trial that kills its worker every time) ends its
  run `failed` with `worker_lost`, once, and its other jobs are cancelled.
- **Orphaned runs.** A `running` run of this catalog with no waiting or running
  job (a job that failed or was aborted outside wopeval's control) gets its
  missing trials enqueued again, or its one workflow job.
- **Work for another project.** Jobs waiting on another catalog's queue are
  logged, so a fleet with mixed projects fails visibly.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass

from wopeval.engine.catalog.catalog import Catalog
from wopeval.engine.eval_runs.trial_landing import complete_if_done, invoked_agent_ids
from wopeval.engine.host import Engine
from wopeval.engine.runlog.fence import Landing, Locked
from wopeval.engine.runlog.runlog import RunLog
from wopeval.engine.runlog.steps import ACTIVE, RUNNING, RunUpdate, Step, Transition, now
from wopeval.engine.runs.outcome import Terminal
from wopeval.settings import QueueSettings
from wopeval.store import UnitOfWork
from wopeval.worker import sql
from wopeval.worker.plans import load_plan
from wopeval.worker.queues import JobArgs, chunks

log = logging.getLogger("wopeval.worker")
NOTHING = Landing(noop=True)


@dataclass(frozen=True)
class _Stalled:
    """Admits the replacement of a stalled job (or, at its last stall, its run's failure)."""

    job: sql.StalledJob
    queue: str
    settings: QueueSettings

    async def admit(self, uow: UnitOfWork, locked: Locked, step: Step) -> Landing | None:
        run = locked.run
        if not await sql.take_stalled(uow, self.job.job_id, self.settings.stall_seconds):
            return None
        args = self.job.args
        if args.stalls + 1 < self.settings.max_stalls:
            await sql.defer(uow, self.queue, [args.again()])
            log.warning(
                "job %d of run %s stalled (%d of %d); its work runs again",
                self.job.job_id,
                args.run_id,
                args.stalls + 1,
                self.settings.max_stalls,
            )
            return NOTHING
        await sql.cancel_jobs_of(uow, run.run_id)
        log.error(
            "job %d of run %s stalled %d times: the run fails",
            self.job.job_id,
            args.run_id,
            args.stalls + 1,
        )
        terminal = Terminal.failed(
            "worker_lost",
            f"A worker running part of this run was lost {args.stalls + 1} times in a row.",
        )
        ending = Step()
        ending.emit(terminal.final_event())
        update = RunUpdate(
            completed_at=now(),
            error=terminal.error,
            agent_ids=await invoked_agent_ids(uow, locked, set()),
        )
        return Landing(ending, terminal.status, update)


@dataclass(frozen=True)
class _Orphaned:
    """Admits new jobs for a running run that has none: whatever it has not landed."""

    catalog: Catalog
    queue: str
    chunk_size: int

    async def admit(self, uow: UnitOfWork, locked: Locked, step: Step) -> Landing | None:
        run = locked.run
        if await sql.live_jobs_of(uow, run.run_id):
            return None
        plan = await load_plan(uow, run.handle, self.catalog)
        if plan is None:
            await sql.defer(uow, self.queue, [JobArgs(run.run_id, run.tenant)])
            log.warning("workflow run %s had no job; enqueued it again", run.run_id)
            return NOTHING
        landed = await uow.trials.landed(run.handle, {plan.task.taskId for plan in plan.tasks})
        missing = [pair for pair in plan.pairs() if pair not in landed]
        if not missing:
            return await complete_if_done(uow, locked, plan)
        jobs = [JobArgs(run.run_id, run.tenant, tuple(c)) for c in chunks(missing, self.chunk_size)]
        await sql.defer(uow, self.queue, jobs)
        log.warning("run %s had no job; enqueued its %d missing trials", run.run_id, len(missing))
        return NOTHING


@dataclass(frozen=True)
class _Unfinished:
    """Admits the replacement of a job the queue holds as this worker's that runs nowhere
    in it: Procrastinate wrote its end on a connection that was lost (a failover, a backend
    ended), and the job stayed `doing` under a worker whose heartbeat says it is alive, so
    neither the stall nor the orphan check would ever take it, and its run never ended."""

    job: sql.StalledJob
    worker_id: int
    queue: str

    async def admit(self, uow: UnitOfWork, locked: Locked, step: Step) -> Landing | None:
        if not await sql.take_unfinished(uow, self.job.job_id, self.worker_id):
            return None
        await sql.defer(uow, self.queue, [self.job.args])
        log.warning(
            "job %d of run %s ended unrecorded; its work runs again",
            self.job.job_id,
            self.job.args.run_id,
        )
        return NOTHING


class Maintenance:
    def __init__(
        self,
        engine: Engine,
        queue: str,
        settings: QueueSettings,
        worker_id: Callable[[], int | None],
        executing: Collection[int],
    ) -> None:
        self._engine = engine
        self._queue = queue
        self._settings = settings
        self._worker_id = worker_id
        self._executing = executing
        self._unrecorded: set[int] = set()
        """Jobs held as this worker's and found running nowhere here at the last look: a
        job is replaced when found so twice, since one just fetched is held a moment
        before its work starts here."""
        self._elsewhere: dict[str, int] = {}

    async def run(self) -> None:
        while True:
            try:
                await self.once()
            except Exception:
                log.exception("queue maintenance failed; retrying at the next interval")
            await asyncio.sleep(self._settings.reconcile_seconds)

    async def once(self) -> None:
        await self._stalled()
        await self._unfinished()
        await self._orphaned()
        await self._other_projects()

    async def _stalled(self) -> None:
        store, writer = self._engine.store, self._engine.writer
        async with store.reading() as uow:
            stalled = await sql.stalled_jobs(uow, [self._queue], self._settings.stall_seconds)
        for job in stalled:
            fence = _Stalled(job, self._queue, self._settings)
            run_log = RunLog(writer, job.args.run_id, job.args.tenant, fence)
            if not await run_log.transition(Transition(ACTIVE)):
                # Its run has ended: the job only has to stop being found.
                async with store.transaction() as uow:
                    await sql.take_stalled(uow, job.job_id, self._settings.stall_seconds)

    async def _unfinished(self) -> None:
        worker_id = self._worker_id()
        if worker_id is None:
            self._unrecorded = set()
            return
        store, writer = self._engine.store, self._engine.writer
        before = set(self._executing)
        async with store.reading() as uow:
            held = await sql.jobs_of_worker(uow, self._queue, worker_id)
        # A job fetched and started or ended during the read counts as running here.
        running = before | set(self._executing)
        idle = [job for job in held if job.job_id not in running]
        again = [job for job in idle if job.job_id in self._unrecorded]
        self._unrecorded = {job.job_id for job in idle} - {job.job_id for job in again}
        for job in again:
            fence = _Unfinished(job, worker_id, self._queue)
            run_log = RunLog(writer, job.args.run_id, job.args.tenant, fence)
            if not await run_log.transition(Transition(ACTIVE)):
                # Its run has ended (or the job is no longer held): it only has to stop
                # being held, with nothing to run again.
                async with store.transaction() as uow:
                    await sql.take_unfinished(uow, job.job_id, worker_id)

    async def _orphaned(self) -> None:
        digest = self._engine.catalog_digest
        if digest is None:
            return
        async with self._engine.store.reading() as uow:
            orphans = await sql.orphaned_runs(uow, digest)
        fence = _Orphaned(self._engine.catalog, self._queue, self._settings.chunk_size)
        for run_id, tenant in orphans:
            await RunLog(self._engine.writer, run_id, tenant, fence).transition(Transition(RUNNING))

    async def _other_projects(self) -> None:
        async with self._engine.store.reading() as uow:
            waiting = await sql.waiting_elsewhere(uow, self._queue)
        for queue, count in waiting.items():
            if self._elsewhere.get(queue) != count:
                log.warning(
                    "%d jobs wait on queue %s, enqueued under another project catalog; this "
                    "worker runs queue %s (its --project differs) and leaves them for a "
                    "worker of that project",
                    count,
                    queue,
                    self._queue,
                )
        self._elsewhere = waiting
