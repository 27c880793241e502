"""Run events: the envelope and every payload this host emits, by family."""

from wopeval.wire._agent_events import (
    Decided,
    InvocationCompleted,
    InvocationStarted,
    ToolCalled,
    ToolError,
    ToolReturned,
    ToolStatus,
)
from wopeval.wire._eval_events import EvalCompleted, EvalScored, EvalStarted
from wopeval.wire._event_base import (
    EVENT_LOG_SCHEMA_VERSION,
    SCHEMA_VERSION,
    Built,
    EventDoc,
    Payload,
)
from wopeval.wire._run_events import (
    NodeCompleted,
    NodeFailed,
    NodeStarted,
    RunCancelled,
    RunCompleted,
    RunErrorInfo,
    RunFailed,
    RunPaused,
    RunResumed,
    RunStarted,
)

TERMINAL_TYPES = frozenset({RunCompleted.TYPE, RunFailed.TYPE, RunCancelled.TYPE})
"""Event types that end a run's log."""

UPDATES_TYPES_PREFIXES = ("run.", "eval.", "node.")
"""Event families the `updates` stream mode carries (events.md §The events channel)."""

__all__ = [
    "EVENT_LOG_SCHEMA_VERSION",
    "SCHEMA_VERSION",
    "TERMINAL_TYPES",
    "UPDATES_TYPES_PREFIXES",
    "Built",
    "Decided",
    "EvalCompleted",
    "EvalScored",
    "EvalStarted",
    "EventDoc",
    "InvocationCompleted",
    "InvocationStarted",
    "NodeCompleted",
    "NodeFailed",
    "NodeStarted",
    "Payload",
    "RunCancelled",
    "RunCompleted",
    "RunErrorInfo",
    "RunFailed",
    "RunPaused",
    "RunResumed",
    "RunStarted",
    "ToolCalled",
    "ToolError",
    "ToolReturned",
    "ToolStatus",
]
