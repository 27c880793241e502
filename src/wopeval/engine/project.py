"""Load a user's project: `DIR/wopeval.toml` names its agents, tools, workflows and suites.

[[agents]]
id = "support-agent"
lane = "python"                    # or "scripted"
callable = "support.agent:decide"  # async (context) -> decision
record = true                      # keep calls for RFC 0252 derivation
wire_content = "full"              # or "hash"

[[tools]]
name = "support:lookup"
kind = "python"
callable = "support.tools:lookup"  # async (args) -> result

[[graders]]
id = "refund-check"
callable = "support.graders:refund_check"  # (decision, expected, calls) -> {passed, score, reason}
timeout_seconds = 60                       # optional

[[tools]]
name = "support:crm"
kind = "http"
url = "http://127.0.0.1:9100/crm"
credential = { header = "Authorization", template = "Bearer {secret}", env = "CRM_TOKEN" }

workflows = ["workflows/*.json"]
suites = ["suites/*.json"]
"""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from wopeval.agents import AgentSpec, PythonAgent, ScriptedAgent
from wopeval.engine.catalog import Catalog, GlobalSuite
from wopeval.engine.grading import DEFAULT_GRADER_TIMEOUT_SECONDS, CustomGrader
from wopeval.tools import Credential, HttpTool, PythonTool, Secret, load_callable
from wopeval.wire.suite import GRADER_ID_PATTERN
from wopeval.wire.workflows import Workflow


class ProjectError(Exception):
    """The project directory cannot be loaded; the message says which file and field."""


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AgentEntry(_Closed):
    id: str
    lane: Literal["scripted", "python"]
    callable: str | None = None
    record: bool = True
    wire_content: Literal["full", "hash"] = "full"
    description: str = ""


class CredentialEntry(_Closed):
    header: str = "Authorization"
    template: str = "Bearer {secret}"
    env: str | None = None
    value: str | None = None


class ToolEntry(_Closed):
    name: str
    kind: Literal["python", "http"]
    callable: str | None = None
    url: str | None = None
    method: Literal["GET", "POST", "PUT"] = "POST"
    credential: CredentialEntry | None = None


class GraderEntry(_Closed):
    id: str = Field(pattern=GRADER_ID_PATTERN)
    callable: str
    timeout_seconds: float = Field(default=DEFAULT_GRADER_TIMEOUT_SECONDS, gt=0)


class ProjectFile(_Closed):
    agents: list[AgentEntry] = Field(default_factory=list)
    tools: list[ToolEntry] = Field(default_factory=list)
    graders: list[GraderEntry] = Field(default_factory=list)
    workflows: list[str] = Field(default_factory=list)
    suites: list[str] = Field(default_factory=list)


def read_project_file(directory: Path) -> ProjectFile:
    """`DIR/wopeval.toml` as written, checked but nothing imported."""
    manifest = directory / "wopeval.toml"
    try:
        return ProjectFile.model_validate(tomllib.loads(manifest.read_text(encoding="utf-8")))
    except FileNotFoundError as exc:
        raise ProjectError(f"{manifest} does not exist") from exc
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise ProjectError(f"{manifest}: {exc}") from exc


def load_project(directory: Path, catalog: Catalog, http: httpx.AsyncClient) -> None:
    manifest = directory / "wopeval.toml"
    project = read_project_file(directory)
    # The project's own modules are importable by their dotted paths.
    if str(directory.resolve()) not in sys.path:
        sys.path.insert(0, str(directory.resolve()))
    try:
        for agent in project.agents:
            catalog.agents.add(_agent(agent))
        for tool in project.tools:
            catalog.tools.add(_tool(tool, http))
        for grader in project.graders:
            function = load_callable(grader.callable)
            catalog.add_grader(CustomGrader(grader.id, function, grader.timeout_seconds))
    except (ValueError, ImportError) as exc:
        raise ProjectError(f"{manifest}: {exc}") from exc
    for path in _expand(directory, project.workflows):
        catalog.add_workflow(_parse(path, Workflow.model_validate))
    for path in _expand(directory, project.suites):
        catalog.add_suite(_parse(path, lambda doc: GlobalSuite(None, doc)))


def _agent(entry: AgentEntry) -> AgentSpec:
    if entry.lane == "python":
        if not entry.callable:
            raise ValueError(f"agent {entry.id!r}: the python lane needs `callable`")
        agent: PythonAgent | ScriptedAgent = PythonAgent(load_callable(entry.callable))
    else:
        agent = ScriptedAgent()
    return AgentSpec(
        entry.id,
        agent,
        lane=entry.lane,
        record=entry.record,
        wire_content=entry.wire_content,
        description=entry.description,
    )


def _tool(entry: ToolEntry, http: httpx.AsyncClient) -> PythonTool | HttpTool:
    if entry.kind == "python":
        if not entry.callable:
            raise ValueError(f"tool {entry.name!r}: a python tool needs `callable`")
        return PythonTool(entry.name, load_callable(entry.callable))
    if not entry.url:
        raise ValueError(f"tool {entry.name!r}: an http tool needs `url`")
    credential = None
    if entry.credential is not None:
        secret = _secret(entry.name, entry.credential)
        credential = Credential(entry.credential.header, secret, entry.credential.template)
    return HttpTool(entry.name, entry.url, client=http, method=entry.method, credential=credential)


def _secret(tool: str, entry: CredentialEntry) -> Secret:
    if entry.env:
        value = os.environ.get(entry.env)
        if not value:
            raise ValueError(f"tool {tool!r}: environment variable {entry.env} is not set")
        return Secret(value)
    if entry.value:
        return Secret(entry.value)
    raise ValueError(f"tool {tool!r}: a credential needs `env` or `value`")


def _expand(directory: Path, patterns: list[str]) -> list[Path]:
    found: list[Path] = []
    for pattern in patterns:
        matches = sorted(directory.glob(pattern))
        if not matches:
            raise ProjectError(f"{directory / pattern} matches no file")
        found.extend(matches)
    return found


def _parse(path: Path, build: Any) -> Any:
    try:
        return build(json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, ValidationError, ValueError, KeyError) as exc:
        raise ProjectError(f"{path}: {exc}") from exc
