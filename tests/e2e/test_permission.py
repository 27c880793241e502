"""One boundary for permission: every lane's tool calls meet the agent's `tools` allowlist in
`Invocation.call_tool`, and both endpoints of an invocation check its token one way.

Each lane — a python agent's `context.call_tool`, a command agent and an http
agent over their MCP endpoint, the endpoint itself asked directly, an openai-lane
agent whose model asks for a function it was not offered — calls a tool it is
not granted: the call is refused with `tool_not_offered`, the tool never runs
(it would leave a file behind) and nothing is recorded. The MCP endpoint and the
model proxy refuse a live token presented with another tenant's key, or with a
key that is no key, with the same 404; the token itself, or a key of its
tenant, passes. An offline host with MCP servers starts none of them and fails
their calls closed.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from openwop_client.types import CreateRunRequest

from _backends import Backend
from _model_server import ModelServer
from _projects import write_agent_workflow

from ._server import ServerHandle, host_settings, running_host
from ._support import table_rows, unique, wait_terminal
from .mcp._agent_service import AgentService
from .mcp.conftest import AGENTS

HERE = Path(__file__).parent
LEAKY_SERVER = HERE / "mcp" / "_leaky_server.py"
MODULE = "permission_project"
KEY_ENV = "PERMISSION_MODEL_KEY"
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
HELD_DEADLINE_SECONDS = 60.0

PROJECT_CODE = '''\
"""The permission tests' agents and tools."""

import asyncio
import json
import os
from pathlib import Path

from wopeval.agents import ToolCallError


async def calling_agent(context):
    seen = []
    for call in context.input["calls"]:
        try:
            seen.append({"ok": await context.call_tool(call["tool"], call["args"])})
        except ToolCallError as failure:
            seen.append({"error": failure.error})
    return seen


async def holding_agent(context):
    """Hands the test its endpoints (the token in them), then waits for the gate."""
    urls = Path(context.input["urls"])
    written = urls.with_suffix(".tmp")
    written.write_text(json.dumps({
        "mcp": context.mcp_url,
        "openai": context.openai_base_url,
        "anthropic": context.anthropic_base_url,
        "token": context.openai_api_key,
    }))
    os.replace(written, urls)
    gate = Path(context.input["gate"])
    while not gate.exists():
        await asyncio.sleep(0.02)
    return "released"


async def granted_tool(args):
    return {"granted": args}


async def guarded_tool(args):
    Path(args["ran"]).write_text("ran")
    return "ran"
