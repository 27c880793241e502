"""Eval runs end to end: the seeded suites, the event log, the summary, fixtures and trials."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from openwop_client.types import CreateRunRequest
from openwop_client.wire_id import project_id

from .._server import ServerHandle
from .._support import COUNTER_TOOL, NOOP_WORKFLOW, read_counter, unique, wait_terminal
from ._evals import (
    RECORDED_KEY,
    SEEDED_SUITES,
    EvalRun,
    assert_content_free,
    counter_call,
    golden,
    live_calls,
    new_suite_id,
    publish,
    run_eval,
    suite,
    task,
    tool_outcomes,
)

# What each seeded suite is (docs/design.md §4): id, version, tasks in order, passed tasks.
SEEDED: dict[str, tuple[str, str, list[str], list[str]]] = {
    "conformance-eval-recorded-source": (
        "conformance.openwop.evals.recorded-source", "1.0.0", ["record"], ["record"]),
    "conformance-eval-recorded-replay": (
        "conformance.openwop.evals.recorded-replay", "1.0.0", ["record"], ["record"]),
    "conformance-eval-recorded-drift": (
        "conformance.openwop.evals.recorded-drift", "1.0.0", ["record"], ["record"]),
    "conformance-eval-regression-base": (
        "conformance.openwop.evals.regression", "1.0.0",
        ["base-only", "shared-a", "shared-b"], ["shared-a", "shared-b"]),
    "conformance-eval-regression-candidate": (
        "conformance.openwop.evals.regression", "1.1.0",
        ["shared-a", "shared-b", "candidate-only"], ["shared-a", "shared-b", "candidate-only"]),
}  # fmt: skip
ANSWERS = {"record": "done", "base-only": "wrong", "shared-a": "a", "shared-b": "b",
           "candidate-only": "c"}  # fmt: skip


def check_eval_log(run: EvalRun, task_ids: list[str], invocations: int | None = None) -> None:
    """wire digest §2.3: one started, one scored per task after its invocations, one completed."""
    types = [event.type for event in run.events]
    assert [event.sequence for event in run.events] == list(range(len(types)))
    assert types[0] == "run.started"
    assert types[-1] == "run.completed"
    assert types.count("eval.started") == 1
    assert types.count("eval.completed") == 1
    started, completed = types.index("eval.started"), types.index("eval.completed")
    assert completed == len(types) - 2, "eval.completed must come right before run.completed"
    scored = [i for i, kind in enumerate(types) if kind == "eval.scored"]
    assert len(scored) == run.started["taskCount"] == len(task_ids)
    assert all(started < i < completed for i in scored)
    assert sorted(p["taskId"] for p in run.of_type("eval.scored")) == sorted(task_ids)
    # Each task's last trial commits with its score: the invocation closes right before it.
    assert all(types[i - 1] == "agent.invocation-completed" for i in scored)
    expected_invocations = len(task_ids) if invocations is None else invocations
    assert types.count("agent.invocation-started") == expected_invocations
    assert types.count("agent.invocation-completed") == expected_invocations
    closed = [i for i, kind in enumerate(types) if kind == "agent.invocation-completed"]
    assert max(closed) < max(scored) < completed
    (done,) = run.of_type("eval.completed")
    assert done["taskCount"] == len(scored)
    assert done["aggregateScore"] == run.summary["aggregateScore"]
    assert done["passedCount"] == run.summary["passedCount"]
    for event in run.events:
        if event.type.startswith("eval."):
            assert_content_free(event.payload)
    assert_content_free(run.summary)


@pytest.mark.parametrize("fixture_id", SEEDED_SUITES)
def test_each_seeded_suite_runs_to_completed(
    server: ServerHandle, http_a: httpx.Client, fixture_id: str
) -> None:
    suite_id, version, task_ids, passing = SEEDED[fixture_id]
    client = server.client()
    run = run_eval(client, http_a, fixture_id)

    assert run.started["suiteId"] == suite_id
    assert run.started["suiteVersion"] == version
    assert run.started["modes"] == ["golden"]
    assert "baselineRunId" not in run.started
    assert "fixtureRuns" not in run.started
    check_eval_log(run, task_ids)
    # The decision right before each score is that task's own scripted answer.
    for index, event in enumerate(run.events):
        if event.type == "eval.scored":
            decided = run.events[index - 2]
            assert decided.type == "agent.decided"
            assert decided.payload["decision"] == ANSWERS[event.payload["taskId"]]
    assert [t["taskId"] for t in run.summary["tasks"]] == task_ids
    assert [t["taskId"] for t in run.summary["tasks"] if t["passed"]] == passing
    assert run.summary["taskCount"] == len(task_ids)
    assert run.summary["passedCount"] == len(passing)
    assert run.summary["aggregateScore"] == pytest.approx(len(passing) / len(task_ids))
    assert run.summary["passed"] is (passing == task_ids)
    assert run.summary["fixtureMissCount"] == 0
    assert_content_free(run.summary, (RECORDED_KEY, COUNTER_TOOL))

    parsed = client.runs_eval_summary(run.run_id)
    assert parsed is not None
    assert (parsed.suiteId, parsed.suiteVersion) == (suite_id, version)
    assert parsed.aggregateScore == run.summary["aggregateScore"]
    assert [(t.taskId, t.score, t.passed) for t in parsed.tasks] == [
        (t["taskId"], t["score"], t["passed"]) for t in run.summary["tasks"]
    ]
    assert parsed.regression is None
    snapshot = client.runs_get(run.run_id)
    assert snapshot.status == "completed"
    assert snapshot.workflowId == suite_id


def test_the_summary_of_a_workflow_run_is_404(server: ServerHandle, http_a: httpx.Client) -> None:
    client = server.client()
    run_id = client.runs_create(CreateRunRequest(workflowId=NOOP_WORKFLOW)).runId
    wait_terminal(client, run_id)
    assert client.runs_eval_summary(run_id) is None
    response = http_a.get(f"/runs/{project_id(run_id)}/eval-summary")
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"


def test_a_task_served_from_tool_responses_never_moves_the_counter(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    key, marker = unique("served"), unique("fixture-marker")
    served = {"key": key, "count": 4242, "note": marker}
    fixtures = {"toolResponses": [{"tool": COUNTER_TOOL, "args": {"op": "inc", "key": key},
                                   "response": served}]}  # fmt: skip
    document = suite(new_suite_id("served"), [task("served", [counter_call("inc", key)],
                                                   fixtures=fixtures)])  # fmt: skip
    run = run_eval(server.client(), http_a, publish(http_a, document))

    assert tool_outcomes(run.events) == [served]
    assert read_counter(http_a, key) == 0
    assert live_calls(http_a, run.run_id) == 0
    assert run.summary["passed"] is True
    assert run.summary["fixtureMissCount"] == 0
    check_eval_log(run, ["served"])
    for event in run.events:
        if event.type.startswith("eval."):
            assert_content_free(event.payload, (marker, key))
    assert_content_free(run.summary, (marker, key))


def test_an_unmatched_call_under_fail_is_a_miss_that_fails_the_task(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    key = unique("miss")
    fixtures = {
        "toolResponses": [
            {
                "tool": COUNTER_TOOL,
                "args": {"op": "inc", "key": key},
                "response": {"key": key, "count": 7},
            }
        ],
        "onMiss": "fail",
    }
    calls = [counter_call("inc", key), counter_call("read", key)]
    document = suite(new_suite_id("miss"), [task("miss", calls, fixtures=fixtures)])
    run = run_eval(server.client(), http_a, publish(http_a, document))

    returned = run.of_type("agent.tool-returned")
    assert [r["status"] for r in returned] == ["ok", "error"]
    assert returned[1]["error"]["code"] == "fixture_miss"
    assert run.of_type("agent.decided")[0]["decision"] == {"error": "fixture_miss"}
    assert run.summary["fixtureMissCount"] == 1
    assert run.task("miss")["fixtureMissCount"] == 1
    assert run.task("miss")["passed"] is False
    assert run.summary["passed"] is False
    (scored,) = run.of_type("eval.scored")
    assert scored["passed"] is False
    assert scored["x-fixtureMissCount"] == 1
    assert run.of_type("eval.completed")[0]["x-fixtureMissCount"] == 1
    assert read_counter(http_a, key) == 0
    assert live_calls(http_a, run.run_id) == 0


def test_an_is_error_entry_reaches_the_agent_as_a_tool_error(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    key = unique("is-error")
    error = {"code": "upstream_down", "message": "the counter service is down"}
    fixtures = {"toolResponses": [{"tool": COUNTER_TOOL, "args": {"op": "inc", "key": key},
                                   "response": error, "isError": True}]}  # fmt: skip
    expected = golden({"error": "upstream_down"}, "json-match")
    document = suite(
        new_suite_id("is-error"),
        [task("is-error", [counter_call("inc", key)], "unreached", expected=expected,
              fixtures=fixtures)],
    )  # fmt: skip
    run = run_eval(server.client(), http_a, publish(http_a, document))

    (returned,) = run.of_type("agent.tool-returned")
    assert returned["status"] == "error"
    assert returned["error"]["code"] == "upstream_down"
    assert "outcome" not in returned
    assert run.of_type("agent.decided")[0]["decision"] == {"error": "upstream_down"}
    assert run.task("is-error")["passed"] is True
    assert run.summary["fixtureMissCount"] == 0
    assert read_counter(http_a, key) == 0


def test_three_trials_per_task_are_counted_and_fixtures_reset_per_trial(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    key = unique("trials")
    once = {"toolResponses": [{"tool": COUNTER_TOOL, "args": {"op": "inc", "key": key},
                               "response": {"key": key, "count": 1}}]}  # fmt: skip
    tasks: list[dict[str, Any]] = [
        task("steady", [counter_call("inc", key)], fixtures=once),
        task("wrong", [], "no", expected=golden("yes")),
        task("override", [], "yes", trials=2),
    ]
    document = suite(new_suite_id("trials"), tasks, trials=3)
    run = run_eval(server.client(), http_a, publish(http_a, document))

    expected = {"steady": (3, 3, True), "wrong": (3, 0, False), "override": (2, 2, True)}
    for task_id, (trials, passed_trials, passed) in expected.items():
        entry = run.task(task_id)
        assert (entry["trials"], entry["passedTrials"], entry["passed"]) == (
            trials, passed_trials, passed)  # fmt: skip
        assert entry["score"] == pytest.approx(passed_trials / trials)
    scored = {p["taskId"]: p for p in run.of_type("eval.scored")}
    assert {t: (p["x-trials"], p["x-passedTrials"]) for t, p in scored.items()} == {
        t: v[:2] for t, v in expected.items()
    }
    # Each of the three trials of "steady" was served its one fixture entry: no miss, no live call.
    assert run.summary["fixtureMissCount"] == 0
    assert live_calls(http_a, run.run_id) == 0
    assert read_counter(http_a, key) == 0
    check_eval_log(run, list(expected), invocations=3 + 3 + 2)
    assert run.summary["aggregateScore"] == pytest.approx(2 / 3)
    # Every trial's decision (each task decides its own answer) comes before that task's score.
    answers = {"steady": "done", "wrong": "no", "override": "yes"}
    for task_id, answer in answers.items():
        decided = [i for i, e in enumerate(run.events)
                   if e.type == "agent.decided" and e.payload["decision"] == answer]  # fmt: skip
        (score_at,) = [i for i, e in enumerate(run.events)
                       if e.type == "eval.scored" and e.payload["taskId"] == task_id]  # fmt: skip
        assert len(decided) == expected[task_id][0]
        assert max(decided) < score_at


def test_live_shadow_ignores_fixtures_and_calls_the_live_counter(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    before = read_counter(http_a, RECORDED_KEY)
    run = run_eval(
        server.client(), http_a, "conformance-eval-recorded-source", evalModes=["live-shadow"]
    )
    assert run.started["modes"] == ["live-shadow"]
    assert read_counter(http_a, RECORDED_KEY) == before + 1
    assert live_calls(http_a, run.run_id) == 2
    assert tool_outcomes(run.events) == [{"key": RECORDED_KEY, "count": before + 1}] * 2

    # A suite of our own whose fixtures would answer: live-shadow still goes live.
    key = unique("shadow")
    fixtures = {"toolResponses": [{"tool": COUNTER_TOOL, "response": {"key": key, "count": 99}}]}
    document = suite(
        new_suite_id("shadow"),
        [task("shadow", [counter_call("inc", key)], fixtures=fixtures)],
        modes=("golden", "live-shadow"),
    )
    shadow = run_eval(server.client(), http_a, publish(http_a, document), evalModes=["live-shadow"])
    assert tool_outcomes(shadow.events) == [{"key": key, "count": 1}]
    assert read_counter(http_a, key) == 1
