"""The project manifest (`wopeval.toml`, described in project.py) as read: closed entries
that refuse unknown keys; nothing here imports or starts what they name.

Apart from project.py so the secrets a manifest names (project_secrets.py) are read off it
without importing the loader that redacts with them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from wopeval.engine.catalog.graders import DEFAULT_GRADER_TIMEOUT_SECONDS
from wopeval.engine.catalog.judges import JudgeEntry
from wopeval.engine.catalog.project_llm import LlmFields, ModelPriceEntry
from wopeval.wire.suite import GRADER_ID_PATTERN
from wopeval.wire.task_detail import ToolsChangedPolicy

DEFAULT_AGENT_TIMEOUT_SECONDS = 300.0


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CredentialEntry(_Closed):
    header: str = "Authorization"
    template: str = "Bearer {secret}"
    env: str | None = None
    value: str | None = None


class AgentEntry(LlmFields):
    id: str
    lane: Literal["scripted", "python", "command", "http", "openai", "anthropic"]
    callable: str | None = None
    command: list[str] | None = None
    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    credential: CredentialEntry | None = None
    timeout_seconds: float = Field(default=DEFAULT_AGENT_TIMEOUT_SECONDS, gt=0)
    tools: list[str] | None = None
    record: bool = True
    wire_content: Literal["full", "hash"] = "full"
    description: str = ""


class ToolEntry(_Closed):
    name: str
    kind: Literal["python", "http"]
    callable: str | None = None
    url: str | None = None
    method: Literal["GET", "POST", "PUT"] = "POST"
    credential: CredentialEntry | None = None
    description: str = ""
    input_schema: dict[str, JsonValue] | None = None


class McpCredentialEntry(_Closed):
    """Where the secret comes from (`env` / `value`) and where it goes: the stdio process's
    variable `server_env` (default: the name in `env`), or the HTTP header `header`."""

    env: str | None = None
    value: str | None = None
    server_env: str | None = None
    header: str = "Authorization"
    template: str = "Bearer {secret}"


class McpServerEntry(_Closed):
    name: str = Field(pattern=r"^[A-Za-z0-9._-]+$")
    command: list[str] | None = Field(default=None, min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    credential: McpCredentialEntry | None = None
    tools: list[str] | None = None
    timeout_seconds: float | None = Field(default=None, gt=0)


class GraderEntry(_Closed):
    id: str = Field(pattern=GRADER_ID_PATTERN)
    callable: str
    timeout_seconds: float = Field(default=DEFAULT_GRADER_TIMEOUT_SECONDS, gt=0)


class EvalEntry(_Closed):
    """A named eval (`wopeval eval NAME`): what to run, against which recordings and baseline.

    The CLI reads it; command-line flags override each member (docs/ci.md).
    """

    name: str = Field(pattern=r"^[A-Za-z0-9._-]+$")
    suite: str
    """The suite: a fixture id, `<suiteId>@<version>`, or a suite file (`*.json`, relative
    to the project) the CLI publishes to the host before the run."""
    agent: str
    """The agent under evaluation."""
    fixture_runs: str | dict[str, str] | None = None
    """A `{taskId: runId}` map, or the path of a JSON file holding one (relative to the
    project), giving each named task its RFC 0252 source run."""
    baseline: str | None = None
    """A baseline eval run id, or `latest:TAG`."""
    modes: list[str] | None = None
    trials: int | None = Field(default=None, ge=1, le=100)
    offline: bool = False
    """Refuse to start when a task would reach a live tool, and run none live."""
    tools_changed: ToolsChangedPolicy = "report"
    """What a task whose MCP tools changed since its recording comes to (`report`, `fail`)."""
    tags: list[str] = Field(default_factory=list)
    """Tags the eval run carries (a later `--baseline latest:TAG` finds it by them)."""


class CalibrationEntry(_Closed):
    """`[calibration]`: the floor a `gate = true` judge's latest calibration must clear
    (docs/graders.md, "Calibration")."""

    kappa_min: float = Field(default=0.6, ge=-1, le=1)
    """Cohen's kappa at least this."""
    min_labels: int = Field(default=30, ge=1)
    """Over at least this many labelled cases."""


class ProjectFile(_Closed):
    agents: list[AgentEntry] = Field(default_factory=list)
    tools: list[ToolEntry] = Field(default_factory=list)
    graders: list[GraderEntry] = Field(default_factory=list)
    judges: list[JudgeEntry] = Field(default_factory=list)
    calibration: CalibrationEntry = Field(default_factory=CalibrationEntry)
    mcp_servers: list[McpServerEntry] = Field(default_factory=list)
    evals: list[EvalEntry] = Field(default_factory=list)
    models: dict[str, ModelPriceEntry] = Field(default_factory=dict)
    workflows: list[str] = Field(default_factory=list)
    suites: list[str] = Field(default_factory=list)