'''


def write_project(directory: Path, model_url: str, service: AgentService, starts: Path) -> None:
    python = json.dumps(sys.executable)
    (directory / f"{MODULE}.py").write_text(PROJECT_CODE)
    (directory / "workflows").mkdir()
    granted = '["perm:granted"]'
    agents = {
        "perm.python": f'lane = "python"\ncallable = "{MODULE}:calling_agent"\n'
        'tools = ["perm:granted", "leaky:*"]',
        "perm.holder": f'lane = "python"\ncallable = "{MODULE}:holding_agent"\n'
        'tools = ["perm:granted", "leaky:whoami", "leaky:leak"]\n'
        f'base_url = "{model_url}"\napi_key_env = "{KEY_ENV}"',
        "perm.command": f'lane = "command"\ncommand = [{python}, "{AGENTS}", "probe"]\n'
        f"tools = {granted}",
        "perm.http": f'lane = "http"\nurl = "{service.url}/agent"\ntools = {granted}',
        "perm.llm": f'lane = "openai"\nmodel = "gpt-test-mini"\nbase_url = "{model_url}"\n'
        f'api_key_env = "{KEY_ENV}"\nmax_turns = 3\ntimeout_seconds = 10\ntools = {granted}',
    }
    toml = f"""workflows = ["workflows/*.json"]

[[tools]]
name = "perm:granted"
kind = "python"
callable = "{MODULE}:granted_tool"

[[tools]]
name = "perm:guarded"
kind = "python"
callable = "{MODULE}:guarded_tool"

[[mcp_servers]]
name = "leaky"
command = [{python}, {json.dumps(str(LEAKY_SERVER))}]
env = {{ STARTS_LOG = {json.dumps(str(starts))} }}
credential = {{ value = "leaky-secret-unused", server_env = "LEAKY_TOKEN" }}
"""
    for agent_id, lines in agents.items():
        toml += f'\n[[agents]]\nid = "{agent_id}"\n{lines}\n'
        write_agent_workflow(directory, agent_id)
    (directory / "wopeval.toml").write_text(toml)


@dataclass(frozen=True)
class PermissionHost:
    handle: ServerHandle
    model: ModelServer
    project: Path
    starts: Path
    """Where the leaky MCP server notes each start (its pid, one line each)."""


@pytest.fixture(scope="module")
def permission_host(
    backend: Backend, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PermissionHost]:
    project = tmp_path_factory.mktemp(f"permission-project-{backend.name}")
    starts = project / "starts.log"
    service = AgentService()
    service.start()
    with (
        pytest.MonkeyPatch.context() as patch,
        ModelServer() as model,
    ):
        patch.setenv(KEY_ENV, "sk-permission-" + "k" * 20)
        write_project(project, model.base_url, service, starts)
        settings = host_settings(backend, project / "data", project=project)
        try:
            with running_host(settings, backend) as handle:
                yield PermissionHost(handle, model, project, starts)
        finally:
            service.stop()


def finish(host: ServerHandle, workflow: str, inputs: dict[str, Any]) -> tuple[str, list[Any]]:
    client = host.client()
    run_id = client.runs_create(CreateRunRequest(workflowId=workflow, inputs=inputs)).runId
    return run_id, wait_terminal(client, run_id)


def decided(events: list[Any]) -> Any:
    return next(e.payload["decision"] for e in events if e.type == "agent.decided")


def assert_nothing_ran(host: ServerHandle, run_id: str, events: list[Any], ran: Path) -> None:
    """The guarded tool never ran, and the run records no call to it."""
    assert not ran.exists(), "the un-granted tool ran"
    called = [e.payload["toolName"] for e in events if e.type == "agent.tool-called"]
    assert "perm:guarded" not in called
    rows = table_rows(host.database_url, "tool_calls", run_id=run_id)
    assert "perm:guarded" not in [row["tool"] for row in rows]


def refused(error: dict[str, Any]) -> bool:
    return bool(error["code"] == "tool_not_offered")


def test_a_python_agent_cannot_call_a_tool_it_is_not_granted(
    permission_host: PermissionHost, tmp_path: Path
) -> None:
    ran = tmp_path / "ran"
    calls = [
        {"tool": "perm:guarded", "args": {"ran": str(ran)}},
        {"tool": "perm__guarded", "args": {"ran": str(ran)}},
        {"tool": "perm:granted", "args": {"n": 1}},
    ]
    run_id, events = finish(permission_host.handle, "perm-python", {"calls": calls})
    seen = decided(events)
    assert [refused(entry["error"]) for entry in seen[:2]] == [True, True]
    assert seen[0]["error"]["message"] == "perm:guarded is not offered to agent perm.python"
    assert seen[2] == {"ok": {"granted": {"n": 1}}}
    assert_nothing_ran(permission_host.handle, run_id, events, ran)
    rows = table_rows(permission_host.handle.database_url, "tool_calls", run_id=run_id)
    assert [row["tool"] for row in rows] == ["perm:granted"]


def test_a_command_agent_cannot_call_a_tool_it_is_not_granted_over_its_endpoint(
    permission_host: PermissionHost, tmp_path: Path
) -> None:
    ran = tmp_path / "ran"
    inputs = {
        "urlFile": str(tmp_path / "url"),
        "calls": [
            {"tool": "perm__guarded", "args": {"ran": str(ran)}},
            {"tool": "perm__granted", "args": {"n": 2}},
        ],
    }
    run_id, events = finish(permission_host.handle, "perm-command", inputs)
    seen = decided(events)
    assert seen["tools"] == ["perm__granted"]
    assert [result["isError"] for result in seen["results"]] == [True, False]
    assert seen["results"][1]["structured"] == {"granted": {"n": 2}}
    assert_nothing_ran(permission_host.handle, run_id, events, ran)


def test_an_http_agent_cannot_call_a_tool_it_is_not_granted_over_its_endpoint(
    permission_host: PermissionHost, tmp_path: Path
) -> None:
    ran = tmp_path / "ran"
    inputs = {"calls": [{"tool": "perm__guarded", "args": {"ran": str(ran)}}]}
    run_id, events = finish(permission_host.handle, "perm-http", inputs)
    assert decided(events)["results"] == [{"isError": True, "structured": None}]
    assert_nothing_ran(permission_host.handle, run_id, events, ran)


def test_an_llm_agent_whose_model_asks_for_a_tool_it_was_not_offered_is_refused(
    permission_host: PermissionHost, tmp_path: Path
) -> None:
    ran = tmp_path / "ran"
    question = unique("unoffered")
    script = permission_host.model.script
    script.add(
        json.dumps({"question": question}, separators=(",", ":")),
        [
            {"tool_calls": [{"name": "perm__guarded", "arguments": {"ran": str(ran)}}],
             "unoffered": True},
            {"content": "I may not."},
        ],
    )  # fmt: skip
    run_id, events = finish(permission_host.handle, "perm-llm", {"question": question})
    assert decided(events) == "I may not."
    # The model was told, as the tool's error, that the function is not its own.
    second = script.requests_with(json.dumps({"question": question}, separators=(",", ":")))[
        1
    ].body["messages"]
    (reply,) = [message for message in second if message["role"] == "tool"]
    assert json.loads(reply["content"])["error"]["code"] == "tool_not_offered"
    assert_nothing_ran(permission_host.handle, run_id, events, ran)


@dataclass(frozen=True)
class Held:
    """A running invocation of `perm.holder`: its endpoints, until `release()`."""

    run_id: str
    urls: dict[str, str]
    gate: Path

    @property
    def token(self) -> str:
        return self.urls["token"]

    def release(self) -> None:
        self.gate.touch()


@pytest.fixture
def held(permission_host: PermissionHost, tmp_path: Path) -> Iterator[Held]:
    urls, gate = tmp_path / "urls.json", tmp_path / "gate"
    client = permission_host.handle.client()
    inputs = {"urls": str(urls), "gate": str(gate)}
    run_id = client.runs_create(CreateRunRequest(workflowId="perm-holder", inputs=inputs)).runId
    deadline = time.monotonic() + HELD_DEADLINE_SECONDS
    while not urls.exists():
        assert time.monotonic() < deadline, "the holding agent never started"
        time.sleep(0.02)
    invocation = Held(run_id, json.loads(urls.read_text()), gate)
    try:
        yield invocation
    finally:
        invocation.release()
        wait_terminal(client, run_id)


def _mcp(url: str, method: str, params: dict[str, Any], **headers: str) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    with httpx.Client(trust_env=False, timeout=30.0) as http:
        return http.post(url, json=body, headers={**MCP_HEADERS, **headers})


def test_the_mcp_endpoint_asked_directly_refuses_an_un_granted_tool(
    permission_host: PermissionHost, held: Held, tmp_path: Path
) -> None:
    ran = tmp_path / "ran"
    url = held.urls["mcp"]
    listed = _mcp(url, "tools/list", {})
    assert [tool["name"] for tool in listed.json()["result"]["tools"]] == [
        "leaky__leak",
        "leaky__whoami",
        "perm__granted",
    ]
    for name in ("perm__guarded", "perm:guarded", "perm:granted", "leaky__dump", "nothing"):
        answer = _mcp(url, "tools/call", {"name": name, "arguments": {"ran": str(ran)}})
        result = answer.json()["result"]
        assert result["isError"] is True, name
        assert json.loads(result["content"][0]["text"])["code"] == "tool_not_offered"
    granted = _mcp(url, "tools/call", {"name": "perm__granted", "arguments": {"n": 3}})
    assert granted.json()["result"] == {
        "content": [{"type": "text", "text": '{"granted": {"n": 3}}'}],
        "structuredContent": {"granted": {"n": 3}},
        "isError": False,
    }
    # An MCP server's tool answers as its server gave it, its error as the server's content.
    whoami = _mcp(url, "tools/call", {"name": "leaky__whoami", "arguments": {}})
    assert whoami.json()["result"]["content"] == [{"type": "text", "text": "I am [redacted]"}]
    assert whoami.json()["result"]["isError"] is False
    leak = _mcp(url, "tools/call", {"name": "leaky__leak", "arguments": {"reason": "no"}})
    assert leak.json()["result"]["isError"] is True
    (text,) = [block["text"] for block in leak.json()["result"]["content"]]
    assert text.endswith("no: refused with key [redacted]")
    assert not ran.exists()
    held.release()
    events = wait_terminal(permission_host.handle.client(), held.run_id)
    assert_nothing_ran(permission_host.handle, held.run_id, events, ran)


def test_the_mcp_endpoint_and_the_model_proxy_check_a_presented_key_one_way(
    permission_host: PermissionHost, held: Held
) -> None:
    """The token alone, the token as its own key, a key of its tenant: through. Another
    tenant's key, in either header, or a key that is no key: the endpoint's one 404."""
    handle = permission_host.handle
    own, other = handle.key_a, handle.key_b
    passing = [
        {},
        {"Authorization": f"Bearer {held.token}"},
        {"x-api-key": held.token},
        {"Authorization": f"Bearer {own}"},
        {"x-api-key": own},
    ]
    refusing = [
        {"Authorization": f"Bearer {other}"},
        {"x-api-key": other},
        {"Authorization": f"Bearer {held.token}", "x-api-key": other},
        {"Authorization": f"Bearer {other}", "x-api-key": held.token},
        {"Authorization": "Bearer not-a-key"},
        {"Authorization": "Basic abc"},
    ]
    proxy = held.urls["openai"] + "/chat/completions"
    asked = len(permission_host.model.script.received)
    with httpx.Client(trust_env=False, timeout=30.0) as http:

        def ask_proxy(headers: dict[str, str]) -> httpx.Response:
            # Not a chat request: one that passes the token check is answered 400 in the
            # API's shape, and no request reaches the model.
            return http.post(proxy, json={"not": "a chat request"}, headers=headers)

        for headers in passing:
            assert _mcp(held.urls["mcp"], "tools/list", {}, **headers).status_code == 200, headers
            answered = ask_proxy(headers)
            assert answered.status_code == 400, headers
            assert answered.json()["error"]["code"] == "invalid_request", answered.text
        mcp_refusals = [_mcp(held.urls["mcp"], "tools/list", {}, **h) for h in refusing]
        proxy_refusals = [ask_proxy(h) for h in refusing]
    assert [r.status_code for r in mcp_refusals + proxy_refusals] == [404] * (2 * len(refusing))
    assert {r.json()["message"] for r in mcp_refusals} == {"No such MCP endpoint."}
    assert {r.json()["message"] for r in proxy_refusals} == {"No such model endpoint."}
    assert {r.json()["error"] for r in mcp_refusals + proxy_refusals} == {"not_found"}
    assert len(permission_host.model.script.received) == asked, "a request reached the model"


def test_an_offline_host_with_mcp_servers_starts_none_and_fails_their_calls_closed(
    permission_host: PermissionHost, backend: Backend, tmp_path: Path
) -> None:
    before = permission_host.starts.read_text().splitlines()
    assert before, "the online host started its MCP server"
    offline = host_settings(
        backend, tmp_path / "data", project=permission_host.project, live_tools=False
    )
    with running_host(offline, backend) as host:
        calls = [{"tool": "leaky:whoami", "args": {}}, {"tool": "perm:granted", "args": {}}]
        _, events = finish(host, "perm-python", {"calls": calls})
    seen = decided(events)
    assert [entry["error"]["code"] for entry in seen] == ["live_tools_disabled"] * 2
    assert permission_host.starts.read_text().splitlines() == before, "an MCP server started"
