"""Erasure leaves a run's tool and model content in no table and no answer (engine/runs/erasure.py).

A command agent (`_marker_agent.py`) carries one unique marker down every content path:
its stderr, the args, results and errors of a python, an HTTP and an MCP tool (called
through its MCP endpoint), a model request through its proxy and the model's answer.
An eval run replays it from the run (derived fixtures, its own record, trial details with
their model exchanges) and a fork copies the run. Before erasure the marker is in the
store on every path; after the source is erased (`:erase-tool-content`, or `wopeval
purge` once it expired), every table of the database (as the database lists them, not the
schema's own list) and every answer of every GET route and dashboard page about these
runs (from the app's route table) is read, and the marker is nowhere.

The same host shows that the run page's tool table follows the agent's `wireContent` now:
content recorded under `full` is hidden once the agent is `hash`.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from fastapi.routing import APIRoute
from openwop_client.types import CreateRunRequest, ForkRunRequest
from openwop_client.wire_id import project_id
from sqlalchemy import MetaData, select

from _backends import Backend
from _model_server import ModelServer
from _processes import WOPEVAL
from wopeval.api import app as api
from wopeval.api.ui import pages
from wopeval.store import create_engine

from .._loopback import LoopbackApi
from .._server import TENANT_A, ServerHandle, host_settings, running_host
from .._support import wait_terminal
from ..evals._evals import golden, new_suite_id, publish, run_eval, set_completed_at, suite
from ..mcp.conftest import COUNTING_SERVER, CallLog
from .conftest import KEY_ENV

HERE = Path(__file__).parent
AGENT = "marker.agent"
WORKFLOW = "marker-run"
TOOLS_MODULE = "erasure_marker_tools"
PATHS = (
    "stderr",
    "python-args",
    "python-result",
    "python-error",
    "python-error-details",
    "http-args",
    "http-failing-args",
    "mcp-args",
    "mcp-error",
    "model-request",
    "model-answer",
)
"""Every content path the agent plants its marker on (the suffix each adds)."""


@dataclass(frozen=True)
class MarkerProject:
    directory: Path
    model_url: str
    loopback: LoopbackApi
    secret: str
    """The credential of the HTTP tool."""

    def write(self, wire_content: str = "full") -> None:
        _write_project(self, wire_content)


@dataclass(frozen=True)
class MarkerHost:
    handle: ServerHandle
    project: MarkerProject

    def wire_content(self, mode: str) -> None:
        """Give the agent this `wireContent`: the project is rewritten and the host restarted."""
        self.project.write(mode)
        self.handle.restart()


def _write_project(project: MarkerProject, wire_content: str) -> None:
    python = json.dumps(sys.executable)
    directory, loopback, secret = project.directory, project.loopback, project.secret
    (directory / f"{TOOLS_MODULE}.py").write_text((HERE / "marker_tools.py").read_text())
    (directory / "workflows").mkdir(exist_ok=True)
    workflow = {"id": WORKFLOW, "nodes": [{"id": "agent", "type": "core.agent", "agentId": AGENT}]}
    (directory / "workflows" / f"{WORKFLOW}.json").write_text(json.dumps(workflow))
    calls = CallLog(directory / "mcp-calls.log")
    (directory / "wopeval.toml").write_text(
        f"""workflows = ["workflows/*.json"]

[[tools]]
name = "marker:echo"
kind = "python"
callable = "{TOOLS_MODULE}:echo"

[[tools]]
name = "marker:refuse"
kind = "python"
callable = "{TOOLS_MODULE}:refuse"

[[tools]]
name = "marker:crm"
kind = "http"
url = "{loopback.url}/crm"
credential = {{ header = "Authorization", template = "Bearer {{secret}}", value = "{secret}" }}

[[tools]]
name = "marker:fails"
kind = "http"
url = "{loopback.url}/fail"

[[mcp_servers]]
name = "count"
command = [{python}, {json.dumps(str(COUNTING_SERVER))}]
env = {{ CALL_LOG = {json.dumps(str(calls.path))} }}

