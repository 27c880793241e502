"""Agents outside the host: the command lane (a process per invocation) and the http lane
(a service), both reaching their tools through the invocation's MCP endpoint.

The endpoint offers the agent's allowed tools with their schemas, each by its
provider-safe name (`count__lookup` for `count:lookup`), and hands each call
by such a name to the invocation's boundary under the canonical name
(recorded like an in-process call);
its token works only while the invocation runs and only for its tenant.
A failing process or service fails the invocation with the reason (and the
stderr tail in the task detail); a cancel kills the process group.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from openwop_client.types import CreateRunRequest
from openwop_client.wire_id import project_id

from .._server import TENANT_B, ServerHandle
from .._support import table_rows, unique, wait_terminal, whole_store
from ..evals._evals import golden, new_suite_id, publish, run_eval, suite
from ._agent_service import AgentService
from .conftest import CallLog

LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
GONE_DEADLINE_SECONDS = 30.0


def start(host: ServerHandle, workflow: str, inputs: dict[str, Any]) -> str:
    run_id: str = (
        host.client().runs_create(CreateRunRequest(workflowId=workflow, inputs=inputs)).runId
    )
    return run_id


def finish(host: ServerHandle, workflow: str, inputs: dict[str, Any]) -> tuple[str, list[Any]]:
    run_id = start(host, workflow, inputs)
    return run_id, wait_terminal(host.client(), run_id)


def decided(events: list[Any]) -> Any:
    return next(e.payload["decision"] for e in events if e.type == "agent.decided")


def test_a_command_agent_lists_and_calls_its_tools_over_its_mcp_endpoint(
    mcp_host: ServerHandle, call_log: CallLog, tmp_path: Path
) -> None:
    key = unique("key")
    url_file = tmp_path / "mcp-url"
    inputs = {
        "urlFile": str(url_file),
        "foreignKey": mcp_host.key_b,
        "calls": [{"tool": "count__lookup", "args": {"key": key}},
                  {"tool": "count__refuse", "args": {"reason": key}},
                  {"tool": "count:lookup", "args": {"key": key}}],
    }  # fmt: skip
    before = call_log.count()
    run_id, events = finish(mcp_host, "lanes-probe", inputs)

    seen = decided(events)
    assert seen["sameInvocationId"] is True
    # `tools = ["count:*", "count-http:lookup"]`: the allowlist, with its schemas, each by the
    # name every model API accepts.
    assert seen["tools"] == ["count-http__lookup", "count__crash", "count__lookup",
                             "count__refuse", "count__sleep"]  # fmt: skip
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name) for name in seen["tools"])
    # A call by the canonical name is no call of an offered tool: refused, nothing runs.
    assert seen["results"] == [
        {"isError": False, "structured": {"key": key, "length": len(key)}},
        {"isError": True, "structured": None},
        {"isError": True, "structured": None},
    ]
    assert seen["foreignStatus"] == 404, "another tenant's key opened the endpoint"
    assert [line["tool"] for line in call_log.lines()[before:]] == ["lookup", "refuse"]
    rows = table_rows(mcp_host.database_url, "tool_calls", run_id=run_id)
    assert [(r["agent_id"], r["tool"], r["status"], r["inputs"]) for r in rows] == [
        ("lanes.probe", "count:lookup", "ok", {"key": key}),
        ("lanes.probe", "count:refuse", "error", {"reason": key}),
    ]
    (invocation,) = table_rows(mcp_host.database_url, "invocations", run_id=run_id)
    assert invocation["tools_digest"].startswith("sha256:")

    # The token: in no event and no record, and refused once the invocation has ended.
    url = url_file.read_text()
    token = url.rsplit("/", 1)[1]
    assert len(token) >= 40
    assert token not in json.dumps([e.payload for e in events])
    assert token not in json.dumps(whole_store(mcp_host.database_url), default=str)
    with httpx.Client(headers=MCP_HEADERS, trust_env=False) as http:
        for key_header in ({}, {"Authorization": f"Bearer {mcp_host.key_a}"},
                           {"Authorization": f"Bearer {mcp_host.key_b}"}):  # fmt: skip
            ended = http.post(url, json=LIST_TOOLS, headers=key_header)
            assert ended.status_code == 404, ended.text
            assert ended.json()["error"] == "not_found"
        unknown = http.post(url.replace(token, "x" * len(token)), json=LIST_TOOLS)
        assert unknown.status_code == 404
        assert unknown.content == ended.content


def test_a_tool_server_crashing_or_timing_out_mid_call_is_an_is_error_result_to_the_agent(
    mcp_host: ServerHandle, call_log: CallLog, tmp_path: Path
) -> None:
    """Through the endpoint, as in process: the outside agent's MCP client gets a result
    flagged `isError` (no protocol error, no hang), the call is recorded failed with why,
    and the next call reaches a restarted server."""
    key = unique("key")
    inputs = {
        "urlFile": str(tmp_path / "mcp-url"),
        "calls": [{"tool": "count__crash", "args": {}},
                  {"tool": "count__lookup", "args": {"key": key}},
                  {"tool": "count__sleep", "args": {"seconds": 30}},
                  {"tool": "count__lookup", "args": {"key": key}}],
    }  # fmt: skip
    run_id, events = finish(mcp_host, "lanes-probe", inputs)

    answered = {"isError": False, "structured": {"key": key, "length": len(key)}}
    failed = {"isError": True, "structured": None}
    assert decided(events)["results"] == [failed, answered, failed, answered]
    rows = table_rows(mcp_host.database_url, "tool_calls", run_id=run_id)
    assert [(r["tool"], r["status"], (r["error"] or {}).get("code")) for r in rows] == [
        ("count:crash", "error", "mcp_connection_lost"),
        ("count:lookup", "ok", None),
        ("count:sleep", "error", "tool_timeout"),
        ("count:lookup", "ok", None),
    ]
    pids = [line["pid"] for line in call_log.lines()[-4:]]
    assert (pids[0] != pids[1], pids[2] != pids[3]) == (True, True), "the failed server again"


def test_a_command_agent_replays_through_fixture_runs_without_reaching_the_server(
    mcp_host: ServerHandle, call_log: CallLog, tmp_path: Path
) -> None:
    key = unique("key")
    inputs = {"urlFile": str(tmp_path / "url"),
              "calls": [{"tool": "count__lookup", "args": {"key": key}}]}  # fmt: skip
    source, events = finish(mcp_host, "lanes-probe", inputs)
    expected = decided(events)
    document = suite(new_suite_id("probe"), [{"taskId": "probe", "input": inputs,
                     "expected": golden(expected)}], target="lanes.probe")  # fmt: skip
    before = call_log.count()
    with mcp_host.http() as http:
        replayed = run_eval(mcp_host.client(), http, publish(http, document), "lanes.probe",
                            fixtureRuns={"probe": source})  # fmt: skip
        assert replayed.summary["passed"] is True
        assert replayed.summary["fixtureMissCount"] == 0
        detail = http.get(f"/host/wopeval/runs/{project_id(replayed.run_id)}/tasks/probe").json()
    assert call_log.count() == before
    assert detail["toolsChanged"] == []
    assert [c["servedBy"] for c in detail["trialDetails"][0]["calls"]] == ["fixture"]


@pytest.mark.parametrize(
    ("mode", "message", "stderr"),
    [("exit", "exited with status 3", "Traceback: the agent gave up on order A-1001"),
     ("garbage", "is not JSON", None),
     ("silent", "printed no decision", None)],
)  # fmt: skip
def test_a_failing_command_agent_fails_its_invocation_with_what_it_said(
    mcp_host: ServerHandle, mode: str, message: str, stderr: str | None
) -> None:
    task = {"taskId": mode, "input": {"mode": mode}, "expected": golden("never")}
    document = suite(new_suite_id("misbehave"), [task], target="lanes.misbehave")
    with mcp_host.http() as http:
        ran = run_eval(mcp_host.client(), http, publish(http, document), "lanes.misbehave")
        assert ran.summary["passed"] is False
        detail = http.get(f"/host/wopeval/runs/{project_id(ran.run_id)}/tasks/{mode}").json()
    (trial,) = detail["trialDetails"]
    assert trial["error"]["type"] == "AgentFailed"
    assert message in trial["error"]["message"]
    assert message in trial["reason"]
    if stderr is None:
        assert "stderr" not in trial
    else:
        assert stderr in trial["stderr"]


def _pids_gone(pids: list[int]) -> None:
    deadline = time.monotonic() + GONE_DEADLINE_SECONDS
    for pid in pids:
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            assert time.monotonic() < deadline, f"process {pid} outlived its invocation"
            time.sleep(0.05)


def _wait_for(path: Path) -> list[int]:
    deadline = time.monotonic() + GONE_DEADLINE_SECONDS
    while not path.exists() or not path.read_text():
        assert time.monotonic() < deadline, "the agent process never started"
        time.sleep(0.05)
    pids: list[int] = json.loads(path.read_text())
    return pids


def test_cancel_kills_the_agent_process_group(mcp_host: ServerHandle, tmp_path: Path) -> None:
    pids_file = tmp_path / "pids"
    run_id = start(mcp_host, "lanes-misbehave", {"mode": "hang", "pids": str(pids_file)})
    pids = _wait_for(pids_file)
    assert mcp_host.client().runs_cancel(run_id).status in ("cancelling", "cancelled")
    events = wait_terminal(mcp_host.client(), run_id)
    assert events[-1].type == "run.cancelled"
    _pids_gone(pids)


def test_a_command_agent_past_its_timeout_is_killed_and_fails(
    mcp_host: ServerHandle, tmp_path: Path
) -> None:
    pids_file = tmp_path / "pids"
    run_id, events = finish(mcp_host, "lanes-impatient", {"mode": "hang", "pids": str(pids_file)})
    assert events[-1].type == "run.failed"
    snapshot = mcp_host.client().runs_get(run_id)
    assert snapshot.error is not None
    assert "did not finish in 2s" in snapshot.error.message
    _pids_gone(json.loads(pids_file.read_text()))


def test_an_http_agent_gets_its_mcp_url_and_its_credential_at_egress(
    mcp_host: ServerHandle, agent_service: AgentService, call_log: CallLog, mcp_secret: str
) -> None:
    key = unique("key")
    inputs = {"calls": [{"tool": "count-http__lookup", "args": {"key": key}}]}
    before = call_log.count()
    run_id, events = finish(mcp_host, "lanes-service", inputs)
    assert events[-1].type == "run.completed"
    assert decided(events) == {
        "agentId": "lanes.service",
        "results": [{"isError": False, "structured": {"key": key, "length": len(key)}}],
    }
    assert agent_service.headers[-1]["x-agent-key"] == mcp_secret
    assert [line["arguments"] for line in call_log.lines()[before:]] == [{"key": key}]
    (row,) = table_rows(mcp_host.database_url, "tool_calls", run_id=run_id)
    assert (row["agent_id"], row["tool"]) == ("lanes.service", "count-http:lookup")
    assert mcp_secret not in json.dumps([e.payload for e in events])


@pytest.mark.parametrize(
    ("workflow", "reason"),
    [("lanes-broken-service", "answered HTTP 500"),
     ("lanes-hanging-service", "did not answer in 1s")],
)  # fmt: skip
def test_a_failing_http_agent_fails_its_invocation_with_the_reason(
    mcp_host: ServerHandle, workflow: str, reason: str
) -> None:
    run_id, events = finish(mcp_host, workflow, {})
    assert events[-1].type == "run.failed"
    snapshot = mcp_host.client().runs_get(run_id)
    assert snapshot.error is not None
    assert reason in snapshot.error.message
    # What the service answered with its error is what it said, kept like a process's stderr.
    (invocation,) = table_rows(mcp_host.database_url, "invocations", run_id=run_id)
    if "500" in reason:
        assert invocation["stderr"] == '{"error": "broken"}'


def test_the_endpoint_refuses_another_tenant_whatever_the_token(mcp_host: ServerHandle) -> None:
    with mcp_host.http(TENANT_B) as http:
        refused = http.post("/host/wopeval/mcp/" + "a" * 43, json=LIST_TOOLS, headers=MCP_HEADERS)
    assert refused.status_code == 404
    assert refused.json() == {"error": "not_found", "message": "No such MCP endpoint."}
