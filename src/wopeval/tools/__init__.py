"""Tools: the registry and its kinds (builtin counter, python callables, HTTP, MCP servers)."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

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
    servers: tuple[evals.ServerListing, ...] = ()
    """The listings of the MCP servers whose tools are among them (a run records them)."""

    def names(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.tools)

    @cached_property
    def by_name(self) -> dict[str, ToolListing]:
        return dict(self.tools)


def permits(allowlist: tuple[str, ...] | None, name: str) -> bool:
    """Whether an agent with `allowlist` (None: every tool) may call the tool `name`: an
    entry names it exactly or as a glob (`orders:*`)."""
    return allowlist is None or any(fnmatch.fnmatchcase(name, pattern) for pattern in allowlist)


def offer(
    tools: Mapping[str, ToolListing],
    servers: Mapping[str, evals.ServerListing],
    allowlist: tuple[str, ...] | None,
) -> Offered:
    """What an agent with `allowlist` (None: every tool) is offered of `tools` (by name),
    with the listings (`servers`, by server) of the MCP servers it is offered tools of."""
    names = sorted(name for name in tools if permits(allowlist, name))
    offered = tuple((name, tools[name]) for name in names)
    document: JsonValue = [
        {"name": name, "description": listing.description, "inputSchema": listing.input_schema}
        for name, listing in offered
    ]
    used = sorted({listing.server for _, listing in offered if listing.server is not None})
    return Offered(offered, evals.args_hash(document), tuple(servers[server] for server in used))


@dataclass(frozen=True)
class _Entry:
    tool: Tool
    listing: ToolListing
    timeout_seconds: float | None


class ToolRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, _Entry] = {}
        self._offered: dict[tuple[str, ...] | None, Offered] = {}
        self._listings: dict[str, ToolListing] | None = None
        self._servers: dict[str, evals.ServerListing] | None = None

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
        self._listings = self._servers = None

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

    def listings(self) -> dict[str, ToolListing]:
        """Every registered tool's listing, by name."""
        if self._listings is None:
            self._listings = {name: entry.listing for name, entry in self._tools.items()}
        return self._listings

    def servers(self) -> dict[str, evals.ServerListing]:
        """The listing of each MCP server whose tools are registered, by server."""
        if self._servers is None:
            self._servers = server_listings(self.listings())
        return self._servers

    def offered(self, allowlist: tuple[str, ...] | None) -> Offered:
        """The listing an agent with `allowlist` (None: every tool) is shown; computed once."""
        cached = self._offered.get(allowlist)
        if cached is None:
            cached = self._offered[allowlist] = offer(self.listings(), self.servers(), allowlist)
        return cached


def server_listings(tools: Mapping[str, ToolListing]) -> dict[str, evals.ServerListing]:
    """The MCP servers' listings among `tools` (by canonical name), by server."""
    by_server: dict[str, list[evals.ListedTool]] = {}
    for name, listing in tools.items():
        if listing.server is not None:
            listed = evals.ListedTool(
                name.removeprefix(f"{listing.server}:"), listing.description, listing.input_schema
            )
            by_server.setdefault(listing.server, []).append(listed)
    return {server: evals.ServerListing.of(server, listed) for server, listed in by_server.items()}


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
    "offer",
    "permits",
    "server_listings",
]
