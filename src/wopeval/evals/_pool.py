"""`--trials auto`: sharing out a budget of extra trials, and pooling their run with the first.

The wire has no per-task trials property, so extra trials run as an eval run
of their own over the tasks that get them (docs/decisions.md, "`--trials
auto`"). The verdict over all trials is then the paired verdict of a summary
that pools each task's trials from both runs: the same figures `summarise`
gives, from the two summaries' per-task counts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from wopeval.evals._policy import effective_policy, trials_pass
from wopeval.evals._summary import gating_score, meets_thresholds
from wopeval.wire.suite import Suite
from wopeval.wire.summary import EvalSummary, TaskSummary

MAX_TRIALS_PER_RUN = 100
"""A suite task runs at most 100 trials (the suite document's bound)."""


def allocate_trials(
    needs: Mapping[str, int], budget: int, *, per_run: int = MAX_TRIALS_PER_RUN
) -> dict[str, int]:
    """Extra trials per task within `budget`: the smallest needs first, each whole.

    A task gets all it needs or nothing (part of its need would, at the observed
    rates, still not decide it), at most `per_run` at once; ties keep the given
    order. Tasks needing 0 get nothing.
    """
    given: dict[str, int] = {}
    left = budget
    for task_id, need in sorted(needs.items(), key=lambda item: item[1]):
        share = min(need, per_run)
        if 0 < share <= left:
            given[task_id] = share
            left -= share
    return given


def pool_summaries(suite: Suite, first: EvalSummary, extra: EvalSummary) -> EvalSummary:
    """`first` with each task of `extra` pooled into it (no `regression`: judge it afresh).

    Per task: trials, passed trials, misses and cost add up, latency is the mean
    over all trials, `passed` follows the task's pass policy over the pooled
    counts. The run's `passed` re-checks the score and cost bars; a declared p95
    latency bar cannot be re-checked from summaries (they hold no trial latencies),
    so with one the pooled run passes only if the first run passed.
    """
    unknown = [t.taskId for t in extra.tasks if first.task(t.taskId) is None]
    if unknown or extra.suiteId != first.suiteId:
        raise ValueError(f"extra trials for tasks the first run did not score: {unknown}")
    more = {t.taskId: t for t in extra.tasks}
    tasks = [
        _pool_task(suite, task, more[task.taskId]) if task.taskId in more else task
        for task in first.tasks
    ]
    aggregate = math.fsum(t.score for t in tasks) / len(tasks)
    costs = [c for c in (first.totalCostUsd, extra.totalCostUsd) if c is not None]
    total_cost = math.fsum(costs) if costs else None
    bars = suite.thresholds
    # The p95 bar needs every trial's latency, which a summary no longer holds: the first
    # run's verdict on it stands.
    passed = meets_thresholds(suite, gating_score(tasks), total_cost, [])
    if bars and bars.maxP95LatencyMs is not None and not first.passed:
        passed = False
    return first.model_copy(
        update={
            "aggregateScore": aggregate,
            "passed": passed,
            "passedCount": sum(t.passed for t in tasks),
            "tasks": tasks,
            "totalCostUsd": total_cost,
            "fixtureMissCount": first.fixtureMissCount + extra.fixtureMissCount,
            "regression": None,
        }
    )


def _pool_task(suite: Suite, first: TaskSummary, extra: TaskSummary) -> TaskSummary:
    n1, n2 = first.trials or 1, extra.trials or 1
    passed = _passed(first, n1) + _passed(extra, n2)
    trials = n1 + n2
    task = suite.task(first.taskId)
    if task is None:
        raise ValueError(f"task {first.taskId!r} is not in the suite")
    costs = [c for c in (first.costUsd, extra.costUsd) if c is not None]
    latencies = [(first.latencyMs, n1), (extra.latencyMs, n2)]
    known = [(ms, n) for ms, n in latencies if ms is not None]
    latency = (
        round(math.fsum(ms * n for ms, n in known) / sum(n for _, n in known)) if known else None
    )
    return TaskSummary(
        taskId=first.taskId,
        score=passed / trials,
        passed=trials_pass(
            effective_policy(suite, task), [True] * passed + [False] * (trials - passed)
        ),
        costUsd=math.fsum(costs) if costs else None,
        latencyMs=latency,
        trials=trials,
        passedTrials=passed,
        fixtureMissCount=(first.fixtureMissCount or 0) + (extra.fixtureMissCount or 0),
        advisory=first.advisory,
    )


def _passed(task: TaskSummary, trials: int) -> int:
    return task.passedTrials if task.passedTrials is not None else round(task.score * trials)
