"""The MCP client of `[[mcp_servers]]` (tools/mcp.py): one connection per server, over
the official `mcp` SDK, and its tools as the host's tools.

Imported by `McpServers.tools_of` when a project names its first server, never
with the host: tools/mcp.py says why.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import shutil
import sys
import threading
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TextIO

import anyio
import httpx2
import mcp.client.stdio
import mcp_types
from anyio.abc import Process
from mcp import Client, MCPError, StdioServerParameters
from mcp.client import Transport
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage
from pydantic import JsonValue

from wopeval.tools.base import ToolContext, ToolFailure
from wopeval.tools.mcp import (
    CONNECT_TIMEOUT_SECONDS,
    ERROR_TEXT_LIMIT,
    IDLE_CONNECTION_SECONDS,
    McpServerSpec,
    StdioLaunch,
)

log = logging.getLogger("wopeval.tools.mcp")


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
            if error.code == mcp_types.PARSE_ERROR and error.error.message.startswith(_UNREADABLE):
                raise ToolFailure(
                    "mcp_protocol_error", _unreadable(name, error.error.message)
                ) from error
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
            if isinstance(exc, ToolFailure):
                # The host's own refusal before anything was launched (its credential's
                # variable is unset): its message says what to fix, "unreachable" would not.
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
        limits = httpx2.Limits(
            max_connections=100,  # httpx's own
            max_keepalive_connections=20,
            keepalive_expiry=IDLE_CONNECTION_SECONDS,
        )
        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers=headers, timeout=timeout, limits=limits)
        )
        return streamable_http_client(transport.url, http_client=http)


_UNREADABLE = "Failed to parse"
"""How the SDK's client begins the parse error it fails a request with when it cannot read
the server's answer (`_parse_line_or_fail_its_request` writes the same), not the server's."""

_PARSER_SAID = re.compile(r"Invalid JSON: ([^\[\n]+)")
"""What pydantic's JSON parser said of the answer, without the answer's text (its
`input_value`: content of the tool's, which an error message does not keep)."""


def _unreadable(name: str, said: str) -> str:
    """The failure of a call whose answer the SDK's client could not read: a server's
    legal JSON its parser refuses (a lone surrogate's escape, nesting past 200 levels),
    or no JSON at all."""
    found = _PARSER_SAID.search(said)
    why = f" ({found.group(1).strip()})" if found else ""
    return f"MCP server {name}'s answer could not be read{why}"


_OWN_GROUP_THEN_EXEC = "import os, sys; os.setpgid(0, 0); os.execv(sys.argv[1], sys.argv[1:])"
"""Run by `sys.executable -I -S` before a stdio server: the server leads a process group of
its own (what the SDK's kill of the server's tree signals), in the host's session."""


async def _spawn_in_host_session(
    command: str,
    args: list[str],
    env: dict[str, str] | None = None,
    errlog: TextIO = sys.stderr,
    cwd: Path | str | None = None,
) -> Process:
    """The SDK's stdio spawn, but the server stays in the host's session.

    The SDK starts each server in a session of its own (`setsid`). On Linux with
    autogroup scheduling (the default) a session is a scheduling group of its own, and
    a host woken by its server's answer waited for a core behind whole other groups:
    ~20 ms of run-queue wait per tool call against ~3 with the server in the host's
    session, the host's CPU per call the same (bench/README.md, issue 29). The kill scope
    the SDK wants stays: the server leads its own process group, whose id is its pid.
    """
    executable: str | None = command
    if os.sep not in command:  # a path is the server's (its cwd's) to resolve, as for Popen
        executable = shutil.which(command, path=(env or os.environ).get("PATH"))
    if executable is None:
        # As the SDK's spawn fails: before any process starts.
        raise FileNotFoundError(f"MCP server command not found: {command}")
    shim = [sys.executable, "-I", "-S", "-c", _OWN_GROUP_THEN_EXEC]
    return await anyio.open_process([*shim, executable, *args], env=env, stderr=errlog, cwd=cwd)


if sys.platform != "win32":
    # The SDK's stdio client spawns its server through this one function, nowhere else.
    mcp.client.stdio._create_platform_compatible_process = _spawn_in_host_session

_sdk_parse_line = mcp.client.stdio._parse_line


def _parse_line_or_fail_its_request(line: str) -> SessionMessage | Exception:
    """The SDK's parse of a stdio server's line; where it refuses the line, the request
    it answers fails with a parse error, as its Streamable HTTP client fails it.

    Its parser refuses legal JSON a server may write (a lone surrogate's escape,
    `"\\ud800"`; nesting past 200 levels) and, over stdio, drops the line: the request
    it answered then waited out the server's whole `timeout_seconds` and failed as a
    timeout, retryable, though the server had answered. The standard library reads such
    a line, and its `id` names the request. (A line it cannot read either is dropped.)"""
    parsed = _sdk_parse_line(line)
    if not isinstance(parsed, Exception):
        return parsed
    try:
        answer = json.loads(line)
    except (ValueError, RecursionError):
        return parsed
    request_id = answer.get("id") if isinstance(answer, dict) else None
    if type(request_id) not in (str, int):
        return parsed
    error = mcp_types.ErrorData(
        code=mcp_types.PARSE_ERROR, message=f"{_UNREADABLE} JSON response: {parsed}"
    )
    return SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


# The SDK's stdio client parses each line of its server's stdout through this one function.
mcp.client.stdio._parse_line = _parse_line_or_fail_its_request


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


async def listed_tools(connection: McpConnection, server: str) -> list[mcp_types.Tool]:
    """Every tool the server lists; ValueError naming the server when it cannot list them."""
    try:
        return await connection.list_tools()
    except ToolFailure as failure:
        raise ValueError(f"MCP server {server!r}: {failure.message}") from failure
    except MCPError as error:
        raise ValueError(f"MCP server {server!r} refused tools/list: {error}") from error
