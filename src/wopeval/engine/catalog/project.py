"""Load a user's project: `DIR/wopeval.toml` names its agents, tools, workflows and suites.

[[agents]]
id = "support-agent"
lane = "python"                    # or "scripted", "command", "http" (docs/agents.md)
callable = "support.agent:decide"  # async (context) -> decision
record = true                      # keep calls for RFC 0252 derivation
wire_content = "full"              # or "hash"
tools = ["support:*"]              # what its MCP endpoint offers (default: every tool)

[[agents]]
id = "support-agent-cli"
lane = "command"                   # a process per invocation: JSON on stdin, decision on stdout
command = ["python", "agent.py"]
timeout_seconds = 120

[[agents]]
id = "support-llm"
lane = "openai"                    # the host runs the tool loop (project_llm.py, docs/llm.md);
                                   # "anthropic" for an Anthropic model
model = "gpt-4.1-mini"
tools = ["support:lookup"]

[models."gpt-4.1-mini"]            # the price table: cost per task in the summary
input_per_mtok = 0.40
output_per_mtok = 1.60

[[tools]]
name = "support:lookup"
kind = "python"
callable = "support.tools:lookup"  # async (args) -> result
input_schema = { type = "object", properties = { query = { type = "string" } } }

[[graders]]
id = "refund-check"
callable = "support.graders:refund_check"  # (decision, expected, calls) -> {passed, score, reason}
timeout_seconds = 60                       # optional

[[tools]]
name = "support:crm"
kind = "http"
url = "http://127.0.0.1:9100/crm"
credential = { header = "Authorization", template = "Bearer {secret}", env = "CRM_TOKEN" }

[[mcp_servers]]                    # its tools register as `orders:<tool>`
name = "orders"
command = ["python", "orders_server.py"]   # stdio; or url = "http://…/mcp" (Streamable HTTP)
credential = { env = "ORDERS_TOKEN" }      # the process gets it in ORDERS_TOKEN

[[evals]]                          # `wopeval eval ci-triage` (docs/ci.md)
name = "ci-triage"
suite = "demo.support.evals.triage@1.0.0"
agent = "support-agent"
fixture_runs = "suites/triage.fixture-runs.json"
baseline = "latest:main"
offline = true

workflows = ["workflows/*.json"]
suites = ["suites/*.json"]
"""

from __future__ import annotations

import json
import sys
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
from pydantic import ValidationError

from wopeval import evals
from wopeval.agents import (
    LLM_LANES,
    Agent,
    AgentSpec,
    CommandAgent,
    HttpAgent,
    LlmAgent,
    ProcessLaunch,
    PythonAgent,
    ScriptedAgent,
)
from wopeval.engine.catalog.catalog import Catalog, GlobalSuite
from wopeval.engine.catalog.graders import CustomGrader
from wopeval.engine.catalog.judges import check_judges, load_judge
from wopeval.engine.catalog.project_file import (
    AgentEntry,
    McpServerEntry,
    ProjectFile,
    ToolEntry,
)
from wopeval.engine.catalog.project_llm import (
    check_lane_fields,
    llm_lane,
    model_upstream,
    prices,
)
from wopeval.engine.catalog.project_secrets import configured_secrets
from wopeval.engine.recording import tool_names
from wopeval.engine.recording.redaction import Redactor
from wopeval.tools import (
    Credential,
    HttpTool,
    McpServers,
    McpServerSpec,
    PythonTool,
    Secret,
    ToolListing,
    ToolRegistry,
    derived_input_schema,
    load_callable,
)
from wopeval.tools.mcp import HttpEndpoint, McpCredential, StdioLaunch
from wopeval.wire.errors import error_pointer
from wopeval.wire.workflows import Workflow


class ProjectError(Exception):
    """The project directory cannot be loaded; the message says which file and field."""


def manifest_path(directory: Path) -> Path:
    """The project's manifest: `DIR/wopeval.toml`, or the `.toml` file named itself (one
    project directory can hold several variants)."""
    return directory if directory.suffix == ".toml" else directory / "wopeval.toml"


def read_project_file(directory: Path) -> ProjectFile:
    """The project's manifest as written, checked but nothing imported."""
    manifest = manifest_path(directory)
    try:
        return ProjectFile.model_validate(tomllib.loads(manifest.read_text(encoding="utf-8")))
    except FileNotFoundError as exc:
        raise ProjectError(f"{manifest} does not exist") from exc
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise ProjectError(f"{manifest}: {_described(exc)}") from exc


