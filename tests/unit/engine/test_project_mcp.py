"""`wopeval.toml` entries of MCP servers and of the command and http lanes; incomplete: refused."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from wopeval.engine.catalog.catalog import Catalog
from wopeval.engine.catalog.project import ProjectError, connect_mcp_servers, load_project
from wopeval.tools import McpServers
from wopeval.tools.base import ToolContext, ToolFailure
from wopeval.tools.mcp import ERROR_TEXT_LIMIT, HttpEndpoint, StdioLaunch

COUNTING_SERVER = Path(__file__).parents[2] / "e2e" / "mcp" / "_counting_server.py"


def _write(path: Path, toml: str) -> Path:
    path.write_text(toml)
    return path


async def _load(directory: Path, toml: str) -> Catalog:
    _write(directory / "wopeval.toml", toml)
    catalog = Catalog()
    async with httpx.AsyncClient() as http:
        servers = load_project(directory, catalog, http, tool_timeout=7)
        await connect_mcp_servers(servers, catalog, McpServers())
    return catalog


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[[mcp_servers]]\nname = "a"\n', "exactly one of `command` (stdio) or `url`"),
        ('[[mcp_servers]]\nname = "a"\ncommand = ["x"]\nurl = "http://h/mcp"\n', "exactly one"),
        ('[[mcp_servers]]\nname = "a"\nurl = "http://h/mcp"\ncwd = "x"\n', "are for a stdio"),
        ('[[mcp_servers]]\nname = "a"\ncommand = ["x"]\ncredential = { value = "s" }\n',
         "needs `server_env`"),
        ('[[mcp_servers]]\nname = "a:b"\ncommand = ["x"]\n', "name"),
        ('[[agents]]\nid = "a"\nlane = "command"\n', "the command lane needs `command`"),
        ('[[agents]]\nid = "a"\nlane = "http"\n', "the http lane needs `url`"),
        ('[[agents]]\nid = "a"\nlane = "http"\nurl = "http://h"\ncredential = {}\n',
         "needs `env` or `value`"),
        ('[[agents]]\nid = "a"\nlane = "scripted"\ntools = ["nowhere:*"]\n',
         "`tools` entry 'nowhere:*' names no tool"),
    ],
    ids=["no-transport", "two-transports", "http-cwd", "stdio-credential", "bad-name",
         "command-lane", "http-lane", "empty-credential", "allowlist"],
)  # fmt: skip
async def test_an_incomplete_entry_is_refused_with_what_it_lacks(
    tmp_path: Path, toml: str, message: str
) -> None:
    with pytest.raises(ProjectError, match=None) as refused:
        await _load(tmp_path, toml)
    assert message in str(refused.value)


async def test_a_manifest_may_be_named_directly_and_its_servers_are_described(
    tmp_path: Path,
) -> None:
    manifest = _write(
        tmp_path / "other.toml",
        '[[mcp_servers]]\nname = "s"\ncommand = ["srv", "--flag"]\nenv = { A = "1" }\n'
        'credential = { value = "v", server_env = "TOKEN" }\ntools = ["one"]\n'
        '[[mcp_servers]]\nname = "h"\nurl = "http://h/mcp"\nheaders = { X = "y" }\n'
        'timeout_seconds = 3\ncredential = { value = "v" }\n',
    )
    async with httpx.AsyncClient() as http:
        stdio, remote = load_project(manifest, Catalog(), http, tool_timeout=7)
    assert stdio.transport == StdioLaunch(
        ("srv", "--flag"), (("A", "1"),), manifest.parent.absolute()
    )
    assert stdio.timeout_seconds == 7
    assert stdio.tools == ("one",)
    assert stdio.credential is not None
    assert (stdio.credential.env, stdio.credential.render()) == ("TOKEN", "v")
    assert remote.transport == HttpEndpoint("http://h/mcp", (("X", "y"),))
    assert remote.timeout_seconds == 3
    assert remote.credential is not None
    assert (remote.credential.header, remote.credential.render()) == ("Authorization", "Bearer v")
    assert "'v'" not in repr(remote), "the secret is hidden from repr"


async def test_an_mcp_server_that_cannot_start_stops_the_host_with_its_name(
    tmp_path: Path,
) -> None:
    toml = '[[mcp_servers]]\nname = "ghost"\ncommand = ["/nonexistent/mcp-server"]\n'
    with pytest.raises(ProjectError, match="MCP server 'ghost'"):
        await _load(tmp_path, toml)


@asynccontextmanager
async def _counting_project(directory: Path, tools: list[str]) -> AsyncIterator[Catalog]:
    """The catalog of a project whose one MCP server (the e2e counting server) registers
    `tools` of its own, connected while the context lasts."""
    command = json.dumps([sys.executable, str(COUNTING_SERVER)])
    calls = json.dumps(str(directory / "calls.jsonl"))
    toml = (
        f'[[mcp_servers]]\nname = "count"\ncommand = {command}\n'
        f"env = {{ CALL_LOG = {calls} }}\ntools = {json.dumps(tools)}\n"
    )
    _write(directory / "wopeval.toml", toml)
    catalog, servers = Catalog(), McpServers()
    try:
        async with httpx.AsyncClient() as http:
            specs = load_project(directory, catalog, http, tool_timeout=7)
            await connect_mcp_servers(specs, catalog, servers)
            yield catalog
    finally:
        await servers.close()


async def test_an_mcp_server_registers_only_the_tools_its_entry_names(tmp_path: Path) -> None:
    """`tools = [...]` in a server's entry registers those of its tools and no other: a tool
    the project left out is offered to no agent, and no agent can call it."""
    async with _counting_project(tmp_path, ["lookup"]) as catalog:
        assert catalog.tools.names() == ["count:lookup"]


async def test_a_tool_an_mcp_servers_entry_names_that_it_does_not_list_stops_the_host(
    tmp_path: Path,
) -> None:
    with pytest.raises(ProjectError, match="MCP server 'count' lists no tool nope"):
        async with _counting_project(tmp_path, ["lookup", "nope"]):
            pass


async def test_an_mcp_tools_error_text_is_cut_to_its_limit(tmp_path: Path) -> None:
    """An MCP tool's error text is the server's own, of any length: what the agent sees and
    the record keeps of it is at most `ERROR_TEXT_LIMIT` characters."""
    reason = "x" * (2 * ERROR_TEXT_LIMIT)
    async with _counting_project(tmp_path, ["refuse"]) as catalog:
        refuse = catalog.tools.get("count:refuse")
        assert refuse is not None
        with pytest.raises(ToolFailure) as failed:
            await refuse.call({"reason": reason}, ToolContext("acme", "acme/run"))
    assert failed.value.code == "mcp_tool_error"
    message = failed.value.message
    assert "refused: xxx" in message
    assert len(message) == ERROR_TEXT_LIMIT


async def test_an_mcp_tool_called_with_args_that_are_no_object_is_refused_unsent(
    tmp_path: Path,
) -> None:
    """An MCP tool takes an object of arguments (a lane's agent may send anything): other
    args are refused `invalid_args` before anything goes to its server."""
    async with _counting_project(tmp_path, ["lookup"]) as catalog:
        lookup = catalog.tools.get("count:lookup")
        assert lookup is not None
        with pytest.raises(ToolFailure) as failed:
            await lookup.call(["key"], ToolContext("acme", "acme/run"))
    assert failed.value.code == "invalid_args"
    assert not (tmp_path / "calls.jsonl").exists(), "the call reached the server"
