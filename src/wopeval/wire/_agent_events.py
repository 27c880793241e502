"""`agent.*` payloads: the invocation bracket and the tool boundary (payloads `$defs.agent*`)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from wopeval.wire._event_base import AnyJson, Payload

ToolStatus = Literal["ok", "error", "forbidden", "rate_limited"]


class InvocationStarted(Payload):
    TYPE: ClassVar[str] = "agent.invocation-started"
    invocationId: str
    """Unique within the run; a recorded fact."""
    agentId: str
    """The agent invoked."""
    source: Literal["workflow-node", "run-api", "chat-mention"]
    """What caused the invocation."""


class ToolError(Payload):
    code: str
    """Machine code of the tool failure (e.g. `fixture_miss`, `tool_timeout`)."""
    message: str
    """A human description."""
    details: dict[str, AnyJson] | None = None
    """Structured context."""
    retryable: bool | None = None
    """Whether the same call may succeed later (RFC 0245)."""


class ToolCalled(Payload):
    TYPE: ClassVar[str] = "agent.tool-called"
    agentId: str
    """The calling agent."""
    toolName: str
    """The tool's `<scope>:<tool-id>`."""
    callId: str
    """Pairs the call with its return."""
    inputs: AnyJson | None = None
    """The args as the agent passed them (`wireContent: full` only)."""
    argsHash: str | None = None
    """`sha256:` + hex of the JCS args (`wireContent: hash` only)."""


class ToolReturned(Payload):
    TYPE: ClassVar[str] = "agent.tool-returned"
    agentId: str
    """The calling agent."""
    toolName: str
    """The tool's `<scope>:<tool-id>`."""
    callId: str
    """Pairs with `agent.tool-called`."""
    status: ToolStatus
    """`forbidden` and `rate_limited` mean the tool never ran."""
    outcome: AnyJson | None = None
    """The result (`wireContent: full`, status `ok`)."""
    error: ToolError | None = None
    """The failure (status other than `ok`)."""
    durationMs: int | None = Field(default=None, ge=0)
    """Wall time of the call; absent when it never started."""


class Decided(Payload):
    TYPE: ClassVar[str] = "agent.decided"
    agentId: str
    """The deciding agent."""
    decision: AnyJson
    """What the agent decided."""


class InvocationCompleted(Payload):
    TYPE: ClassVar[str] = "agent.invocation-completed"
    invocationId: str
    """Closes the bracket opened with this id."""
    agentId: str
    """The agent invoked."""
    outcome: Literal["completed", "handed-off", "escalated", "refused", "failed"]
    """How the invocation ended."""
