"""The events around each agent invocation and each task (`agent.invocation-started`,
`agent.decided`, `-completed`, `eval.scored`) are built without pydantic (`events.Built`):
each must be written byte for byte as its validated payload would be."""

from __future__ import annotations

from typing import Literal, get_args

import pytest
from pydantic import JsonValue

from wopeval.engine.eval_runs.eval_runner import scored_event
from wopeval.engine.recording.invocation import (
    Source,
    decided,
    invocation_completed,
    invocation_started,
)
from wopeval.wire import events, json_text
from wopeval.wire.summary import TaskSummary


def _written(payload: events.Payload | events.Built) -> str:
    return json_text.compact({"type": payload.TYPE, "payload": payload.to_wire()})


@pytest.mark.parametrize(
    "summary",
    [
        TaskSummary(
            taskId="t-1",
            score=1.0,
            passed=True,
            latencyMs=0,
            trials=1,
            passedTrials=1,
            fixtureMissCount=0,
        ),
        TaskSummary(
            taskId="t-2",
            score=1 / 3,
            passed=False,
            costUsd=0.0125,
            latencyMs=41,
            trials=3,
            passedTrials=1,
            fixtureMissCount=2,
        ),
        TaskSummary(taskId="t-3", score=0.0, passed=False),
    ],
    ids=["passed", "cost", "bare"],
)
def test_a_score_is_written_as_its_validated_payload(summary: TaskSummary) -> None:
    validated = events.EvalScored(
        taskId=summary.taskId,
        score=summary.score,
        passed=summary.passed,
        costUsd=summary.costUsd,
        latencyMs=summary.latencyMs,
        x_trials=summary.trials,
        x_passed_trials=summary.passedTrials,
        x_fixture_miss_count=summary.fixtureMissCount,
    )
    assert _written(scored_event(summary)) == _written(validated)


@pytest.mark.parametrize("source", get_args(Source))
def test_a_start_is_written_as_its_validated_payload(source: Source) -> None:
    validated = events.InvocationStarted(invocationId="inv-1", agentId="agent", source=source)
    assert _written(invocation_started("inv-1", "agent", source)) == _written(validated)


@pytest.mark.parametrize("outcome", ["completed", "failed"])
def test_an_end_is_written_as_its_validated_payload(
    outcome: Literal["completed", "failed"],
) -> None:
    validated = events.InvocationCompleted(invocationId="inv-1", agentId="agent", outcome=outcome)
    assert _written(invocation_completed("inv-1", "agent", outcome)) == _written(validated)


@pytest.mark.parametrize(
    "decision",
    [None, "yes", 0, False, 1.5, [], {}, {"answer": [1, None, {"deep": "é"}]}],
    ids=["null", "text", "zero", "false", "float", "empty-list", "empty-object", "nested"],
)
def test_a_decision_is_written_as_its_validated_payload(decision: JsonValue) -> None:
    validated = events.Decided(agentId="agent", decision=decision)
    assert _written(decided("agent", decision)) == _written(validated)
