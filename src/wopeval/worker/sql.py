"""The queue as seen from wopeval's own transactions: Procrastinate's SQL functions.

Creating a run and enqueueing its work must commit together, and so must a
trial and the check that its worker still owns the job, a cancel and the
cancellation of the run's jobs. So these calls run on the caller's connection
(a `UnitOfWork`), through the versioned functions of the schema that migration
0005_queue applies (`procrastinate_defer_jobs_v1`, `procrastinate_cancel_job_v1`,
`procrastinate_finish_job_v1`), never through a connection of Procrastinate's own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Result, text

from wopeval.store import UnitOfWork
from wopeval.worker.queues import TASKS, JobArgs

_OURS = "task_name = ANY(CAST(:tasks AS text[]))"


@dataclass(frozen=True)
class StalledJob:
    job_id: int
    args: JobArgs


async def defer(uow: UnitOfWork, queue: str, jobs: Sequence[JobArgs]) -> None:
    """Enqueue `jobs` on `queue` in the caller's transaction (they become visible with it)."""
    if not jobs:
        return
    await uow.connection.execute(
        text(
            "SELECT procrastinate_defer_jobs_v1(ARRAY("
            " SELECT ROW(:queue, job ->> 'task', 0, NULL, NULL, job -> 'args', NULL)"
            "::procrastinate_job_to_defer_v1"
            " FROM jsonb_array_elements(CAST(:jobs AS jsonb)) AS job))"
        ),
        {
            "queue": queue,
            "jobs": json.dumps([{"task": job.task_name, "args": job.to_json()} for job in jobs]),
        },
    )


async def cancel_jobs_of(uow: UnitOfWork, run_id: str) -> int:
    """Cancel the run's queued jobs and ask its running ones to abort (their workers are
    told by NOTIFY at commit); returns how many there were."""
    result = await uow.connection.execute(
        text(
            "SELECT procrastinate_cancel_job_v1(id, true, false) FROM procrastinate_jobs"
            f" WHERE status IN ('todo', 'doing') AND {_OURS} AND args ->> 'run_id' = :run_id"
        ),
        {"tasks": list(TASKS), "run_id": run_id},
    )
    return len(result.all())


async def live_jobs_of(uow: UnitOfWork, run_id: str) -> list[JobArgs]:
    """The run's jobs that are waiting or running."""
    result = await uow.connection.execute(
        text(
            "SELECT args FROM procrastinate_jobs"
            f" WHERE status IN ('todo', 'doing') AND {_OURS} AND args ->> 'run_id' = :run_id"
        ),
        {"tasks": list(TASKS), "run_id": run_id},
    )
    return [JobArgs.from_json(args) for (args,) in result]


async def owns(uow: UnitOfWork, job_id: int, worker_id: int) -> bool:
    """Whether `worker_id` still runs `job_id`, share-locking the job's row to the end of the
    transaction: a stall handler that would take the job away waits for this commit."""
    result = await uow.connection.execute(
        text(
            "SELECT 1 FROM procrastinate_jobs"
            " WHERE id = :job AND status = 'doing' AND worker_id = :worker FOR SHARE"
        ),
        {"job": job_id, "worker": worker_id},
    )
    return result.first() is not None


async def stalled_jobs(
    uow: UnitOfWork, queues: Sequence[str], stall_seconds: float
) -> list[StalledJob]:
    """Our running jobs whose worker is gone or has not sent a heartbeat for `stall_seconds`."""
    result = await uow.connection.execute(
        text(
            "SELECT job.id, job.args FROM procrastinate_jobs job"
            " LEFT JOIN procrastinate_workers worker ON worker.id = job.worker_id"
            f" WHERE job.status = 'doing' AND job.{_OURS}"
            " AND job.queue_name = ANY(CAST(:queues AS text[]))"
            " AND (worker.id IS NULL OR worker.last_heartbeat"
            " < now() - make_interval(secs => :seconds))"
            " ORDER BY job.id"
        ),
        {"tasks": list(TASKS), "queues": list(queues), "seconds": stall_seconds},
    )
    return [StalledJob(job_id, JobArgs.from_json(args)) for job_id, args in result]


