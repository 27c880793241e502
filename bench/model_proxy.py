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
    (from /proc), a figure the machine's load moves much less than wall time;
- the floor, in the same loops: bench/bare_relay.py, a relay with no wopeval code in
  the host's place (same client, same request bytes, the model server's own key), as
  more sides of each 1-agent round (the order rotating) and more phases of each
  32-agent round: `floor` (uvicorn as the host's serve configures it, a raw ASGI app,
  httpcore upstream), `splice` (a byte pipe on asyncio's transports, no HTTP), and
  `floor-fast` (uvicorn on httptools and uvloop) when both are installed. Whatever
  target the floor misses, no Python relay on this stack meets on this machine.

Every proxied exchange is checked as recorded once the runs end: one `model_calls`
row per exchange, `via` proxy, live, ok, of the API and stream mode it was made in.
Run `python bench/model_proxy.py --help` for the options; bench/README.md has the
commands and the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from held_agents import (  # noqa: E402  (the benches' shared helpers)
    Call,
    Concurrent,
    HeldAgents,
    Host,
    Invocation,
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
    serve_quietly,
    serving_host,
    write_project,
)
from queue_throughput import free_port, wait_ready  # noqa: E402

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
FLOORS = {
    "floor": ["--kind", "relay"],
    "splice": ["--kind", "splice"],
    "floor-fast": ["--kind", "relay", "--http", "httptools", "--loop", "uvloop"],
}
"""bench/bare_relay.py's sides: its arguments after the ports."""
MODES = {"whole": False, "streamed": True}
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
    """The direct endpoint (no invocation), or the invocation's proxy; a floor's is its
    direct endpoint with the floor's root as `model_root`."""
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


def exchange_of(http: httpx.AsyncClient, api: str, stream: bool, endpoint: Endpoint) -> Call:
    """One timed exchange of `api` (whole or streamed) with `endpoint`, checked complete."""
    body = request_body(api, stream)

    async def whole() -> Timing:
        started = time.perf_counter()
        answer = await http.post(endpoint.url, content=body, headers=endpoint.headers)
        ended = time.perf_counter()
        if answer.status_code != 200 or ANSWER[:20] not in answer.text:
            raise SystemExit(f"{endpoint.url}: {answer.status_code} {answer.text[:300]}")
        return Timing(ended - started)

    async def streamed() -> Timing:
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
class ApiResult:
    api: str
    stream: bool
    overhead: Overhead
    concurrent: Concurrent


@dataclass
class Report(Plan):
    model_delay_ms: float = 0.0
    results: list[ApiResult] = field(default_factory=list)
    floors: dict[str, list[str]] = field(default_factory=dict)
    """Each floor side measured: bench/bare_relay.py's arguments."""


# ── measuring ────────────────────────────────────────────────────────


def print_result(result: ApiResult) -> None:
    mode = "streamed" if result.stream else "whole"
    print_figures(
        f"{result.api:9} {mode:8}",
        result.overhead,
        result.concurrent,
        server="model",
        target_ms=TARGET_OVERHEAD_MS,
        target_ratio=TARGET_RATE_RATIO,
    )
    print_floors(f"{result.api:9} {mode:8}", result.overhead, result.concurrent)


def print_floors(label: str, lone: Overhead, crowd: Concurrent) -> None:
    """Each floor side's lines beside the host's: what it adds, its rate, the targets."""
    for name, floor in lone.beside.items():
        rated = crowd.beside[name]
        line = (
            f"floor      {label} {name}: 1 agent p50 {floor.side.last.p50_ms:.3f} ms:"
            f" {floor.added_p50_ms:+.3f} ms p50, {floor.added_p99_ms:+.3f} ms p99"
            f" (host {lone.added_p50_ms:+.3f}); {name} cpu {floor.cpu_ms_per_call or 0:.3f}"
            f" ms/call (host {lone.host_cpu_ms_per_call:.3f})"
        )
        checks = [
            (floor.added_p50_ms <= TARGET_OVERHEAD_MS, f"overhead p50 <= {TARGET_OVERHEAD_MS} ms")
        ]
        if floor.added_first_p50_ms is not None:
            line += f"; first token {floor.added_first_p50_ms:+.3f} ms p50"
            checks.append(
                (
                    floor.added_first_p50_ms <= TARGET_OVERHEAD_MS,
                    f"first token p50 <= {TARGET_OVERHEAD_MS} ms",
                )
            )
        line += (
            f"; {crowd.agents} agents {rated.rate:.0f}/s: ratio {rated.ratio:.2f}"
            f" (host {crowd.ratio:.2f}), {name} cpu {rated.cpu_ms_per_call[name]:.3f} ms/call"
        )
        checks.append(
            (
                rated.ratio >= TARGET_RATE_RATIO,
                f"rate at {crowd.agents} agents >= {TARGET_RATE_RATIO}",
            )
        )
        print(line, flush=True)
        for met, what in checks:
            print(f"target     {label} {name}: {what}: {'meets' if met else 'MISSES'}", flush=True)


# ── the recording, checked ───────────────────────────────────────────


def recorded(host: Host) -> list[tuple[str, bool, int]]:
    """Per (API, stream): how many proxied live ok exchanges the host's store holds."""
    query = (
        "SELECT api, stream, count(*) FROM model_calls WHERE via = 'proxy' AND"
        " served_by = 'live' AND status = 'ok' GROUP BY api, stream"
    )
    return [(api, bool(stream), count) for api, stream, count in host.rows(query)]


# ── the bench ────────────────────────────────────────────────────────


async def measure(options: argparse.Namespace, directory: Path, report: Report) -> None:
    model_port = free_port()
    script = directory / "script.json"
    turns = [{"content": ANSWER}]
    script.write_text(json.dumps({"conversations": [{"user": QUESTION, "turns": turns}]}))
    model = python_child(
        [__file__, "--serve-model", str(model_port), str(script), str(options.model_delay_ms)],
        directory / "model.log",
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
                floors = start_floors(report, model_port, directory)
                try:
                    pids |= {name: process.pid for name, (process, _) in floors.items()}
                    roots = {name: root for name, (_, root) in floors.items()}
                    await measure_apis(options, model_root, roots, held, pids, report)
                finally:
                    for process, _ in floors.values():
                        process.kill()
                        process.wait(30)
                await release(host, agents)
                check_recorded(host, report)
    finally:
        model.kill()
        model.wait(30)


def start_floors(report: Report, model_port: int, directory: Path) -> dict[str, tuple[Any, str]]:
    """Each of the report's floor sides serving (bench/bare_relay.py), with its URL root."""
    started: dict[str, tuple[Any, str]] = {}
    for name, arguments in report.floors.items():
        port = free_port()
        relay = [str(HERE / "bare_relay.py"), str(port), str(model_port), *arguments]
        started[name] = (python_child(relay, directory / f"{name}.log"), f"http://127.0.0.1:{port}")
    for name, (_, root) in started.items():
        try:
            wait_ready(root + "/_stats")
        except RuntimeError:
            for process, _ in started.values():
                process.kill()
            raise SystemExit((directory / f"{name}.log").read_text()) from None
    return started


def floors_of(chosen: list[str] | None) -> dict[str, list[str]]:
    """The floor sides asked for (default: every one this environment can serve)."""
    if chosen is None:
        chosen = [name for name in FLOORS if name != "floor-fast" or fast_stack_installed()]
    elif "none" in chosen:
        return {}
    return {name: FLOORS[name] for name in chosen}


def fast_stack_installed() -> bool:
    """Whether uvicorn's httptools protocol and uvloop's loop are installed."""
    import importlib.util

    return all(importlib.util.find_spec(name) for name in ("httptools", "uvloop"))


async def measure_apis(
    options: argparse.Namespace,
    model_root: str,
    floor_roots: dict[str, str],
    held: list[Invocation],
    pids: dict[str, int],
    report: Report,
) -> None:
    # Idle connections close after 1 s, before the servers' own 5 s (uvicorn's): a request
    # sent on a connection the server is closing that moment fails with a ReadError.
    limits = httpx.Limits(
        max_connections=4 * len(held),
        max_keepalive_connections=4 * len(held),
        keepalive_expiry=1.0,
    )
    async with httpx.AsyncClient(limits=limits, timeout=60, trust_env=False) as http:
        for api in options.api or APIS:
            for stream in (MODES[mode] for mode in options.mode or MODES):
                direct = exchange_of(http, api, stream, endpoints(api, model_root, None))
                proxied = [
                    exchange_of(http, api, stream, endpoints(api, model_root, invocation))
                    for invocation in held
                ]
                floors = {
                    name: exchange_of(http, api, stream, endpoints(api, root, None))
                    for name, root in floor_roots.items()
                }
                timings, cpu_ms = await interleaved(
                    [direct, proxied[0], *floors.values()],
                    options.exchanges,
                    [pids["host"], *(pids[name] for name in floors)],
                )
                lone = overhead_of(timings[0], timings[1], cpu_ms[0])
                for name, floor_timings, floor_cpu in zip(
                    floors, timings[2:], cpu_ms[1:], strict=True
                ):
                    lone.beside[name] = beside_of(timings[0], floor_timings, floor_cpu)
                crowd = await concurrent(
                    [direct] * len(held),
                    proxied,
                    options.per_agent,
                    options.rounds,
                    pids,
                    beside={name: [call] * len(held) for name, call in floors.items()},
                )
                result = ApiResult(api, stream, lone, crowd)
                report.results.append(result)
                print_result(result)


def check_recorded(host: Host, report: Report) -> None:
    """Every proxied exchange is a `model_calls` row of its API and stream mode."""
    made = report.calls_made()
    expected = {(result.api, result.stream): made for result in report.results}
    found = {(api, stream): count for api, stream, count in recorded(host)}
    if found != expected:
        raise SystemExit(f"recorded exchanges {found}, made {expected}")
    report.recorded_rows = sum(found.values())
    print(f"recorded   {report.recorded_rows} proxied exchanges, one row each, all checked")


def serve_model(port: int, script_file: Path, delay_ms: float) -> None:
    """The strict stand-in model server (tests/_model_server) with no access log, each
    answer started `delay_ms` after its request came (a model's time to think)."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    from starlette.types import Receive, Scope, Send

    from _model_server import ModelScript
    from _model_server.app import app

    script = ModelScript()
    script.load(json.loads(script_file.read_text()))
    stand_in = app(script)

    async def thinking(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/v1/"):
            await asyncio.sleep(delay_ms / 1000)
        await stand_in(scope, receive, send)

    serve_quietly(thinking if delay_ms else stand_in, port)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    crowd_options(parser, "--exchanges", "exchanges")
    parser.add_argument("--api", action="append", choices=APIS, help="only these (repeatable)")
    parser.add_argument(
        "--mode",
        action="append",
        choices=MODES,
        help="only whole or only streamed exchanges (repeatable; default both)",
    )
    parser.add_argument(
        "--model-delay-ms",
        type=float,
        default=0.0,
        help="the model server waits this long before each answer (default 0: the hop alone)",
    )
    parser.add_argument(
        "--floor",
        action="append",
        choices=[*FLOORS, "none"],
        help="floor sides (repeatable; default floor and splice, and floor-fast when"
        " httptools and uvloop are installed; none: the host and direct alone)",
    )
    parser.add_argument("--serve-model", nargs=3, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    checked(parser, options, options.exchanges)
    return options


def main(argv: list[str] | None = None) -> int:
    options = parse_args(argv)
    if options.serve_model:
        port, script, delay = options.serve_model
        serve_model(int(port), Path(script), float(delay))
        return 0
    report = Report.of(options, options.exchanges)
    report.model_delay_ms = options.model_delay_ms
    report.floors = floors_of(options.floor)
    return run(measure, options, report)


if __name__ == "__main__":
    sys.exit(main())
