"""Small builders for suite documents and summaries used across the evals tests."""

from __future__ import annotations

from typing import Any

from wopeval.wire import suite
from wopeval.wire.summary import EvalSummary, TaskSummary

SUITE_ID = "conformance.openwop.evals.regression"


def golden_task(task_id: str, **extra: Any) -> dict[str, Any]:
    """A task document expecting the decision `"done"`."""
    return {
        "taskId": task_id,
        "input": {"calls": [], "answer": "done"},
        "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "done"}},
        **extra,
    }


def suite_doc(*tasks: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A suite document with the given task documents (one golden task by default)."""
    return {
        "suiteId": SUITE_ID,
        "version": "1.0.0",
        "modes": ["golden", "regression"],
        "tasks": list(tasks) or [golden_task("only")],
        **extra,
    }


def make_suite(*tasks: dict[str, Any], **extra: Any) -> suite.Suite:
    return suite.parse_suite(suite_doc(*tasks, **extra))


def summary_of(tasks: list[tuple[str, int, int]], *, version: str = "1.0.0") -> EvalSummary:
    """A summary from `(taskId, passedTrials, trials)` triples."""
    entries = [
        TaskSummary(
            taskId=task_id,
            score=passed / trials,
            passed=passed == trials,
            trials=trials,
            passedTrials=passed,
        )
        for task_id, passed, trials in tasks
    ]
    aggregate = sum(t.score for t in entries) / len(entries) if entries else 0.0
    return EvalSummary(
        suiteId=SUITE_ID,
        suiteVersion=version,
        aggregateScore=aggregate,
        passed=all(t.passed for t in entries),
        taskCount=len(entries),
        passedCount=sum(t.passed for t in entries),
        tasks=entries,
    )