async def take_stalled(uow: UnitOfWork, job_id: int, stall_seconds: float) -> bool:
    """Lock a stalled job's row and fail it (it is replaced, never resumed), if it is still
    stalled: a worker that came back to it in the meantime keeps it."""
    result = await uow.connection.execute(
        text(
            "SELECT job.id FROM procrastinate_jobs job"
            " LEFT JOIN procrastinate_workers worker ON worker.id = job.worker_id"
            " WHERE job.id = :job AND job.status = 'doing'"
            " AND (worker.id IS NULL OR worker.last_heartbeat"
            " < now() - make_interval(secs => :seconds))"
            " FOR UPDATE OF job SKIP LOCKED"
        ),
        {"job": job_id, "seconds": stall_seconds},
    )
    return await _fail_if_locked(uow, result, job_id)


async def jobs_of_worker(uow: UnitOfWork, queue: str, worker_id: int) -> list[StalledJob]:
    """Our running jobs on `queue` that the queue holds as `worker_id`'s."""
    result = await uow.connection.execute(
        text(
            "SELECT id, args FROM procrastinate_jobs"
            f" WHERE status = 'doing' AND {_OURS} AND queue_name = :queue"
            " AND worker_id = :worker ORDER BY id"
        ),
        {"tasks": list(TASKS), "queue": queue, "worker": worker_id},
    )
    return [StalledJob(job_id, JobArgs.from_json(args)) for job_id, args in result]


async def take_unfinished(uow: UnitOfWork, job_id: int, worker_id: int) -> bool:
    """Lock a job the queue still holds as `worker_id`'s and fail it (it is replaced), if it
    still does; a job whose row another transaction holds (its end being written) is left."""
    result = await uow.connection.execute(
        text(
            "SELECT id FROM procrastinate_jobs"
            " WHERE id = :job AND status = 'doing' AND worker_id = :worker"
            " FOR UPDATE SKIP LOCKED"
        ),
        {"job": job_id, "worker": worker_id},
    )
    return await _fail_if_locked(uow, result, job_id)


async def waiting_elsewhere(uow: UnitOfWork, queue: str) -> dict[str, int]:
    """Jobs waiting on wopeval queues other than `queue`: work for another project."""
    result = await uow.connection.execute(
        text(
            "SELECT queue_name, count(*) FROM procrastinate_jobs"
            f" WHERE status = 'todo' AND {_OURS} AND queue_name <> :queue GROUP BY queue_name"
        ),
        {"tasks": list(TASKS), "queue": queue},
    )
    return {name: int(count) for name, count in result}


async def queue_counts(uow: UnitOfWork, queue: str) -> dict[str, Any]:
    """The queue's jobs by status and the workers alive (for the health endpoint)."""
    result = await uow.connection.execute(
        text(
            "SELECT status::text, count(*) FROM procrastinate_jobs"
            " WHERE queue_name = :queue AND status IN ('todo', 'doing') GROUP BY status"
        ),
        {"queue": queue},
    )
    counts = {status: int(count) for status, count in result}
    workers = await uow.connection.execute(text("SELECT count(*) FROM procrastinate_workers"))
    return {
        "name": queue,
        "waiting": counts.get("todo", 0),
        "running": counts.get("doing", 0),
        "workers": int(workers.scalar_one()),
    }


async def orphaned_runs(uow: UnitOfWork, catalog_digest: str) -> list[tuple[str, str]]:
    """`(run_id, tenant)` of running runs of this catalog that have no waiting or running job."""
    result = await uow.connection.execute(
        text(
            "SELECT run.run_id, run.tenant FROM runs run"
            " WHERE run.status = 'running' AND run.catalog_digest = :digest"
            " AND NOT EXISTS (SELECT 1 FROM procrastinate_jobs job"
            f" WHERE job.status IN ('todo', 'doing') AND job.{_OURS}"
            " AND job.args ->> 'run_id' = run.run_id)"
        ),
        {"digest": catalog_digest, "tasks": list(TASKS)},
    )
    return [(run_id, tenant) for run_id, tenant in result]


async def _fail_if_locked(uow: UnitOfWork, locked: Result[Any], job_id: int) -> bool:
    """Fail the job whose row `locked` (a `SELECT ... FOR UPDATE SKIP LOCKED`) holds, so that
    it is replaced, never resumed; False when the row was not taken."""
    if locked.first() is None:
        return False
    await uow.connection.execute(
        text("SELECT procrastinate_finish_job_v1(:job, 'failed', false)"), {"job": job_id}
    )
    return True
