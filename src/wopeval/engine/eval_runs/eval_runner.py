"""The eval executor (G6): short named steps over a resolved plan — run_task, run_trial, finish.

It never goes back to the request and never reads a source run: the plan
already holds every fixture entry a task is served.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from wopeval import evals
from wopeval.agents import AgentRegistry
from wopeval.engine.eval_runs.eval_plan import EvalPlan, TaskPlan
from wopeval.engine.eval_runs.grading import grade_trial
from wopeval.engine.eval_runs.judging import judge_trial
from wopeval.engine.eval_runs.trial_detail import refused_trial_row, trial_row
from wopeval.engine.recording.boundary import Boundary, FixtureServer, LiveTransport
from wopeval.engine.recording.grants import InvocationGrants
from wopeval.engine.recording.invocation import Invocation, Where, run_invocation
from wopeval.engine.recording.models import ModelServer
from wopeval.engine.runlog.runlog import Handing, Journal, RunLog
from wopeval.engine.runlog.steps import Step, StepNotLanded
from wopeval.engine.runs.control import RunControl
from wopeval.engine.runs.outcome import Terminal
from wopeval.wire import events
from wopeval.wire.runs import RunStatus
from wopeval.wire.summary import Advisory, EvalSummary, TaskSummary


@dataclass(frozen=True)
class EvalContext:
    log: RunLog
    control: RunControl
    agents: AgentRegistry
    live: LiveTransport
    grants: InvocationGrants[Invocation] | None
    concurrency: int
    alpha: float
    regression_verdict: bool
    invoked: set[str]


async def run_eval(plan: EvalPlan, context: EvalContext) -> Terminal:
    outcomes: dict[str, list[evals.TrialOutcome]] = {}
    summaries: dict[str, TaskSummary] = {}
    # `concurrency` workers take the plan's tasks in order, each running one at a time: the
    # tasks start in the order a semaphore over one asyncio task per plan task would start
    # them, without an asyncio task, a wait on the semaphore and its wake-up per plan task.
    pending = iter(plan.tasks)

    async def worker() -> None:
        handing = Handing() if context.log.overlaps else None
        try:
            for task_plan in pending:
                task_id = task_plan.task.taskId
                outcomes[task_id], summaries[task_id] = await run_task(
                    plan, task_plan, context, handing
                )
            if handing is not None:
                await handing.landed()
        except BaseException:
            if handing is not None:
                handing.abandon()
            raise

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(min(context.concurrency, len(plan.tasks))):
                group.create_task(worker())
    except* StepNotLanded as lost:
        # The group raises what its tasks raise, grouped: a trial's step that did not land
        # ends the run failed `store_unreachable` (runs/execution.py), not as a crash.
        raise lost.exceptions[0] from None
    return finish(
        plan,
        outcomes,
        alpha=context.alpha,
        regression_verdict=context.regression_verdict,
        summaries=summaries,
    )


Cursors = tuple[evals.FixtureCursor | None, evals.ModelReplayCursor | None]
"""A task's consume-once state over its fixtures and its replayed model answers."""


def task_cursors(task_plan: TaskPlan) -> Cursors:
    """Fresh cursors for a task's trials (each trial resets them, RFC 0244 §D)."""
    index = task_plan.fixture_index
    cursor = None if index is None else evals.FixtureCursor(index)
    models = None
    if task_plan.model_fixtures is not None:
        models = evals.ModelReplayCursor(task_plan.model_fixtures)
    return cursor, models


async def run_task(
    plan: EvalPlan, task_plan: TaskPlan, context: EvalContext, handing: Handing | None
) -> tuple[list[evals.TrialOutcome], TaskSummary]:
    """The task's trials and its summary entry (as its `eval.scored` says it); with the
    worker's `handing`, each trial's step lands while the next trial runs."""
    cursors = task_cursors(task_plan)
    trials: list[evals.TrialOutcome] = []
    summaries: list[TaskSummary] = []
    for trial in range(task_plan.trials):
        last = trial == task_plan.trials - 1

        async def attempt(trial: int = trial, last: bool = last) -> evals.TrialOutcome:
            journal = Journal(context.log, handing)
            outcome = await run_trial(plan, task_plan, trial, cursors, journal, context)
            if last:
                summary = task_summary(plan, task_plan, [*trials, outcome])
                summaries.append(summary)
                journal.emit(scored_event(summary))
            if handing is None:
                # No `await` between this and the step's hand-over in `flush`.
                context.control.landing()
                await journal.flush()
                return outcome
            # The worker's step before this one lands first.
            await handing.landed()
            # No `await` between this and the step's hand-over.
            context.control.landing()
            handing.hand(journal)
            await handing.taken()
            return outcome

        trials.append(await context.control.unit(attempt))
    # The last trial's unit ran to its end once (a unit cut by a pause runs again whole).
    return trials, summaries[-1]


