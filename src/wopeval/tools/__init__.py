"""Tools: the registry and its kinds (builtin counter, python callables, HTTP, MCP servers)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from pydantic import JsonValue

from wopeval import evals
from wopeval.tools.base import Secret, Tool, ToolContext, ToolFailure, ToolListing
from wopeval.tools.counter import COUNTER_LISTING, COUNTER_TOOL, CounterTool
from wopeval.tools.http import Credential, HttpTool
from wopeval.tools.mcp import McpServers, McpServerSpec
from wopeval.tools.python import PythonTool, derived_input_schema, load_callable


@dataclass(frozen=True)
class Offered:
    """The tools an agent may call, as it is shown them, and the digest of that listing."""

    tools: tuple[tuple[str, ToolListing], ...]
    digest: str
    """`sha256:` + hex of the JCS `[{name, description, inputSchema}]`, by name."""

    def names(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.tools)


@dataclass(frozen=True)
class _Entry:
    tool: Tool
    listing: ToolListing
    timeout_seconds: float | None


class ToolRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, _Entry] = {}
        self._offered: dict[tuple[str, ...] | None, Offered] = {}

    def add(
        self,
        tool: Tool,
        listing: ToolListing | None = None,
        *,
        timeout_seconds: float | None = None,
    ) -> None:
        """Register `tool`; `timeout_seconds` replaces the host's tool timeout for it."""
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is registered twice")
        self._tools[tool.name] = _Entry(tool, listing or ToolListing(), timeout_seconds)
        self._offered.clear()

    def get(self, name: str) -> Tool | None:
        entry = self._tools.get(name)
        return None if entry is None else entry.tool

    def timeout(self, name: str) -> float | None:
        entry = self._tools.get(name)
        return None if entry is None else entry.timeout_seconds

    def names(self) -> list[str]:
        return sorted(self._tools)

    def matching(self, pattern: str) -> list[str]:
        """The registered names an allowlist entry names: exact, or a glob like `orders:*`."""
        return [name for name in self.names() if fnmatch.fnmatchcase(name, pattern)]

    def offered(self, allowlist: tuple[str, ...] | None) -> Offered:
        """The listing an agent with `allowlist` (None: every tool) is shown; computed once."""
        cached = self._offered.get(allowlist)
        if cached is not None:
            return cached
        if allowlist is None:
            names = self.names()
        else:
            names = sorted({name for pattern in allowlist for name in self.matching(pattern)})
        tools = tuple((name, self._tools[name].listing) for name in names)
        document: JsonValue = [
            {"name": name, "description": listing.description, "inputSchema": listing.input_schema}
            for name, listing in tools
        ]
        offered = Offered(tools, evals.args_hash(document))
        self._offered[allowlist] = offered
        return offered


__all__ = [
    "COUNTER_LISTING",
    "COUNTER_TOOL",
    "CounterTool",
    "Credential",
    "HttpTool",
    "McpServerSpec",
    "McpServers",
    "Offered",
    "PythonTool",
    "Secret",
    "Tool",
    "ToolContext",
    "ToolFailure",
    "ToolListing",
    "ToolRegistry",
    "derived_input_schema",
    "load_callable",
]
