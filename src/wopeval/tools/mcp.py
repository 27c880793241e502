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
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import httpx2
import mcp_types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client import Transport
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from pydantic import JsonValue

from wopeval.tools.base import Secret, ToolContext, ToolFailure, ToolListing

log = logging.getLogger("wopeval.tools.mcp")

CONNECT_TIMEOUT_SECONDS = 30.0
"""How long opening a connection (start the process, the handshake) may take."""

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


class McpConnection:
    """One server's session: opened on first use, dropped when it breaks, reopened on the next.

    The SDK's client lives in a task of its own (its context must be entered
    and left in one task); calls from any task go through it.
    """

    def __init__(self, spec: McpServerSpec) -> None:
        self._spec = spec
        self._client: Client | None = None
        self._stop: asyncio.Event | None = None
        self._lock = asyncio.Lock()
        self._holders: set[asyncio.Task[None]] = set()

    async def list_tools(self) -> list[mcp_types.Tool]:
        client = await self._connected()
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return tools

    async def call(self, tool: str, args: dict[str, Any]) -> mcp_types.CallToolResult:
        name = self._spec.name
        client = await self._connected()
        try:
            return await client.call_tool(
                tool, args, read_timeout_seconds=self._spec.timeout_seconds
            )
        except MCPError as error:
            if error.code == mcp_types.REQUEST_TIMEOUT:
                self._drop(client)
                raise ToolFailure(
                    "tool_timeout",
                    f"MCP server {name} did not answer in {self._spec.timeout_seconds:g}s",
                    retryable=True,
                ) from error
            if error.code == mcp_types.CONNECTION_CLOSED:
                self._drop(client)
                raise _lost(name) from error
            raise ToolFailure(
                "mcp_protocol_error",
                f"MCP server {name} answered with error {error.code}: {error.error.message}",
            ) from error
        except asyncio.CancelledError:
            # Abandoned midway (the run's cancel, the host's timeout): the server's
            # state is unknown, so the next call gets a fresh connection.
            self._drop(client)
            raise
        except Exception as exc:
            self._drop(client)
            raise _lost(name) from exc

    async def close(self) -> None:
        if self._stop is not None:
            self._stop.set()
        self._client = self._stop = None
        await asyncio.gather(*self._holders, return_exceptions=True)

    async def _connected(self) -> Client:
        async with self._lock:
            if self._client is None:
                self._client, self._stop = await self._open()
            return self._client

    async def _open(self) -> tuple[Client, asyncio.Event]:
        ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        stop = asyncio.Event()
        holder = asyncio.create_task(self._hold(ready, stop), name=f"mcp:{self._spec.name}")
        self._holders.add(holder)
        holder.add_done_callback(self._holders.discard)
        try:
            client = await asyncio.wait_for(asyncio.shield(ready), CONNECT_TIMEOUT_SECONDS)
        except BaseException as exc:
            stop.set()
            holder.cancel()
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise ToolFailure(
                "mcp_unreachable",
                f"MCP server {self._spec.name} could not be started or reached "
                f"({type(exc).__name__})",
                retryable=True,
            ) from exc
        log.info("MCP server %s: connected", self._spec.name)
        return client, stop

    async def _hold(self, ready: asyncio.Future[Client], stop: asyncio.Event) -> None:
        try:
            async with AsyncExitStack() as stack:
                target = await self._target(stack)
                client = await stack.enter_async_context(Client(target, cache=None))
                ready.set_result(client)
                await stop.wait()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                # A broken connection's teardown: its calls have already failed.
                log.debug("MCP server %s: connection closed with %r", self._spec.name, exc)

    def _drop(self, client: Client) -> None:
        """Close `client`'s connection in the background, if it is still the current one."""
        if self._client is client and self._stop is not None:
            log.info("MCP server %s: connection closed; the next call opens one", self._spec.name)
            self._stop.set()
            self._client = self._stop = None

    async def _target(self, stack: AsyncExitStack) -> StdioServerParameters | Transport:
        """What the SDK's client connects to, with the credential added at egress."""
        transport, credential = self._spec.transport, self._spec.credential
        if isinstance(transport, StdioLaunch):
            env = dict(transport.env)
            if credential is not None and credential.env is not None:
                env[credential.env] = credential.render()
            parameters = StdioServerParameters(
                command=transport.command[0],
                args=list(transport.command[1:]),
                env=env,
                cwd=transport.cwd,
            )
            return stdio_client(parameters, errlog=_stderr_to_log(stack, self._spec))
        headers = dict(transport.headers)
        if credential is not None and credential.header is not None:
            headers[credential.header] = credential.render()
        timeout = httpx2.Timeout(CONNECT_TIMEOUT_SECONDS, read=self._spec.timeout_seconds + 5)
        http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=timeout))
        return streamable_http_client(transport.url, http_client=http)


