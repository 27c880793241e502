"""The runs executing in this process: each is launched once, executes as one asyncio task,
and ends once.

Whatever ends a run (its own end, a failure, a cancel, the host stopping) is decided in
`_execute`'s `finally` and written through the run log, whose run-row transitions settle
every race with a caller's cancel or pause (runlog/runlog.py).

With a `RunQueue` (queue mode, run_queue.py) a launch inserts the run and enqueues its work
in one transaction, and executes nothing here: worker processes do (`wopeval.worker`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from wopeval.engine.runlog.log_writer import LogWriter, OnInsert
from wopeval.engine.runlog.runlog import RunLog
from wopeval.engine.runlog.steps import (
    STOPPED_HOST,
    RunClosed,
    RunUpdate,
    Step,
    StepNotLanded,
    Transition,
    now,
    store_unreachable,
)
from wopeval.engine.runs.control import RunControl
from wopeval.engine.runs.outcome import RunFailure, Terminal
from wopeval.engine.runs.run_queue import RunQueue, Work
from wopeval.store import OwnedRun, RunRecord, Store, UnitOfWork
from wopeval.wire import errors, events
from wopeval.wire.principal import Principal
from wopeval.wire.runs import RunStatus

log = logging.getLogger("wopeval.engine")

END_RETRY_FIRST_SECONDS = 0.1
END_RETRY_MAX_SECONDS = 5.0
"""A run's end that did not land because the database was out of reach goes again after
the first wait, each wait twice the last, up to the most (`Executor.end`)."""


@dataclass
class Execution:
    """One executing run as its body sees it: where it writes, what steers it."""

    log: RunLog
    control: RunControl = field(default_factory=RunControl)
    invoked: set[str] = field(default_factory=set)
    """Agents invoked so far (the run row's `agent_ids`)."""


Body = Callable[[Execution], Awaitable[Terminal]]


class Executor:
    """Launches runs, keeps their tasks while they execute here, and ends each once."""

    def __init__(self, store: Store, writer: LogWriter, queue: RunQueue | None) -> None:
        self.store = store
        self.writer = writer
        self.queue = queue
        self._executing: dict[str, tuple[asyncio.Task[None], Execution]] = {}
        self._stopping = False

    async def get_run(self, principal: Principal, run_id: str) -> OwnedRun:
        async with self.store.reading() as uow:
            record = await uow.runs.get(principal.tenant, run_id)
        if record is None:
            raise errors.NotFound("No such run.")
        return record

    def run_log(self, record: RunRecord) -> RunLog:
        return RunLog(self.writer, record.run_id, record.tenant)

    async def recover(self) -> int:
        """End every run a stopped host left active: one terminal event each, nothing lost.

        A live call whose outcome never landed keeps the status `unknown` in the
        record: its tool may have run, so the run is no usable fixture source.
        """
        async with self.store.reading() as uow:
            stale = [
                (run, await uow.events.invoked_agents(run.handle))
                for run in await uow.runs.active()
            ]
        for run, invoked in stale:
            terminal = Terminal.failed(
                "host_restarted", "The host stopped while this run was active."
            )
            await self.end(self.run_log(run), terminal, set(invoked), None)
        return len(stale)

    async def shutdown(self) -> None:
        self._stopping = True
        tasks = [task for task, _ in self._executing.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.writer.stop()

    def active(self, run_id: str) -> bool:
        return run_id in self._executing

    async def wait_idle(self) -> None:
        """Wait until no run is executing (tests and the embedded CLI use it)."""
        while self._executing:
            await asyncio.gather(
                *[task for task, _ in self._executing.values()], return_exceptions=True
            )

    def stop(self, run_id: str) -> asyncio.Task[None] | None:
        """Cancel the run's body if it executes here; returns the task that ends it."""
        executing = self._executing.get(run_id)
        if executing is None:
            return None
        task, execution = executing
        execution.control.stop()
        task.cancel()
        return task

    def execution(self, run_id: str) -> Execution | None:
        """The run's execution in this process, if it is executing here."""
        executing = self._executing.get(run_id)
        return None if executing is None else executing[1]

    async def launch(
        self,
        record: RunRecord,
        opening: Step,
        body: Body,
        extra: OnInsert | None = None,
        work: Work | None = None,
    ) -> RunRecord:
        """Insert the run with `run.started` + `opening` in one transaction, then execute `body`.

        `extra(uow, stored)` adds the caller's own rows (derived fixtures, the
        idempotency record) to that transaction. In queue mode `work` is enqueued in
        it too, and the workers execute the run instead of `body`.
        """
        if self._stopping:
            raise errors.InternalError("The host is shutting down.")
        step = Step()
        step.emit(
            events.RunStarted(
                workflowId=record.workflow_id, owner=record.owner, sourceRunId=record.parent_run_id
            )
        )
        step.extend(opening)
        if self.queue is not None:
            # A lost answer leaves the run with its jobs, which the workers execute.
            return await self.writer.insert(record, step, self._enqueuing(work or Work(), extra))
        try:
            stored = await self.writer.insert(record, step, extra)
        except Exception as failed:
            if store_unreachable(failed) and not self._stopping:
                # The insert may have landed, its answer lost (the connection cut after
                # the server committed): such a run would stay `running`, executed by
                # no one, until the next start. It ends failed, as a run whose step did
                # not land; one that never landed is not found, and nothing is written.
                self._execute_here(record, _start_not_landed)
            raise
        self._execute_here(stored, body)
        return stored

    def _execute_here(self, record: RunRecord, body: Body) -> None:
        execution = Execution(self.run_log(record))
        task = asyncio.create_task(self._execute(execution, body), name=f"run:{record.run_id}")
        self._executing[record.run_id] = (task, execution)
        task.add_done_callback(lambda _: self._executing.pop(record.run_id, None))

    def _enqueuing(self, work: Work, extra: OnInsert | None) -> OnInsert:
        queue = self.queue
        if queue is None:
            raise RuntimeError("enqueuing needs a run queue")

        async def enqueue(uow: UnitOfWork, stored: RunRecord) -> None:
            if extra is not None:
                await extra(uow, stored)
            await queue.enqueue(uow, stored, work)

        return enqueue

    async def cancel_queued(self, record: RunRecord, reason: str | None) -> bool:
        """Queue mode: end the run `cancelled` now, in one transaction that also cancels its
        queued jobs and aborts its running ones; False when it had ended first."""
        if self.queue is None:
            raise RuntimeError("only a queue-mode engine cancels through the queue")
        step = Step()
        step.emit(events.RunCancelled(reason=reason))
        update = RunUpdate(completed_at=now(), cancel_reason=reason)
        run_log = RunLog(self.writer, record.run_id, record.tenant, self.queue.cancelling())
        return await run_log.transition(Transition(STOPPED_HOST, RunStatus.CANCELLED), step, update)

    async def _execute(self, execution: Execution, body: Body) -> None:
        terminal = await self._run_body(execution, body)
        control = None if self._stopping else execution.control
        ending = asyncio.ensure_future(
            self.end(execution.log, terminal, execution.invoked, control)
        )
        # The terminal event lands before this task finishes, however often it is
        # cancelled meanwhile: whoever waits on the task sees the run ended.
        while not ending.done():
            try:
                await asyncio.shield(ending)
            except asyncio.CancelledError:
                _uncancel()
        with contextlib.suppress(RunClosed):  # a run whose insert never landed (`launch`)
            ending.result()

    async def _run_body(self, execution: Execution, body: Body) -> Terminal:
        try:
            return await body(execution)
        except RunFailure as failure:
            return Terminal.failed(failure.code, failure.message, failure.step, failure.details)
        except StepNotLanded:
            return Terminal.unreachable()
        except asyncio.CancelledError:
            _uncancel()
            if self._stopping:
                return Terminal.failed(
                    "host_stopped", "The host stopped while this run was active."
                )
            return Terminal(RunStatus.CANCELLED)
        except Exception:
            log.exception("run %s crashed", execution.log.run_id)
            return Terminal.failed("internal_error", "The host failed while running this run.")

    async def end(
        self, run_log: RunLog, terminal: Terminal, invoked: set[str], control: RunControl | None
    ) -> None:
        """Write the run's one terminal event. With a `control` the run ends only when it
        is not paused; without one (a stopping or recovering host) it ends now."""
        step = terminal.step
        step.emit(terminal.final_event())
        update = RunUpdate(
            completed_at=now(),
            outputs=terminal.outputs,
            summary=terminal.summary,
            error=terminal.error,
            agent_ids=sorted(invoked),
            idle=terminal.idle,
        )
        delay = END_RETRY_FIRST_SECONDS
        unanswered = False
        while True:
            if control is not None:
                await control.settled()
            try:
                ended = await run_log.close(
                    terminal.status,
                    step,
                    update,
                    allowed_from=STOPPED_HOST
                    if control is None
                    else frozenset({RunStatus.RUNNING}),
                )
            except RunClosed:
                if unanswered:
                    # An earlier try landed though its answer was lost (the connection cut
                    # after the server committed), or another ended the run meanwhile (a
                    # queue-mode cancel): either way it has ended, once.
                    return
                raise
            except Exception as failed:
                # The database out of reach (a restart, a failover): the run would stay
                # active, unended, until the host's next start. Its end goes again until it
                # lands; an end that landed unanswered is then refused (`RunClosed`, taken
                # as ended), and a stopping host leaves it to the next start, which fails
                # every active run.
                if self._stopping or not store_unreachable(failed):
                    raise
                log.warning(
                    "run %s: its end did not land (%s); again in %.1f s",
                    run_log.run_id,
                    type(failed).__name__,
                    delay,
                )
                unanswered = True
                await asyncio.sleep(delay)
                delay = min(delay * 2, END_RETRY_MAX_SECONDS)
                continue
            if ended is not None:
                return


async def _start_not_landed(_execution: Execution) -> Terminal:
    """The body of a run whose insert may have landed unanswered: it never started."""
    raise StepNotLanded("the run's start was not known to have landed")


def _uncancel() -> None:
    """Take back a cancel this task handles itself, so later awaits are not cut short."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
