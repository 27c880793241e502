"""The tool interface and its error type (RFC 0245: a tool error is data that replays unchanged)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import JsonValue


@dataclass(frozen=True)
class ToolContext:
    """What a live tool may know about the call it serves."""

    tenant: str
    run_id: str


class ToolFailure(Exception):
    """A tool's failure as the agent sees it: `{code, message, details?, retryable?}`."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        retryable: bool = False,
        status: str = "error",
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details
        self.retryable = retryable
        self.status = status

    def to_error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["details"] = self.details
        if self.retryable:
            error["retryable"] = True
        return error

    @classmethod
    def from_error(cls, error: dict[str, Any], status: str = "error") -> ToolFailure:
        return cls(
            str(error.get("code", "tool_error")),
            str(error.get("message", "The tool failed.")),
            details=error.get("details"),
            retryable=bool(error.get("retryable", False)),
            status=status,
        )


@dataclass(frozen=True)
class ToolListing:
    """How a tool is offered to an agent (its MCP `tools/list` entry): what it does and takes."""

    description: str = ""
    input_schema: dict[str, JsonValue] = field(default_factory=lambda: {"type": "object"})
    server: str | None = None
    """The MCP server the tool is listed by (None: not an MCP tool)."""


class Tool(Protocol):
    name: str

    async def call(self, args: JsonValue, context: ToolContext) -> JsonValue:
        """Run the tool; raise ToolFailure for a failure the agent should see."""
        ...


@dataclass(frozen=True)
class Secret:
    """A credential that hides itself from repr and logs; a string only at egress.

    One named by an environment variable is read when it is revealed, not when the
    project loads: a host that never calls the tool live (a replay) needs no secret.
    """

    _value: str | None = field(default=None, repr=False)
    env: str | None = None
    """The environment variable holding the secret, read at egress."""

    @classmethod
    def from_env(cls, variable: str) -> Secret:
        return cls(None, variable)

    def reveal(self) -> str:
        if self._value is not None:
            return self._value
        found = os.environ.get(self.env or "")
        if not found:
            raise ToolFailure(
                "credential_missing", f"the environment variable {self.env} is not set"
            )
        return found

    def __repr__(self) -> str:
        return "Secret('**********')"

    __str__ = __repr__
