"""One eval trial's detail as the host keeps it: decision, expectation, grade, trace, misses,
and the model exchanges with their tokens, latency and cost.

Kept whole in the host's store (`task_trials`); `content.trial_view` decides
what of it a caller sees. Nothing here enters the `EvalSummary` or an `eval.*`
event, which stay content-free (RFC 0081).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import JsonValue

from wopeval import evals
from wopeval.engine.recording.invocation import InvocationResult
from wopeval.store import TrialRow
from wopeval.wire.suite import Task
from wopeval.wire.task_detail import ToolChange

DETAIL_VERSION = 1
"""Version of the stored detail document, for the reader of older rows."""


def trial_row(
    task: Task,
    trial: int,
    *,
    passed: bool,
    result: InvocationResult,
    grade: evals.Grade | None,
    duration_ms: int,
    wire_content: str,
    fixture_misses: int = 0,
) -> TrialRow:
    detail: dict[str, Any] = {
        "v": DETAIL_VERSION,
        "durationMs": duration_ms,
        "expected": task.expected_document,
        "grade": None if grade is None else grade.to_json(),
        "calls": [_call(index, call) for index, call in enumerate(result.executed)],
        "misses": [
            {"callIndex": index, **call.miss.to_json()}
            for index, call in enumerate(result.executed)
            if call.miss is not None
        ],
        "error": result.error,
        "stderr": result.stderr,
        "modelCalls": [
            {"index": index, **exchange} for index, exchange in enumerate(result.models.exchanges)
        ],
        "costUsd": result.models.cost_usd(),
    }
    if not result.failed:
        detail["decision"] = result.decision
    return TrialRow(task.taskId, trial, passed, wire_content, detail, duration_ms, fixture_misses)


def refused_trial_row(
    task: Task, trial: int, wire_content: str, changes: Sequence[ToolChange]
) -> TrialRow:
    """A trial failed closed, unrun: its MCP tools changed since the recording, under
    `tools_changed = "fail"` (the changes name tools only, so they show for every agent)."""
    detail: dict[str, Any] = {
        "v": DETAIL_VERSION,
        "durationMs": 0,
        "expected": task.expected_document,
        "grade": None,
        "calls": [],
        "misses": [],
        "error": None,
        "modelCalls": [],
        "costUsd": None,
        "toolsChanged": [change.model_dump(mode="json") for change in changes],
    }
    return TrialRow(task.taskId, trial, False, wire_content, detail, 0, 0)


def _call(index: int, call: evals.ExecutedCall) -> dict[str, JsonValue]:
    return {
        "index": index,
        "tool": call.tool,
        "servedBy": call.served,
        "status": call.status,
        "delegate": call.is_delegate,
        "durationMs": call.duration_ms,
        "inputs": call.args,
        "argsHash": call.hashed_args(),
        "outcome": call.result,
        "error": call.error,
    }
