"""Record path: a production run's live tool calls, each durable as it happens.

A live call has effects, so the host lands its `agent.tool-called` event and its
`tool_calls` row (status `unknown`) before the tool runs, and `agent.tool-returned`
with the outcome before the agent sees the result (engine/recording/invocation.py
`Invocation.call_tool`, engine/runlog/runlog.py `Journal.flush`, engine/runlog/log_writer.py,
which group-commits the steps of all runs in one transaction). This bench measures
what that costs a user, in-process (a `Host` started with `Settings`, no HTTP):

- the workload: a project written to a temp dir, with a python agent that calls a
  no-op python `[[tools]]` tool `--calls` times, live, timing each `call_tool` with
  `time.perf_counter`, and a workflow whose one node runs that agent;
- overhead: one run alone; the p50 of its agent-side per-call latency is the host's
  overhead per live call (the tool does nothing);
- throughput: `--runs` workflow runs created together through the engine; total
  live calls ÷ wall time from the first create to the last run ending;
- the anchors, measured in the same process on the same machine just before:
  a raw insert loop doing what the host must at least do per call, two
  single-row-transaction commits of an event-sized row: Python's sqlite3 in WAL
  mode with `synchronous=NORMAL` (as store/db.py sets them), and for PostgreSQL
  psycopg in autocommit. Each figure is printed beside its anchor with the ratio;
- PostgreSQL's floors on the host's own driver, psycopg's `AsyncConnection` on the event
  loop, with no wopeval code (bench/pg_floor.py): the anchor's loop on it, and a live
  call's two steps as the host sends them (its statements, one pipelined transaction a
  step), printed beside the sync anchor and the host.

After each measurement every run is checked: completed; `--calls` `tool_calls`
rows, all `ok` and served live; `--calls` tool-called and tool-returned events,
each return after its call; the events numbered 0..last with nothing missing.

Run `python bench/record_path.py --help` for the options; bench/README.md has the
commands and the measured figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import os
import secrets
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Generic, TypeVar

import psycopg
from sqlalchemy import select
from sqlalchemy.engine import make_url

from eval_throughput import backend_name, postgres_database
from pg_floor import floors
from reporting import finish
from wopeval.engine.runlog.steps import now, timestamp
from wopeval.hosting.host import Host
from wopeval.settings import Settings
from wopeval.store import tables
from wopeval.store.db import create_engine, migrate
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest, RunStatus

TENANT = "bench"
API_KEY = "k" * 24
PROJECT_MODULE = "wopeval_bench_record_project"
WORKFLOW = "bench-record"
AGENT = "bench.recorder"
TOOL = "bench:noop"
TARGET_OVERHEAD_MS = 0.5
TARGET_CALLS_PER_SECOND = {"sqlite": 2000.0, "postgresql": 1500.0}

Measured = TypeVar("Measured")

PROJECT_CODE = f'''\
"""The record-path bench's agent and its no-op tool."""

import time

LATENCIES = {{}}
"""Per run key: the agent-side seconds of each of its calls, in order."""


async def noop(args):
    return "ok"


async def recorder(context):
    latencies = LATENCIES.setdefault(context.input["key"], [])
    for index in range(context.input["calls"]):
        started = time.perf_counter()
        await context.call_tool("{TOOL}", {{"index": index}})
        latencies.append(time.perf_counter() - started)
    # Run by a serve (bench/wire_runs.py), the agent's timings reach the bench as its output.
    return {{"latencies": latencies}} if context.input.get("report") else "recorded"
