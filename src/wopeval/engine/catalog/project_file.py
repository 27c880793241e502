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
from wopeval.wire.eval_options import ToolsChangedPolicy
from wopeval.wire.suite import GRADER_ID_PATTERN

DEFAULT_AGENT_TIMEOUT_SECONDS = 300.0


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CredentialEntry(_Closed):
    """A secret an `http` agent or tool sends as a header, added at egress only: never in a
    record, an event or a log line."""

    header: str = "Authorization"
    """The HTTP header the secret is sent in, at egress only."""
    template: str = "Bearer {secret}"
    """The header's value; `{secret}` stands for the secret."""
    env: str | None = None
    """The host's environment variable holding the secret (read at egress: a replay
    that calls nothing live needs none)."""
    value: str | None = None
    """The secret itself, written in the file; `env` is the safer choice."""


class AgentEntry(LlmFields):
    """An `[[agents]]` entry: one agent in one of six lanes (docs/agents.md); the LLM lanes'
    fields are docs/llm.md's."""

    id: str
    """The agentId: what a workflow's `core.agent` node and an eval name."""
    lane: Literal["scripted", "python", "command", "http", "openai", "anthropic"]
    """How the agent is plugged in (docs/agents.md, "The six lanes")."""
    callable: str | None = None
    """`python` lane: `module:function`, an `async (context) -> decision` importable
    from the project directory."""
    command: list[str] | None = None
    """`command` lane: the program and its arguments, one process per invocation."""
    cwd: str | None = None
    """`command` lane: the process's directory, relative to the project (default: the
    project directory)."""
    env: dict[str, str] = Field(default_factory=dict)
    """`command` lane: variables added to the process's environment."""
    url: str | None = None
    """`http` lane: the URL the host POSTs each invocation to."""
    credential: CredentialEntry | None = None
    """`http` lane: the header the host adds to each POST, at egress only."""
    timeout_seconds: float = Field(default=DEFAULT_AGENT_TIMEOUT_SECONDS, gt=0)
    """An invocation (`command`, `http`), or a model request (an LLM lane's, or one the model
    proxy forwards), taking longer fails."""
    tools: list[str] | None = None
    """The tools the agent is granted and offered: exact names or globs (`"orders:*"`);
    absent, every tool (the LLM lanes: none). An entry naming no tool stops the host."""
    record: bool = True
    """Keep the agent's calls, so a later eval can replay them (RFC 0252)."""
    wire_content: Literal["full", "hash"] = "full"
    """What of the agent's calls leaves the host on events and task details: `full`,
    or only their hashes (`hash`)."""
    description: str = ""
    """The agent's `description` in `GET /agents`."""


class ToolEntry(_Closed):
    """A `[[tools]]` entry: a python or HTTP tool (an MCP server's tools come from
    `[[mcp_servers]]`)."""

    name: str
    """The tool's canonical name, e.g. `support:lookup`; what agents' `tools` name."""
    kind: Literal["python", "http"]
    """`python` (a function of the project) or `http` (a POST, PUT or GET to `url`)."""
    callable: str | None = None
    """`python` kind: `module:function`, an `async (args) -> result`."""
    url: str | None = None
    """`http` kind: the URL the call's args are sent to."""
    method: Literal["GET", "POST", "PUT"] = "POST"
    """`http` kind: the HTTP method."""
    credential: CredentialEntry | None = None
    """`http` kind: the header the host adds at egress only."""
    description: str = ""
    """What the agent is told the tool does (its MCP listing, an LLM's function)."""
    input_schema: dict[str, JsonValue] | None = None
    """The JSON Schema of the args; default: a python tool's from the type hint of its
    first parameter, an http tool's `{"type": "object"}`."""


