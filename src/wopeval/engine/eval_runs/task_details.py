"""Reading an eval run's tasks: the scored figures, the paired verdict and why each failed.

One read for the task routes, the CLI's `explain` and the reports: the
`eval.scored` events give each task's figures, the summary's regression its
verdict, the recorded trials the reason — all through `content.trial_view`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from wopeval import evals
from wopeval.engine.recording import content
from wopeval.store import OwnedRun, RunHandle, RunRecord, StoredTrial, UnitOfWork
from wopeval.wire import errors, events
from wopeval.wire.runs import RunKind
from wopeval.wire.summary import EvalSummary, TaskRegression
from wopeval.wire.task_detail import (
    MoreTrialsView,
    TaskDetail,
    TaskLine,
    TaskList,
    ToolChange,
    TrialDetail,
)


async def task_list(uow: UnitOfWork, record: OwnedRun, *, alpha: float) -> TaskList:
    """`alpha`: the host's, as the run's verdict was judged at."""
    _require_eval(record)
    trials = _by_task(await uow.trials.of_run(record.handle))
    scored = await _scored(uow, record.handle)
    verdicts = _verdicts(record.summary)
    sources = await _source_model_calls(uow, record)
    changed = await _tools_changed(uow, record)
    more = await _more_trials(uow, record, alpha)
    order = list(scored) + [task_id for task_id in trials if task_id not in scored]
    return TaskList(
        runId=record.run_id,
        tasks=[
            _line(
                task_id,
                scored.get(task_id),
                trials.get(task_id, []),
                verdicts,
                sources.get(task_id),
                changed,
                more,
            )
            for task_id in order
        ],
    )


async def task_detail(
    uow: UnitOfWork, record: OwnedRun, task_id: str, *, alpha: float
) -> TaskDetail:
    _require_eval(record)
    trials = await uow.trials.of_run(record.handle, task_id)
    if not trials:
        raise errors.NotFound("No such task in this run.")
    scored = (await _scored(uow, record.handle)).get(task_id)
    source_model_calls = (await _source_model_calls(uow, record)).get(task_id)
    changed = await _tools_changed(uow, record)
    more = await _more_trials(uow, record, alpha)
    verdicts = _verdicts(record.summary)
    line = _line(task_id, scored, trials, verdicts, source_model_calls, changed, more)
    views: list[TrialDetail] = [content.trial_view(t, source_model_calls) for t in trials]
    return TaskDetail(**line.model_dump(), runId=record.run_id, trialDetails=views)


async def _tools_changed(uow: UnitOfWork, record: OwnedRun) -> dict[str, list[ToolChange]]:
    """Each task's MCP tool changes since its source, as compared at create (the plan's)."""
    plan = await uow.runs.plan(record.handle)
    if plan is None:
        return {}
    return {
        task_id: list(contract.changed)
        for task_id, contract in plan.toolContracts.items()
        if contract.changed is not None
    }


async def _more_trials(
    uow: UnitOfWork, record: OwnedRun, alpha: float
) -> dict[str, MoreTrialsView]:
    """Each inconclusive task's trials to decide it, against the baseline the plan judged."""
    plan = await uow.runs.plan(record.handle)
    summary = record.summary
    if plan is None or plan.baselineSummary is None or summary is None:
        return {}
    if summary.regression is None or summary.regression.verdict is None:
        return {}  # `regressionVerdict` switched off: no task is called inconclusive
    found = evals.inconclusive_more_trials(plan.baselineSummary, summary, alpha=alpha)
    return {task_id: more.view() for task_id, more in found.items()}


async def _source_model_calls(uow: UnitOfWork, record: OwnedRun) -> dict[str, int]:
    """Per task with a fixture source: the model exchanges its agent made there, to say so
    when a trial made none (evals/_idle.py)."""
    plan = await uow.runs.plan(record.handle)
    sources = {} if plan is None else plan.fixtureRuns or {}
    if plan is None or not sources:
        return {}
    agent_id = plan.agentId
    # The plan's sources passed RFC 0252 §C at create; their handles come from the same check.
    owned = await uow.runs.states(record.tenant, set(sources.values()))
    counts = await uow.model_calls.own_counts([run.handle for run in owned.values()], agent_id)
    return {task_id: counts.get(source, 0) for task_id, source in sources.items()}


def _require_eval(record: RunRecord) -> None:
    if record.kind is not RunKind.EVAL:
        raise errors.NotFound("This run is not an eval run.")


def _by_task(trials: list[StoredTrial]) -> dict[str, list[StoredTrial]]:
    grouped: dict[str, list[StoredTrial]] = defaultdict(list)
    for trial in trials:
        grouped[trial.task_id].append(trial)
    return grouped


async def _scored(uow: UnitOfWork, run: RunHandle) -> dict[str, dict[str, Any]]:
    """Each scored task's `eval.scored` payload, in the order the tasks were scored."""
    docs = await uow.events.docs_of_types(run, [events.EvalScored.TYPE])
    payloads = [json.loads(docs[sequence])["payload"] for sequence in sorted(docs)]
    return {payload["taskId"]: payload for payload in payloads}


def _verdicts(summary: EvalSummary | None) -> dict[str, TaskRegression]:
    regression = None if summary is None else summary.regression
    if regression is None:
        return {}
    return {task.taskId: task for task in regression.tasks or []}


def _line(
    task_id: str,
    scored: dict[str, Any] | None,
    trials: list[StoredTrial],
    verdicts: dict[str, TaskRegression],
    source_model_calls: int | None,
    changed: dict[str, list[ToolChange]],
    more: dict[str, MoreTrialsView],
) -> TaskLine:
    failing = [trial for trial in trials if not trial.passed]
    reason = "passed"
    if failing:
        first = failing[0]
        reason = content.reason_line(first.detail, first.wire_content == "full", source_model_calls)
        if scored is not None and scored["passed"]:
            reason = f"passed ({len(failing)} of {len(trials)} trials failed: {reason})"
    else:
        # A pass that did not ask the model its source asked says so (evals/_idle.py).
        lines = [
            content.reason_line(t.detail, t.wire_content == "full", source_model_calls)
            for t in trials
        ]
        reason = next((line for line in lines if line != "passed"), reason)
    paired = verdicts.get(task_id)
    if scored is None:
        passed_so_far = sum(trial.passed for trial in trials)
        return TaskLine(
            taskId=task_id,
            scored=False,
            passed=passed_so_far == len(trials),
            score=passed_so_far / len(trials) if trials else 0.0,
            trials=len(trials),
            passedTrials=passed_so_far,
            fixtureMissCount=sum(
                len(trial.detail["misses"])
                + sum(e["servedBy"] == "miss" for e in trial.detail.get("modelCalls", []))
                for trial in trials
            ),
            reason=reason,
            toolsChanged=changed.get(task_id),
        )
    return TaskLine(
        taskId=task_id,
        scored=True,
        passed=scored["passed"],
        score=scored["score"],
        trials=scored.get("x-trials", len(trials)),
        passedTrials=scored.get("x-passedTrials", sum(trial.passed for trial in trials)),
        fixtureMissCount=scored.get("x-fixtureMissCount", 0),
        costUsd=scored.get("costUsd"),
        latencyMs=scored.get("latencyMs"),
        verdict=None if paired is None else paired.verdict.value,
        pValue=None if paired is None else paired.pValue,
        flaky=None if paired is None else paired.flaky,
        moreTrials=more.get(task_id),
        reason=reason,
        toolsChanged=changed.get(task_id),
    )
