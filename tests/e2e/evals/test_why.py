"""Why a task failed, from the wire: agent exceptions, task details, content rules, refusals."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from openwop_client.types import CreateRunRequest
from openwop_client.wire_id import project_id

from .._server import TENANT_A, ServerHandle
from .._support import assert_error, counter_request, unique, wait_terminal
from ._evals import (
    RECORDED_DRIFT,
    RECORDED_KEY,
    RECORDED_SOURCE,
    counter_call,
    golden,
    new_suite_id,
    publish,
    run_eval,
    suite,
    task,
)
from .conftest import HASH_AGENT, WEATHER_AGENT, WEATHER_WORKFLOW


@pytest.fixture
def http(eval_project_server: ServerHandle) -> Iterator[httpx.Client]:
    with eval_project_server.http() as client:
        yield client


def _tasks(http: httpx.Client, run_id: str) -> dict[str, Any]:
    response = http.get(f"/host/wopeval/runs/{project_id(run_id)}/tasks")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _task(http: httpx.Client, run_id: str, task_id: str) -> dict[str, Any]:
    response = http.get(f"/host/wopeval/runs/{project_id(run_id)}/tasks/{task_id}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_an_agent_that_raises_names_its_exception_on_the_wire_and_in_the_log(
    eval_project_server: ServerHandle, caplog: pytest.LogCaptureFixture
) -> None:
    client = eval_project_server.client()
    with caplog.at_level(logging.ERROR, logger="wopeval.agents"):
        run = client.runs_create(CreateRunRequest(workflowId=WEATHER_WORKFLOW, inputs={}))
        events = wait_terminal(client, run.runId)
    failed = events[-1]
    assert failed.type == "run.failed"
    error = failed.payload["error"]
    assert error["code"] == "agent_failed"
    assert error["message"] == f"agent {WEATHER_AGENT} raised KeyError: 'city'"
    assert error["details"] == {"agentId": WEATHER_AGENT, "exceptionType": "KeyError"}
    assert client.runs_get(run.runId).error is not None
    logged = [record for record in caplog.records if run.runId in record.getMessage()]
    assert logged, "the host did not log the agent's exception"
    # The traceback is logged as redacted text (engine/recording/invocation.py), never as exc_info,
    # which a log handler would format from the raw exception.
    assert logged[0].exc_info is None
    assert "Traceback (most recent call last):" in logged[0].getMessage()
    assert "KeyError: 'city'" in logged[0].getMessage()


def test_a_failing_task_is_explained_in_its_detail(
    eval_project_server: ServerHandle, http: httpx.Client
) -> None:
    client = eval_project_server.client()
    document = suite(
        new_suite_id("why"),
        [
            {"taskId": "no-city", "input": {}, "expected": golden({"city": "Oslo"}, "json-match")},
            {
                "taskId": "wrong-city",
                "input": {"city": "Bergen"},
                "expected": golden({"city": "Oslo", "seen": 0}, "json-match"),
            },
            {
                "taskId": "right-city",
                "input": {"city": "Oslo"},
                "expected": golden({"city": "Oslo", "seen": 0}, "json-match"),
            },
        ],
        target=WEATHER_AGENT,
    )
    run = run_eval(client, http, publish(http, document), WEATHER_AGENT)
    lines = {line["taskId"]: line for line in _tasks(http, run.run_id)["tasks"]}
    assert lines["no-city"]["reason"] == "the agent raised KeyError: 'city'"
    assert lines["right-city"]["reason"] == "passed"
    assert lines["wrong-city"]["passed"] is False
    assert (lines["right-city"]["scored"], lines["right-city"]["score"]) == (True, 1.0)

    raised = _task(http, run.run_id, "no-city")["trialDetails"][0]
    assert raised["error"] == {"type": "KeyError", "message": "'city'"}
    assert "decision" not in raised
    assert raised["calls"][0]["tool"] == "conformance.eval:counter"
    assert raised["calls"][0]["servedBy"] == "live"

    wrong = _task(http, run.run_id, "wrong-city")["trialDetails"][0]
    assert wrong["decision"] == {"city": "Bergen", "seen": 0}
    assert wrong["expected"]["match"]["value"] == {"city": "Oslo", "seen": 0}
    assert wrong["grade"]["passed"] is False
    assert wrong["reason"] == wrong["grade"]["reason"]
    assert wrong["calls"][0]["outcome"] == {"key": "weather", "count": 0}


def test_a_hash_agents_detail_holds_no_content(
    eval_project_server: ServerHandle, http: httpx.Client
) -> None:
    client = eval_project_server.client()
    key, answer = unique("hidden-key"), unique("hidden-answer")
    document = suite(
        new_suite_id("hash"),
        [task("hidden", [counter_call("inc", key)], answer, expected=golden("something-else"))],
        target=HASH_AGENT,
    )
    run = run_eval(client, http, publish(http, document), HASH_AGENT)
    detail = _task(http, run.run_id, "hidden")
    text = json.dumps(detail)
    assert key not in text
    assert answer not in text
    trial = detail["trialDetails"][0]
    assert trial["decisionHash"].startswith("sha256:")
    assert trial["calls"][0]["argsHash"].startswith("sha256:")
    assert "inputs" not in trial["calls"][0]
    assert "outcome" not in trial["calls"][0]
    assert trial["reason"] == "the decision did not match the expected value (exact)"
    assert json.dumps(_tasks(http, run.run_id)).count(answer) == 0


def test_a_drifted_call_is_a_miss_in_the_detail(
    eval_project_server: ServerHandle, http: httpx.Client
) -> None:
    client = eval_project_server.client()
    source = run_eval(client, http, RECORDED_SOURCE)
    drift = run_eval(client, http, RECORDED_DRIFT, fixtureRuns={"record": source.run_id})
    trial = _task(http, drift.run_id, "record")["trialDetails"][0]
    (miss,) = trial["misses"]
    assert trial["calls"][miss["callIndex"]]["servedBy"] == "miss"
    drifted = trial["calls"][miss["callIndex"]]["inputs"]["key"]
    assert drifted != RECORDED_KEY
    assert miss["closest"] == {"entryIndex": 0, "args": {"op": "inc", "key": RECORDED_KEY}}
    assert miss["diff"] == [
        {"path": "$.key", "kind": "changed", "expected": RECORDED_KEY, "actual": drifted}
    ]
    assert trial["reason"].startswith("fixture miss: no unconsumed fixture matches")
    assert RECORDED_KEY in trial["reason"]


def test_the_task_routes_refuse_as_get_run_does(
    eval_project_server: ServerHandle, http: httpx.Client
) -> None:
    client, http_a = eval_project_server.client(), http
    run = run_eval(client, http_a, RECORDED_SOURCE)
    workflow_run = client.runs_create(counter_request(unique("why")))
    wait_terminal(client, workflow_run.runId)
    unknown = f"{TENANT_A}/{'0' * 32}"
    with eval_project_server.http("tenant-b") as http_b:
        for path in ("tasks", "tasks/record"):
            foreign = http_b.get(f"/host/wopeval/runs/{project_id(run.run_id)}/{path}")
            as_run = http_b.get(f"/runs/{project_id(run.run_id)}")
            assert_error(foreign, 403, "id_tenant_mismatch")
            assert foreign.content == as_run.content
            b_unknown = f"tenant-b/{'0' * 32}"
            missing = http_b.get(f"/host/wopeval/runs/{project_id(b_unknown)}/{path}")
            assert missing.content == http_b.get(f"/runs/{project_id(b_unknown)}").content
            assert_error(missing, 404, "not_found")
    assert_error(http_a.get(f"/host/wopeval/runs/{project_id(unknown)}/tasks"), 404, "not_found")
    not_eval = http_a.get(f"/host/wopeval/runs/{project_id(workflow_run.runId)}/tasks")
    assert_error(not_eval, 404, "not_found")
    no_task = http_a.get(f"/host/wopeval/runs/{project_id(run.run_id)}/tasks/nope")
    assert_error(no_task, 404, "not_found")
