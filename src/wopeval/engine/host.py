"""The engine: creates runs, executes them in the background, cancels and recovers them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace

from wopeval.engine.boundary import LiveTransport
from wopeval.engine.catalog import Catalog
from wopeval.engine.erasure import Erasure, erase_tool_content
from wopeval.engine.eval_plan import resolve_eval
from wopeval.engine.eval_runner import EvalContext, run_eval
from wopeval.engine.notifier import Notifier
from wopeval.engine.outcome import RunFailure, Terminal
from wopeval.engine.replay import check_fork, replay
from wopeval.engine.runlog import RunLog, Step, now, render_rows
from wopeval.engine.workflow_runner import run_workflow
from wopeval.settings import Settings
from wopeval.store import RunRecord, Store, UnitOfWork, next_created_seq
from wopeval.tools import ToolContext
from wopeval.wire import errors, events, ids
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest, ForkRunRequest, RunKind, RunStatus

log = logging.getLogger("wopeval.engine")

Body = Callable[[RunLog, set[str]], Awaitable[Terminal]]
OnInsert = Callable[[UnitOfWork, RunRecord], Awaitable[None]]
"""Adds the caller's own rows to the transaction that inserts a new run (e.g. the
idempotency record that names it), so the two land together or not at all."""


class Engine:
    def __init__(
        self, *, settings: Settings, store: Store, catalog: Catalog, notifier: Notifier
    ) -> None:
        self.settings = settings
        self.store = store
        self.catalog = catalog
        self.notifier = notifier
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._stopping = False

    # ── lifecycle ────────────────────────────────────────────────────

    async def recover(self) -> int:
        """Fail every run a stopped host left active: one `run.failed` each, nothing lost."""
        async with self.store.reading() as uow:
            stale = await uow.runs.active()
        for run in stale:
            log_ = RunLog(self.store, self.notifier, run.run_id, run.tenant, run.last_sequence)
            terminal = Terminal.failed(
                "host_restarted", "The host stopped while this run was active."
            )
            await self._finish(log_, terminal, set(run.agent_ids))
        return len(stale)

    async def shutdown(self) -> None:
        self._stopping = True
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def active(self, run_id: str) -> bool:
        return run_id in self._tasks

    async def wait_idle(self) -> None:
        """Wait until no run is executing (tests and the embedded CLI use it)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks.values()), return_exceptions=True)

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

        async def body(run_log: RunLog, invoked: set[str]) -> Terminal:
            live = self._live(principal, record.run_id)
            return await run_workflow(
                workflow, inputs, log=run_log, catalog=self.catalog, transport=live, invoked=invoked
            )

        return await self.launch(record, Step(), body, on_insert)

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

        async def body(run_log: RunLog, invoked: set[str]) -> Terminal:
            context = EvalContext(
                log=run_log,
                agents=self.catalog.agents,
                live=self._live(principal, record.run_id),
                concurrency=self.settings.eval.concurrency,
                alpha=self.settings.eval.alpha,
                regression_verdict=self.settings.eval.regression_verdict,
                invoked=invoked,
            )
            return await run_eval(plan, context)

        async def keep_copies(uow: UnitOfWork, stored: RunRecord) -> None:
            await plan.keep_copies(uow, record.run_id)
            if on_insert is not None:
                await on_insert(uow, stored)

        return await self.launch(record, opening, body, keep_copies)

    def _live(self, principal: Principal, run_id: str) -> LiveTransport:
        context = ToolContext(tenant=principal.tenant, run_id=run_id)
        return LiveTransport(self.catalog.tools, context, self.settings.tool_timeout_seconds)

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
            request=request.model_dump(mode="json", exclude_none=True),
            plan=None,
            created_at=at,
            started_at=at,
            completed_at=None,
            error=None,
            outputs=None,
            summary=None,
            suite_id=suite_id,
            created_seq=next_created_seq(),
        )

    async def launch(
        self,
        record: RunRecord,
        opening: Step,
        body: Body,
        write: OnInsert | None = None,
    ) -> RunRecord:
        """Insert the run with `run.started` + `opening` in one transaction, then execute `body`.

        `write(uow, stored)` adds the caller's own rows (derived fixtures, the
        idempotency record) to that transaction.
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
        rows, calls = render_rows(record.run_id, 0, step)
        stored = replace(record, last_sequence=len(rows) - 1)
        async with self.store.transaction() as uow:
            await uow.runs.insert(stored)
            await uow.events.append(rows)
            await uow.tool_calls.append(calls)
            if write is not None:
                await write(uow, stored)
        run_log = RunLog(
            self.store, self.notifier, record.run_id, record.tenant, stored.last_sequence
        )
        task = asyncio.create_task(self._execute(run_log, body), name=f"run:{record.run_id}")
        self._tasks[record.run_id] = task
        task.add_done_callback(lambda _: self._tasks.pop(record.run_id, None))
        return stored

    async def _execute(self, run_log: RunLog, body: Body) -> None:
        invoked: set[str] = set()
        terminal = Terminal.failed("internal_error", "The run ended unexpectedly.")
        try:
            terminal = await body(run_log, invoked)
        except RunFailure as failure:
            terminal = Terminal.failed(failure.code, failure.message, failure.step)
        except asyncio.CancelledError:
            terminal = (
                Terminal.failed("host_stopped", "The host stopped while this run was active.")
                if self._stopping
                else Terminal(RunStatus.CANCELLED, reason="cancelled by the caller")
            )
        except Exception:
            log.exception("run %s crashed", run_log.run_id)
            terminal = Terminal.failed("internal_error", "The host failed while running this run.")
        finally:
            await asyncio.shield(self._finish(run_log, terminal, invoked))

    async def _finish(self, run_log: RunLog, terminal: Terminal, invoked: set[str]) -> None:
        step = terminal.step
        step.emit(terminal.final_event())
        await run_log.commit(
            step,
            status=terminal.status.value,
            completed_at=now(),
            outputs=terminal.outputs,
            summary=terminal.summary,
            error=terminal.error,
            agent_ids=sorted(invoked),
        )

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
            return await erase_tool_content(uow, principal.tenant, run_id)

    # ── reads and cancel ─────────────────────────────────────────────

    async def get_run(self, principal: Principal, run_id: str) -> RunRecord:
        async with self.store.reading() as uow:
            record = await uow.runs.get(principal.tenant, run_id)
        if record is None:
            raise errors.NotFound("No such run.")
        return record

    async def cancel_run(self, principal: Principal, run_id: str) -> RunRecord:
        record = await self.get_run(principal, run_id)
        if record.status.is_terminal:
            raise errors.RunTerminal(details={"runStatus": record.status.value})
        task = self._tasks.get(run_id)
        if task is not None:
            task.cancel()
            await asyncio.wait({task}, timeout=10)
        return await self.get_run(principal, run_id)
