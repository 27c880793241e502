"""The tool boundary with a real project: http tools with injected credentials, tool failures.

The credential is added at egress only: the loopback API must receive it, and
no event (poll, SSE debug), no `tool_calls` row and no other stored row may
ever contain it. A tool that raises or hangs is the agent's tool error, never
a crashed run.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from openwop_client.types import CreateRunRequest
from openwop_client.wire_id import project_id

from _backends import Backend

from ._loopback import LoopbackApi
from ._server import ServerHandle, host_settings, running_host
from ._support import (
    COUNTER_WORKFLOW,
    table_rows,
    types_of,
    unique,
    wait_terminal,
    whole_store,
)
from .conftest import CRM_ENV_VARIABLE, write_project

CRM_WORKFLOW = "e2e-crm"


def run_crm(server: ServerHandle, tool: str) -> tuple[str, str, list[Any]]:
    customer = unique("customer")
    request = CreateRunRequest(workflowId=CRM_WORKFLOW, inputs={"customer": customer, "tool": tool})
    run_id = server.client().runs_create(request).runId
    return run_id, customer, wait_terminal(server.client(), run_id)


def run_script(server: ServerHandle, *calls: dict[str, Any]) -> tuple[str, list[Any]]:
    """The conformance scripted agent making `calls` in order, then answering "done"."""
    inputs = {"calls": list(calls), "answer": "done"}
    run_id = (
        server.client()
        .runs_create(CreateRunRequest(workflowId=COUNTER_WORKFLOW, inputs=inputs))
        .runId
    )
    return run_id, wait_terminal(server.client(), run_id)


def everything_a_client_can_read(server: ServerHandle, run_id: str) -> str:
    """The run's snapshot, whole poll log and SSE debug stream, as raw text."""
    with server.http() as http:
        segment = project_id(run_id)
        parts = [
            http.get(f"/runs/{segment}").text,
            http.get(f"/runs/{segment}/events/poll", params={"afterSequence": -1}).text,
            http.get(f"/runs/{segment}/events", params={"streamMode": "debug"}).text,
            http.get("/runs", params={"limit": 200}).text,
        ]
    return "\n".join(parts)


def everything_stored(server: ServerHandle) -> str:
    return json.dumps(whole_store(server.database_url), default=str)


@pytest.mark.parametrize(
    ("tool", "path", "header", "template", "credential"),
    [
        ("e2e:crm", "/crm", "authorization", "Bearer {}", "value"),
        ("e2e:crm-env", "/crm-env", "x-api-key", "{}", "env"),
    ],
    ids=["toml-value", "env-variable"],
)
def test_the_credential_reaches_the_api_and_nothing_else(
    project_server: ServerHandle,
    loopback_api: LoopbackApi,
    credentials: dict[str, str],
    tool: str,
    path: str,
    header: str,
    template: str,
    credential: str,
) -> None:
    secret = credentials[credential]
    run_id, customer, events = run_crm(project_server, tool)

    received = [r for r in loopback_api.received(path) if r.body == {"customer": customer}]
    assert len(received) == 1
    assert received[0].headers[header] == template.format(secret)
    assert project_server.client().runs_get(run_id).status == "completed"
    called = next(e for e in events if e.type == "agent.tool-called")
    returned = next(e for e in events if e.type == "agent.tool-returned")
    assert called.payload["toolName"] == tool
    assert called.payload["inputs"] == {"customer": customer}
    assert returned.payload["status"] == "ok"
    assert returned.payload["outcome"] == {"customer": customer, "tier": "gold"}
    decided = next(e for e in events if e.type == "agent.decided")
    assert decided.payload["decision"] == {"customer": customer, "tier": "gold"}

    assert secret not in json.dumps([e.payload for e in events])
    readable = everything_a_client_can_read(project_server, run_id)
    assert customer in readable
    assert secret not in readable
    rows = table_rows(project_server.database_url, "tool_calls", run_id=run_id)
    assert [row["tool"] for row in rows] == [tool]
    assert rows[0]["inputs"] == {"customer": customer}
    assert secret not in json.dumps(rows, default=str)
    assert secret not in everything_stored(project_server)


def test_no_credential_is_sent_where_none_is_configured(
    project_server: ServerHandle, loopback_api: LoopbackApi, credentials: dict[str, str]
) -> None:
    key = unique("plain")
    run_id, events = run_script(project_server, {"tool": "e2e:fails", "args": {"key": key}})
    received = [r for r in loopback_api.received("/fail") if r.body == {"key": key}]
    assert len(received) == 1
    assert "authorization" not in received[0].headers
    assert not set(credentials.values()) & set(received[0].headers.values())
    returned = next(e for e in events if e.type == "agent.tool-returned")
    assert returned.payload["status"] == "error"
    assert returned.payload["error"]["code"] == "http_500"
    assert project_server.client().runs_get(run_id).status == "completed"


