"""The engine: creates runs, executes them in the background, and ends them once.

A run's body executes as one asyncio task per run. Whatever ends it (its own
end, a failure, a cancel, the host stopping) is decided in `_execute`'s
`finally` and written through the run log, whose run-row transitions settle
every race with a caller's cancel or pause (runlog.py).

With a `RunQueue` (queue mode, run_queue.py) the engine creates runs and
enqueues their work in the same transaction, and executes nothing itself:
worker processes do (`wopeval.worker`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from wopeval import evals
from wopeval.engine.boundary import Boundary, LiveTransport
from wopeval.engine.catalog import Catalog
from wopeval.engine.control import RunControl
from wopeval.engine.erasure import Erasure, erase_tool_content
from wopeval.engine.eval_plan import resolve_eval
from wopeval.engine.eval_runner import EvalContext, run_eval
from wopeval.engine.grants import InvocationGrants
from wopeval.engine.log_writer import LogWriter, OnInsert
from wopeval.engine.notifier import Notifier
from wopeval.engine.outcome import RunFailure, Terminal
from wopeval.engine.replay import check_fork, replay
from wopeval.engine.run_queue import RunQueue, Work
from wopeval.engine.runlog import STOPPED_HOST, RunLog, RunUpdate, Step, Transition, now
from wopeval.engine.workflow_runner import WorkflowContext, run_workflow
from wopeval.settings import Settings
from wopeval.store import OwnedRun, RunRecord, Store, UnitOfWork, next_created_seq
from wopeval.tools import ToolContext
from wopeval.wire import errors, events, ids
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest, ForkRunRequest, RunKind, RunStatus
from wopeval.wire.suite import parse_suite

log = logging.getLogger("wopeval.engine")


@dataclass
class Execution:
    """One executing run as its body sees it: where it writes, what steers it."""

    log: RunLog
    control: RunControl = field(default_factory=RunControl)
    invoked: set[str] = field(default_factory=set)
    """Agents invoked so far (the run row's `agent_ids`)."""


Body = Callable[[Execution], Awaitable[Terminal]]


class Engine:
    def __init__(
        self,
        *,
        settings: Settings,
        store: Store,
        catalog: Catalog,
        notifier: Notifier,
        catalog_digest: str | None = None,
        queue: RunQueue | None = None,
        broadcast: bool = False,
    ) -> None:
        """`catalog_digest` is recorded on each run created here; with a `queue` the runs
        are executed by workers; `broadcast` announces every commit to other processes
        (NOTIFY), which a queue implies."""
        self.settings = settings
        self.store = store
        self.catalog = catalog
        self.notifier = notifier
        self.catalog_digest = catalog_digest
        self.queue = queue
        self.writer = LogWriter(store, notifier, broadcast=broadcast or queue is not None)
        self.grants = InvocationGrants(settings.agent_base_url())
        self._executing: dict[str, tuple[asyncio.Task[None], Execution]] = {}
        self._stopping = False

    # ── lifecycle ────────────────────────────────────────────────────

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

    def run_log(self, record: RunRecord) -> RunLog:
        return RunLog(self.writer, record.run_id, record.tenant)

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

    # ── workflow runs ────────────────────────────────────────────────

    async def create_workflow_run(
        self, principal: Principal, request: CreateRunRequest, *, on_insert: OnInsert | None = None
    ) -> RunRecord:
        workflow = self.catalog.workflows.get(request.workflowId or "")
        if workflow is None:
            raise errors.ValidationFailed(
                f"workflowId {request.workflowId!r} is not a workflow of this host."
            )
        inputs = dict(request.inputs or {})
        record = self._new_record(principal, request, RunKind.WORKFLOW, workflow.id)

        async def body(execution: Execution) -> Terminal:
            context = WorkflowContext(
                log=execution.log,
                control=execution.control,
                catalog=self.catalog,
                boundary=Boundary(self.live_transport(principal.tenant, record.run_id)),
                invoked=execution.invoked,
            )
            return await run_workflow(workflow, inputs, context)

        return await self.launch(record, Step(), body, on_insert, Work())

    # ── eval runs ────────────────────────────────────────────────────

    async def create_eval_run(
        self, principal: Principal, request: CreateRunRequest, *, on_insert: OnInsert | None = None
    ) -> RunRecord:
        """Resolve the request into a plan (every refusal happens here), then run it."""
        async with self.store.reading() as uow:
            plan = await resolve_eval(
                request,
                tenant=principal.tenant,
                features=self.settings.eval,
                catalog=self.catalog,
                uow=uow,
                live_tools=self.settings.live_tools,
            )
        record = self._new_record(
            principal, request, RunKind.EVAL, plan.suite.suiteId, suite_id=plan.suite.suiteId
        )
        record = replace(record, plan=plan.stored())
        opening = Step()
        opening.emit(
            events.EvalStarted(
                suiteId=plan.suite.suiteId,
                suiteVersion=plan.suite.version,
                taskCount=len(plan.tasks),
                modes=list(plan.modes),
                baselineRunId=plan.baseline_run_id,
                fixtureRuns=plan.fixture_runs,
            )
        )

        async def body(execution: Execution) -> Terminal:
            context = EvalContext(
                log=execution.log,
                control=execution.control,
                agents=self.catalog.agents,
                live=self.live_transport(principal.tenant, record.run_id),
                concurrency=self.settings.eval.concurrency,
                alpha=self.settings.eval.alpha,
                regression_verdict=self.settings.eval.regression_verdict,
                invoked=execution.invoked,
            )
            return await run_eval(plan, context)

        async def keep_copies(uow: UnitOfWork, stored: RunRecord) -> None:
            await plan.keep_copies(uow, record.run_id)
            if on_insert is not None:
                await on_insert(uow, stored)

        return await self.launch(record, opening, body, keep_copies, Work(tuple(plan.pairs())))

    def live_transport(self, tenant: str, run_id: str) -> LiveTransport:
        context = ToolContext(tenant=tenant, run_id=run_id)
        return LiveTransport(
            self.catalog.tools,
            context,
            self.settings.tool_timeout_seconds,
            self.grants,
            self.catalog.prices,
            enabled=self.settings.live_tools,
            redactor=self.catalog.redactor,
        )

    # ── shared machinery ─────────────────────────────────────────────

    def _new_record(
        self,
        principal: Principal,
        request: CreateRunRequest,
        kind: RunKind,
        workflow_id: str,
        *,
        suite_id: str | None = None,
    ) -> RunRecord:
        at = now()
        return RunRecord(
            run_id=ids.mint_run_id(principal.tenant),
            tenant=principal.tenant,
            kind=kind,
            workflow_id=workflow_id,
            status=RunStatus.RUNNING,
            owner=principal.owner(),
            request=request,
            plan=None,
            created_at=at,
            started_at=at,
            completed_at=None,
            error=None,
            outputs=None,
            summary=None,
            suite_id=suite_id,
            created_seq=next_created_seq(),
            catalog_digest=self.catalog_digest,
        )

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
            return await self.writer.insert(record, step, self._enqueuing(work or Work(), extra))
        stored = await self.writer.insert(record, step, extra)
        execution = Execution(self.run_log(stored))
        task = asyncio.create_task(self._execute(execution, body), name=f"run:{record.run_id}")
        self._executing[record.run_id] = (task, execution)
        task.add_done_callback(lambda _: self._executing.pop(record.run_id, None))
        return stored

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
        ending.result()

    async def _run_body(self, execution: Execution, body: Body) -> Terminal:
        try:
            return await body(execution)
        except RunFailure as failure:
            return Terminal.failed(failure.code, failure.message, failure.step, failure.details)
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
        while True:
            if control is not None:
                await control.settled()
            ended = await run_log.close(
                terminal.status,
                step,
                update,
                allowed_from=STOPPED_HOST if control is None else frozenset({RunStatus.RUNNING}),
            )
            if ended is not None:
                return

    # ── replay forks ─────────────────────────────────────────────────

    async def fork_run(
        self,
        principal: Principal,
        run_id: str,
        request: ForkRunRequest,
        *,
        on_insert: OnInsert | None = None,
    ) -> RunRecord:
        async with self.store.transaction() as uow:
            source = await uow.runs.get(principal.tenant, run_id)
            if source is None:
                raise errors.NotFound("No such run.")
            check_fork(request, source)
            record = await replay(uow, principal, source)
            if on_insert is not None:
                await on_insert(uow, record)
        self.notifier.notify(record.run_id)
        return record

    # ── erasure ──────────────────────────────────────────────────────

    async def erase_tool_content(self, principal: Principal, run_id: str) -> Erasure:
        async with self.store.transaction() as uow:
            record = await uow.runs.get(principal.tenant, run_id)
            if record is None:
                raise errors.NotFound("No such run.")
            if not record.status.is_terminal:
                raise errors.RunStateConflict(
                    "An active run's tool content cannot be erased yet.",
                    details={"runStatus": record.status.value},
                )
            erased = await erase_tool_content(uow, principal.tenant, run_id)
        self.notifier.rewritten()
        return erased

    async def publish_suite(
        self, principal: Principal, document: dict[str, Any]
    ) -> tuple[dict[str, Any], bool]:
        """Publish a suite version for the caller's tenant: its stored document, and whether
        it is new (publishing the same document again is no change; another is refused).

        The version parsed here is kept (`ParsedSuites`), so its first eval run does not
        validate the document a second time."""
        suite = parse_suite(document)
        evals.check_known_graders(suite, self.catalog.graders)
        stored = suite.to_document()
        async with self.store.transaction() as uow:
            created = await uow.suites.put(
                principal.tenant, suite.suiteId, suite.version, stored, now()
            )
            if not created:
                existing = await uow.suites.get(principal.tenant, suite.suiteId, suite.version)
                if existing != stored:
                    raise errors.SuiteVersionExists()
        self.catalog.parsed_suites.keep(principal.tenant, suite, stored)
        return stored, created

    # ── reads ────────────────────────────────────────────────────────

    async def get_run(self, principal: Principal, run_id: str) -> OwnedRun:
        async with self.store.reading() as uow:
            record = await uow.runs.get(principal.tenant, run_id)
        if record is None:
            raise errors.NotFound("No such run.")
        return record


def _uncancel() -> None:
    """Take back a cancel this task handles itself, so later awaits are not cut short."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
