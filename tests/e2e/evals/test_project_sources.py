"""RFC 0252 §C with the project's agents: which runs may serve as a fixture source.

An active source, a source whose agent kept no record, an erased source and a
run that never invoked the eval's agent are refused with the bytes an unknown
id gets. A source whose agent puts only `argsHash` on the wire is usable: the
host derives from its own record, not from the events.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import httpx
import rfc8785
from openwop_client import OpenwopClient
from openwop_client.types import CreateRunRequest
from openwop_client.wire_id import project_id

from .._gate import Gate
from .._server import TENANT_A, ServerHandle
from .._support import (
    COUNTER_TOOL,
    COUNTER_WORKFLOW,
    read_counter,
    table_rows,
    unique,
    wait_terminal,
)
from ._evals import (
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
from .conftest import (
    GATE_AGENT,
    GATE_WORKFLOW,
    HASH_AGENT,
    HASH_WORKFLOW,
    UNRECORDED_AGENT,
    UNRECORDED_WORKFLOW,
)


def script(key: str) -> list[dict[str, Any]]:
    return [counter_call("inc", key), counter_call("read", key)]


def workflow_run(client: OpenwopClient, workflow: str, inputs: dict[str, Any]) -> str:
    run_id: str = client.runs_create(CreateRunRequest(workflowId=workflow, inputs=inputs)).runId
    return run_id


def completed_run(client: OpenwopClient, workflow: str, key: str) -> tuple[str, list[Any]]:
    run_id = workflow_run(client, workflow, {"calls": script(key), "answer": "done"})
    events = wait_terminal(client, run_id)
    assert events[-1].type == "run.completed"
    return run_id, events


def record_suite(http: httpx.Client, key: str, target: str | None = None) -> str:
    """Task `record`: the counter script of `key`; no fixtures, so any source may feed it."""
    return publish(http, suite(new_suite_id("record"), [task("record", script(key))],
                               target=target))  # fmt: skip


def refused_bytes(http: httpx.Client, ref: str, agent: str, source: str) -> bytes:
    body = eval_body(ref, agent, fixtureRuns={"record": source})
    response = post_refused(http, body, 400, "validation_error")
    assert_no_id(response.text, source)
    return response.content


def test_active_unrecorded_erased_and_foreign_agent_sources_are_refused_alike(
    eval_project_server: ServerHandle, gate: Gate
) -> None:
    client, key = eval_project_server.client(), unique("sources")
    with eval_project_server.http(TENANT_A) as http:
        ref = record_suite(http, key)
        unknown = refused_bytes(http, ref, "conformance.scripted-agent",
                                f"{TENANT_A}/{uuid.uuid4().hex}")  # fmt: skip

        # Active: the gate agent made its calls and waits; the run is not terminal.
        gate_inputs = gate.inputs("done", script(key))
        gate_task = {"taskId": "record", "input": gate_inputs, "expected": golden("done")}
        gate_ref = publish(http, suite(new_suite_id("gate"), [gate_task], target=GATE_AGENT))
        active = workflow_run(client, GATE_WORKFLOW, gate_inputs)
        gate.wait_entered()
        assert client.runs_get(active).status == "running"
        busy = http.post(f"/host/wopeval/runs/{project_id(active)}:erase-tool-content")
        assert busy.status_code == 409
        assert busy.json()["details"] == {"runStatus": "running"}
        assert refused_bytes(http, gate_ref, GATE_AGENT, active) == unknown

        # Record off: the calls are listed, but their content was never kept.
        unrecorded, _ = completed_run(client, UNRECORDED_WORKFLOW, key)
        listed = table_rows(eval_project_server.database_url, "tool_calls", run_id=unrecorded)
        assert [(r["tool"], r["recorded"], r["inputs"]) for r in listed] == [
            (COUNTER_TOOL, False, None), (COUNTER_TOOL, False, None)]  # fmt: skip
        assert refused_bytes(http, ref, UNRECORDED_AGENT, unrecorded) == unknown

        # A run that never invoked the eval's agent (the scripted agent ran, not the hash one).
        scripted, _ = completed_run(client, COUNTER_WORKFLOW, key)
        assert refused_bytes(http, ref, HASH_AGENT, scripted) == unknown

        # The same scripted run is usable before erasure, and refused after it.
        accepted = run_eval(client, http, ref, fixtureRuns={"record": scripted})
        assert accepted.summary["passed"] is True
        assert accepted.summary["fixtureMissCount"] == 0
        erase = http.post(f"/host/wopeval/runs/{project_id(scripted)}:erase-tool-content")
        assert erase.status_code == 200
        assert erase.json()["erasedCopies"] == 1
        assert refused_bytes(http, ref, "conformance.scripted-agent", scripted) == unknown

        # Released and completed, the gate run is a usable source after all.
        gate.release()
        assert wait_terminal(client, active)[-1].type == "run.completed"
        counted = read_counter(http, key)
        replay = run_eval(client, http, gate_ref, GATE_AGENT, fixtureRuns={"record": active})
        assert replay.summary["passed"] is True
        assert replay.summary["fixtureMissCount"] == 0
        assert read_counter(http, key) == counted
        assert live_calls(http, replay.run_id) == 0


def test_an_agent_with_hashed_wire_content_is_a_usable_source(
    eval_project_server: ServerHandle,
) -> None:
    client, key = eval_project_server.client(), unique("hashed")
    with eval_project_server.http(TENANT_A) as http:
        source, events = completed_run(client, HASH_WORKFLOW, key)
        called, returned = (
            payloads(events, "agent.tool-called"),
            payloads(events, "agent.tool-returned"),
        )
        assert [p["agentId"] for p in called] == [HASH_AGENT, HASH_AGENT]
        assert [p["argsHash"] for p in called] == [
            "sha256:" + hashlib.sha256(rfc8785.dumps(call["args"])).hexdigest()
            for call in script(key)
        ]
        assert all("inputs" not in p for p in called)
        assert all("outcome" not in p and p["status"] == "ok" for p in returned)
        assert read_counter(http, key) == 1

        ref = record_suite(http, key, target=HASH_AGENT)
        replay = run_eval(client, http, ref, HASH_AGENT, fixtureRuns={"record": source})
        assert replay.started["fixtureRuns"] == {"record": source}
        assert replay.summary["passed"] is True
        assert replay.summary["fixtureMissCount"] == 0
        assert read_counter(http, key) == 1
        assert live_calls(http, replay.run_id) == 0
        # The replay's own events follow the agent's wire setting: hashes, never content.
        assert tool_outcomes(replay.events) == [None, None]
        assert [p["argsHash"] for p in payloads(replay.events, "agent.tool-called")] == [
            p["argsHash"] for p in called
        ]

        # A changed script against the same source misses and fails closed.
        drift_ref = publish(http, suite(new_suite_id("drift"), [
            task("record", [counter_call("inc", key + "-x"), counter_call("read", key)])],
            target=HASH_AGENT))  # fmt: skip
        drift = run_eval(client, http, drift_ref, HASH_AGENT, fixtureRuns={"record": source})
        assert drift.summary["fixtureMissCount"] == 1
        assert drift.summary["passed"] is False
        assert read_counter(http, key + "-x") == 0
        assert live_calls(http, drift.run_id) == 0