class McpCredentialEntry(_Closed):
    """Where the secret comes from (`env` / `value`) and where it goes: the stdio process's
    variable `server_env` (default: the name in `env`), or the HTTP header `header`."""

    env: str | None = None
    """The host's environment variable holding the secret."""
    value: str | None = Field(default=None, examples=["local-dev-token"])
    """The secret itself, written in the file; `env` is the safer choice."""
    server_env: str | None = None
    """stdio: the variable the server process gets the secret in (default: `env`'s name)."""
    header: str = "Authorization"
    """HTTP: the header the secret is sent in."""
    template: str = "Bearer {secret}"
    """HTTP: the header's value; `{secret}` stands for the secret."""


class McpServerEntry(_Closed):
    """An `[[mcp_servers]]` entry: a stdio process (`command`) or a Streamable HTTP server
    (`url`), listed at start (docs/agents.md, "MCP servers")."""

    name: str = Field(pattern=r"^[A-Za-z0-9._-]+$")
    """The server's name: its tools register as `<name>:<tool>`."""
    command: list[str] | None = Field(default=None, min_length=1)
    """stdio: the process the host starts (give `command` or `url`, not both)."""
    env: dict[str, str] = Field(default_factory=dict)
    """stdio: variables added to the process's environment."""
    cwd: str | None = None
    """stdio: the process's directory, relative to the project (default: the project
    directory)."""
    url: str | None = None
    """Streamable HTTP: the server's URL (give `command` or `url`, not both)."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP: headers sent with every request."""
    credential: McpCredentialEntry | None = None
    """The secret the host hands the server at egress only."""
    tools: list[str] | None = None
    """The server's tools to register (default: every tool it lists); one it does not
    list stops the host."""
    timeout_seconds: float | None = Field(default=None, gt=0)
    """A tool call answered later fails with `tool_timeout` (default: the host's tool
    timeout, `WOPEVAL_TOOL_TIMEOUT_SECONDS`)."""


class GraderEntry(_Closed):
    """A `[[graders]]` entry: a custom grader a task's `custom` match names (docs/graders.md)."""

    id: str = Field(pattern=GRADER_ID_PATTERN)
    """What a task's `expected.match.grader` names (docs/graders.md, `custom`)."""
    callable: str
    """`module:function`, `(decision, expected, calls) -> {passed, score, reason}`."""
    timeout_seconds: float = Field(default=DEFAULT_GRADER_TIMEOUT_SECONDS, gt=0)
    """A grading taking longer fails the trial."""


class EvalEntry(_Closed):
    """A named eval (`wopeval eval NAME`): what to run, against which recordings and baseline.

    The CLI reads it; command-line flags override each member (docs/ci.md).
    """

    name: str = Field(pattern=r"^[A-Za-z0-9._-]+$")
    """What `wopeval eval NAME` names."""
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
    """The modes the eval run requests (default: every mode the suite allows)."""
    trials: int | None = Field(default=None, ge=1, le=100)
    """Trials per task, overriding the suite's."""
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
    """The manifest as written: every table and key is optional; an unknown one is refused."""

    agents: list[AgentEntry] = Field(default_factory=list)
    """The agents the host can invoke."""
    tools: list[ToolEntry] = Field(default_factory=list)
    """Python and HTTP tools (MCP servers' tools are `[[mcp_servers]]`)."""
    graders: list[GraderEntry] = Field(default_factory=list)
    """Custom graders a suite's `custom` match names."""
    judges: list[JudgeEntry] = Field(default_factory=list)
    """Judge models that grade `rubric` tasks."""
    calibration: CalibrationEntry = Field(default_factory=CalibrationEntry)
    """The floor a gating judge's calibration must clear."""
    mcp_servers: list[McpServerEntry] = Field(default_factory=list)
    """MCP servers whose tools the host offers and records."""
    evals: list[EvalEntry] = Field(default_factory=list)
    """Named evals for `wopeval eval NAME` (docs/ci.md)."""
    models: dict[str, ModelPriceEntry] = Field(default_factory=dict)
    """The price table by model id: the cost of each task in the summary."""
    workflows: list[str] = Field(default_factory=list)
    """Globs of workflow files (JSON), relative to the project; each must match a file."""
    suites: list[str] = Field(default_factory=list)
    """Globs of suite files (JSON), relative to the project; each must match a file."""