async def run_trial(
    plan: EvalPlan,
    task_plan: TaskPlan,
    trial: int,
    cursors: Cursors,
    journal: Journal,
    context: EvalContext,
) -> evals.TrialOutcome:
    if plan.refuses(task_plan):
        # tools_changed = "fail": the agent is not run against tools it was not recorded with.
        changes = task_plan.tools.changed or ()
        journal.record_trial(
            refused_trial_row(task_plan.task, trial, plan.agent.wire_content, changes)
        )
        return evals.TrialOutcome(passed=False, latency_ms=0)
    cursor, model_cursor = cursors
    fixtures = models = None
    if cursor is not None:
        # RFC 0244 §D: consumption resets at each trial.
        cursor.reset()
        fixtures = FixtureServer(cursor)
    if model_cursor is not None:
        model_cursor.reset()
        models = ModelServer(model_cursor)
    invocation = Invocation(
        spec=plan.agent,
        input=task_plan.task.input,
        journal=journal,
        boundary=Boundary(context.live, fixtures, models, task_plan.recorded_tools),
        agents=context.agents,
        where=Where(context.log.run_id, task_plan.task.taskId, trial),
        grants=context.grants,
    )
    started = time.perf_counter()
    result = await run_invocation(invocation, source="run-api")
    latency = int((time.perf_counter() - started) * 1000)
    context.invoked.update(result.invoked_agents)
    # A model request the source never made counts as a fixture miss (docs/llm.md).
    misses = (cursor.miss_count if cursor is not None else 0) + result.models.misses
    grade = None
    expected = task_plan.task.expected
    if not result.failed and expected.kind == "rubric" and plan.judge is not None:
        # Before the trial's row: the judge's exchange and cost belong to the trial.
        grade = await judge_trial(
            plan.judge,
            task_plan.task,
            result.decision,
            journal,
            result.models,
            context.live.prices,
        )
    elif not result.failed:
        grade = await grade_trial(expected, result.decision, result.executed, plan.graders)
    # docs/design.md §3: a miss under `fail` fails the task, whatever the agent decided after it.
    passed = not result.failed and misses == 0 and grade is not None and grade.passed
    journal.record_trial(
        trial_row(
            task_plan.task,
            trial,
            passed=passed,
            result=result,
            grade=grade,
            duration_ms=latency,
            wire_content=plan.agent.wire_content,
            fixture_misses=misses,
        )
    )
    return evals.TrialOutcome(
        passed=passed,
        latency_ms=latency,
        fixture_miss_count=misses,
        cost_usd=result.models.cost_usd(),
        unjudged=grade is not None and grade.unjudged,
    )


def scored(
    plan: EvalPlan, task_plan: TaskPlan, trials: Sequence[evals.TrialOutcome]
) -> events.Built:
    return scored_event(task_summary(plan, task_plan, trials))


def task_summary(
    plan: EvalPlan, task_plan: TaskPlan, trials: Sequence[evals.TrialOutcome]
) -> TaskSummary:
    """The task's entry of the run's summary (its `eval.scored` leaves `advisory` out)."""
    return evals.summarise_task(plan.suite, task_plan.task, trials, _advisory(plan))


def _advisory(plan: EvalPlan) -> Advisory | None:
    return None if plan.judge is None else plan.judge.advisory


def scored_event(summary: TaskSummary) -> events.Built:
    """`eval.scored`'s payload (`events.EvalScored`, as its `to_wire` writes it) from a task's
    summary: a `TaskSummary` holds each value under the same bounds, so validating them
    again, then dumping them back out, bought nothing on every task's path."""
    held = {
        "taskId": summary.taskId,
        "score": summary.score,
        "passed": summary.passed,
        "costUsd": summary.costUsd,
        "latencyMs": summary.latencyMs,
        "x-trials": summary.trials,
        "x-passedTrials": summary.passedTrials,
        "x-fixtureMissCount": summary.fixtureMissCount,
    }
    # As `to_wire`: unset optionals stay out.
    wire = {key: value for key, value in held.items() if value is not None}
    return events.Built(events.EvalScored.TYPE, wire)


def finish(
    plan: EvalPlan,
    outcomes: Mapping[str, Sequence[evals.TrialOutcome]],
    *,
    alpha: float,
    regression_verdict: bool,
    summaries: Mapping[str, TaskSummary] | None = None,
) -> Terminal:
    """The run's ending; `summaries`: tasks' entries already made (`task_summary`)."""
    summary = evals.summarise(plan.suite, outcomes, _advisory(plan), made=summaries)
    if plan.baseline_run_id is not None and plan.baseline_summary is not None:
        summary = evals.with_regression(
            summary,
            plan.baseline_run_id,
            plan.baseline_summary,
            alpha,
            include_verdict=regression_verdict,
        )
    step = Step()
    step.emit(completed(summary))
    return Terminal(
        RunStatus.COMPLETED, step, outputs={"evalSummary": summary.to_wire()}, summary=summary
    )


def completed(summary: EvalSummary) -> events.EvalCompleted:
    return events.EvalCompleted(
        aggregateScore=summary.aggregateScore,
        passed=summary.passed,
        taskCount=summary.taskCount,
        passedCount=summary.passedCount,
        regressionVsBaseline=summary.regression.scoreDelta if summary.regression else None,
        x_fixture_miss_count=summary.fixtureMissCount,
    )
