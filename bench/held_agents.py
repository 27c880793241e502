"""What the model-proxy and MCP-endpoint benches share: a real `wopeval serve`, and
http-lane agents held open so their invocations' endpoints stay live while measured.

A production agent outside the host (the command and http lanes) reaches its model
through the invocation's recording proxy and its tools through the invocation's MCP
endpoint, both named by a capability token valid while the invocation runs. The
benches play that agent from their own process: the project's agent is an http-lane
agent whose URL is this process (`HeldAgents`); each `POST /runs` makes the host
invoke it, the invocation's endpoints and tokens arrive in the POST, and the POST is
answered only when the bench releases it. Meanwhile the bench's clients use those
endpoints, and the same servers directly, as the agent would.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sqlite3
import sys
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self, TypeVar

import httpx
import psutil
import psycopg
from sqlalchemy.engine import make_url
from starlette.types import Receive, Scope, Send

from queue_throughput import Processes, free_port, fresh_database, wait_ready
from record_path import Latency
from reporting import Measured, finish
from wopeval.hosting.loopback import loopback_socket, quiet_server

TENANT = "bench"
KEY = "bench_" + "h" * 24
AGENT = "bench.held-agent"
WORKFLOW = "bench-held"
HEADERS = {"Authorization": f"Bearer {KEY}", "OpenWOP-Version": "2.0"}
HELD_SECONDS = 3600.0
"""The agent's timeout in the host: longer than any measurement."""


@dataclass(frozen=True)
class Invocation:
    """What the host handed one held agent: its endpoints and the token they take."""

    invocation_id: str
    mcp_url: str
    openai_base_url: str
    openai_api_key: str
    anthropic_base_url: str
    anthropic_api_key: str


