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
- the floor, in the same loops (a third side: 1 agent, triples whose order rotates; N
  agents, a floor phase in each round): a bare MCP relay on the host's stack with no
  wopeval code (bench/bare_mcp_relay.py: uvicorn as the serve configures it, a raw ASGI
  app, one held SDK client session per tool server), the agent's client talking
  Streamable HTTP to it as to the host; what any Python relay on this stack adds;
- the agent's own transport: with the stdio server, a fourth side at 1 agent, the
  agent's client over Streamable HTTP straight to the HTTP server (the same echo server,
  no relay): what the agent pays for talking HTTP instead of stdio, part of the floor's
  and the host's added time over a stdio server.

Every call through the host is checked as recorded once the runs end: one `tool_calls`
row per call, live and ok. Run `python bench/mcp_endpoint.py --help` for the options;
bench/README.md has the commands and the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
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
    beside_of,
    checked,
    concurrent,
    crowd_options,
    hold,
    interleaved,
    overhead_of,
    print_figures,
    python_child,
    release,
    run,
    serving_host,
    write_project,
)
from queue_throughput import free_port, wait_ready  # noqa: E402

SERVER_SCRIPT = HERE / "mcp_echo_server.py"
RELAY_SCRIPT = HERE / "bare_mcp_relay.py"
FLOOR = "floor"
AGENT_OVER_HTTP = "agent_over_http"
"""The stdio figure's fourth side: the agent's client over Streamable HTTP to the HTTP server."""
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
    floor_url: str,
    options: argparse.Namespace,
    pids: dict[str, int],
) -> ServerResult:
    direct_target: StdioServerParameters | str = stdio_server() if server == "stdio" else http_url
    tool = f"b{server}__echo"
    # The agent over HTTP beside its stdio server; with the HTTP server that is direct itself.
    over_http: list[StdioServerParameters | str] = [http_url] if server == "stdio" else []
    async with (
        sessions([direct_target] * len(endpoints)) as direct,
        sessions(list(endpoints)) as via_host,
        sessions([floor_url] * len(endpoints)) as via_floor,
        sessions(over_http) as agent_over_http,
    ):
        direct_calls = [timed(client, "echo") for client in direct]
        host_calls = [timed(client, tool) for client in via_host]
        floor_calls = [timed(client, "echo") for client in via_floor]
        lone_sides = [direct_calls[0], host_calls[0], floor_calls[0]]
        lone_sides += [timed(client, "echo") for client in agent_over_http]
        timings, (host_cpu, floor_cpu) = await interleaved(
            lone_sides, options.calls, [pids["host"], pids[FLOOR]]
        )
        lone = overhead_of(timings[0], timings[1], host_cpu)
        lone.beside[FLOOR] = beside_of(timings[0], timings[2], floor_cpu)
        if agent_over_http:
            lone.beside[AGENT_OVER_HTTP] = beside_of(timings[0], timings[3], None)
        crowd = await concurrent(
            direct_calls,
            host_calls,
            options.per_agent,
            options.rounds,
            pids,
            beside={FLOOR: floor_calls},
        )
    return ServerResult(server, lone, crowd)


def print_floor(label: str, lone: Overhead, crowd: Concurrent, server: str) -> None:
    """The floor's lines beside the host's, and the agent's transport (stdio server)."""
    floor, rated = lone.beside[FLOOR], crowd.beside[FLOOR]
    print(
        f"floor      {label} 1 agent x {lone.calls}: floor p50 {floor.side.last.p50_ms:.3f} ms:"
        f" {floor.added_p50_ms:+.3f} ms p50, {floor.added_p99_ms:+.3f} ms p99"
        f" (host {lone.added_p50_ms:+.3f}, {lone.added_p99_ms:+.3f});"
        f" floor cpu {floor.cpu_ms_per_call or 0:.3f} ms/call"
        f" (host {lone.host_cpu_ms_per_call:.3f})",
        flush=True,
    )
    print(
        f"floor      {label} {crowd.agents} agents: floor {rated.rate:.0f}/s, ratio"
        f" {rated.ratio:.2f} (host {crowd.ratio:.2f}); cpu ms/call: floor"
        f" {rated.cpu_ms_per_call[FLOOR]:.3f} (host {crowd.cpu_ms_per_call['host']['host']:.3f}),"
        f" {server} server {rated.cpu_ms_per_call[server]:.3f}",
        flush=True,
    )
    met = floor.added_p50_ms <= TARGET_OVERHEAD_MS
    print(
        f"target     {label} floor overhead p50 <= {TARGET_OVERHEAD_MS} ms:"
        f" {'meets' if met else 'MISSES'}",
        flush=True,
    )
    transport = lone.beside.get(AGENT_OVER_HTTP)
    if transport is not None:
        print(
            f"transport  {label} the agent over HTTP to the HTTP server, no relay:"
            f" p50 {transport.side.last.p50_ms:.3f} ms: {transport.added_p50_ms:+.3f} ms p50"
            f" over stdio, {transport.added_p99_ms:+.3f} ms p99",
            flush=True,
        )


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
    port, relay_port = free_port(), free_port()
    http_url = f"http://127.0.0.1:{port}/mcp"
    http_server = python_child(
        [str(SERVER_SCRIPT), "--http", str(port)], directory / "mcp-http.log"
    )
    relay = python_child(
        [str(RELAY_SCRIPT), "--port", str(relay_port), "--http", http_url,
         "--stdio", shlex.join([sys.executable, str(SERVER_SCRIPT)])],
        directory / "floor.log",
    )  # fmt: skip
    relay_url = f"http://127.0.0.1:{relay_port}"
    try:
        try:
            wait_ready(relay_url + "/ready")
        except RuntimeError:
            raise SystemExit((directory / "floor.log").read_text()) from None
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
                pids = {"host": host.pid, "http": http_server.pid, FLOOR: relay.pid}
                for server in options.server or SERVERS:
                    floor_url = f"{relay_url}/{server}"
                    result = await measure_server(
                        server, http_url, endpoints, floor_url, options, pids
                    )
                    report.results.append(result)
                    print_figures(
                        f"{server:5}",
                        result.overhead,
                        result.concurrent,
                        server="http",
                        target_ms=TARGET_OVERHEAD_MS,
                        target_ratio=TARGET_RATE_RATIO,
                    )
                    print_floor(f"{server:5}", result.overhead, result.concurrent, "http")
                await release(host, agents)
                check_recorded(host, report)
    finally:
        relay.terminate()  # its lifespan's end closes its sessions and its stdio server
        http_server.kill()
        for child in (relay, http_server):
            child.wait(30)


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
