"""RFC 0252: eval fixtures from a recorded run (the `v2-eval-recorded-fixtures` legs).

The seeded recorded suites share the live counter key `conformance-recorded`,
so every check reads the counter before and after rather than a fixed value.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from openwop_client.types import CreateRunRequest

from .._server import TENANT_A, TENANT_B, ServerHandle
from .._support import (
    COUNTER_TOOL,
    COUNTER_WORKFLOW,
    NOOP_WORKFLOW,
    read_counter,
    unique,
    wait_terminal,
)
from ._evals import (
    RECORDED_DRIFT,
    RECORDED_KEY,
    RECORDED_REPLAY,
    RECORDED_SOURCE,
    EvalRun,
    assert_content_free,
    assert_no_id,
    counter_call,
    eval_body,
    golden,
    live_calls,
    new_suite_id,
    payloads,
    post_refused,
    publish,
    run_eval,
    suite,
    task,
    tool_outcomes,
)

DRIFT_KEY = "conformance-recorded-drift"


@pytest.fixture(scope="module")
def sources(server: ServerHandle) -> dict[str, EvalRun]:
    """One completed run of the source fixture per tenant; each moved its tenant's counter."""
    found = {}
    for tenant in (TENANT_A, TENANT_B):
        with server.http(tenant) as http:
            before = read_counter(http, RECORDED_KEY)
            run = run_eval(server.client(tenant), http, RECORDED_SOURCE)
            assert read_counter(http, RECORDED_KEY) == before + 1
            assert tool_outcomes(run.events) == [{"key": RECORDED_KEY, "count": before + 1}] * 2
            assert live_calls(http, run.run_id) == 2
            found[tenant] = run
    return found


@pytest.mark.parametrize("tenant", [TENANT_A, TENANT_B])
def test_source_replayed(server: ServerHandle, sources: dict[str, EvalRun], tenant: str) -> None:
    source = sources[tenant]
    with server.http(tenant) as http:
        before = read_counter(http, RECORDED_KEY)
        replay = run_eval(server.client(tenant), http, RECORDED_REPLAY,
                          fixtureRuns={"record": source.run_id})  # fmt: skip
        assert read_counter(http, RECORDED_KEY) == before
        assert live_calls(http, replay.run_id) == 0

    assert replay.started["fixtureRuns"] == {"record": source.run_id}
    assert replay.started["modes"] == ["golden"]
    assert tool_outcomes(replay.events) == tool_outcomes(source.events)
    assert [p["inputs"] for p in replay.of_type("agent.tool-called")] == [
        p["inputs"] for p in source.of_type("agent.tool-called")
    ]
    assert replay.summary["fixtureMissCount"] == 0
    assert replay.task("record")["fixtureMissCount"] == 0
    assert replay.summary["passed"] is True
    # The derived entries are suite content: never on an eval.* event or in the summary.
    for event in replay.events:
        if event.type.startswith("eval."):
            assert_content_free(event.payload, (RECORDED_KEY,))
    assert_content_free(replay.summary, (RECORDED_KEY, source.run_id))


@pytest.mark.parametrize("tenant", [TENANT_A, TENANT_B])
def test_drift_fails_closed(server: ServerHandle, sources: dict[str, EvalRun], tenant: str) -> None:
    with server.http(tenant) as http:
        before, drift_before = read_counter(http, RECORDED_KEY), read_counter(http, DRIFT_KEY)
        drift = run_eval(server.client(tenant), http, RECORDED_DRIFT,
                         fixtureRuns={"record": sources[tenant].run_id})  # fmt: skip
        assert read_counter(http, RECORDED_KEY) == before
        assert read_counter(http, DRIFT_KEY) == drift_before
        assert live_calls(http, drift.run_id) == 0

    assert drift.summary["fixtureMissCount"] == 1
    assert drift.summary["passed"] is False
    assert drift.task("record")["passed"] is False
    (returned,) = drift.of_type("agent.tool-returned")
    assert returned["status"] == "error"
    assert returned["error"]["code"] == "fixture_miss"
    assert drift.of_type("agent.decided")[0]["decision"] == {"error": "fixture_miss"}