'''

PROJECT_TOML = f"""\
workflows = ["workflows/*.json"]

[[agents]]
id = "{AGENT}"
lane = "python"
callable = "{PROJECT_MODULE}:recorder"

[[tools]]
name = "{TOOL}"
kind = "python"
callable = "{PROJECT_MODULE}:noop"
"""

WORKFLOW_DOCUMENT = {
    "id": WORKFLOW,
    "nodes": [{"id": "record", "type": "core.agent", "agentId": AGENT}],
}


def write_project(directory: Path) -> None:
    (directory / "workflows").mkdir()
    (directory / f"{PROJECT_MODULE}.py").write_text(PROJECT_CODE)
    (directory / "wopeval.toml").write_text(PROJECT_TOML)
    (directory / "workflows" / f"{WORKFLOW}.json").write_text(json.dumps(WORKFLOW_DOCUMENT))


def recorded_latencies() -> dict[str, list[float]]:
    """The agent's own timings: the host imports the project module into this process."""
    latencies: dict[str, list[float]] = importlib.import_module(PROJECT_MODULE).LATENCIES
    return latencies


# ── results ──────────────────────────────────────────────────────────


@dataclass
class Latency:
    p50_ms: float
    p90_ms: float
    p99_ms: float

    @classmethod
    def of(cls, seconds: list[float]) -> Latency:
        cuts = statistics.quantiles(seconds, n=100, method="inclusive")
        return cls(cuts[49] * 1000, cuts[89] * 1000, cuts[98] * 1000)


@dataclass
class AnchorResult:
    """A raw insert loop: two single-row-transaction commits per call, one connection."""

    driver: str
    calls: int
    seconds: float
    calls_per_second: float
    per_call: Latency
    rows: int
    cpu_seconds: float | None = None
    """The process's CPU seconds over the loop (the floors on the event loop: the driver's
    Python a call, beside the host's)."""


@dataclass
class HostResult:
    runs: int
    calls_per_run: int
    seconds: float
    """From the first `create_workflow_run` to every run being terminal."""
    cpu_seconds: float
    """Process CPU time over the timed section (all threads)."""
    calls_per_second: float
    per_call: Latency
    """Agent-side latency of every call of every run."""
    event_rows: int
    tool_call_rows: int


@dataclass
class StoreResult:
    backend: str
    overhead: HostResult
    throughput: HostResult
    anchor: AnchorResult
    overhead_ratio: float
    """Host p50 per call ÷ the sqlite3 anchor's p50 per call."""
    throughput_ratio: float
    """Host calls/s ÷ the store's own anchor calls/s (psycopg's on PostgreSQL)."""
    postgres_anchor: AnchorResult | None = None
    """On PostgreSQL, the same loop through psycopg against the same server."""
    postgres_floors: list[AnchorResult] = field(default_factory=list)
    """On PostgreSQL, loops on psycopg's asyncio driver (bench/pg_floor.py), each by its
    `driver` name, of the lone run's `calls` calls (the floors of its p50): their
    `seconds` are the sum of their calls'."""


@dataclass
class Report(Generic[Measured]):
    calls: int
    runs: int
    cpu_count: int | None
    python: str
    load_average: list[float] = field(default_factory=list)
    """1-minute load average at the start and at the end: a busy machine lowers every figure."""
    stores: list[Measured] = field(default_factory=list)


# ── the anchors ──────────────────────────────────────────────────────


def anchor_doc(index: int) -> str:
    """A row the size of a stored `agent.tool-called` event."""
    return json.dumps(
        {
            "eventId": secrets.token_hex(13),
            "runId": "run_anchor",
            "type": "agent.tool-called",
            "payload": {
                "agentId": AGENT,
                "tool": TOOL,
                "callId": secrets.token_hex(13),
                "args": {"index": index},
            },
            "timestamp": timestamp(now()),
            "sequence": index,
            "schemaVersion": "2",
            "nodeId": "record",
        },
        separators=(",", ":"),
    )


def timed_commits(calls: int, commit_row: Callable[[int, str], None]) -> tuple[float, list[float]]:
    """Two single-row commits per call; the loop's seconds and each call's."""
    per_call: list[float] = []
    started = time.perf_counter()
    for call in range(calls):
        begun = time.perf_counter()
        commit_row(2 * call, anchor_doc(2 * call))
        commit_row(2 * call + 1, anchor_doc(2 * call + 1))
        per_call.append(time.perf_counter() - begun)
    return time.perf_counter() - started, per_call


def sqlite_anchor(directory: Path, calls: int) -> AnchorResult:
    connection = sqlite3.connect(directory / "anchor.db", isolation_level=None)
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        connection.execute(
            "CREATE TABLE events (run_id TEXT, sequence INTEGER, type TEXT, doc TEXT, "
            "PRIMARY KEY (run_id, sequence))"
        )

        def commit_row(sequence: int, doc: str) -> None:
            connection.execute("BEGIN")
            connection.execute(
                "INSERT INTO events VALUES ('run_anchor', ?, 'agent.tool-called', ?)",
                (sequence, doc),
            )
            connection.execute("COMMIT")

        seconds, per_call = timed_commits(calls, commit_row)
        rows = connection.execute("SELECT count(*) FROM events").fetchone()[0]
    finally:
        connection.close()
    return _anchor("sqlite3", calls, seconds, per_call, rows)


def postgres_anchor(database_url: str, calls: int) -> AnchorResult:
    dsn = make_url(database_url).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(
            "CREATE TABLE anchor_events (run_id TEXT, sequence INTEGER, type TEXT, doc TEXT, "
            "PRIMARY KEY (run_id, sequence))"
        )

        def commit_row(sequence: int, doc: str) -> None:
            connection.execute(
                "INSERT INTO anchor_events VALUES ('run_anchor', %s, 'agent.tool-called', %s)",
                (sequence, doc),
            )

        seconds, per_call = timed_commits(calls, commit_row)
        found = connection.execute("SELECT count(*) FROM anchor_events").fetchone()
        connection.execute("DROP TABLE anchor_events")
    return _anchor("psycopg", calls, seconds, per_call, found[0] if found else 0)


def postgres_floors(database_url: str, calls: int) -> list[AnchorResult]:
    """bench/pg_floor.py's loops, in the host's tables: the schema is migrated first (as the
    host's start would; it then finds it at head)."""

    async def migrated() -> None:
        engine = create_engine(database_url)
        try:
            await migrate(engine)
        finally:
            await engine.dispose()

    asyncio.run(migrated())
    dsn = make_url(database_url).set(drivername="postgresql").render_as_string(False)
    return [
        replace(
            _anchor(name, calls, sum(timed.per_call), timed.per_call, 2 * calls),
            cpu_seconds=timed.cpu_seconds,
        )
        for name, timed in floors(dsn, calls).items()
    ]


def _anchor(
    driver: str, calls: int, seconds: float, per_call: list[float], rows: int
) -> AnchorResult:
    if rows != 2 * calls:
        raise RuntimeError(f"{driver} anchor: {rows} rows, want {2 * calls}")
    return AnchorResult(driver, calls, seconds, calls / seconds, Latency.of(per_call), rows)


# ── the host ─────────────────────────────────────────────────────────


async def measure_host(host: Host, runs: int, calls: int, label: str) -> HostResult:
    """`runs` workflow runs of `calls` live calls each, created together; checked after."""
    principal = Principal(TENANT, "key")
    keys = [f"{label}-{index}" for index in range(runs)]
    started, cpu_started = time.perf_counter(), time.process_time()
    records = await asyncio.gather(
        *(
            host.engine.create_workflow_run(
                principal,
                CreateRunRequest(workflowId=WORKFLOW, inputs={"key": key, "calls": calls}),
            )
            for key in keys
        )
    )
    await host.engine.wait_idle()
    seconds = time.perf_counter() - started
    cpu_seconds = time.process_time() - cpu_started

    latencies = recorded_latencies()
    event_rows = call_rows = 0
    for key, record in zip(keys, records, strict=True):
        final = await host.engine.get_run(principal, record.run_id)
        if final.status is not RunStatus.COMPLETED:
            raise RuntimeError(f"run {record.run_id} ended {final.status.value}: {final.error}")
        if len(latencies.get(key, [])) != calls:
            raise RuntimeError(f"run {key}: the agent timed {len(latencies.get(key, []))} calls")
        events, rows = await check_recorded(host, record.run_id, calls)
        event_rows += events
        call_rows += rows
    every_call = [latency for key in keys for latency in latencies[key]]
    return HostResult(
        runs=runs,
        calls_per_run=calls,
        seconds=seconds,
        cpu_seconds=cpu_seconds,
        calls_per_second=runs * calls / seconds,
        per_call=Latency.of(every_call),
        event_rows=event_rows,
        tool_call_rows=call_rows,
    )


async def check_recorded(host: Host, run_id: str, calls: int) -> tuple[int, int]:
    """Every call is in `tool_calls`, ok and live, under its own events; nothing is missing."""
    async with host.store.reading() as uow:
        events = (
            await uow.connection.execute(
                select(tables.events.c.sequence, tables.events.c.type)
                .where(tables.events.c.run_id == run_id)
                .order_by(tables.events.c.sequence)
            )
        ).all()
        rows = (
            await uow.connection.execute(
                select(
                    tables.tool_calls.c.sequence,
                    tables.tool_calls.c.status,
                    tables.tool_calls.c.served_by,
                ).where(tables.tool_calls.c.run_id == run_id)
            )
        ).all()
    problems: list[str] = []
    if [sequence for sequence, _ in events] != list(range(len(events))):
        problems.append("event sequences are not 0..last")
    types = [kind for _, kind in events]
    called = [sequence for sequence, kind in events if kind == "agent.tool-called"]
    returned = [sequence for sequence, kind in events if kind == "agent.tool-returned"]
    if len(called) != calls or len(returned) != calls:
        problems.append(f"{len(called)} tool-called, {len(returned)} tool-returned events")
    elif any(r <= c for c, r in zip(called, returned, strict=True)):
        problems.append("a tool-returned event before its tool-called")
    if not types or types[-1] != "run.completed":
        problems.append(f"the last event is {types[-1] if types else None}")
    if sorted(sequence for sequence, _, _ in rows) != called:
        problems.append(f"{len(rows)} tool_calls rows, not keyed to the {len(called)} calls")
    if any(status != "ok" or served != "live" for _, status, served in rows):
        problems.append("a tool_calls row that is not ok and live")
    if problems:
        raise RuntimeError(f"run {run_id} did not record its calls: " + "; ".join(problems))
    return len(events), len(rows)


async def measure_store(
    database_url: str | None, data_dir: Path, runs: int, calls: int
) -> tuple[HostResult, HostResult]:
    project = data_dir / "project"
    project.mkdir()
    write_project(project)
    host = await Host.start(
        Settings(
            data_dir=data_dir / "data",
            database_url=database_url,
            api_keys={TENANT: API_KEY},
            project=project,
        )
    )
    try:
        recorded_latencies().clear()  # the module stays imported from an earlier store
        overhead = await measure_host(host, 1, calls, "overhead")
        throughput = await measure_host(host, runs, calls, "throughput")
    finally:
        await host.stop()
    return overhead, throughput


@contextlib.contextmanager
def store_url(database_url: str) -> Iterator[tuple[str | None, Path]]:
    """`sqlite`: SQLite in the temp dir (None); else a fresh uniquely named database there."""
    with tempfile.TemporaryDirectory(prefix="wopeval-record-bench-") as tmp:
        if database_url == "sqlite":
            yield None, Path(tmp)
            return
        name = f"wopeval_record_bench_{secrets.token_hex(4)}"
        with postgres_database(database_url, name) as fresh:
            yield fresh, Path(tmp)


def run_store(database_url: str, runs: int, calls: int) -> StoreResult:
    with store_url(database_url) as (url, data_dir):
        anchor = sqlite_anchor(data_dir, runs * calls)
        second = None if url is None else postgres_anchor(url, runs * calls)
        on_the_loop = [] if url is None else postgres_floors(url, calls)
        overhead, throughput = asyncio.run(measure_store(url, data_dir, runs, calls))
    closest = second or anchor
    return StoreResult(
        backend=backend_name(url),
        overhead=overhead,
        throughput=throughput,
        anchor=anchor,
        overhead_ratio=overhead.per_call.p50_ms / anchor.per_call.p50_ms,
        throughput_ratio=throughput.calls_per_second / closest.calls_per_second,
        postgres_anchor=second,
        postgres_floors=on_the_loop,
    )


# ── command line ─────────────────────────────────────────────────────


def parse_args(
    argv: list[str] | None,
    *,
    description: str | None = __doc__,
    calls: int = 1000,
    parents: Sequence[argparse.ArgumentParser] = (),
) -> argparse.Namespace:
    """The options of this bench and of bench/wire_runs.py (`calls`: the default per run;
    `parents`: a bench's own options, there for `--help`)."""
    parser = argparse.ArgumentParser(
        description=description.splitlines()[0] if description else None, parents=parents
    )
    parser.add_argument("--calls", type=int, default=calls, help="live calls per run")
    parser.add_argument("--runs", type=int, default=32, help="concurrent runs for throughput")
    parser.add_argument(
        "--database-url",
        action="append",
        default=None,
        help="store (repeatable): 'sqlite' (the default) is SQLite in a fresh temp dir; a "
        "PostgreSQL URL names the server, where the bench creates a uniquely named database "
        "and drops it after",
    )
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args(argv)
    if args.calls < 2 or args.runs < 1:
        parser.error("--calls must be >= 2 (a p50 needs two) and --runs >= 1")
    return args


def run_bench(
    argv: list[str] | None,
    run: Callable[[str, int, int], Measured],
    show: Callable[[Measured], None],
    *,
    description: str | None = __doc__,
    calls: int = 1000,
    parents: Sequence[argparse.ArgumentParser] = (),
) -> int:
    """Measure the stores the options name, one after another, printing each as it ends,
    then the load and the JSON report (this bench's and bench/wire_runs.py's `main`)."""
    args = parse_args(argv, description=description, calls=calls, parents=parents)
    report: Report[Measured] = Report(
        calls=args.calls,
        runs=args.runs,
        cpu_count=os.cpu_count(),
        python=sys.version.split()[0],
        load_average=[os.getloadavg()[0]],
    )
    for url in args.database_url or ["sqlite"]:
        result = run(url, args.runs, args.calls)
        report.stores.append(result)
        show(result)
    finish(report, args.json)
    return 0


def print_store(result: StoreResult) -> None:
    """Print one store's figures beside their anchors, and whether each meets its target."""
    anchor, overhead, throughput = result.anchor, result.overhead, result.throughput
    store = result.backend
    print(
        f"overhead   {store:<10} 1 run x {overhead.calls_per_run} live calls: "
        f"p50 {overhead.per_call.p50_ms:.3f} ms/call (p90 {overhead.per_call.p90_ms:.3f}, "
        f"p99 {overhead.per_call.p99_ms:.3f}; cpu "
        f"{overhead.cpu_seconds / overhead.calls_per_run * 1000:.3f} ms/call); "
        f"anchor sqlite3 2 commits p50 "
        f"{anchor.per_call.p50_ms:.3f} ms/call; ratio {result.overhead_ratio:.1f}x",
        flush=True,
    )
    print(
        f"throughput {store:<10} {throughput.runs} runs x {throughput.calls_per_run} live calls: "
        f"{throughput.calls_per_second:8.0f} calls/s ({throughput.seconds:.2f}s, "
        f"cpu {throughput.cpu_seconds:.2f}s, p50 {throughput.per_call.p50_ms:.3f} ms/call); "
        f"anchor sqlite3 {anchor.calls_per_second:.0f} calls/s; "
        f"ratio {throughput.calls_per_second / anchor.calls_per_second:.2f}",
        flush=True,
    )
    second = result.postgres_anchor
    if second is not None:
        print(
            f"anchor     {store:<10} psycopg 2 commits: p50 {second.per_call.p50_ms:.3f} ms/call, "
            f"{second.calls_per_second:.0f} calls/s; host/anchor: overhead "
            f"{overhead.per_call.p50_ms / second.per_call.p50_ms:.1f}x, throughput "
            f"{result.throughput_ratio:.2f}",
            flush=True,
        )
        for floor in result.postgres_floors:
            print(
                f"floor      {store:<10} {floor.driver}: p50 {floor.per_call.p50_ms:.3f} ms/call "
                f"(cpu {(floor.cpu_seconds or 0) / floor.calls * 1000:.3f} ms/call), "
                f"{floor.per_call.p50_ms / second.per_call.p50_ms:.2f}x the sync anchor; "
                f"host/floor {overhead.per_call.p50_ms / floor.per_call.p50_ms:.2f}x",
                flush=True,
            )
    print(
        f"rows       {store:<10} {overhead.event_rows + throughput.event_rows} events, "
        f"{overhead.tool_call_rows + throughput.tool_call_rows} tool_calls, all checked",
        flush=True,
    )
    target = TARGET_CALLS_PER_SECOND.get(store)
    checks = [(overhead.per_call.p50_ms <= TARGET_OVERHEAD_MS, f"p50 <= {TARGET_OVERHEAD_MS} ms")]
    if target is not None:
        checks.append((throughput.calls_per_second >= target, f">= {target:.0f} calls/s"))
    for met, what in checks:
        print(f"target     {store:<10} {what}: {'meets' if met else 'MISSES'}")


def main(argv: list[str] | None = None) -> int:
    return run_bench(argv, run_store, print_store)


if __name__ == "__main__":
    sys.exit(main())
