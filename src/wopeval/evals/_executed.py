"""A tool call as the agent made it, as the graders and the miss report read it (RFC 0244 §A).

Apart from the graders so the trajectory grader (`_trajectory.py`), which `_graders.py`
calls, reads the same shape without importing its caller.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

from pydantic import JsonValue

from wopeval.evals._canonical import args_hash
from wopeval.evals._miss import MissDetail

ServedAs = Literal["fixture", "live", "miss"]
"""How the boundary answered a call: a fixture entry, the live tool, or a fixture miss."""


class ExecutedCall(NamedTuple):
    """One tool call as the agent made it (the as-executed boundary, RFC 0244 §A).

    A named tuple: one is built for every call of every trial (see `store.ToolCallRow`)."""

    tool: str
    args: JsonValue
    is_delegate: bool = False
    status: str = "ok"
    """`agent.tool-returned.status`."""
    result: JsonValue = None
    """The tool's result when `status` is `ok`."""
    error: dict[str, Any] | None = None
    """The tool error otherwise (`{code, message, ...}`)."""
    served: ServedAs = "live"
    duration_ms: int | None = None
    miss: MissDetail | None = None
    """For a fixture miss: the closest recording and how the call differs from it."""
    args_hash: str | None = None
    """`argsHash` of `args`, when the fixture matcher wrote their canonical form; None:
    not worked out yet (`hashed_args`)."""

    def hashed_args(self) -> str:
        """`argsHash` of the call's args (docs/design.md §3)."""
        return self.args_hash or args_hash(self.args)

    def to_trace(self) -> dict[str, Any]:
        """The call as a custom grader receives it (docs/graders.md)."""
        return {
            "tool": self.tool,
            "args": self.args,
            "status": self.status,
            "result": self.result,
            "error": self.error,
            "served": self.served,
            "durationMs": self.duration_ms,
        }