def load_project(
    directory: Path, catalog: Catalog, http: httpx.AsyncClient, *, tool_timeout: float
) -> list[McpServerSpec]:
    """Load the project into `catalog`; returns its MCP servers, which `connect_mcp_servers`
    then lists (connecting is asynchronous). `directory` may name the manifest itself."""
    manifest = manifest_path(directory)
    directory = manifest.parent
    project = read_project_file(manifest)
    # The project's own modules are importable by their dotted paths.
    if str(directory.resolve()) not in sys.path:
        sys.path.insert(0, str(directory.resolve()))
    try:
        for agent in project.agents:
            catalog.agents.add(_agent(agent, directory, http))
        for tool in project.tools:
            catalog.tools.add(*_tool(tool, http))
        for grader in project.graders:
            function = load_callable(grader.callable)
            catalog.add_grader(CustomGrader(grader.id, function, grader.timeout_seconds))
        for entry in project.judges:
            if entry.id in catalog.judges:
                raise ValueError(f"judge {entry.id!r} is defined twice")
            catalog.judges[entry.id] = load_judge(entry, directory, http)
        check_judges(catalog.judges)
        catalog.calibration_floor = evals.CalibrationFloor(
            kappa_min=project.calibration.kappa_min, min_labels=project.calibration.min_labels
        )
        catalog.redactor = Redactor(configured_secrets(project))
        servers = [
            _mcp_server(entry, directory, tool_timeout, catalog.redactor)
            for entry in project.mcp_servers
        ]
        catalog.prices.update(prices(project.models))
    except (ValueError, ImportError) as exc:
        raise ProjectError(f"{manifest}: {exc}") from exc
    for path in _expand(directory, project.workflows):
        catalog.add_workflow(_parse(path, Workflow.model_validate))
    for path in _expand(directory, project.suites):
        catalog.add_suite(_parse(path, lambda doc: GlobalSuite(None, doc)))
    return servers


async def connect_mcp_servers(
    specs: list[McpServerSpec], catalog: Catalog, servers: McpServers, *, offline: bool = False
) -> None:
    """List each MCP server's tools into the registry, then check every agent's `tools` and
    that no two tools would be offered by one name (engine/recording/tool_names.py).

    An offline host connects to none: its calls are served by fixtures or fail closed,
    so an agent's allowlist entries under an MCP server's prefix are not checked there.
    """
    if offline:
        prefixes = tuple(f"{spec.name}:" for spec in specs)
        for agent in catalog.agents.all():
            kept = [p for p in agent.tools or () if not p.startswith(prefixes)]
            _check_allowlist(replace(agent, tools=tuple(kept)), catalog.tools)
        _check_offered_names(catalog.tools)
        return
    try:
        for spec in specs:
            # The host's own timeout is the SDK's plus a margin: the SDK answers first,
            # and its answer leaves the connection's bookkeeping clean.
            for tool, listing in await servers.tools_of(spec):
                catalog.tools.add(tool, listing, timeout_seconds=spec.timeout_seconds + 5)
    except ValueError as exc:
        raise ProjectError(str(exc)) from exc
    for spec_ in catalog.agents.all():
        _check_allowlist(spec_, catalog.tools)
    _check_offered_names(catalog.tools)


def _check_offered_names(registry: ToolRegistry) -> None:
    """Refuse two tools that an agent would be offered by one name, naming both."""
    try:
        tool_names.ToolNames.of(registry.names())
    except tool_names.ToolNameClash as clash:
        raise ProjectError(f"{clash}; rename one of them") from clash


def _check_allowlist(agent: AgentSpec, registry: ToolRegistry) -> None:
    for pattern in agent.tools or ():
        if not registry.matching(pattern):
            raise ProjectError(f"agent {agent.agent_id!r}: `tools` entry {pattern!r} names no tool")


def _agent(entry: AgentEntry, directory: Path, http: httpx.AsyncClient) -> AgentSpec:
    where = f"agent {entry.id!r}"
    check_lane_fields(where, entry.lane, entry)
    tools = tuple(entry.tools) if entry.tools is not None else None
    if entry.lane in LLM_LANES and tools is None:
        tools = ()  # a model is offered the tools it is given, not every tool of the host
    upstream = None
    if entry.lane in ("python", "command", "http"):
        upstream = model_upstream(where, entry, entry.timeout_seconds)
    return AgentSpec(
        entry.id,
        _lane(entry, directory, http),
        lane=entry.lane,
        record=entry.record,
        wire_content=entry.wire_content,
        description=entry.description,
        tools=tools,
        record_model=entry.record_model,
        model_replay=entry.model_replay,
        model_upstream=upstream,
    )


