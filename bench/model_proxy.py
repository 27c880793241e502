"""Model proxy: what the recording proxy adds to an agent's model exchange, beside the same
model server called directly in the same run.

An agent outside the host reaches its model through its invocation's recording proxy
(`/host/wopeval/openai/{token}/v1/…`, `/host/wopeval/anthropic/{token}/v1/messages`,
api/routes/model_proxy.py), which forwards the request upstream, relays the answer
whole or event by event, and records the exchange. This bench measures that hop:

- the servers: a real `wopeval serve` (its access log on, as a production host has
  it) whose project's agent is an http-lane agent played by this process and held
  open (bench/held_agents.py), so each invocation's proxy URL and token stay live;
  the model server is tests/_model_server (the strict stand-in the tests use, three
  wire APIs, whole and SSE) in its own process, the agent's upstream;
- the client: one `httpx.AsyncClient` in this process, the same for both sides, the
  same request bytes; direct requests go to the model server with its key, proxied
  ones to the invocation's proxy with the token as the key (what `OPENAI_API_KEY` /
  `ANTHROPIC_API_KEY` make an SDK send);
- for each wire API (chat, responses, messages), whole and streamed:
  - 1 agent: `--exchanges` pairs, direct and proxied interleaved (the order of each
    pair alternating), after a warm-up; the figure is proxied p50 − direct p50 (and
    p99), for a stream both to the first text delta (time to first token) and to
    the stream's end (time to last token);
  - `--agents` agents at once: `--rounds` rounds, each a direct phase and a proxied
    phase (their order alternating), every agent making `--per-agent` exchanges one
    after the other; the figure is proxied exchanges/s ÷ direct exchanges/s;
  - each phase's CPU per exchange of the host, the model server and this process
    (from /proc), a figure the machine's load moves much less than wall time.

Every proxied exchange is checked as recorded once the runs end: one `model_calls`
row per exchange, `via` proxy, live, ok, of the API and stream mode it was made in.
Run `python bench/model_proxy.py --help` for the options; bench/README.md has the
commands and the figures.
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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
from sqlalchemy.engine import make_url

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from held_agents import (  # noqa: E402  (the benches' shared helpers)
    HeldAgents,
    Host,
    Invocation,
    cpu_seconds,
    hold,
    python_child,
    release,
    serve_quietly,
    serving_host,
    write_project,
)
from queue_throughput import free_port, wait_ready  # noqa: E402
from record_path import Latency  # noqa: E402
from reporting import finish  # noqa: E402

MODEL = "gpt-bench-mini"
QUESTION = "bench: what is the weather like on the far side of the moon?"
ANSWER = (
    "There is no weather on the far side of the Moon: it has almost no atmosphere, so no "
    "wind, clouds or rain, and its surface swings from about 120 C by day to -170 C by night."
)
"""~40 tokens: the stand-in streams it three characters an event, as a provider streams tokens."""
MODEL_KEY_ENV = "BENCH_MODEL_KEY"
MODEL_KEY = "sk-bench-" + "m" * 24
APIS = ("chat", "responses", "messages")
TARGET_OVERHEAD_MS = 1.0
TARGET_RATE_RATIO = 0.9


# ── the exchanges ────────────────────────────────────────────────────


def request_body(api: str, stream: bool) -> bytes:
    """One request of `api`, as an agent's SDK sends it."""
    user = {"role": "user", "content": QUESTION}
    body: dict[str, Any]
    if api == "chat":
        body = {"model": MODEL, "messages": [user]}
        if stream:
            body["stream_options"] = {"include_usage": True}
    elif api == "responses":
        body = {"model": MODEL, "input": QUESTION}
    else:
        body = {"model": MODEL, "max_tokens": 256, "messages": [user]}
    if stream:
        body["stream"] = True
    return json.dumps(body).encode()


def is_text_delta(api: str, line: str) -> bool:
    """Whether an SSE line carries the answer's first text (the first token)."""
    if not line.startswith("data: {"):
        return False
    event = json.loads(line[6:])
    if api == "chat":
        choices = event.get("choices") or [{}]
        return bool(choices[0].get("delta", {}).get("content"))
    if api == "responses":
        return bool(event.get("type") == "response.output_text.delta")
    return bool(event.get("type") == "content_block_delta")


