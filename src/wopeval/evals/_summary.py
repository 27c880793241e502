"""The EvalSummary of a run, and its regression block (RFC 0081 §C; RFC 0251 §D).

Per task: score = passed trials / trials, `passed` by the task's pass policy,
`latencyMs` the mean trial latency, `costUsd` the cost of all its trials. The
run: `aggregateScore` the mean task score, `totalCostUsd` the cost of every
trial, `passed` when it reaches `thresholds.passScore` and the declared cost
and p95-latency bars hold. Without `passScore` the host bar is 1.0: every task must
pass (a suite that wants less says so).

Advisory rubric tasks (docs/graders.md, "Calibration"; docs/decisions.md, "Advisory
rubric tasks"): a rubric task whose judge may not gate carries `advisory`; its score is
in `aggregateScore` and `passedCount` as shown, but the score bar is held against the
mean of the other tasks only (met when there are none), and the run's paired verdict
leaves it out. The cost and latency bars count every trial: the judge's cost is real.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from wopeval.evals._policy import effective_policy, trials_pass
from wopeval.evals._verdict import DEFAULT_ALPHA, paired_verdict
from wopeval.wire.suite import Suite, Task
from wopeval.wire.summary import Advisory, EvalSummary, Regression, TaskRegression, TaskSummary

DEFAULT_PASS_SCORE = 1.0
"""The host default bar when a suite declares no `thresholds.passScore`."""


@dataclass(frozen=True, slots=True)
class TrialOutcome:
    """What one trial of one task came to (no content: a bool and counts)."""

    passed: bool
    latency_ms: int
    fixture_miss_count: int = 0
    cost_usd: float | None = None
    """Model cost the trial reported; `None` when the agent reports none."""
    unjudged: bool = False
    """A rubric trial its judge did not grade (evals/_rubric.py): failed, and inconclusive."""


def summarise(
    suite: Suite,
    outcomes: Mapping[str, Sequence[TrialOutcome]],
    advisory: Advisory | None = None,
    *,
    made: Mapping[str, TaskSummary] | None = None,
) -> EvalSummary:
    """RFC 0081 §C summary of a run of `suite` from each task's trial outcomes; `advisory`:
    the suite's judge may not gate, so its rubric tasks are advisory. `made`: tasks' entries
    `summarise_task` already made of the same outcomes and `advisory` (an executor makes
    each for the task's `eval.scored`), taken as they are rather than made again.

    Every suite task needs at least one outcome and no other key may appear:
    a summary of tasks the run never ran would be a guess. Raises `ValueError`.
    """
    unknown = set(outcomes) - set(suite.task_ids)
    if unknown:
        raise ValueError(f"outcomes for tasks the suite does not have: {sorted(unknown)}")
    made = made or {}
    tasks = [
        made.get(task.taskId)
        or summarise_task(suite, task, outcomes.get(task.taskId, ()), advisory)
        for task in suite.tasks
    ]
    trials = [o for task in suite.tasks for o in outcomes[task.taskId]]
    aggregate = math.fsum(t.score for t in tasks) / len(tasks)
    costs = [o.cost_usd for o in trials if o.cost_usd is not None]
    total_cost = math.fsum(costs) if costs else None
    return EvalSummary(
        suiteId=suite.suiteId,
        suiteVersion=suite.version,
        aggregateScore=aggregate,
        passed=meets_thresholds(
            suite, gating_score(tasks), total_cost, [o.latency_ms for o in trials]
        ),
        taskCount=len(tasks),
        passedCount=sum(t.passed for t in tasks),
        tasks=tasks,
        totalCostUsd=total_cost,
        fixtureMissCount=sum(o.fixture_miss_count for o in trials),
    )


def summarise_task(
    suite: Suite, task: Task, trials: Sequence[TrialOutcome], advisory: Advisory | None = None
) -> TaskSummary:
    """One task's summary entry from its trials: score = passed / trials, `passed` by policy;
    a rubric task carries `advisory` when given."""
    if not trials:
        raise ValueError(f"no trial outcomes for task {task.taskId!r}")
    results = [o.passed for o in trials]
    costs = [o.cost_usd for o in trials if o.cost_usd is not None]
    return TaskSummary(
        taskId=task.taskId,
        score=sum(results) / len(results),
        passed=trials_pass(effective_policy(suite, task), results),
        costUsd=math.fsum(costs) if costs else None,
        latencyMs=round(math.fsum(o.latency_ms for o in trials) / len(trials)),
        trials=len(trials),
        passedTrials=sum(results),
        fixtureMissCount=sum(o.fixture_miss_count for o in trials),
        unjudgedTrials=sum(o.unjudged for o in trials) or None,
        advisory=advisory if task.expected.kind == "rubric" else None,
    )


def gating_score(tasks: Sequence[TaskSummary]) -> float | None:
    """The mean score of the tasks that gate (not advisory); None when none does."""
    gating = [t.score for t in tasks if t.advisory is None]
    return math.fsum(gating) / len(gating) if gating else None


def meets_thresholds(
    suite: Suite, score: float | None, total_cost: float | None, latencies: Sequence[int]
) -> bool:
    """RFC 0081 §C `passed`: score bar (over `gating_score`; met when no task gates), and
    the cost and p95-latency bars when declared."""
    bars = suite.thresholds
    pass_score = bars.passScore if bars and bars.passScore is not None else DEFAULT_PASS_SCORE
    # "aggregateScore ≥ passScore", advisory tasks left out (docs/decisions.md).
    if score is not None and score < pass_score:
        return False
    # "cost ≤ maxCostUsd" — a run that reported no cost incurred none we know of.
    if bars and bars.maxCostUsd is not None and (total_cost or 0.0) > bars.maxCostUsd:
        return False
    # "the p95 latency bar, when declared".
    return not (bars and bars.maxP95LatencyMs is not None and p95(latencies) > bars.maxP95LatencyMs)


def p95(values: Sequence[int]) -> int:
    """Nearest-rank 95th percentile (the smallest value ≥ 95 % of the values); 0 if none."""
    if not values:
        return 0
    ordered = sorted(values)
    return ordered[math.ceil(0.95 * len(ordered)) - 1]


def with_regression(
    summary: EvalSummary,
    baseline_run_id: str,
    baseline_summary: EvalSummary,
    alpha: float = DEFAULT_ALPHA,
    *,
    include_verdict: bool = True,
) -> EvalSummary:
    """`summary` with `regression` filled (RFC 0251 §D; RFC 0244 §F when `include_verdict`).

    `include_verdict=False` is a host with `regressionVerdict` switched off:
    only `baselineRunId` and `scoreDelta`.
    """
    # RFC 0251 §D: "scoreDelta MUST be this run's aggregateScore minus the baseline's"
    # (both in 0..1, so the difference is in -1..1 as the field requires).
    delta = summary.aggregateScore - baseline_summary.aggregateScore
    if not include_verdict:
        regression = Regression(baselineRunId=baseline_run_id, scoreDelta=delta)
        return summary.model_copy(update={"regression": regression})
    paired = paired_verdict(baseline_summary, summary, alpha=alpha)
    regression = Regression(
        baselineRunId=baseline_run_id,
        scoreDelta=delta,
        verdict=paired.verdict,
        pairedTaskCount=paired.paired_task_count,
        baselineOnlyTaskIds=list(paired.baseline_only_task_ids),
        candidateOnlyTaskIds=list(paired.candidate_only_task_ids),
        tasks=[
            TaskRegression(
                taskId=t.task_id,
                baselineScore=t.baseline_score,
                score=t.score,
                delta=t.delta,
                verdict=t.verdict,
                pValue=t.p_value,
                flaky=t.flaky,
            )
            for t in paired.tasks
        ],
    )
    return summary.model_copy(update={"regression": regression})