def test_a_production_workflow_run_is_a_source(server: ServerHandle, http_a: httpx.Client) -> None:
    client = server.client()
    inputs = {"calls": [counter_call("inc", RECORDED_KEY), counter_call("read", RECORDED_KEY)],
              "answer": "done"}  # fmt: skip
    before = read_counter(http_a, RECORDED_KEY)
    production = client.runs_create(CreateRunRequest(workflowId=COUNTER_WORKFLOW, inputs=inputs))
    recorded = wait_terminal(client, production.runId)
    assert recorded[-1].type == "run.completed"
    assert read_counter(http_a, RECORDED_KEY) == before + 1

    replay = run_eval(client, http_a, RECORDED_REPLAY, fixtureRuns={"record": production.runId})
    assert read_counter(http_a, RECORDED_KEY) == before + 1
    assert tool_outcomes(replay.events) == tool_outcomes(recorded)
    assert tool_outcomes(replay.events) == [{"key": RECORDED_KEY, "count": before + 1}] * 2
    assert replay.summary["fixtureMissCount"] == 0
    assert replay.summary["passed"] is True
    assert live_calls(http_a, replay.run_id) == 0


@pytest.mark.parametrize(
    "case",
    ["key-names-no-task", "target-carries-tool-responses", "without-mode", "empty-map",
     "live-shadow-requested", "live-shadow-with-golden", "value-not-a-string"],
)  # fmt: skip
def test_fields_refused(http_a: httpx.Client, sources: dict[str, EvalRun], case: str) -> None:
    source = sources[TENANT_A].run_id
    bodies: dict[str, dict[str, Any]] = {
        "key-names-no-task": eval_body(RECORDED_REPLAY, fixtureRuns={"nope": source}),
        "target-carries-tool-responses": eval_body(RECORDED_SOURCE,
                                                   fixtureRuns={"record": source}),
        "without-mode": {"workflowId": NOOP_WORKFLOW, "fixtureRuns": {"record": source}},
        "empty-map": eval_body(RECORDED_REPLAY, fixtureRuns={}),
        "live-shadow-requested": eval_body(RECORDED_REPLAY, evalModes=["live-shadow"],
                                           fixtureRuns={"record": source}),
        "live-shadow-with-golden": eval_body(RECORDED_REPLAY, evalModes=["golden", "live-shadow"],
                                             fixtureRuns={"record": source}),
        "value-not-a-string": eval_body(RECORDED_REPLAY, fixtureRuns={"record": 7}),
    }  # fmt: skip
    response = post_refused(http_a, bodies[case], 400, "validation_error")
    assert_no_id(response.text, source)


@pytest.mark.parametrize(("tenant", "other"), [(TENANT_A, TENANT_B), (TENANT_B, TENANT_A)])
def test_source_refused_and_uniform(
    server: ServerHandle, sources: dict[str, EvalRun], tenant: str, other: str
) -> None:
    client = server.client(tenant)
    noop = client.runs_create(CreateRunRequest(workflowId=NOOP_WORKFLOW)).runId
    wait_terminal(client, noop)
    unusable = {
        "unknown": f"{tenant}/{uuid.uuid4().hex}",
        "not-decodable": "not-a-run-id",
        "other-tenant-source": sources[other].run_id,
        "workflow-without-the-agent": noop,
    }
    with server.http(tenant) as http:
        bodies = {}
        for case, run_id in unusable.items():
            body = eval_body(RECORDED_REPLAY, fixtureRuns={"record": run_id})
            response = post_refused(http, body, 400, "validation_error")
            assert_no_id(response.text, run_id)
            assert "details" not in response.json()
            bodies[case] = response.content
        assert len(set(bodies.values())) == 1, bodies


def test_a_failed_call_of_the_source_is_replayed_as_the_same_error(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    """fixtureErrors is advertised: a source whose call failed is usable, and the error replays."""
    client, key = server.client(), unique("failed-call")
    calls = [counter_call("inc", key), {"tool": COUNTER_TOOL, "args": {"op": "dec", "key": key}}]
    production = client.runs_create(
        CreateRunRequest(workflowId=COUNTER_WORKFLOW, inputs={"calls": calls, "answer": "done"})
    ).runId
    recorded = wait_terminal(client, production)
    assert [p["status"] for p in payloads(recorded, "agent.tool-returned")] == ["ok", "error"]
    assert payloads(recorded, "agent.decided")[0]["decision"] == {"error": "invalid_args"}
    assert read_counter(http_a, key) == 1

    expected = golden({"error": "invalid_args"}, "json-match")
    ref = publish(http_a, suite(new_suite_id("failed"), [task("t", calls, expected=expected)]))
    replay = run_eval(client, http_a, ref, fixtureRuns={"t": production})
    returned = payloads(replay.events, "agent.tool-returned")
    assert [p["status"] for p in returned] == ["ok", "error"]
    assert returned[1]["error"]["code"] == "invalid_args"
    assert replay.summary["passed"] is True
    assert replay.summary["fixtureMissCount"] == 0
    assert read_counter(http_a, key) == 1
    assert live_calls(http_a, replay.run_id) == 0
