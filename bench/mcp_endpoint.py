"""MCP endpoint: what an invocation's MCP endpoint adds to an agent's tool call, beside the
agent calling the same MCP server directly in the same run.

An agent outside the host calls its tools at its invocation's MCP endpoint
(`/host/wopeval/mcp/{token}`, api/routes/mcp.py, the official SDK's Streamable HTTP
server): the host checks the tool is granted, lands the call durably before the tool
runs, calls the project's MCP server, and lands the result before the agent sees it.
This bench measures that, for an MCP server over stdio and one over Streamable HTTP:

- the servers: a real `wopeval serve` (its access log on) whose project names both MCP
  servers (bench/mcp_echo_server.py, one `echo` tool that does nothing) and an http-lane
  agent, played by this process and held open (bench/held_agents.py), granted both;
- the client: the official `mcp` SDK's `Client`, as an agent uses it, one session per
  agent and side, opened before the timing: directly, a stdio session (a server
  process of the agent's own) or a Streamable HTTP session to the HTTP server; through
  the host, a Streamable HTTP session to the invocation's endpoint;
- 1 agent: `--calls` pairs, direct and through the host interleaved (each pair's order
  alternating), after a warm-up; the figure is the host's p50 − direct p50 (and p99);
- `--agents` agents at once: `--rounds` rounds of a direct and a through-the-host phase
  (order alternating), each agent making `--per-agent` calls; calls/s through the host ÷
  direct, and each side's CPU per call of the host, the HTTP tool server and this process.

Every call through the host is checked as recorded once the runs end: one `tool_calls`
row per call, live and ok. Run `python bench/mcp_endpoint.py --help` for the options;
bench/README.md has the commands and the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from mcp import Client, StdioServerParameters

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from held_agents import (  # noqa: E402  (the benches' shared helpers)
    Call,
    Concurrent,
    HeldAgents,
    Host,
    Overhead,
    Plan,
    Timing,
    checked,
    concurrent,
    crowd_options,
    hold,
    overhead,
    print_figures,
    python_child,
    release,
    run,
    serving_host,
    write_project,
)
from queue_throughput import free_port  # noqa: E402

SERVER_SCRIPT = HERE / "mcp_echo_server.py"
SERVERS = ("stdio", "http")
TEXT = "bench: a tool call's argument"
TARGET_OVERHEAD_MS = 1.0
TARGET_RATE_RATIO = 0.9
"""Not a target of the issue for the MCP endpoint: printed beside the model proxy's."""


@dataclass
class ServerResult:
    server: str
    overhead: Overhead
    concurrent: Concurrent


@dataclass
class Report(Plan):
    results: list[ServerResult] = field(default_factory=list)


def stdio_server() -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[str(SERVER_SCRIPT)])


def timed(client: Client, tool: str) -> Call:
    """One timed `tools/call` of `tool` through `client`, its answer checked."""

    async def call() -> Timing:
        started = time.perf_counter()
        result = await client.call_tool(tool, {"text": TEXT})
        ended = time.perf_counter()
        if result.is_error or TEXT not in str(result.content):
            raise SystemExit(f"{tool}: {result}")
        return Timing(ended - started)

    return call


@contextlib.asynccontextmanager
async def sessions(
    targets: list[StdioServerParameters | str],
) -> AsyncIterator[list[Client]]:
    """One open MCP session per target, closed after (each entered and left in this task,
    as the SDK's cancel scopes need)."""
    async with contextlib.AsyncExitStack() as stack:
        yield [await stack.enter_async_context(Client(target)) for target in targets]


async def measure_server(
    server: str,
    http_url: str,
    endpoints: list[str],
    options: argparse.Namespace,
    pids: dict[str, int],
) -> ServerResult:
    direct_target: StdioServerParameters | str = stdio_server() if server == "stdio" else http_url
    tool = f"b{server}__echo"
    async with (
        sessions([direct_target] * len(endpoints)) as direct,
        sessions(list(endpoints)) as via_host,
    ):
        direct_calls = [timed(client, "echo") for client in direct]
        host_calls = [timed(client, tool) for client in via_host]
        lone = await overhead(direct_calls[0], host_calls[0], options.calls, pids["host"])
        crowd = await concurrent(direct_calls, host_calls, options.per_agent, options.rounds, pids)
    return ServerResult(server, lone, crowd)


def recorded(host: Host) -> list[tuple[str, int]]:
    """Per tool: how many live ok calls the host's store holds."""
    query = (
        "SELECT tool, count(*) FROM tool_calls WHERE served_by = 'live' AND status = 'ok'"
        " GROUP BY tool"
    )
    return [(tool, count) for tool, count in host.rows(query)]


def check_recorded(host: Host, report: Report) -> None:
    """Every call through the host is a `tool_calls` row of its tool, live and ok."""
    made = report.calls_made()
    expected = {f"b{result.server}:echo": made for result in report.results}
    found = dict(recorded(host))
    if found != expected:
        raise SystemExit(f"recorded calls {found}, made {expected}")
    report.recorded_rows = sum(found.values())
    print(f"recorded   {report.recorded_rows} calls through the host, one row each, all checked")


async def measure(options: argparse.Namespace, directory: Path, report: Report) -> None:
    port = free_port()
    http_url = f"http://127.0.0.1:{port}/mcp"
    http_server = python_child(
        [str(SERVER_SCRIPT), "--http", str(port)], directory / "mcp-http.log"
    )
    try:
        async with HeldAgents().serving() as agents:
            servers = (
                f'[[mcp_servers]]\nname = "bstdio"\n'
                f'command = ["{sys.executable}", "{SERVER_SCRIPT}"]\ntimeout_seconds = 60\n\n'
                f'[[mcp_servers]]\nname = "bhttp"\nurl = "{http_url}"\ntimeout_seconds = 60\n'
            )
            tools = 'tools = ["bstdio:*", "bhttp:*"]\n'
            project = write_project(directory, agents.url, tools, servers)
            with serving_host(directory, project, options.database_url) as (host, _):
                held = await hold(host, agents, options.agents)
                endpoints = [invocation.mcp_url for invocation in held]
                pids = {"host": host.pid, "http": http_server.pid}
                for server in options.server or SERVERS:
                    result = await measure_server(server, http_url, endpoints, options, pids)
                    report.results.append(result)
                    print_figures(
                        f"{server:5}",
                        result.overhead,
                        result.concurrent,
                        server="http",
                        target_ms=TARGET_OVERHEAD_MS,
                        target_ratio=TARGET_RATE_RATIO,
                    )
                await release(host, agents)
                check_recorded(host, report)
    finally:
        http_server.kill()
        http_server.wait(30)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    crowd_options(parser, "--calls", "tool calls")
    parser.add_argument("--server", action="append", choices=SERVERS, help="only these")
    options = parser.parse_args(argv)
    checked(parser, options, options.calls)
    return options


def main(argv: list[str] | None = None) -> int:
    options = parse_args(argv)
    report = Report.of(options, options.calls)
    return run(measure, options, report)


if __name__ == "__main__":
    sys.exit(main())