@pytest.mark.parametrize(
    ("tool", "code"),
    [
        ("e2e:raises", "tool_raised"),
        ("e2e:sleeps", "tool_timeout"),
        ("e2e:missing", "unknown_tool"),
    ],
    ids=["raises", "times-out", "not-registered"],
)
def test_a_failing_tool_is_a_tool_error_not_a_crashed_run(
    project_server: ServerHandle, tool: str, code: str
) -> None:
    key = unique("after")
    run_id, events = run_script(
        project_server,
        {"tool": tool, "args": {"n": 1}},
        {"tool": "conformance.eval:counter", "args": {"op": "inc", "key": key}},
    )
    snapshot = project_server.client().runs_get(run_id)
    assert snapshot.status == "completed"
    assert snapshot.error is None
    assert types_of(events)[-1] == "run.completed"
    returned = [e for e in events if e.type == "agent.tool-returned"]
    assert len(returned) == 1, "the scripted agent stops at the first failed call"
    assert returned[0].payload["toolName"] == tool
    assert returned[0].payload["status"] == "error"
    assert returned[0].payload["error"]["code"] == code
    assert "outcome" not in returned[0].payload
    decided = next(e for e in events if e.type == "agent.decided")
    assert decided.payload["decision"] == {"error": code}
    rows = table_rows(project_server.database_url, "tool_calls", run_id=run_id)
    assert [(row["tool"], row["status"]) for row in rows] == [(tool, "error")]
    assert rows[0]["error"]["code"] == code
    assert rows[0]["result"] is None


def test_a_raising_tool_does_not_leak_its_exception_text(project_server: ServerHandle) -> None:
    run_id, events = run_script(project_server, {"tool": "e2e:raises", "args": {}})
    assert "the tool broke" not in everything_a_client_can_read(project_server, run_id)
    assert "the tool broke" not in json.dumps([e.payload for e in events])


def test_an_agent_whose_tool_fails_fails_its_run(
    project_server: ServerHandle, loopback_api: LoopbackApi
) -> None:
    """The CRM agent does not catch tool errors: its invocation fails, and so does the run."""
    request = CreateRunRequest(
        workflowId=CRM_WORKFLOW, inputs={"customer": unique("c"), "tool": "e2e:fails"}
    )
    run_id = project_server.client().runs_create(request).runId
    events = wait_terminal(project_server.client(), run_id)
    snapshot = project_server.client().runs_get(run_id)
    assert snapshot.status == "failed"
    assert snapshot.error is not None
    assert snapshot.error.code == "agent_failed"
    assert types_of(events).count("run.failed") == 1
    assert types_of(events)[-1] == "run.failed"
    completed = next(e for e in events if e.type == "agent.invocation-completed")
    assert completed.payload["outcome"] == "failed"


def test_project_workflows_and_agents_are_listed(project_server: ServerHandle) -> None:
    client = project_server.client()
    assert client.workflows_get(CRM_WORKFLOW)["nodes"][0]["agentId"] == "e2e.crm-agent"
    agents = client.agents_list()
    assert agents is not None
    assert {"e2e.crm-agent", "e2e.gate-agent"} <= {agent.agentId for agent in agents}


def test_a_credential_from_the_environment_is_needed_only_for_a_live_call(
    backend: Backend,
    tmp_path_factory: pytest.TempPathFactory,
    loopback_api: LoopbackApi,
    credentials: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The host starts without the variable; a live call fails closed; a replay needs none."""
    monkeypatch.delenv(CRM_ENV_VARIABLE, raising=False)
    project = tmp_path_factory.mktemp("project-without-secret")
    write_project(project, loopback_api, credentials["value"])
    settings = host_settings(
        backend, tmp_path_factory.mktemp("host-without-secret"), project=project
    )
    with running_host(settings, backend) as host:
        _, _, events = run_crm(host, "e2e:crm-env")
        returned = next(e for e in events if e.type == "agent.tool-returned")
        assert returned.payload["status"] == "error"
        assert returned.payload["error"]["code"] == "credential_missing"
        assert CRM_ENV_VARIABLE in returned.payload["error"]["message"]
        with host.http() as http:
            suite = {
                "suiteId": "e2e.evals.replay-without-secret",
                "version": "1.0.0",
                "modes": ["golden"],
                "targetAgentId": "e2e.crm-agent",
                "tasks": [
                    {
                        "taskId": "lookup",
                        "input": {"customer": "c-1", "tool": "e2e:crm-env"},
                        "expected": {
                            "kind": "golden",
                            "match": {
                                "strategy": "json-match",
                                "value": {"customer": "c-1", "tier": "gold"},
                            },
                        },
                        "fixtures": {
                            "toolResponses": [
                                {
                                    "tool": "e2e:crm-env",
                                    "response": {"customer": "c-1", "tier": "gold"},
                                }
                            ]
                        },
                    }
                ],
            }
            assert http.put("/host/wopeval/suites", json=suite).status_code == 201
            created = http.post(
                "/runs",
                json={
                    "mode": "eval",
                    "evalSuiteRef": "e2e.evals.replay-without-secret@1.0.0",
                    "agentId": "e2e.crm-agent",
                },
            )
            assert created.status_code == 201, created.text
            eval_id = created.json()["runId"]
            assert types_of(wait_terminal(host.client(), eval_id))[-1] == "run.completed"
            summary = http.get(f"/runs/{project_id(eval_id)}/eval-summary").json()
            assert summary["passed"] is True
