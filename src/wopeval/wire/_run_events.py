"""`run.*` and `node.*` payloads (run-event-payloads.schema.json)."""

from __future__ import annotations

from typing import ClassVar, Literal

from wopeval.wire._event_base import AnyJson, Payload
from wopeval.wire.runs import RunOwner


class RunStarted(Payload):
    TYPE: ClassVar[str] = "run.started"
    workflowId: str
    """The workflow (for an eval run, the suiteId) the run executes."""
    owner: RunOwner
    """The run's owner block, echoed from the snapshot (runs.md)."""
    transport: Literal["rest"] = "rest"
    """How the run was created."""
    sourceRunId: str | None = None
    """For a fork: the run it was forked from."""


class RunCompleted(Payload):
    TYPE: ClassVar[str] = "run.completed"
    outputs: dict[str, AnyJson]
    """The run's outputs; `{}` is valid."""


class RunErrorInfo(Payload):
    code: str
    """A machine code for the failure."""
    message: str
    """What went wrong, for a human."""
    details: dict[str, AnyJson] | None = None
    """Structured context (e.g. the failing agent and its exception's type)."""
    retryable: bool | None = None
    """Whether trying again may succeed."""


class RunFailed(Payload):
    TYPE: ClassVar[str] = "run.failed"
    error: RunErrorInfo
    """Why the run failed."""


class RunCancelled(Payload):
    TYPE: ClassVar[str] = "run.cancelled"
    reason: str | None = None
    """The caller's reason, when given."""


class RunPaused(Payload):
    TYPE: ClassVar[str] = "run.paused"
    drainPolicy: Literal["drain-current-node", "immediate"]
    """Echoes the pause request's policy (runs.md §Pause and resume)."""
    interruptedNodeId: str | None = None
    """Under `immediate`, the node whose executing attempt was cut."""


class RunResumed(Payload):
    TYPE: ClassVar[str] = "run.resumed"


class NodeStarted(Payload):
    TYPE: ClassVar[str] = "node.started"
    nodeId: str
    """The node that started."""
    nodeType: str
    """Its type id (`core.noop`, `core.agent`)."""


class NodeCompleted(Payload):
    TYPE: ClassVar[str] = "node.completed"
    nodeId: str
    """The node that finished."""
    outputs: dict[str, AnyJson] | None = None
    """What the node produced."""


class NodeFailed(Payload):
    TYPE: ClassVar[str] = "node.failed"
    nodeId: str
    """The node that failed."""
    error: RunErrorInfo
    """Why it failed."""