[[agents]]
id = "{AGENT}"
lane = "command"
command = [{python}, {json.dumps(str(HERE / "_marker_agent.py"))}]
base_url = "{project.model_url}"
api_key_env = "{KEY_ENV}"
model_replay = "recorded"
tools = ["marker:*", "count:*"]
timeout_seconds = 60
wire_content = "{wire_content}"
"""
    )


@pytest.fixture(scope="module")
def marker_host(
    backend: Backend,
    tmp_path_factory: pytest.TempPathFactory,
    model_server: ModelServer,
    api_key: str,
    loopback_api: LoopbackApi,
    credentials: dict[str, str],
) -> Iterator[MarkerHost]:
    directory = tmp_path_factory.mktemp(f"marker-project-{backend.name}")
    project = MarkerProject(directory, model_server.base_url, loopback_api, credentials["value"])
    project.write()
    # The same credential the e2e project's `/crm` tool carries: the loopback API is shared.
    loopback_api.expect("/crm", "Authorization", f"Bearer {credentials['value']}")
    data_dir = tmp_path_factory.mktemp(f"marker-host-{backend.name}")
    try:
        with running_host(host_settings(backend, data_dir, project=directory), backend) as handle:
            yield MarkerHost(handle, project)
    finally:
        sys.path[:] = [entry for entry in sys.path if entry != str(directory.resolve())]
        sys.modules.pop(TOOLS_MODULE, None)


@dataclass(frozen=True)
class Planted:
    marker: str
    source: str
    """The workflow run that made every call."""
    copies: tuple[str, ...]
    """The eval run that replayed it and the source's fork."""


def _record(handle: ServerHandle, model_server: ModelServer, tmp_path: Path) -> tuple[str, str]:
    """A run of the agent with a new marker: the marker and the run."""
    marker = "marker" + secrets.token_hex(12)
    model_server.script.add(f"{marker}-model-request", [{"content": f"{marker}-model-answer"}])
    marker_file = tmp_path / "marker.txt"
    marker_file.write_text(marker)
    client = handle.client()
    created = client.runs_create(CreateRunRequest(workflowId=WORKFLOW, inputs=_inputs(tmp_path)))
    assert wait_terminal(client, created.runId)[-1].type == "run.completed"
    return marker, created.runId


def _inputs(tmp_path: Path) -> dict[str, str]:
    return {"markerFile": str(tmp_path / "marker.txt")}


def _plant(handle: ServerHandle, model_server: ModelServer, tmp_path: Path) -> Planted:
    marker, source = _record(handle, model_server, tmp_path)
    inputs = _inputs(tmp_path)
    client = handle.client()
    document = suite(new_suite_id("marker"), [{"taskId": "scan", "input": inputs,
                     "expected": golden({"answer": "done"}, "json-match")}],
                     target=AGENT)  # fmt: skip
    with handle.http() as http:
        replayed = run_eval(client, http, publish(http, document), AGENT,
                            fixtureRuns={"scan": source})  # fmt: skip
    assert replayed.summary["passed"] is True, replayed.summary
    fork = client.runs_fork(source, ForkRunRequest(fromSeq=0, mode="replay")).runId
    assert wait_terminal(client, fork)[-1].type == "run.completed"
    return Planted(marker, source, (replayed.run_id, fork))


# ── every table, as the database lists them ─────────────────────────


async def _every_table(url: str) -> dict[str, str]:
    """Each table the database holds (reflected from it), its rows as one text."""
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            reflected = MetaData()
            await connection.run_sync(reflected.reflect)
            found = {}
            for name, table in sorted(reflected.tables.items()):
                rows = (await connection.execute(select(table))).all()
                found[name] = json.dumps([list(row) for row in rows], default=str)
            return found
    finally:
        await engine.dispose()


def _tables_holding(url: str, text: str) -> list[str]:
    return [name for name, rows in asyncio.run(_every_table(url)).items() if text in rows]


# ── every answer about the runs, from the app's route table ──────────


@contextmanager
def _signed_in(handle: ServerHandle) -> Iterator[httpx.Client]:
    """A browser signed in to the dashboard as tenant A."""
    with httpx.Client(base_url=handle.base_url, trust_env=False, timeout=60.0) as browser:
        key = handle.keys[TENANT_A]
        signed = browser.post("/ui/sign-in", data={"key": key, "next": "/ui/runs"})
        assert signed.status_code == 303, signed.text
        yield browser


def _answer_paths(handle: ServerHandle, run_ids: list[str]) -> list[str]:
    """Every GET path of the app's routers (the wire's and the dashboard's, as the app
    includes them) for these runs, their invocations and tasks, and each page and list that
    names no run; paths with any other parameter (an agent, a workflow, a suite, an MCP
    token) say nothing of a run's content. `/ui/live` streams until the page leaves."""
    values: dict[str, list[str]] = {"runId": [project_id(run_id) for run_id in run_ids]}
    with handle.http() as http:
        for segment in values["runId"]:
            listed = http.get(f"/host/wopeval/runs/{segment}/invocations").json()
            values.setdefault("invocationId", []).extend(
                line["invocationId"] for line in listed["invocations"]
            )
        values["taskId"] = ["scan"]
    values["against"] = values["runId"]
    paths: list[str] = []
    for route in (route for router in (*api.ROUTERS, *pages.ROUTERS) for route in router.routes):
        if not isinstance(route, APIRoute) or "GET" not in (route.methods or ()):
            continue
        names = [param.name for param in route.dependant.path_params]
        queries = [q.name for q in route.dependant.query_params if q.field_info.is_required()]
        if route.path == "/ui/live" or any(name not in values for name in (*names, *queries)):
            continue
        expanded = [route.path + "".join(f"&{name}={{{name}}}" for name in queries)]
        for name in (*names, *queries):
            expanded = [p.replace(f"{{{name}}}", v) for p in expanded for v in values[name]]
        paths.extend(path.replace("&", "?", 1) for path in expanded)
    return sorted(set(paths))