STREAM_END = {
    "chat": "data: [DONE]",
    "responses": '"type": "response.completed"',
    "messages": '"type": "message_stop"',
}
"""What the last event of a complete stream of each API carries."""


@dataclass(frozen=True)
class Endpoint:
    """Where one side sends an API's requests, with which headers."""

    url: str
    headers: dict[str, str]


def endpoints(api: str, model_root: str, invocation: Invocation | None) -> Endpoint:
    """The direct endpoint (no invocation), or the invocation's proxy."""
    if api == "messages":
        root = model_root if invocation is None else invocation.anthropic_base_url
        key = MODEL_KEY if invocation is None else invocation.anthropic_api_key
        headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
        return Endpoint(f"{root}/v1/messages", {**headers, "content-type": "application/json"})
    root = f"{model_root}/v1" if invocation is None else invocation.openai_base_url
    key = MODEL_KEY if invocation is None else invocation.openai_api_key
    path = "/chat/completions" if api == "chat" else "/responses"
    return Endpoint(
        root + path, {"authorization": f"Bearer {key}", "content-type": "application/json"}
    )


@dataclass
class Timing:
    last: float
    """Seconds to the whole answer (whole) or to the stream's end."""
    first: float | None = None
    """Streamed: seconds to the first text delta."""


Exchange = Callable[[Endpoint], Awaitable[Timing]]


def exchange_of(http: httpx.AsyncClient, api: str, stream: bool) -> Exchange:
    """One timed exchange of `api` (whole or streamed), checked complete."""
    body = request_body(api, stream)

    async def whole(endpoint: Endpoint) -> Timing:
        started = time.perf_counter()
        answer = await http.post(endpoint.url, content=body, headers=endpoint.headers)
        ended = time.perf_counter()
        if answer.status_code != 200 or ANSWER[:20] not in answer.text:
            raise SystemExit(f"{endpoint.url}: {answer.status_code} {answer.text[:300]}")
        return Timing(ended - started)

    async def streamed(endpoint: Endpoint) -> Timing:
        started = time.perf_counter()
        first = None
        ended_with = ""
        request = http.build_request("POST", endpoint.url, content=body, headers=endpoint.headers)
        answer = await http.send(request, stream=True)
        try:
            if answer.status_code != 200:
                raise SystemExit(f"{endpoint.url}: {answer.status_code} {await answer.aread()!r}")
            async for line in answer.aiter_lines():
                if first is None and is_text_delta(api, line):
                    first = time.perf_counter()
                if line:
                    ended_with = line
        finally:
            await answer.aclose()
        ended = time.perf_counter()
        if first is None or STREAM_END[api] not in ended_with:
            raise SystemExit(f"{endpoint.url}: an incomplete stream ending {ended_with[:200]}")
        return Timing(ended - started, first - started)

    return streamed if stream else whole


# ── results ──────────────────────────────────────────────────────────


@dataclass
class Side:
    """One side's per-exchange latencies (ms)."""

    last: Latency
    first: Latency | None


@dataclass
class Overhead:
    """1 agent: direct and proxied interleaved; proxied minus direct."""

    exchanges: int
    direct: Side
    proxied: Side
    added_p50_ms: float
    added_p99_ms: float
    added_first_p50_ms: float | None
    added_first_p99_ms: float | None


@dataclass
class Phase:
    """`agents` agents at once, each making `per_agent` exchanges."""

    side: str
    exchanges: int
    seconds: float
    rate: float
    per_exchange: Latency
    cpu_ms_per_exchange: dict[str, float]


@dataclass
class Concurrent:
    agents: int
    rounds: int
    phases: list[Phase]
    direct_rate: float
    proxied_rate: float
    ratio: float
    """Proxied exchanges/s ÷ direct, over all rounds."""
    cpu_ms_per_exchange: dict[str, dict[str, float]]
    """Per side, per process, over all rounds."""


