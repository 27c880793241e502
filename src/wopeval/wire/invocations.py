"""A run's agent invocations as the host saw them (host routes `/host/wopeval/…`).

Not part of the OpenWOP run resources: how each invocation ended, whether it
recorded anything a replay could test, and what its agent said (a command
agent's stderr, an http agent's error answer), redacted and bounded before the
host kept it. What the agent said leaves the host only under its
`wireContent: full` (`engine/recording/content.py` decides); docs/agents.md says more.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from wopeval.wire.task_detail import ModelCallView


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class InvocationError(_Shape):
    type: str
    """The exception's class name (`AgentFailed` for a process or service that failed)."""
    message: str | None = None
    """Its message, e.g. `the agent's process exited with status 1` (`full` only)."""


class InvocationLine(_Shape):
    invocationId: str
    """Unique within the run (`agent.invocation-started`)."""
    agentId: str
    """The agent invoked."""
    delegate: bool
    """Invoked by another agent, not by the run."""
    nodeId: str | None = None
    """The workflow node that invoked it."""
    taskId: str | None = None
    """The eval task it ran for."""
    trial: int | None = None
    """The eval trial it ran for, from 0."""
    outcome: Literal["completed", "failed"]
    """How it ended."""
    startedAt: str
    """When it started (RFC 3339)."""
    completedAt: str
    """When it ended (RFC 3339)."""
    error: InvocationError | None = None
    """Why it failed."""
    idle: list[str] | None = None
    """It completed and recorded nothing a replay could test: `no_tool_calls`, and
    `no_model_calls` when it was handed the model proxy (docs/recordings.md)."""
    stderr: Literal["kept", "withheld"] | None = None
    """What its agent said: `kept` (read it at `…/invocations/{invocationId}/stderr`),
    `withheld` (the agent's `wireContent` is `hash`); absent when it said nothing."""


class InvocationList(_Shape):
    runId: str
    """The run."""
    invocations: list[InvocationLine]
    """Every invocation that ended, in the order they started."""


class InvocationStderr(_Shape):
    runId: str
    """The run."""
    invocationId: str
    """The invocation."""
    agentId: str
    """Its agent."""
    stderr: str | None = None
    """What the agent said, its last 16 KiB with credentials and tokens redacted; absent
    when it said nothing or when `withheld`."""
    withheld: bool = False
    """The agent's `wireContent` is `hash`: what it said stays in the host."""


class RunModelCall(ModelCallView):
    """A model exchange of the run, shown as a task detail's `modelCalls` shows it (by its
    agent's `wireContent`); `index` is its place among the run's exchanges."""

    invocationId: str
    """The invocation that asked (`InvocationLine.invocationId`)."""


class RunModelCalls(_Shape):
    runId: str
    """The run."""
    modelCalls: list[RunModelCall]
    """Every model exchange of the run (the LLM lanes, the model proxy, a rubric judge), in
    the order they ended."""
