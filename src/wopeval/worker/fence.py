"""The trial commit fence of a queue worker: this worker still owns this job.

Procrastinate delivers a job at least once, and a worker that stalled (stopped,
partitioned) can come back after its job was given to another. Each step a job
writes is admitted (engine/runlog/fence.py) only while its job is `doing` under this
worker's id, checked in the step's own transaction with the job row
share-locked, so a stall handler that takes the job away waits for the commit
and every commit after that is refused. An eval step's trial then lands
exactly once (engine/eval_runs/trial_landing.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from wopeval.engine.eval_runs.eval_plan import EvalPlan
from wopeval.engine.eval_runs.trial_landing import land_trial
from wopeval.engine.runlog.fence import Landing, Locked
from wopeval.engine.runlog.steps import Step
from wopeval.store import UnitOfWork
from wopeval.worker import sql

log = logging.getLogger("wopeval.worker")
REFUSED = "job %d is no longer this worker's (%d): its commit to run %s is refused"


@dataclass(frozen=True)
class JobFence:
    job_id: int
    worker_id: int
    plan: EvalPlan | None = None
    """The eval's plan (None: a workflow run, whose steps only need the ownership check)."""

    async def admit(self, uow: UnitOfWork, locked: Locked, step: Step) -> Landing | None:
        owner = (self.job_id, self.worker_id)
        if owner not in locked.verified:
            if not await sql.owns(uow, self.job_id, self.worker_id):
                log.warning(REFUSED, self.job_id, self.worker_id, locked.run.run_id)
                return None
            # The job row stays share-locked to the transaction's end: checked once.
            locked.verified.add(owner)
        if self.plan is None:
            return Landing()
        return await land_trial(uow, locked, step, self.plan)
