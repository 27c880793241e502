"""A caller's commands to a run: cancel, bulk cancel, pause, resume (runs.md §Cancel, §Pause).

Each command is decided by one run-row transition (runlog/runlog.py): a command that
races the run's own end gets exactly one of the answers the spec allows —
accepted, or refused because the run ended first — never an answer that the
run's log then contradicts.

In queue mode the run executes in worker processes: a cancel ends it at once
(the queue's fence cancels and aborts its jobs in that transaction, and any
later commit of a worker is refused), and a pause or resume is seen by the
workers in the run row (worker/watch.py).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from wopeval.engine.runlog.runlog import RunLog
from wopeval.engine.runlog.steps import (
    STOPPED_HOST,
    RunUpdate,
    Step,
    Transition,
    now,
    store_unreachable,
)
from wopeval.engine.runs.execution import Executor
from wopeval.store import RunRecord
from wopeval.wire import errors, events, ids
from wopeval.wire.principal import Principal
from wopeval.wire.runs import MAX_BULK_CANCEL, DrainPolicy, RunStatus

log = logging.getLogger("wopeval.engine")

CANCEL_WAIT_SECONDS = 5.0
"""How long a cancel waits for the run to reach `cancelled` before answering `cancelling`."""


@dataclass(frozen=True)
class Transitioned:
    """A pause or resume the run accepted."""

    run_id: str
    status: RunStatus
    at: datetime


async def cancel_run(
    executor: Executor, principal: Principal, run_id: str, reason: str | None
) -> RunRecord:
    """Accept a cancel (the run moves to `cancelling`) or refuse it: 409 once it has ended."""
    record = await executor.get_run(principal, run_id)
    _refuse_terminal(record)
    if executor.queue is not None:
        if not await executor.cancel_queued(record, reason):
            _refuse_terminal(await executor.get_run(principal, run_id))
        return await executor.get_run(principal, run_id)
    accepted = await executor.run_log(record).transition(
        Transition(STOPPED_HOST, RunStatus.CANCELLING), update=RunUpdate(cancel_reason=reason)
    )
    if not accepted:
        # Either it ended first (refused), or an earlier cancel was accepted (this one too).
        _refuse_terminal(await executor.get_run(principal, run_id))
    task = executor.stop(run_id)
    if task is not None:
        await asyncio.wait({task}, timeout=CANCEL_WAIT_SECONDS)
    return await executor.get_run(principal, run_id)


async def bulk_cancel(
    executor: Executor, principal: Principal, run_ids: list[str], reason: str | None
) -> list[dict[str, Any]]:
    """runs.md §Bulk cancel: each id on its own, results in request order, never a top-level
    refusal for one id (an id the caller cannot see is an entry's error)."""
    if len(run_ids) > MAX_BULK_CANCEL:
        raise errors.ValidationFailed(
            f"runIds holds at most {MAX_BULK_CANCEL} ids.", details={"maxRunIds": MAX_BULK_CANCEL}
        )

    async def one(raw: str) -> dict[str, Any]:
        try:
            run_id = ids.run_id_from_body(raw, principal.tenant)
            record = await cancel_run(executor, principal, run_id, reason)
        except errors.WireError as error:
            return {"runId": raw, "ok": False, "error": error.envelope()}
        except Exception as failed:
            # The database out of reach for this id's read or its cancel's step: this
            # entry is to be tried again, while the others' answers stand.
            if not store_unreachable(failed):
                raise
            log.warning("the database was out of reach cancelling run %s: %s", raw, failed)
            unavailable = errors.ServiceUnavailable()
            return {"runId": raw, "ok": False, "error": unavailable.envelope()}
        return {"runId": record.run_id, "ok": True, "status": record.status.value}

    return list(await asyncio.gather(*(one(raw) for raw in run_ids)))


async def pause_run(
    executor: Executor, principal: Principal, run_id: str, drain_policy: DrainPolicy
) -> Transitioned:
    record = await executor.get_run(principal, run_id)
    _refuse_terminal(record)
    step = Step()
    step.emit(events.RunPaused(drainPolicy=drain_policy))
    if not await executor.run_log(record).transition(
        Transition(frozenset({RunStatus.RUNNING}), RunStatus.PAUSED), step
    ):
        _refuse_state(await executor.get_run(principal, run_id))
    execution = executor.execution(run_id)
    if execution is not None:
        execution.control.pause(immediate=drain_policy == "immediate")
    return Transitioned(run_id, RunStatus.PAUSED, now())


async def resume_run(executor: Executor, principal: Principal, run_id: str) -> Transitioned:
    record = await executor.get_run(principal, run_id)
    _refuse_terminal(record)
    step = Step()
    step.emit(events.RunResumed())
    run_log = executor.run_log(record)
    if executor.queue is not None:
        run_log = RunLog(executor.writer, record.run_id, record.tenant, executor.queue.resuming())
    if not await run_log.transition(
        Transition(frozenset({RunStatus.PAUSED}), RunStatus.RUNNING), step
    ):
        _refuse_state(await executor.get_run(principal, run_id))
    execution = executor.execution(run_id)
    if execution is not None:
        execution.control.resume()
    return Transitioned(run_id, RunStatus.RUNNING, now())


def _refuse_terminal(record: RunRecord) -> None:
    if record.status.is_terminal:
        raise errors.RunTerminal(details={"runStatus": record.status.value})


def _refuse_state(record: RunRecord) -> None:
    """runs.md §Pause and resume: `run_terminal` once ended, else the refusing status."""
    _refuse_terminal(record)
    raise errors.RunStateConflict(
        f"The run is {record.status.value}.", details={"runStatus": record.status.value}
    )