def _lane(entry: AgentEntry, directory: Path, http: httpx.AsyncClient) -> Agent:
    where = f"agent {entry.id!r}"
    if entry.lane == "python":
        if not entry.callable:
            raise ValueError(f"{where}: the python lane needs `callable`")
        return PythonAgent(load_callable(entry.callable))
    if entry.lane == "command":
        if not entry.command:
            raise ValueError(f"{where}: the command lane needs `command`")
        cwd = directory / entry.cwd if entry.cwd else directory
        launch = ProcessLaunch(tuple(entry.command), tuple(entry.env.items()), cwd.resolve())
        return CommandAgent(launch, entry.timeout_seconds)
    if entry.lane == "http":
        if not entry.url:
            raise ValueError(f"{where}: the http lane needs `url`")
        if entry.credential is None:
            return HttpAgent(entry.url, http, entry.timeout_seconds)
        secret = _secret(where, entry.credential.env, entry.credential.value)
        credential = Credential(entry.credential.header, secret, entry.credential.template)
        return HttpAgent(
            entry.url,
            http,
            entry.timeout_seconds,
            lambda: {credential.header: credential.render()},
        )
    if entry.lane in LLM_LANES:
        return LlmAgent(llm_lane(where, entry.lane, entry, directory, entry.timeout_seconds))
    return ScriptedAgent()


def _tool(entry: ToolEntry, http: httpx.AsyncClient) -> tuple[PythonTool | HttpTool, ToolListing]:
    if entry.kind == "python":
        if not entry.callable:
            raise ValueError(f"tool {entry.name!r}: a python tool needs `callable`")
        function = load_callable(entry.callable)
        schema = entry.input_schema or derived_input_schema(function)
        return PythonTool(entry.name, function), ToolListing(entry.description, schema)
    if not entry.url:
        raise ValueError(f"tool {entry.name!r}: an http tool needs `url`")
    credential = None
    if entry.credential is not None:
        where = f"tool {entry.name!r}"
        secret = _secret(where, entry.credential.env, entry.credential.value)
        credential = Credential(entry.credential.header, secret, entry.credential.template)
    tool = HttpTool(entry.name, entry.url, client=http, method=entry.method, credential=credential)
    return tool, ToolListing(entry.description, entry.input_schema or {"type": "object"})


def _mcp_server(
    entry: McpServerEntry, directory: Path, tool_timeout: float, redactor: Redactor
) -> McpServerSpec:
    where = f"mcp server {entry.name!r}"
    if (entry.command is None) == (entry.url is None):
        raise ValueError(f"{where}: give exactly one of `command` (stdio) or `url` (HTTP)")
    transport: StdioLaunch | HttpEndpoint
    if entry.command is not None:
        cwd = (directory / entry.cwd if entry.cwd else directory).resolve()
        transport = StdioLaunch(tuple(entry.command), tuple(entry.env.items()), cwd)
    else:
        if entry.env or entry.cwd:
            raise ValueError(f"{where}: `env` and `cwd` are for a stdio server (`command`)")
        transport = HttpEndpoint(str(entry.url), tuple(entry.headers.items()))
    credential = None
    if entry.credential is not None:
        given = entry.credential
        secret = _secret(where, given.env, given.value)
        if entry.command is not None:
            target = given.server_env or given.env
            if not target:
                raise ValueError(f"{where}: a stdio credential needs `server_env` (or `env`)")
            credential = McpCredential(secret, env=target, template="{secret}")
        else:
            credential = McpCredential(secret, header=given.header, template=given.template)
    return McpServerSpec(
        entry.name,
        transport,
        entry.timeout_seconds or tool_timeout,
        redactor.redact,
        credential,
        tuple(entry.tools) if entry.tools is not None else None,
    )


def _secret(where: str, env: str | None, value: str | None) -> Secret:
    if env:
        # Read at egress: a replay that never calls the tool live needs no secret.
        return Secret.from_env(env)
    if value:
        return Secret(value)
    raise ValueError(f"{where}: a credential needs `env` or `value`")


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
        raise ProjectError(f"{path}: {_described(exc)}") from exc


def _described(exc: Exception) -> str:
    """An error as a line: each pydantic error as `agents[0].lane: <message>`, else its text.

    Pydantic's own text adds a documentation link per error and quotes the input,
    which may be a secret (a credential written in the wrong field).
    """
    if isinstance(exc, ValidationError):
        return "; ".join(f"{error_pointer(error['loc'])}: {error['msg']}" for error in exc.errors())
    return str(exc)