class HeldAgents:
    """The http-lane agent: each invocation POST is noted and answered once released."""

    def __init__(self) -> None:
        self.arrived: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.release = asyncio.Event()
        self._socket = loopback_socket()
        self._server = quiet_server(self)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}/invoke"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await self.arrived.put(json.loads(body))
        await self.release.wait()
        answer = json.dumps({"decision": "held"}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": answer})

    @contextlib.asynccontextmanager
    async def serving(self) -> Any:
        serving = asyncio.create_task(self._server.serve(sockets=[self._socket]))
        while not self._server.started:
            if serving.done():
                serving.result()
            await asyncio.sleep(0.01)
        try:
            yield self
        finally:
            self.release.set()
            self._server.should_exit = True
            await serving
            self._socket.close()


@dataclass
class Host:
    """A running `wopeval serve` with the held agent's project, and its process ids."""

    url: str
    pid: int
    data_dir: Path
    database_url: str | None
    run_ids: list[str] = field(default_factory=list)

    def rows(self, query: str) -> list[tuple[Any, ...]]:
        """What `query` reads from the host's store (SQLite or PostgreSQL), once its runs ended."""
        if self.database_url is None:
            with contextlib.closing(sqlite3.connect(self.data_dir / "wopeval.db")) as connection:
                return [tuple(row) for row in connection.execute(query)]
        url = make_url(self.database_url).set(drivername="postgresql")
        with psycopg.connect(url.render_as_string(False)) as connection:
            return [tuple(row) for row in connection.execute(query).fetchall()]


def write_project(directory: Path, agent_url: str, agent_fields: str, extra: str = "") -> Path:
    """The project: the held agent (plus `agent_fields`), its workflow, and `extra` tables."""
    project = directory / "project"
    (project / "workflows").mkdir(parents=True)
    (project / "wopeval.toml").write_text(
        f'workflows = ["workflows/*.json"]\n\n{extra}\n'
        f'[[agents]]\nid = "{AGENT}"\nlane = "http"\nurl = "{agent_url}"\n'
        f"timeout_seconds = {HELD_SECONDS}\n{agent_fields}\n"
    )
    workflow = {"id": WORKFLOW, "nodes": [{"id": "held", "type": "core.agent", "agentId": AGENT}]}
    (project / "workflows" / f"{WORKFLOW}.json").write_text(json.dumps(workflow))
    return project


@contextlib.contextmanager
def serving_host(
    directory: Path, project: Path, database_url: str, env: dict[str, str] | None = None
) -> Iterator[tuple[Host, Processes]]:
    """`wopeval serve` on the project (SQLite in `directory`, or a fresh PostgreSQL database)."""
    with contextlib.ExitStack() as stack:
        database = None
        if database_url != "sqlite":
            database = stack.enter_context(fresh_database(database_url))
        processes = Processes(directory)
        stack.callback(processes.stop)
        port = free_port()
        data_dir = directory / "host"
        serve = ["serve", "--port", str(port), "--data-dir", str(data_dir),
                 "--api-key", f"{TENANT}={KEY}", "--project", str(project)]  # fmt: skip
        if database is not None:
            serve += ["--database-url", database]
        processes.start("host", serve, env)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_ready(url + "/host/wopeval/health")
        except RuntimeError:
            raise SystemExit((directory / "host.log").read_text()) from None
        yield Host(url, processes.started[0].pid, data_dir, database), processes


async def hold(host: Host, agents: HeldAgents, count: int) -> list[Invocation]:
    """Start `count` workflow runs; once each one's agent is invoked, its endpoints."""
    async with httpx.AsyncClient(base_url=host.url, headers=HEADERS, trust_env=False) as http:
        for _ in range(count):
            created = await http.post("/runs", json={"workflowId": WORKFLOW, "inputs": {}})
            if created.status_code != 201:
                raise SystemExit(f"POST /runs: {created.status_code} {created.text}")
            host.run_ids.append(created.json()["runId"])
    held = []
    for _ in range(count):
        posted = await asyncio.wait_for(agents.arrived.get(), 60)
        held.append(posted)
    return [
        Invocation(
            invocation_id=posted["invocationId"],
            mcp_url=posted["mcpUrl"],
            openai_base_url=posted["openaiBaseUrl"],
            openai_api_key=posted["openaiApiKey"],
            anthropic_base_url=posted["anthropicBaseUrl"],
            anthropic_api_key=posted["anthropicApiKey"],
        )
        for posted in held
    ]


async def release(host: Host, agents: HeldAgents) -> None:
    """Let every held agent answer, and wait for each of the host's runs to complete."""
    agents.release.set()
    async with httpx.AsyncClient(base_url=host.url, headers=HEADERS, trust_env=False) as http:
        deadline = time.monotonic() + 120
        for run_id in host.run_ids:
            path = "/runs/" + run_id.replace("/", "~2F")
            while (run := (await http.get(path)).json())["status"] in ("running", "pending"):
                if time.monotonic() > deadline:
                    raise SystemExit(f"run {run_id} never ended")
                await asyncio.sleep(0.05)
            if run["status"] != "completed":
                raise SystemExit(f"run {run_id} ended {run['status']}: {run.get('error')}")


def cpu_seconds(pid: int) -> float:
    """A process's user + system CPU seconds so far."""
    used = psutil.Process(pid).cpu_times()
    return float(used.user + used.system)


def python_child(arguments: list[str], log: Path, env: dict[str, str] | None = None) -> Any:
    """A Python child process of the benches' interpreter, logging to `log`."""
    import subprocess

    handle = log.open("wb")
    return subprocess.Popen(
        [sys.executable, *arguments],
        stdout=handle,
        stderr=subprocess.STDOUT,
        env={**os.environ, **(env or {})},
    )


def serve_quietly(app: Any, port: int) -> None:
    """An ASGI app on a loopback port in the foreground, as the benches' servers run."""
    server = quiet_server(app)
    server.run(sockets=[loopback_socket(port)])


# ── timing: direct and through the host, interleaved ─────────────────


@dataclass
class Timing:
    last: float
    """Seconds to the whole answer (or to a stream's end)."""
    first: float | None = None
    """Streamed: seconds to the first text delta."""


Call = Callable[[], Awaitable[Timing]]
"""One timed request of one agent, to one side (the server directly, or the host)."""


@dataclass
class Side:
    """One side's per-call latencies (ms)."""

    last: Latency
    first: Latency | None


@dataclass
class Beside:
    """1 agent: another side timed in the same interleaved loop as direct and the host (a
    floor, another transport), against the same direct calls."""

    side: Side
    added_p50_ms: float
    added_p99_ms: float
    cpu_ms_per_call: float | None
    """Its own process's CPU per call through it, when it has one."""
    added_first_p50_ms: float | None = None
    added_first_p99_ms: float | None = None


@dataclass
class Overhead:
    """1 agent: direct and through the host, interleaved; the host's side minus direct."""

    calls: int
    direct: Side
    host: Side
    added_p50_ms: float
    added_p99_ms: float
    host_cpu_ms_per_call: float
    """What the host's process spent per call through it, over the timed pairs: on a quiet
    machine about what a call waits for the host, whatever else the machine runs."""
    added_first_p50_ms: float | None = None
    added_first_p99_ms: float | None = None
    beside: dict[str, Beside] = field(default_factory=dict)
    """The other sides timed in the same loop, by name."""


@dataclass
class Phase:
    """Every agent at once, each making `per_agent` calls one after the other."""

    side: str
    calls: int
    seconds: float
    rate: float
    per_call: Latency
    cpu_ms_per_call: dict[str, float]
    """Per process (`bench` is this one): CPU ms over the phase ÷ its calls."""


@dataclass
class Rated:
    """Another side's phases, beside direct's in the same rounds."""

    rate: float
    ratio: float
    """Its calls/s ÷ direct's, over all rounds."""
    cpu_ms_per_call: dict[str, float]
    """Per process, over its phases."""


@dataclass
class Concurrent:
    agents: int
    rounds: int
    phases: list[Phase]
    direct_rate: float
    host_rate: float
    ratio: float
    """Calls/s through the host ÷ direct, over all rounds."""
    cpu_ms_per_call: dict[str, dict[str, float]]
    """Per side, per process, over all rounds."""
    beside: dict[str, Rated] = field(default_factory=dict)
    """The other sides' phases (in `phases` too, by their name), by name."""


def side_of(timings: list[Timing]) -> Side:
    firsts = [t.first for t in timings if t.first is not None]
    return Side(Latency.of([t.last for t in timings]), Latency.of(firsts) if firsts else None)


async def interleaved(
    sides: list[Call], rounds: int, pids: list[int]
) -> tuple[list[list[Timing]], list[float]]:
    """`rounds` calls to each side, after a warm-up, each round's order rotated by one (two
    sides: alternating); each side's timings, and each of `pids`' CPU ms per round."""
    for _ in range(warm_up_calls(rounds)):
        for call in sides:
            await call()
    cpu_before = [cpu_seconds(pid) for pid in pids]
    timings: list[list[Timing]] = [[] for _ in sides]
    for index in range(rounds):
        for offset in range(len(sides)):
            side = (index + offset) % len(sides)
            timings[side].append(await sides[side]())
    cpu_ms = [
        (cpu_seconds(pid) - before) / rounds * 1000
        for pid, before in zip(pids, cpu_before, strict=True)
    ]
    return timings, cpu_ms


def overhead_of(direct: list[Timing], host: list[Timing], host_cpu_ms: float) -> Overhead:
    d, h = side_of(direct), side_of(host)
    result = Overhead(
        len(host), d, h, h.last.p50_ms - d.last.p50_ms, h.last.p99_ms - d.last.p99_ms, host_cpu_ms
    )
    result.added_first_p50_ms, result.added_first_p99_ms = added_first(d, h)
    return result


def beside_of(direct: list[Timing], other: list[Timing], cpu_ms: float | None) -> Beside:
    d, o = side_of(direct), side_of(other)
    added_p50, added_p99 = o.last.p50_ms - d.last.p50_ms, o.last.p99_ms - d.last.p99_ms
    return Beside(o, added_p50, added_p99, cpu_ms, *added_first(d, o))


def added_first(direct: Side, other: Side) -> tuple[float | None, float | None]:
    """A stream's added time to its first token, p50 and p99 (none for whole calls)."""
    if direct.first is None or other.first is None:
        return None, None
    return other.first.p50_ms - direct.first.p50_ms, other.first.p99_ms - direct.first.p99_ms


async def overhead(direct: Call, via_host: Call, pairs: int, host_pid: int) -> Overhead:
    """`pairs` calls to each side, interleaved, each pair's order alternating, after a warm-up;
    with the host's CPU per call through it (the host does nothing for a direct call)."""
    (direct_timings, host_timings), (host_cpu_ms,) = await interleaved(
        [direct, via_host], pairs, [host_pid]
    )
    return overhead_of(direct_timings, host_timings, host_cpu_ms)


def warm_up_calls(pairs: int) -> int:
    """The untimed pairs before `overhead`'s timed ones: connections open, caches warm."""
    return max(5, pairs // 10)


WARM_UP_PER_AGENT = 2
"""The untimed calls of each agent before `concurrent`'s rounds."""


async def phase(side: str, agents: list[Call], per_agent: int, pids: dict[str, int]) -> Phase:
    """Every agent making `per_agent` calls, all agents at once; wall time and CPU."""

    async def agent(call: Call) -> list[float]:
        return [(await call()).last for _ in range(per_agent)]

    cpu_before = {process: cpu_seconds(pid) for process, pid in pids.items()}
    own_before = time.process_time()
    started = time.perf_counter()
    latencies = await asyncio.gather(*(agent(call) for call in agents))
    seconds = time.perf_counter() - started
    made = len(agents) * per_agent
    cpu = {process: cpu_seconds(pid) - cpu_before[process] for process, pid in pids.items()}
    cpu["bench"] = time.process_time() - own_before
    return Phase(
        side=side,
        calls=made,
        seconds=seconds,
        rate=made / seconds,
        per_call=Latency.of([s for agent in latencies for s in agent]),
        cpu_ms_per_call={process: used / made * 1000 for process, used in cpu.items()},
    )


async def concurrent(
    direct: list[Call],
    via_host: list[Call],
    per_agent: int,
    rounds: int,
    pids: dict[str, int],
    beside: dict[str, list[Call]] | None = None,
) -> Concurrent:
    """`rounds` rounds of a direct, a through-the-host phase and one of each `beside` side,
    each round's order rotated by one (two sides: alternating)."""
    sides = [("direct", direct), ("host", via_host), *(beside or {}).items()]
    for _, agents in reversed(sides):
        await phase("warm-up", agents, WARM_UP_PER_AGENT, pids)
    phases: list[Phase] = []
    for index in range(rounds):
        for offset in range(len(sides)):
            side, agents = sides[(index + offset) % len(sides)]
            phases.append(await phase(side, agents, per_agent, pids))

    def total(side: str) -> tuple[float, dict[str, float]]:
        ran = [p for p in phases if p.side == side]
        made = sum(p.calls for p in ran)
        cpu = {
            process: sum(p.cpu_ms_per_call[process] * p.calls for p in ran) / made
            for process in ran[0].cpu_ms_per_call
        }
        return made / sum(p.seconds for p in ran), cpu

    (direct_rate, direct_cpu), (host_rate, host_cpu) = total("direct"), total("host")
    rated = {}
    for side in beside or {}:
        rate, cpu = total(side)
        rated[side] = Rated(rate, rate / direct_rate, cpu)
    return Concurrent(
        agents=len(direct),
        rounds=rounds,
        phases=phases,
        direct_rate=direct_rate,
        host_rate=host_rate,
        ratio=host_rate / direct_rate,
        cpu_ms_per_call={"direct": direct_cpu, "host": host_cpu},
        beside=rated,
    )


@dataclass
class Plan:
    """A bench run's sizes and machine, at the head of its JSON report."""

    pairs: int
    """1-agent pairs per figure."""
    agents: int
    per_agent: int
    rounds: int
    store: str
    cpu_count: int | None
    python: str
    load_average: list[float]
    """1-minute load average at the start and at the end."""
    recorded_rows: int = 0

    @classmethod
    def of(cls, options: argparse.Namespace, pairs: int) -> Self:
        return cls(
            pairs=pairs,
            agents=options.agents,
            per_agent=options.per_agent,
            rounds=options.rounds,
            store="sqlite" if options.database_url == "sqlite" else "postgresql",
            cpu_count=os.cpu_count(),
            python=sys.version.split()[0],
            load_average=[os.getloadavg()[0]],
        )

    def calls_made(self) -> int:
        """How many calls one figure makes through the host, warm-ups included."""
        crowd = self.agents * (WARM_UP_PER_AGENT + self.per_agent * self.rounds)
        return self.pairs + warm_up_calls(self.pairs) + crowd


def print_figures(
    label: str,
    lone: Overhead,
    crowd: Concurrent,
    *,
    server: str,
    target_ms: float,
    target_ratio: float,
) -> None:
    """One figure's lines: 1 agent's overhead, N agents' rate, their CPU, the targets."""
    line = (
        f"overhead   {label} 1 agent x {lone.calls}: host p50 {lone.host.last.p50_ms:.3f} ms,"
        f" direct p50 {lone.direct.last.p50_ms:.3f} ms: +{lone.added_p50_ms:.3f} ms p50,"
        f" +{lone.added_p99_ms:.3f} ms p99; host cpu {lone.host_cpu_ms_per_call:.3f} ms/call"
    )
    if lone.host.first is not None and lone.direct.first is not None:
        line += (
            f"; first token: host p50 {lone.host.first.p50_ms:.3f}, direct"
            f" {lone.direct.first.p50_ms:.3f}: +{lone.added_first_p50_ms:.3f} ms p50,"
            f" +{lone.added_first_p99_ms:.3f} ms p99"
        )
    print(line, flush=True)
    cpu = crowd.cpu_ms_per_call
    print(
        f"agents     {label} {crowd.agents} agents x {crowd.rounds} rounds: host"
        f" {crowd.host_rate:.0f}/s, direct {crowd.direct_rate:.0f}/s: ratio {crowd.ratio:.2f};"
        f" cpu ms/call: host {cpu['host']['host']:.3f}, {server} server"
        f" {cpu['host'][server]:.3f} (direct {cpu['direct'][server]:.3f}), client"
        f" {cpu['host']['bench']:.3f} (direct {cpu['direct']['bench']:.3f})",
        flush=True,
    )
    checks = [
        (lone.added_p50_ms <= target_ms, f"overhead p50 <= {target_ms} ms"),
        (crowd.ratio >= target_ratio, f"rate at {crowd.agents} agents >= {target_ratio}"),
    ]
    if lone.added_first_p50_ms is not None:
        checks.append((lone.added_first_p50_ms <= target_ms, f"first token p50 <= {target_ms} ms"))
    for met, what in checks:
        print(f"target     {label} {what}: {'meets' if met else 'MISSES'}", flush=True)


def crowd_options(parser: argparse.ArgumentParser, pairs: str, what: str) -> None:
    """The options both benches take: 1-agent pairs (`pairs`, e.g. `--calls`), the crowd,
    the store and the report."""
    parser.add_argument(pairs, type=int, default=500, help=f"1-agent pairs of {what}, per figure")
    parser.add_argument("--agents", type=int, default=32, help="concurrent agents")
    parser.add_argument("--per-agent", type=int, default=20, help=f"{what} per agent per phase")
    parser.add_argument("--rounds", type=int, default=3, help="direct/host phase pairs")
    parser.add_argument("--database-url", default="sqlite", help="sqlite, or a PostgreSQL URL")
    parser.add_argument("--json", type=Path)


def checked(parser: argparse.ArgumentParser, options: argparse.Namespace, pairs: int) -> None:
    if pairs < 2 or options.agents < 1 or options.rounds < 1:
        parser.error("1-agent pairs must be >= 2 (a p50 needs two), --agents and --rounds >= 1")


Reported = TypeVar("Reported", bound=Measured)


def run(
    measure: Callable[[argparse.Namespace, Path, Reported], Coroutine[Any, Any, None]],
    options: argparse.Namespace,
    report: Reported,
) -> int:
    """Measure in a scratch directory, then print the load and write the JSON report."""
    with tempfile.TemporaryDirectory(prefix="wopeval-bench-") as scratch:
        try:
            asyncio.run(measure(options, Path(scratch), report))
        except BaseExceptionGroup as group:
            # The SDK's sessions nest a task group each, deeper than a traceback prints
            # (10 levels): what failed first would be cut off. Print each leaf whole.
            for leaf in leaves(group):
                traceback.print_exception(leaf)
            raise
    finish(report, options.json)
    return 0


def leaves(group: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    """The exceptions in `group` and its nested groups that are not groups themselves."""
    for exception in group.exceptions:
        if isinstance(exception, BaseExceptionGroup):
            yield from leaves(exception)
        else:
            yield exception
