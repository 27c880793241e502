"""MCP servers as tool sources: each tool a server lists is the host's tool `<server>:<tool>`.

The host is an MCP client (the official `mcp` SDK) of every `[[mcp_servers]]`
entry: a stdio server it starts as a subprocess, or a Streamable-HTTP server
at a URL. A call reaches a server only from `LiveTransport`, so it is recorded,
replayed and fail-closed like any other tool call; a replay served from
fixtures never opens a connection for it.

Failures are the agent's tool errors, never a crashed run: a result with
`isError: true` is `mcp_tool_error` (its content kept in `details`), a
timeout `tool_timeout`, a server that went away `mcp_connection_lost`, one
that cannot be started or reached `mcp_unreachable`, and a JSON-RPC error
`mcp_protocol_error`. After a lost connection or a timeout the connection is
dropped and the next call opens a fresh one (for stdio: a fresh process); a
call that may have reached the server is never re-sent, since it may have
had effects.

A server's credential is added at egress only: an environment variable of
the stdio process or a header of the HTTP requests. It never passes through
the tool boundary on its way out; what comes back (a result, an error text
that repeats it) is redacted by the boundary. A stdio server's stderr is not
the host's: it is read line by line into the host's log (`wopeval.tools.mcp`),
each line redacted by the spec's `redact`, so a server that prints its
environment or its failures prints no credential in the host's output.

The client itself is `_mcp_client.py`, imported with the first server a project
names: the `mcp` SDK is about a third of a host's import time, which a host with
no MCP server (every CLI command's embedded host, most of the time) need not pay.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from wopeval.tools.base import Secret, Tool, ToolListing

CONNECT_TIMEOUT_SECONDS = 30.0
"""How long opening a connection (start the process, the handshake) may take."""

IDLE_CONNECTION_SECONDS = 4.0
"""How long a Streamable HTTP server's idle connection is kept for the next call: under the 5 s
after which uvicorn (most Python MCP servers) and Node close one. At httpx's own 5 s a call
sent as the server closed its connection failed as `mcp_connection_lost`, though the server
never read it (2 calls in 60 spaced at the server's keep-alive)."""

ERROR_TEXT_LIMIT = 2000
"""Characters of an `isError` result's text kept in the tool error's message."""


@dataclass(frozen=True)
class StdioLaunch:
    """A stdio server: the command the host starts, its extra environment and directory."""

    command: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    cwd: Path | None = None


@dataclass(frozen=True)
class HttpEndpoint:
    """A Streamable-HTTP server: its URL and the headers every request carries."""

    url: str
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class McpCredential:
    """A secret added at egress: as env variable `env` (stdio) or header `header` (HTTP)."""

    secret: Secret
    env: str | None = None
    header: str | None = None
    template: str = "{secret}"

    def render(self) -> str:
        return self.template.replace("{secret}", self.secret.reveal())


@dataclass(frozen=True)
class McpServerSpec:
    name: str
    transport: StdioLaunch | HttpEndpoint
    timeout_seconds: float
    redact: Callable[[str], str]
    """What a line the server writes on its stderr becomes before the host logs it."""
    credential: McpCredential | None = None
    tools: tuple[str, ...] | None = None
    """The server's tool names to register (None: all it lists)."""


class McpServers:
    """Every configured server's connection, for the host's lifetime."""

    def __init__(self) -> None:
        self._closes: list[Callable[[], Awaitable[None]]] = []
        """Each connection's `close`."""

    async def tools_of(self, spec: McpServerSpec) -> list[tuple[Tool, ToolListing]]:
        """Connect to the server and list its tools (those in `spec.tools`, when given)."""
        from wopeval.tools._mcp_client import McpConnection, McpTool, listed_tools

        connection = McpConnection(spec)
        self._closes.append(connection.close)
        listed = await listed_tools(connection, spec.name)
        by_name = {tool.name: tool for tool in listed}
        wanted: Sequence[str] = spec.tools if spec.tools is not None else sorted(by_name)
        missing = [name for name in wanted if name not in by_name]
        if missing:
            raise ValueError(f"MCP server {spec.name!r} lists no tool {', '.join(missing)}")
        return [
            (
                McpTool(f"{spec.name}:{name}", name, connection),
                ToolListing(
                    by_name[name].description or "",
                    dict(by_name[name].input_schema),
                    server=spec.name,
                ),
            )
            for name in wanted
        ]

    async def close(self) -> None:
        for close in self._closes:
            with suppress(Exception):
                await close()
