"""One interface for every agent lane: an invocation gets a context and returns its decision."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import JsonValue

WireContent = Literal["full", "hash"]
Lane = Literal["scripted", "python", "command", "http"]


class ToolCallError(Exception):
    """What an agent sees when a tool call fails: the error the tool (or fixture) returned."""

    def __init__(self, code: str, message: str, error: dict[str, JsonValue]) -> None:
        super().__init__(message)
        self.code = code
        self.error = error


class AgentFailed(Exception):
    """An agent outside the host failed: its process exited nonzero, timed out or printed no
    decision, or its service answered an error. `stderr_tail` is what the process said last."""

    def __init__(self, message: str, stderr_tail: str | None = None) -> None:
        super().__init__(message)
        self.stderr_tail = stderr_tail


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

    async def call_tool(self, name: str, args: JsonValue) -> JsonValue:
        """Call a tool through the boundary; raises ToolCallError when it fails."""
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
