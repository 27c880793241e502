"""The examples run as a user runs them (examples/README.md), as real processes.

`examples/mcp-tools`: the orders MCP server over stdio and over Streamable
HTTP, a python agent on its tools. `examples/command-agents`: a PydanticAI
agent and a plain-`mcp` agent in their own processes. Each is recorded in
production, replayed through `fixtureRuns` with the server receiving zero
calls, and the command agents are replayed against their changed version
(a change in the agent's code only) for the paired verdict.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openwop_client.types import CreateRunRequest

from _backends import Backend

from .._server import ServerHandle, free_port, host_settings, running_host
from .._support import wait_terminal, whole_store
from ..evals._evals import live_calls, run_eval
from .conftest import CallLog, wait_for_port

EXAMPLES = Path(__file__).parents[3] / "examples"
ORDERS = {"delivered-small": "A-1001", "not-delivered": "A-1002", "delivered-large": "A-1003"}
ORDERS_TOKEN = "orders-token-for-the-example"


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A copy of examples/, with `python` on PATH meaning this interpreter (as in a venv)."""
    copy = tmp_path_factory.mktemp("examples") / "examples"
    shutil.copytree(EXAMPLES, copy, ignore=shutil.ignore_patterns("*.log", "__pycache__"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
        patch.setenv("ORDERS_TOKEN", ORDERS_TOKEN)
        yield copy


def record(host: ServerHandle, workflow: str) -> dict[str, str]:
    """One production run per order, all at once; returns task id → run id."""
    client = host.client()
    runs = {
        task: client.runs_create(
            CreateRunRequest(workflowId=workflow, inputs={"order_id": order})
        ).runId
        for task, order in ORDERS.items()
    }
    for run_id in runs.values():
        assert wait_terminal(client, run_id)[-1].type == "run.completed"
    return runs


def replay(
    host: ServerHandle, suite_ref: str, agent: str, sources: dict[str, str], **fields: Any
) -> Any:
    with host.http() as http:
        ran = run_eval(host.client(), http, suite_ref, agent, fixtureRuns=sources, **fields)
        assert live_calls(http, ran.run_id) == 0
    return ran


# ── examples/mcp-tools ───────────────────────────────────────────────


@pytest.fixture(scope="module")
def orders_http_port(examples: Path) -> Iterator[int]:
    """The orders server over Streamable HTTP, started as the example's README says."""
    port = free_port()
    env = {**os.environ, "ORDERS_CALL_LOG": str(examples / "mcp-tools" / "orders-calls.log")}
    process = subprocess.Popen(
        [sys.executable, "orders_server.py", "--http", str(port)],
        cwd=examples / "mcp-tools",
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, process)
        yield port
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize("manifest", ["wopeval.toml", "http.toml"], ids=["stdio", "http"])
def test_the_mcp_tools_example_records_and_replays_with_zero_server_calls(
    backend: Backend,
    tmp_path: Path,
    examples: Path,
    orders_http_port: int,
    manifest: str,
) -> None:
    project = examples / "mcp-tools"
    path = project / manifest
    path.write_text(path.read_text().replace("127.0.0.1:8791", f"127.0.0.1:{orders_http_port}"))
    log = CallLog(project / "orders-calls.log")
    settings = host_settings(backend, tmp_path, project=path)
    with running_host(settings, backend) as host:
        before = log.count()
        sources = record(host, "orders-refund")
        made = log.lines()[before:]
        assert sorted(line["tool"] for line in made) == ["lookup_order"] * 3 + ["refund"]
        assert all(line["token"] for line in made), "the credential did not reach the server"
        assert ORDERS_TOKEN not in json.dumps(whole_store(host.database_url), default=str)

        replayed = replay(host, "orders.evals.refunds@1.0.0", "orders.refund-agent", sources)
        assert replayed.summary["passed"] is True
        assert replayed.summary["fixtureMissCount"] == 0
        assert log.count() == before + len(made), "the replay reached the orders server"


# ── examples/command-agents ──────────────────────────────────────────


@pytest.fixture(scope="module")
def command_host(backend: Backend, examples: Path, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[ServerHandle]:  # fmt: skip
    data_dir = tmp_path_factory.mktemp(f"command-agents-{backend.name}")
    settings = host_settings(backend, data_dir, project=examples / "command-agents")
    with running_host(settings, backend) as host:
        yield host


@pytest.mark.parametrize("agent", ["pydantic", "mcp"], ids=["pydantic-ai", "plain-mcp"])
def test_a_command_agent_is_recorded_then_its_change_gets_the_paired_verdict(
    command_host: ServerHandle, examples: Path, agent: str
) -> None:
    if agent == "pydantic" and importlib.util.find_spec("pydantic_ai") is None:
        message = "PydanticAI is not installed: `pip install -e '.[examples]'` (make test does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    project = examples / "command-agents"
    log = CallLog(project / "orders-calls.log")
    agent_id, suite_ref = f"orders.{agent}-agent", f"orders.evals.refunds-{agent}@1.0.0"
    before = log.count()
    sources = record(command_host, f"orders-refund-{agent}")
    recorded = log.count()
    assert recorded == before + 4, "three lookups and one refund reach the server"

    baseline = replay(command_host, suite_ref, agent_id, sources)
    assert baseline.summary["passed"] is True
    assert baseline.summary["fixtureMissCount"] == 0

    code = project / f"{agent}_agent.py"
    original = code.read_text()
    shutil.copy(project / "changed" / f"{agent}_agent.py", code)
    try:
        candidate = replay(
            command_host,
            suite_ref,
            agent_id,
            sources,
            evalModes=["golden", "regression"],
            baselineRunId=baseline.run_id,
        )
    finally:
        code.write_text(original)

    regression = candidate.summary["regression"]
    assert regression["baselineRunId"] == baseline.run_id
    assert regression["verdict"] == "regressed"
    verdicts = {task["taskId"]: task["verdict"] for task in regression["tasks"]}
    assert verdicts == {"delivered-small": "unchanged", "not-delivered": "unchanged",
                        "delivered-large": "regressed"}  # fmt: skip
    # The changed agent wanted to refund 250 without a human: a miss, never executed.
    assert candidate.task("delivered-large")["fixtureMissCount"] == 1
    assert log.count() == recorded, "a replay reached the orders server"
