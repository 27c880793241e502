"""Creating an eval run: the request resolved into a plan (every refusal happens there,
eval_plan.py), its record opened with `eval.started`, and its body the eval runner
(eval_runner.py), launched by the executor (runs/execution.py)."""

from __future__ import annotations

from dataclasses import replace

from wopeval.engine.eval_runs.eval_plan import resolve_eval
from wopeval.engine.eval_runs.eval_runner import EvalContext, run_eval
from wopeval.engine.runlog.log_writer import OnInsert
from wopeval.engine.runlog.steps import Step
from wopeval.engine.runs.execution import Execution
from wopeval.engine.runs.maker import RunMaker
from wopeval.engine.runs.outcome import Terminal
from wopeval.engine.runs.run_queue import Work
from wopeval.store import RunRecord, UnitOfWork
from wopeval.wire import events
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest, RunKind


async def create_eval_run(
    maker: RunMaker,
    principal: Principal,
    request: CreateRunRequest,
    on_insert: OnInsert | None,
) -> RunRecord:
    settings = maker.settings
    async with maker.executor.store.reading() as uow:
        plan = await resolve_eval(
            request,
            tenant=principal.tenant,
            features=settings.eval,
            catalog=maker.catalog,
            uow=uow,
            live_tools=settings.live_tools,
        )
    record = maker.record(
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
            agents=maker.catalog.agents,
            live=maker.live_transport(principal.tenant, record.run_id),
            grants=maker.grants,
            concurrency=settings.eval.concurrency,
            alpha=settings.eval.alpha,
            regression_verdict=settings.eval.regression_verdict,
            invoked=execution.invoked,
        )
        return await run_eval(plan, context)

    async def keep_copies(uow: UnitOfWork, stored: RunRecord) -> None:
        await plan.keep_copies(uow, principal.tenant, record.run_id)
        if on_insert is not None:
            await on_insert(uow, stored)

    work = Work(tuple(plan.pairs()))
    return await maker.executor.launch(record, opening, body, keep_copies, work)
