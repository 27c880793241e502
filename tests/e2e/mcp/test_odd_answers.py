"""An MCP server's odd answer: a lone surrogate, or a value nested past the SDK's parser.

A server in another language may answer `tools/call` with a text block holding
`"\\ud800"` (legal JSON text) or a structured result 300 levels deep; the official SDK's
client (the host's, over stdio and Streamable HTTP) refuses to parse either before the
host sees it. Whatever it does, the call must end as a recorded failure of the call,
promptly, for an agent in the host (python lane) and for an agent outside it calling the
invocation's MCP endpoint (command lane), and the run must end.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openwop_client.types import CreateRunRequest

from _backends import Backend
from _projects import write_agent_workflow

from .._server import ServerHandle, free_port, host_settings, running_host
from .._support import table_rows, wait_terminal
from .conftest import AGENTS, wait_for_port

HERE = Path(__file__).parent
ODD_SERVER = HERE / "_odd_server.py"
TIMEOUT_SECONDS = 600
"""The servers' call timeout: far beyond a test's calls, so a call that ends did not time out."""

AGENT_MODULE = "wopeval_e2e_odd_mcp"
AGENT_CODE = '''\
async def odd_mcp_agent(context):
    """Calls the tool its input names; decides its answer, or the failure it got."""
    try:
        answer = await context.call_tool(context.input["tool"], {"kind": context.input["kind"]})
    except Exception as error:
        return {"failed": getattr(error, "code", type(error).__name__)}
    return {"answer": answer}
'''


@pytest.fixture(scope="module")
def odd_http_server() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(ODD_SERVER), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def odd_host(
    backend: Backend, tmp_path_factory: pytest.TempPathFactory, odd_http_server: str
) -> Iterator[ServerHandle]:
    project = tmp_path_factory.mktemp(f"odd-mcp-project-{backend.name}")
    (project / "workflows").mkdir()
    (project / f"{AGENT_MODULE}.py").write_text(AGENT_CODE)
    python = json.dumps(sys.executable)
    toml = f"""\
workflows = ["workflows/*.json"]

[[mcp_servers]]
name = "odd"
command = [{python}, {json.dumps(str(ODD_SERVER))}]
timeout_seconds = {TIMEOUT_SECONDS}

[[mcp_servers]]
name = "odd-http"
url = "{odd_http_server}"
timeout_seconds = {TIMEOUT_SECONDS}

[[agents]]
id = "odd.inside"
lane = "python"
callable = "{AGENT_MODULE}:odd_mcp_agent"

[[agents]]
id = "odd.outside"
lane = "command"
command = [{python}, "{AGENTS}", "probe"]
"""
    (project / "wopeval.toml").write_text(toml)
    write_agent_workflow(project, "odd.inside")
    write_agent_workflow(project, "odd.outside")
    data_dir = tmp_path_factory.mktemp(f"odd-mcp-host-{backend.name}")
    try:
        with running_host(host_settings(backend, data_dir, project=project), backend) as handle:
            yield handle
    finally:
        sys.modules.pop(AGENT_MODULE, None)
        sys.path[:] = [p for p in sys.path if p != str(project.resolve())]


def _run(host: ServerHandle, workflow: str, inputs: dict[str, Any]) -> tuple[str, Any]:
    """A run of `workflow`, ended (within `wait_terminal`'s deadline, far below the servers'
    timeout), and what its agent decided."""
    client = host.client()
    run_id = client.runs_create(CreateRunRequest(workflowId=workflow, inputs=inputs)).runId
    events = wait_terminal(client, run_id)
    assert events[-1].type == "run.completed", events[-1]
    (decided,) = [e.payload["decision"] for e in events if e.type == "agent.decided"]
    return run_id, decided


def _assert_failed_call(host: ServerHandle, run_id: str, server: str, kind: str) -> None:
    """The run's one call: recorded, failed as the server's answer unreadable."""
    (row,) = table_rows(host.database_url, "tool_calls", run_id=run_id)
    assert (row["status"], row["recorded"], row["inputs"]) == ("error", True, {"kind": kind})
    assert row["error"]["code"] == "mcp_protocol_error"
    # What the parser said, never the answer's text (the tool's content).
    why = "unexpected end of hex escape" if kind == "surrogate" else "recursion limit exceeded"
    message = row["error"]["message"]
    assert message.startswith(f"MCP server {server}'s answer could not be read (")
    assert why in message
    assert "jsonrpc" not in message


@pytest.mark.parametrize("server", ["odd", "odd-http"])
@pytest.mark.parametrize("kind", ["surrogate", "deep"])
def test_an_odd_answer_fails_the_call_of_an_agent_inside(
    odd_host: ServerHandle, server: str, kind: str
) -> None:
    tool = f"{server}:answer"
    run_id, decided = _run(odd_host, "odd-inside", {"tool": tool, "kind": kind})
    assert decided == {"failed": "mcp_protocol_error"}
    _assert_failed_call(odd_host, run_id, server, kind)
    # The server's next answer is read as ever.
    _, plain = _run(odd_host, "odd-inside", {"tool": tool, "kind": "plain"})
    assert plain == {"answer": {"content": [{"type": "text", "text": "plain"}]}}


@pytest.mark.parametrize("server", ["odd", "odd-http"])
@pytest.mark.parametrize("kind", ["surrogate", "deep"])
def test_an_odd_answer_fails_the_call_of_an_agent_outside(
    odd_host: ServerHandle, server: str, kind: str, tmp_path: Path
) -> None:
    """At the invocation's MCP endpoint the failed call is a tool error (`isError`)."""
    inputs = {
        "urlFile": str(tmp_path / "url"),
        "calls": [{"tool": f"{server}__answer", "args": {"kind": kind}}],
    }
    run_id, decided = _run(odd_host, "odd-outside", inputs)
    assert decided["results"] == [{"isError": True, "structured": None}]
    _assert_failed_call(odd_host, run_id, server, kind)
