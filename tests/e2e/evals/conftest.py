"""Fixtures of the eval tests: hosts with their own settings, and a host with an eval project.

`eval_project_server` loads a `--project` of its own: a scripted agent whose
events carry only `argsHash` (`wire_content = "hash"`), a scripted agent with
`record = false`, a python "gate" agent that makes its scripted calls and
then waits until the test creates a file — the one way to hold an eval or
workflow run active for as long as a test needs — and a python agent that
delegates to the agents its input names (itself included) between its own calls.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from _backends import Backend
from wopeval.settings import Settings

from .._server import TENANT_A, TENANT_B, RequestLog, ServerHandle, free_port

EVAL_PROJECT_MODULE = "wopeval_e2e_evals_project"
HASH_AGENT = "evals.hash-agent"
UNRECORDED_AGENT = "evals.unrecorded-agent"
GATE_AGENT = "evals.gate-agent"
DELEGATING_AGENT = "evals.delegating-agent"
HASH_WORKFLOW = "evals-hash-counter"
UNRECORDED_WORKFLOW = "evals-unrecorded-counter"
GATE_WORKFLOW = "evals-gate"
DELEGATING_WORKFLOW = "evals-delegating"
GATE_DEADLINE_SECONDS = 30.0

_PROJECT_CODE = '''\
"""The gate agent waits for the test's gate file; the delegating agent hands turns off."""

import asyncio
from pathlib import Path

from wopeval.agents import ToolCallError


async def gate_agent(context):
    script = context.input
    for call in script.get("calls", []):
        await context.call_tool(call["tool"], call["args"])
    Path(script["entered"]).touch()
    gate = Path(script["gate"])
    while not gate.exists():
        await asyncio.sleep(0.02)
    return script.get("answer")


async def delegating_agent(context):
    """`calls`, then each of `delegates` ({agent, input}) as a delegate, then `after`."""
    script = context.input
    for call in script.get("calls", []):
        await _call(context, call)
    for turn in script.get("delegates", []):
        await context.delegate(turn["agent"], turn["input"])
    for call in script.get("after", []):
        await _call(context, call)
    return script.get("answer")


async def _call(context, call):
    # A fixture miss is an error result: note it and go on, as the scripted agent does.
    try:
        await context.call_tool(call["tool"], call["args"])
    except ToolCallError:
        pass
'''

_PROJECT_TOML = f"""\
workflows = ["workflows/*.json"]

[[agents]]
id = "{HASH_AGENT}"
lane = "scripted"
wire_content = "hash"

[[agents]]
id = "{UNRECORDED_AGENT}"
lane = "scripted"
record = false

[[agents]]
id = "{GATE_AGENT}"
lane = "python"
callable = "{EVAL_PROJECT_MODULE}:gate_agent"

[[agents]]
id = "{DELEGATING_AGENT}"
lane = "python"
callable = "{EVAL_PROJECT_MODULE}:delegating_agent"
"""


def host_settings(backend: Backend, data_dir: Path, **extra: Any) -> Settings:
    """Two tenants, a fresh database of `backend`, a free port, and `extra` settings."""
    return Settings(
        data_dir=data_dir,
        database_url=backend.new_database(),
        api_keys={
            TENANT_A: "wop_test_a_" + secrets.token_hex(16),
            TENANT_B: "wop_test_b_" + secrets.token_hex(16),
        },
        port=free_port(),
        **extra,
    )


@contextmanager
def running_host(
    settings: Settings, backend: Backend, request_log: RequestLog | None = None
) -> Iterator[ServerHandle]:
    handle = ServerHandle(settings, backend=backend.name, request_log=request_log)
    handle.start()
    try:
        yield handle
    finally:
        handle.stop()


def _write_project(directory: Path) -> None:
    (directory / "workflows").mkdir()
    (directory / f"{EVAL_PROJECT_MODULE}.py").write_text(_PROJECT_CODE)
    (directory / "wopeval.toml").write_text(_PROJECT_TOML)
    for workflow, agent in (
        (HASH_WORKFLOW, HASH_AGENT),
        (UNRECORDED_WORKFLOW, UNRECORDED_AGENT),
        (GATE_WORKFLOW, GATE_AGENT),
        (DELEGATING_WORKFLOW, DELEGATING_AGENT),
    ):
        document = {
            "id": workflow,
            "nodes": [{"id": "agent", "type": "core.agent", "agentId": agent}],
        }
        (directory / "workflows" / f"{workflow}.json").write_text(json.dumps(document))


@pytest.fixture(scope="package")
def eval_project_server(
    backend: Backend, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerHandle]:
    project = tmp_path_factory.mktemp(f"evals-project-{backend.name}")
    _write_project(project)
    data_dir = tmp_path_factory.mktemp(f"evals-project-host-{backend.name}")
    try:
        with running_host(host_settings(backend, data_dir, project=project), backend) as handle:
            yield handle
    finally:
        sys.path[:] = [p for p in sys.path if p != str(project.resolve())]
        sys.modules.pop(EVAL_PROJECT_MODULE, None)


@dataclass(frozen=True)
class Gate:
    """Two files: the gate agent touches `entered` when it waits, and returns once `gate` exists."""

    entered: Path
    gate: Path

    def inputs(self, answer: str = "released", calls: list[Any] | None = None) -> dict[str, Any]:
        return {
            "calls": calls or [],
            "entered": str(self.entered),
            "gate": str(self.gate),
            "answer": answer,
        }

    def wait_entered(self) -> None:
        deadline = time.monotonic() + GATE_DEADLINE_SECONDS
        while not self.entered.exists():
            assert time.monotonic() < deadline, "the gate agent never started waiting"
            time.sleep(0.02)

    def release(self) -> None:
        self.gate.touch()


@pytest.fixture
def gate(tmp_path: Path) -> Iterator[Gate]:
    """A gate that is always released at the end, so no run is left waiting."""
    made = Gate(tmp_path / "entered", tmp_path / "gate")
    try:
        yield made
    finally:
        made.release()


@pytest.fixture
def gates(tmp_path: Path) -> Iterator[list[Gate]]:
    """Several independent gates (one per held run)."""
    made = [Gate(tmp_path / f"entered-{i}", tmp_path / f"gate-{i}") for i in range(3)]
    try:
        yield made
    finally:
        for one in made:
            one.release()
