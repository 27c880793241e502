"""Fixtures of the eval tests: hosts with their own settings, and a host with an eval project.

`eval_project_server` loads a `--project` of its own: a scripted agent whose
events carry only `argsHash` (`wire_content = "hash"`), a scripted agent with
`record = false`, a python "gate" agent that makes its scripted calls and
then waits until the test creates a file — the one way to hold an eval or
workflow run active for as long as a test needs —, a python agent that delegates
to the agents its input names (itself included) between its own calls, a python
agent that makes the calls a file lists — rewriting the file changes the agent and
not the suite —, and three custom graders (a sync one on the decision, an async one
on the tool trace, one that raises).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from _backends import Backend

from .._gate import Gate
from .._server import ServerHandle, host_settings, running_host

EVAL_PROJECT_MODULE = "wopeval_e2e_evals_project"
HASH_AGENT = "evals.hash-agent"
UNRECORDED_AGENT = "evals.unrecorded-agent"
GATE_AGENT = "evals.gate-agent"
WEATHER_AGENT = "evals.weather-agent"
WEATHER_WORKFLOW = "evals-weather"
DELEGATING_AGENT = "evals.delegating-agent"
FILE_AGENT = "evals.file-agent"
HASH_WORKFLOW = "evals-hash-counter"
UNRECORDED_WORKFLOW = "evals-unrecorded-counter"
GATE_WORKFLOW = "evals-gate"
DELEGATING_WORKFLOW = "evals-delegating"
GRADERS_MODULE = "wopeval_e2e_evals_graders"
TIER_GRADER = "e2e.tier-matches"
TRACE_GRADER = "e2e.ok-calls"
BROKEN_GRADER = "e2e.broken"

_PROJECT_CODE = '''\
"""The eval project's python agents."""

import asyncio
import json
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


async def weather_agent(context):
    """A first agent with a bug: an input without `city` raises KeyError."""
    seen = await context.call_tool(
        "conformance.eval:counter", {"op": "read", "key": "weather"}
    )
    return {"city": context.input["city"], "seen": seen["count"]}


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


async def file_agent(context):
    """Makes the calls the JSON file at `script` lists, then decides its `answer`.

    The file is read at each invocation, so a test rewrites it to change the agent.
    """
    script = json.loads(Path(context.input["script"]).read_text())
    for call in script["calls"]:
        await _call(context, call)
    return script["answer"]


async def _call(context, call):
    # A fixture miss is an error result: note it and go on, as the scripted agent does.
    try:
        await context.call_tool(call["tool"], call["args"])
    except ToolCallError:
        pass
'''

_GRADERS_CODE = '''\
"""Custom graders: the decision's tier, the tool trace's ok calls, and one that raises."""


def tier_matches(decision, expected, calls):
    tier = decision.get("tier") if isinstance(decision, dict) else None
    passed = tier == expected
    return {"passed": passed, "score": 1.0 if passed else 0.0, "reason": f"tier {tier}"}


async def ok_calls(decision, expected, calls):
    ok = [call["tool"] for call in calls if call["status"] == "ok" and call["served"] == "live"]
    return {"passed": len(ok) == expected, "score": 1, "reason": f"{len(ok)} ok live calls"}


def broken(decision, expected, calls):
    raise RuntimeError("the grader broke")
'''

_PROJECT_TOML = f"""\
workflows = ["workflows/*.json"]

[[graders]]
id = "{TIER_GRADER}"
callable = "{GRADERS_MODULE}:tier_matches"

[[graders]]
id = "{TRACE_GRADER}"
callable = "{GRADERS_MODULE}:ok_calls"

[[graders]]
id = "{BROKEN_GRADER}"
callable = "{GRADERS_MODULE}:broken"

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
id = "{WEATHER_AGENT}"
lane = "python"
callable = "{EVAL_PROJECT_MODULE}:weather_agent"

[[agents]]
id = "{DELEGATING_AGENT}"
lane = "python"
callable = "{EVAL_PROJECT_MODULE}:delegating_agent"

[[agents]]
id = "{FILE_AGENT}"
lane = "python"
callable = "{EVAL_PROJECT_MODULE}:file_agent"
"""


def _write_project(directory: Path) -> None:
    (directory / "workflows").mkdir()
    (directory / f"{EVAL_PROJECT_MODULE}.py").write_text(_PROJECT_CODE)
    (directory / f"{GRADERS_MODULE}.py").write_text(_GRADERS_CODE)
    (directory / "wopeval.toml").write_text(_PROJECT_TOML)
    for workflow, agent in (
        (HASH_WORKFLOW, HASH_AGENT),
        (UNRECORDED_WORKFLOW, UNRECORDED_AGENT),
        (GATE_WORKFLOW, GATE_AGENT),
        (WEATHER_WORKFLOW, WEATHER_AGENT),
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
        sys.modules.pop(GRADERS_MODULE, None)


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