def _answers_holding(handle: ServerHandle, run_ids: list[str], text: str) -> list[str]:
    paths = _answer_paths(handle, run_ids)
    source, evaluated = project_id(run_ids[0]), project_id(run_ids[1])
    assert {
        f"/runs/{source}/events/poll",
        f"/host/wopeval/runs/{source}/invocations",
        f"/host/wopeval/runs/{evaluated}/tasks/scan",
        f"/ui/runs/{source}",
        f"/ui/evals/{evaluated}/tasks/scan",
    } <= set(paths), paths
    assert any(path.endswith("/stderr") for path in paths), paths
    holding = []
    with handle.http() as wire, _signed_in(handle) as browser:
        for path in paths:
            answer = (browser if path.startswith("/ui") else wire).get(path)
            assert answer.status_code < 500, (path, answer.text)
            if text in answer.text:
                holding.append(path)
    return holding


def _erase_by_route(handle: ServerHandle, backend: Backend, source: str) -> None:
    with handle.http() as http:
        erased = http.post(f"/host/wopeval/runs/{project_id(source)}:erase-tool-content")
    assert erased.status_code == 200, erased.text
    assert erased.json()["erasedRuns"] == 3


def _erase_by_purge(handle: ServerHandle, backend: Backend, source: str) -> None:
    """`wopeval purge` once the source's end is past the retention period (the host
    stopped: a live host purges on its own schedule)."""
    url = handle.database_url
    handle.stop()
    try:
        set_completed_at(url, source, datetime.now(UTC) - timedelta(days=40))
        where = (["--database-url", url] if backend.name == "postgres"
                 else ["--data-dir", str(handle.settings.data_dir)])  # fmt: skip
        done = subprocess.run(
            [WOPEVAL, "purge", "--older-than-days", "30", *where],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        handle.start()
    assert done.returncode == 0, done.stderr
    assert "erased tool content of 3 runs" in done.stdout, done.stdout


@pytest.mark.parametrize("erase", [_erase_by_route, _erase_by_purge], ids=["route", "purge"])
def test_erasure_leaves_the_marker_of_every_content_path_in_no_table_and_no_answer(
    marker_host: MarkerHost,
    model_server: ModelServer,
    backend: Backend,
    tmp_path: Path,
    erase: Callable[[ServerHandle, Backend, str], None],
) -> None:
    handle = marker_host.handle
    planted = _plant(handle, model_server, tmp_path)
    url, marker = handle.database_url, planted.marker
    stored = "".join(asyncio.run(_every_table(url)).values())
    assert [path for path in PATHS if f"{marker}-{path}" not in stored] == []
    runs = [planted.source, *planted.copies]
    assert _answers_holding(handle, runs, marker), "the answers showed the content"

    erase(handle, backend, planted.source)

    assert _tables_holding(url, marker) == []
    assert _answers_holding(handle, runs, marker) == []


def _tool_table(page: str) -> str:
    found = re.search(r'<table id="tool-table".*?</table>', page, re.DOTALL)
    assert found is not None, page
    return found.group(0)


def test_the_tool_table_shows_content_only_while_the_agent_still_allows_it(
    marker_host: MarkerHost, model_server: ModelServer, tmp_path: Path
) -> None:
    """The run page's tool table follows the agent's `wireContent` now, not when it ran."""
    handle = marker_host.handle
    marker, run_id = _record(handle, model_server, tmp_path)
    page = f"/ui/runs/{project_id(run_id)}"
    with _signed_in(handle) as browser:
        shown = _tool_table(browser.get(page).text)
    assert f"{marker}-python-result" in shown
    marker_host.wire_content("hash")
    try:
        with _signed_in(handle) as browser:
            hidden = _tool_table(browser.get(page).text)
    finally:
        marker_host.wire_content("full")
    assert marker not in hidden
    # The agent's six calls (`_marker_agent.CALLS`), each one's content hidden.
    assert hidden.count("<tr data-call-id") == 6
    assert hidden.count("hidden (wireContent hash)") == 6
