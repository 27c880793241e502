"""What a worker's jobs do: run an eval chunk's trials, or a workflow run.

A job is delivered at least once, so it starts by reading what already landed:
an eval chunk skips its committed trials, a workflow run skips the nodes an
earlier attempt completed. Every step it writes goes through the engine's one
log writer behind the job's fence (fence.py). A re-run trial repeats its live
tool calls (a tool may have run before the worker died); fixture-served calls
have no effect, so a fully replayed trial re-runs with none.

A job ends early when its run ends elsewhere or its fence refuses it
(`RunClosed`), and hands its work back to the queue (`HandBack`) when the worker
is stopping: the trials running then finish first, within the shutdown grace.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from pydantic import JsonValue

from wopeval.engine.eval_runs.eval_plan import EvalPlan, PlanUnavailable, TaskPlan
from wopeval.engine.eval_runs.eval_runner import EvalContext, run_trial, task_cursors
from wopeval.engine.host import Engine
from wopeval.engine.recording.boundary import Boundary
from wopeval.engine.runlog.runlog import Journal, RunLog
from wopeval.engine.runlog.steps import RunClosed, StepNotLanded
from wopeval.engine.runs.outcome import RunFailure, Terminal
from wopeval.engine.runs.workflow_runner import WorkflowContext, run_workflow
from wopeval.store import RunRecord
from wopeval.worker.fence import JobFence
from wopeval.worker.plans import Plans
from wopeval.worker.queues import JobArgs
from wopeval.worker.watch import RunWatch

log = logging.getLogger("wopeval.worker")


class HandBack(Exception):
    """The worker is stopping: the job goes back to the queue, to run elsewhere."""


@dataclass(frozen=True)
class JobIdentity:
    """Which job of which worker is running: what its fence checks."""

    job_id: int
    worker_id: int


@dataclass
class Runtime:
    """What every job of one worker process shares."""

    engine: Engine
    watch: RunWatch
    plans: Plans
    gate: asyncio.Semaphore
    """Trials running at once in this worker (`--concurrency`)."""
    draining: asyncio.Event = field(default_factory=asyncio.Event)
    """Set on SIGTERM: no job starts another trial."""
    executing: set[int] = field(default_factory=set)
    """The ids of the jobs whose work runs in this process now (`running`)."""

    @contextlib.contextmanager
    def running(self, job: JobIdentity) -> Iterator[None]:
        """Hold `job` as executing here while its work runs: a job the queue holds as this
        worker's and that runs nowhere here had its end go unrecorded (maintenance.py)."""
        self.executing.add(job.job_id)
        try:
            yield
        finally:
            self.executing.discard(job.job_id)

    # ── eval chunks ──────────────────────────────────────────────────

    async def eval_chunk(self, job: JobIdentity, args: JobArgs) -> None:
        store = self.engine.store
        async with store.reading() as uow:
            record = await uow.runs.get(args.tenant, args.run_id)
            if record is None or record.status.is_terminal or args.pairs is None:
                return
            try:
                plan = await self.plans.get(uow, record.handle)
            except PlanUnavailable as exc:
                plan, unavailable = None, str(exc)
            landed = await uow.trials.landed(record.handle, {task for task, _ in args.pairs})
        run_log = RunLog(self.engine.writer, args.run_id, args.tenant, JobFence(*_ids(job), plan))
        if plan is None:
            await self._fail(run_log, "plan_unavailable", unavailable, set())
            return
        todo: dict[str, list[int]] = defaultdict(list)
        for task_id, trial in args.pairs:
            if (task_id, trial) not in landed:
                todo[task_id].append(trial)
        with self.watch.follow(record.handle, record.status) as control:
            context = EvalContext(
                log=run_log,
                control=control,
                agents=self.engine.catalog.agents,
                live=self.engine.live_transport(args.tenant, args.run_id),
                grants=self.engine.grants,
                concurrency=self.engine.settings.queue.concurrency,
                alpha=plan.alpha,
                regression_verdict=plan.regression_verdict,
                invoked=set(),
            )
            closed, lost, crashed = False, False, None
            try:
                async with asyncio.TaskGroup() as group:
                    runs = [
                        group.create_task(self._trials(plan, plan.task(task_id), trials, context))
                        for task_id, trials in todo.items()
                    ]
            except* RunClosed:
                closed = True
            except* StepNotLanded:
                lost = True
            except* Exception as failed:
                crashed = failed
            if lost and crashed is None:
                # A trial's step did not land (the database out of reach): the run ends
                # failed saying so, as a host-run run does (runs/execution.py).
                await self._end(run_log, Terminal.unreachable(), context.invoked)
                return
            if crashed is not None:
                log.error("a chunk of run %s crashed", args.run_id, exc_info=crashed)
                message = "The host failed while running this run."
                await self._fail(run_log, "internal_error", message, context.invoked)
            if closed or crashed is not None:
                return
        if not all(run.result() for run in runs):
            raise HandBack()

    async def _trials(
        self, plan: EvalPlan, task_plan: TaskPlan, trials: list[int], context: EvalContext
    ) -> bool:
        """Run one task's trials in order; False when the worker began to stop first."""
        cursors = task_cursors(task_plan)
        for trial in trials:
            if self.draining.is_set():
                return False

            async def attempt(trial: int = trial) -> None:
                async with self.gate:
                    journal = Journal(context.log)
                    await run_trial(plan, task_plan, trial, cursors, journal, context)
                    # Past cutting once handed over: no `await` between this and `flush`'s
                    # hand-over (a trial cut then landed, then ran its live calls again).
                    context.control.landing()
                    await journal.flush()

            await context.control.unit(attempt)
        return True

    # ── workflow runs ────────────────────────────────────────────────

    async def workflow_run(self, job: JobIdentity, args: JobArgs) -> None:
        engine = self.engine
        async with engine.store.reading() as uow:
            record = await uow.runs.get(args.tenant, args.run_id)
            if record is None or record.status.is_terminal:
                return
            stored = await uow.events.docs_of_types(record.handle, ["node.completed"])
            done = _completed_nodes(stored)
            invoked = set(await uow.events.invoked_agents(record.handle))
            idle = await uow.invocations.idle_nodes(record.handle, list(done))
        run_log = RunLog(engine.writer, args.run_id, args.tenant, JobFence(*_ids(job)))
        workflow = engine.catalog.workflows.get(record.workflow_id)
        if workflow is None:
            await self._fail(run_log, "workflow_not_found", "No such workflow here.", invoked)
            return
        with self.watch.follow(record.handle, record.status) as control:
            context = WorkflowContext(
                log=run_log,
                control=control,
                catalog=engine.catalog,
                boundary=Boundary(engine.live_transport(args.tenant, args.run_id)),
                grants=engine.grants,
                invoked=invoked,
                done=done,
                idle=idle,
            )
            try:
                terminal = await run_workflow(workflow, _inputs(record), context)
            except RunClosed:
                return
            except RunFailure as failure:
                terminal = Terminal.failed(
                    failure.code, failure.message, failure.step, failure.details
                )
            except StepNotLanded:
                terminal = Terminal.unreachable()
            except Exception:
                log.exception("workflow run %s crashed", args.run_id)
                terminal = Terminal.failed(
                    "internal_error", "The host failed while running this run."
                )
            try:
                await engine.end(run_log, terminal, invoked, control)
            except RunClosed:
                return

    async def _fail(self, run_log: RunLog, code: str, message: str, invoked: set[str]) -> None:
        await self._end(run_log, Terminal.failed(code, message), invoked)

    async def _end(self, run_log: RunLog, terminal: Terminal, invoked: set[str]) -> None:
        with contextlib.suppress(RunClosed):
            await self.engine.end(run_log, terminal, invoked, None)


def _ids(job: JobIdentity) -> tuple[int, int]:
    return job.job_id, job.worker_id


def _inputs(record: RunRecord) -> dict[str, JsonValue]:
    return dict(record.request.inputs or {})


def _completed_nodes(docs: dict[int, str]) -> dict[str, dict[str, JsonValue]]:
    """Each completed node's outputs, from its `node.completed` (the latest, if repeated)."""
    done: dict[str, dict[str, JsonValue]] = {}
    for sequence in sorted(docs):
        payload = json.loads(docs[sequence])["payload"]
        done[payload["nodeId"]] = payload.get("outputs") or {}
    return done
