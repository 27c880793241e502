"""One interface for every agent lane: an invocation gets a context and returns its decision."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import JsonValue

from wopeval.models import LiveModelCall, ModelAnswer, ModelRequest, ModelUpstream

WireContent = Literal["full", "hash"]
Lane = Literal["scripted", "python", "command", "http", "openai", "anthropic"]
LLM_LANES: tuple[Lane, ...] = ("openai", "anthropic")
"""The lanes whose tool loop the host runs against a model (agents/llm.py)."""
ModelReplay = Literal["off", "recorded"]
NamedBy = Literal["canonical", "offered"]
"""How a call names its tool: the host's canonical `server:tool` (an in-process agent), or
the provider-safe name it was offered (the MCP endpoint, the LLM lanes;
engine/recording/tool_names.py)."""


@dataclass(frozen=True)
class ToolSpec:
    """A tool as an agent is offered it: its name, what it does and the JSON schema it takes."""

    name: str
    """The host's canonical name (`<server>:<tool>`), which `call_tool` takes."""
    description: str
    input_schema: dict[str, JsonValue]
    offered_name: str
    """The provider-safe name (`^[a-zA-Z0-9_-]{1,64}$`) a model is offered it by."""


class ToolCallError(Exception):
    """What an agent sees when a tool call fails: the error the tool (or fixture) returned."""

    def __init__(self, code: str, message: str, error: dict[str, JsonValue]) -> None:
        super().__init__(message)
        self.code = code
        self.error = error


class AgentFailed(Exception):
    """An agent outside the host failed: its process exited nonzero, timed out or printed no
    decision, or its service answered an error."""


@dataclass(frozen=True)
class AgentOutput:
    """What an agent outside the host said besides its decision: its process's stderr, or its
    service's error answer. Raw: the host redacts it before it keeps any of it."""

    tail: bytes
    """The last bytes it wrote (the lane keeps a bounded tail)."""
    total_bytes: int
    """How many it wrote in all."""


class AgentContext(Protocol):
    @property
    def input(self) -> JsonValue: ...

    @property
    def agent_id(self) -> str: ...

    @property
    def invocation_id(self) -> str: ...

    @property
    def mcp_url(self) -> str:
        """This invocation's MCP endpoint: its allowed tools, through the same boundary."""
        ...

    @property
    def openai_base_url(self) -> str:
        """This invocation's recording model proxy (an OpenAI-compatible `/v1` base URL)."""
        ...

    @property
    def openai_api_key(self) -> str:
        """The key an OpenAI client presents to the proxy: the invocation's capability."""
        ...

    @property
    def anthropic_base_url(self) -> str:
        """This invocation's recording Anthropic Messages proxy, as Anthropic's SDK takes it
        (`ANTHROPIC_BASE_URL`: it adds `/v1/messages`)."""
        ...

    @property
    def anthropic_api_key(self) -> str:
        """The key an Anthropic client presents to the proxy: the same capability."""
        ...

    def keep_output(self, output: AgentOutput) -> None:
        """Hand the host what the agent said (stderr): redacted, kept with the invocation."""
        ...

    def tool_specs(self) -> Sequence[ToolSpec]:
        """The tools the agent is offered (its `tools`), with their input schemas."""
        ...

    async def call_tool(
        self, name: str, args: JsonValue, *, named_by: NamedBy = "canonical"
    ) -> JsonValue:
        """Call a tool through the boundary; raises ToolCallError when it fails, and with
        `tool_not_offered` when the agent is not granted it (nothing runs)."""
        ...

    async def call_model(self, request: ModelRequest, live: LiveModelCall) -> ModelAnswer:
        """Ask the model through the model boundary: recorded, replayed from a source run
        under model replay (raises ModelReplayMiss on a request it never made), else
        `live()`; raises ModelCallFailed when the model did not answer."""
        ...

    async def delegate(self, agent_id: str, input: JsonValue) -> JsonValue:
        """Invoke another agent as this one's delegate and return its decision."""
        ...


class Agent(Protocol):
    async def invoke(self, context: AgentContext) -> JsonValue:
        """Run one invocation and return the decision."""
        ...


@dataclass(frozen=True)
class AgentSpec:
    """A registered agent: its behaviour plus how the tool boundary treats its calls."""

    agent_id: str
    agent: Agent
    lane: Lane
    record: bool = True
    """Keep its calls in the internal record (RFC 0252 §C needs them to derive fixtures)."""
    wire_content: WireContent = "full"
    """`full` puts inputs/outcome on events; `hash` only argsHash and status."""
    description: str = ""
    tools: tuple[str, ...] | None = None
    """The tools its MCP endpoint offers (names or globs like `orders:*`); None: every tool."""
    record_model: bool = True
    """Keep its model exchanges' content in the record (model replay needs it)."""
    model_replay: ModelReplay = "off"
    """`recorded`: an eval task replaying a source run also replays its model answers."""
    model_upstream: ModelUpstream | None = None
    """Where its model proxy forwards (command and http lanes); None: no proxy upstream."""

    def inventory(self) -> dict[str, JsonValue]:
        """The `GET /agents` entry."""
        return {
            "agentId": self.agent_id,
            "persona": self.lane,
            "label": self.agent_id,
            "modelClass": "general",
            "packName": "wopeval",
            "packVersion": "1",
            "toolAllowlist": list(self.tools or ()),
            "hasHandoffSchemas": False,
            "description": self.description or None,
        }