def _stderr_to_log(stack: AsyncExitStack, spec: McpServerSpec) -> TextIO:
    """A pipe for a stdio server's stderr, whose lines a thread logs redacted until the
    server and the connection (`stack`) have both closed their end."""
    read_end, write_end = os.pipe()
    writer = os.fdopen(write_end, "w")
    stack.callback(writer.close)

    def relay() -> None:
        with os.fdopen(read_end, encoding="utf-8", errors="replace") as reader:
            for line in reader:
                log.warning("MCP server %s: %s", spec.name, spec.redact(line.rstrip("\n")))

    threading.Thread(target=relay, name=f"mcp-stderr:{spec.name}", daemon=True).start()
    return writer


class McpTool:
    """One tool of an MCP server, as the host's tool `<server>:<tool>`."""

    def __init__(self, name: str, server_tool: str, connection: McpConnection) -> None:
        self.name = name
        self._server_tool = server_tool
        self._connection = connection

    async def call(self, args: JsonValue, context: ToolContext) -> JsonValue:
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise ToolFailure("invalid_args", "an MCP tool takes an object of arguments")
        result = await self._connection.call(self._server_tool, args)
        recorded = recorded_result(result)
        if result.is_error:
            raise ToolFailure(
                "mcp_tool_error",
                _text_of(result)[:ERROR_TEXT_LIMIT] or "The MCP tool reported an error.",
                details=recorded,
            )
        return recorded


def recorded_result(result: mcp_types.CallToolResult) -> dict[str, Any]:
    """A `tools/call` result as the boundary records it: its content blocks, and its
    structured content when it has any (protocol metadata is not the tool's answer)."""
    recorded: dict[str, Any] = {
        "content": [
            block.model_dump(mode="json", by_alias=True, exclude_none=True)
            for block in result.content
        ]
    }
    if result.structured_content is not None:
        recorded["structuredContent"] = result.structured_content
    return recorded


def _text_of(result: mcp_types.CallToolResult) -> str:
    return "\n".join(
        block.text for block in result.content if isinstance(block, mcp_types.TextContent)
    )


def _lost(name: str) -> ToolFailure:
    return ToolFailure(
        "mcp_connection_lost",
        f"the connection to MCP server {name} was lost; the next call opens a new one",
        retryable=True,
    )


class McpServers:
    """Every configured server's connection, for the host's lifetime."""

    def __init__(self) -> None:
        self._connections: list[McpConnection] = []

    async def tools_of(self, spec: McpServerSpec) -> list[tuple[McpTool, ToolListing]]:
        """Connect to the server and list its tools (those in `spec.tools`, when given)."""
        connection = McpConnection(spec)
        self._connections.append(connection)
        try:
            listed = await connection.list_tools()
        except ToolFailure as failure:
            raise ValueError(f"MCP server {spec.name!r}: {failure.message}") from failure
        except MCPError as error:
            raise ValueError(f"MCP server {spec.name!r} refused tools/list: {error}") from error
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
        for connection in self._connections:
            with suppress(Exception):
                await connection.close()