@dataclass
class ApiResult:
    api: str
    stream: bool
    overhead: Overhead
    concurrent: Concurrent


@dataclass
class Report:
    exchanges: int
    agents: int
    per_agent: int
    rounds: int
    store: str
    cpu_count: int | None
    python: str
    load_average: list[float] = field(default_factory=list)
    results: list[ApiResult] = field(default_factory=list)
    recorded_rows: int = 0


# ── measuring ────────────────────────────────────────────────────────


def side_of(timings: list[Timing], stream: bool) -> Side:
    last = Latency.of([t.last for t in timings])
    first = Latency.of([t.first for t in timings if t.first is not None]) if stream else None
    return Side(last, first)


async def overhead(
    exchange: Exchange, direct: Endpoint, proxied: Endpoint, pairs: int, stream: bool
) -> Overhead:
    """Direct and proxied exchanges interleaved, each pair's order alternating."""
    for _ in range(max(5, pairs // 10)):  # warm-up: connections, caches, the JIT-less paths
        await exchange(direct)
        await exchange(proxied)
    direct_timings: list[Timing] = []
    proxied_timings: list[Timing] = []
    for index in range(pairs):
        if index % 2:
            proxied_timings.append(await exchange(proxied))
            direct_timings.append(await exchange(direct))
        else:
            direct_timings.append(await exchange(direct))
            proxied_timings.append(await exchange(proxied))
    d, p = side_of(direct_timings, stream), side_of(proxied_timings, stream)
    first = None if d.first is None or p.first is None else (d.first, p.first)
    return Overhead(
        exchanges=pairs,
        direct=d,
        proxied=p,
        added_p50_ms=p.last.p50_ms - d.last.p50_ms,
        added_p99_ms=p.last.p99_ms - d.last.p99_ms,
        added_first_p50_ms=None if first is None else first[1].p50_ms - first[0].p50_ms,
        added_first_p99_ms=None if first is None else first[1].p99_ms - first[0].p99_ms,
    )


async def phase(
    name: str, exchange: Exchange, targets: list[Endpoint], per_agent: int, pids: dict[str, int]
) -> Phase:
    """Every target's agent making `per_agent` exchanges, all agents at once."""

    async def agent(endpoint: Endpoint) -> list[float]:
        return [(await exchange(endpoint)).last for _ in range(per_agent)]

    cpu_before = {process: cpu_seconds(pid) for process, pid in pids.items()}
    own_before = time.process_time()
    started = time.perf_counter()
    latencies = await asyncio.gather(*(agent(endpoint) for endpoint in targets))
    seconds = time.perf_counter() - started
    made = len(targets) * per_agent
    cpu = {process: cpu_seconds(pid) - cpu_before[process] for process, pid in pids.items()}
    cpu["bench"] = time.process_time() - own_before
    return Phase(
        side=name,
        exchanges=made,
        seconds=seconds,
        rate=made / seconds,
        per_exchange=Latency.of([s for agent in latencies for s in agent]),
        cpu_ms_per_exchange={process: used / made * 1000 for process, used in cpu.items()},
    )


async def concurrent(
    exchange: Exchange,
    direct: list[Endpoint],
    proxied: list[Endpoint],
    options: argparse.Namespace,
    pids: dict[str, int],
) -> Concurrent:
    await phase("warm-up", exchange, proxied, 2, pids)
    await phase("warm-up", exchange, direct, 2, pids)
    phases: list[Phase] = []
    for index in range(options.rounds):
        sides = [("direct", direct), ("proxied", proxied)]
        for name, targets in sides if index % 2 == 0 else reversed(sides):
            phases.append(await phase(name, exchange, targets, options.per_agent, pids))

    def total(side: str) -> tuple[float, dict[str, float]]:
        ran = [p for p in phases if p.side == side]
        made = sum(p.exchanges for p in ran)
        cpu = {
            process: sum(p.cpu_ms_per_exchange[process] * p.exchanges for p in ran) / made
            for process in ran[0].cpu_ms_per_exchange
        }
        return made / sum(p.seconds for p in ran), cpu

    (direct_rate, direct_cpu), (proxied_rate, proxied_cpu) = total("direct"), total("proxied")
    return Concurrent(
        agents=len(direct),
        rounds=options.rounds,
        phases=phases,
        direct_rate=direct_rate,
        proxied_rate=proxied_rate,
        ratio=proxied_rate / direct_rate,
        cpu_ms_per_exchange={"direct": direct_cpu, "proxied": proxied_cpu},
    )


def print_result(result: ApiResult) -> None:
    o, c = result.overhead, result.concurrent
    mode = "streamed" if result.stream else "whole"
    label = f"{result.api:9} {mode:8}"
    line = (
        f"overhead   {label} 1 agent x {o.exchanges}: proxied p50 {o.proxied.last.p50_ms:.3f}"
        f" ms, direct p50 {o.direct.last.p50_ms:.3f} ms: +{o.added_p50_ms:.3f} ms p50,"
        f" +{o.added_p99_ms:.3f} ms p99"
    )
    if o.proxied.first is not None and o.direct.first is not None:
        line += (
            f"; first token: proxied p50 {o.proxied.first.p50_ms:.3f}, direct"
            f" {o.direct.first.p50_ms:.3f}: +{o.added_first_p50_ms:.3f} ms p50,"
            f" +{o.added_first_p99_ms:.3f} ms p99"
        )
    print(line, flush=True)
    cpu = c.cpu_ms_per_exchange
    print(
        f"agents     {label} {c.agents} agents x {c.rounds} rounds: proxied"
        f" {c.proxied_rate:.0f}/s, direct {c.direct_rate:.0f}/s: ratio {c.ratio:.2f};"
        f" cpu ms/exchange host {cpu['proxied'].get('host', 0):.3f}, model server"
        f" {cpu['proxied']['model']:.3f} (direct {cpu['direct']['model']:.3f}), client"
        f" {cpu['proxied']['bench']:.3f} (direct {cpu['direct']['bench']:.3f})",
        flush=True,
    )
    checks = [
        (o.added_p50_ms <= TARGET_OVERHEAD_MS, f"overhead p50 <= {TARGET_OVERHEAD_MS} ms"),
        (c.ratio >= TARGET_RATE_RATIO, f"rate at {c.agents} agents >= {TARGET_RATE_RATIO}"),
    ]
    if o.added_first_p50_ms is not None:
        checks.append((o.added_first_p50_ms <= TARGET_OVERHEAD_MS, "first token p50 <= 1 ms"))
    for met, what in checks:
        print(f"target     {label} {what}: {'meets' if met else 'MISSES'}", flush=True)


# ── the recording, checked ───────────────────────────────────────────


def recorded(host: Host) -> list[tuple[str, bool, int]]:
    """Per (API, stream): how many proxied live ok exchanges the host's store holds."""
    query = (
        "SELECT api, stream, count(*) FROM model_calls WHERE via = 'proxy' AND"
        " served_by = 'live' AND status = 'ok' GROUP BY api, stream"
    )
    if host.database_url is None:
        with contextlib.closing(sqlite3.connect(host.data_dir / "wopeval.db")) as connection:
            return [(api, bool(s), n) for api, s, n in connection.execute(query)]
    dsn = make_url(host.database_url).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(dsn) as connection:
        return [(api, bool(s), n) for api, s, n in connection.execute(query).fetchall()]


# ── the bench ────────────────────────────────────────────────────────


async def measure(options: argparse.Namespace, directory: Path, report: Report) -> None:
    model_port = free_port()
    script = directory / "script.json"
    turns = [{"content": ANSWER}]
    script.write_text(json.dumps({"conversations": [{"user": QUESTION, "turns": turns}]}))
    model = python_child(
        [__file__, "--serve-model", str(model_port), str(script)], directory / "model.log"
    )
    try:
        model_root = f"http://127.0.0.1:{model_port}"
        wait_ready(model_root + "/_stats")
        async with HeldAgents().serving() as agents:
            fields = (
                f'base_url = "{model_root}/v1"\napi_key_env = "{MODEL_KEY_ENV}"\n'
                f'anthropic_base_url = "{model_root}"\nanthropic_api_key_env = "{MODEL_KEY_ENV}"\n'
            )
            project = write_project(directory, agents.url, fields)
            env = {MODEL_KEY_ENV: MODEL_KEY}
            with serving_host(directory, project, options.database_url, env) as (host, _):
                held = await hold(host, agents, options.agents)
                pids = {"host": host.pid, "model": model.pid}
                await measure_apis(options, model_root, held, pids, report)
                await release(host, agents)
                check_recorded(host, report)
    finally:
        model.kill()
        model.wait(30)


async def measure_apis(
    options: argparse.Namespace,
    model_root: str,
    held: list[Invocation],
    pids: dict[str, int],
    report: Report,
) -> None:
    limits = httpx.Limits(max_connections=4 * len(held), max_keepalive_connections=4 * len(held))
    async with httpx.AsyncClient(limits=limits, timeout=60, trust_env=False) as http:
        for api in options.api or APIS:
            for stream in (False, True):
                exchange = exchange_of(http, api, stream)
                direct = endpoints(api, model_root, None)
                lone = await overhead(
                    exchange, direct, endpoints(api, model_root, held[0]), options.exchanges, stream
                )
                crowd = await concurrent(
                    exchange,
                    [direct] * len(held),
                    [endpoints(api, model_root, invocation) for invocation in held],
                    options,
                    pids,
                )
                result = ApiResult(api, stream, lone, crowd)
                report.results.append(result)
                print_result(result)


def check_recorded(host: Host, report: Report) -> None:
    """Every proxied exchange is a `model_calls` row of its API and stream mode."""
    options_by_mode: dict[tuple[str, bool], int] = {}
    for result in report.results:
        lone, crowd = result.overhead, result.concurrent
        made = lone.exchanges + max(5, lone.exchanges // 10)
        made += crowd.agents * (2 + report.per_agent * crowd.rounds)
        options_by_mode[(result.api, result.stream)] = made
    found = {(api, stream): count for api, stream, count in recorded(host)}
    if found != options_by_mode:
        raise SystemExit(f"recorded exchanges {found}, made {options_by_mode}")
    report.recorded_rows = sum(found.values())
    print(f"recorded   {report.recorded_rows} proxied exchanges, one row each, all checked")


def serve_model(port: int, script_file: Path) -> None:
    """The strict stand-in model server (tests/_model_server) with no access log."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    from _model_server import ModelScript
    from _model_server.app import app

    script = ModelScript()
    script.load(json.loads(script_file.read_text()))
    serve_quietly(app(script), port)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--exchanges", type=int, default=500, help="1-agent pairs per figure")
    parser.add_argument("--agents", type=int, default=32, help="concurrent agents")
    parser.add_argument("--per-agent", type=int, default=20, help="exchanges per agent per phase")
    parser.add_argument("--rounds", type=int, default=3, help="direct/proxied phase pairs")
    parser.add_argument("--api", action="append", choices=APIS, help="only these (repeatable)")
    parser.add_argument("--database-url", default="sqlite", help="sqlite, or a PostgreSQL URL")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--serve-model", nargs=2, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.exchanges < 2 or options.agents < 1 or options.rounds < 1:
        parser.error("--exchanges must be >= 2, --agents and --rounds >= 1")
    return options


def main(argv: list[str] | None = None) -> int:
    options = parse_args(argv)
    if options.serve_model:
        serve_model(int(options.serve_model[0]), Path(options.serve_model[1]))
        return 0
    report = Report(
        exchanges=options.exchanges,
        agents=options.agents,
        per_agent=options.per_agent,
        rounds=options.rounds,
        store=options.database_url if options.database_url == "sqlite" else "postgresql",
        cpu_count=os.cpu_count(),
        python=sys.version.split()[0],
        load_average=[os.getloadavg()[0]],
    )
    with tempfile.TemporaryDirectory(prefix="wopeval-proxy-bench-") as scratch:
        asyncio.run(measure(options, Path(scratch), report))
    finish(report, options.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
