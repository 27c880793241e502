"""Fixture derivation (RFC 0252): an eval create that derives its fixtures from recorded runs.

Three paths users wait on, each on a fresh store per `--database-url` (SQLite in a temp
data dir by default; a PostgreSQL URL names a server, where the bench creates a
uniquely named database and drops it after):

1. **One large source, in-process.** A `wopeval` host (`Host.start`, the bench
   project `bench/derive_project`) records a source run: its python agent makes
   `--source-calls` live calls of a no-op python tool. An eval of one task with
   `fixtureRuns: {task: source}` is then created, timed around
   `Engine.create_eval_run` (resolve the plan, derive the entries, insert the run
   and its derived copy: what stands between the request and its 201), best of
   `--repeat`. Anchor, measured on the same store: reading the source's tool-call
   rows and bulk-inserting as many rows (rolled back) — the physical floor of
   copying them. Each eval is checked: completed, passed, no live call, and its
   `derived_fixtures` copy holds one entry per source call.
2. **The same large source, over the wire.** A real `wopeval serve` subprocess records the
   source through `POST /runs`, then the same one-task eval is created `--repeat` times
   by `POST /runs`, each timed from the request to its 201 (the median is the figure:
   wopeval issue 29's target), each run left to finish before the next. Anchor, on the
   same store in the same run: the copy floor of path 1, read from the bench process.
3. **Many sources, over the wire.** A real `wopeval serve` subprocess on the same
   project records `--tasks` sources over HTTP (each a workflow run whose agent makes
   `--calls` live calls), then an eval of `--tasks` tasks replays them with
   `fixtureRuns` (one source per task). Timed: the create request (POST → 201) and
   create → terminal (polled every 20 ms). Anchor: the same eval with the same
   entries inline as `toolResponses` (no derivation). Each eval is checked:
   completed, every task passed, no live call; the derived one holds one
   `derived_fixtures` row per task.

Each figure is printed beside its target (wopeval issue 17) and its anchor, with
the ratio; nothing here is a test assertion. `--source-calls 50 --tasks 5 --calls 2
--repeat 1` is the CI smoke.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import os
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from eval_throughput import backend_name, postgres_database
from queue_throughput import Processes, free_port, wait_ready
from reporting import finish
from wopeval.hosting.host import Host
from wopeval.settings import EvalFeatures, Settings
from wopeval.store import create_engine, tables
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest, RunStatus

PROJECT = Path(__file__).parent / "derive_project"
TENANT = "bench"
KEY = "bench_" + "d" * 24
AGENT = "bench.derive"
TOOL = "bench:noop"
SOURCE_WORKFLOW = "bench-derive-source"
SUITE_VERSION = "1.0.0"
TARGET_DERIVE_MS = 100.0
TARGET_WIRE_DERIVE_MEDIAN_MS = 60.0
TARGET_WIRE_CREATE_MS = 500.0
TARGET_WIRE_TASKS_PER_SECOND = 600.0
HEADERS = {"Authorization": f"Bearer {KEY}", "OpenWOP-Version": "2.0"}


# ── the workload ─────────────────────────────────────────────────────


def source_inputs(source: int, calls: int) -> dict[str, Any]:
    """What source `source`'s agent does: `calls` live calls of the no-op tool, then answers."""
    return {
        "calls": [{"tool": TOOL, "args": {"source": source, "call": c}} for c in range(calls)],
        "answer": f"answer-{source}",
    }


def suite_document(suite_id: str, tasks: int, calls: int, *, inline: bool) -> dict[str, Any]:
    """Task `i` makes the calls source `i` made; `inline` serves them from `toolResponses`
    (what the no-op tool returned), otherwise they come from the task's fixture source."""
    documents = []
    for index in range(tasks):
        given = source_inputs(index, calls)
        document: dict[str, Any] = {
            "taskId": task_id(index),
            "input": given,
            "expected": {
                "kind": "golden",
                "match": {"strategy": "exact", "value": given["answer"]},
            },
        }
        if inline:
            document["fixtures"] = {
                "toolResponses": [
                    {
                        "tool": call["tool"],
                        "args": call["args"],
                        "argsMatch": "exact",
                        "response": {"echo": call["args"]},
                    }
                    for call in given["calls"]
                ],
                "onMiss": "fail",
            }
        documents.append(document)
    return {
        "suiteId": suite_id,
        "version": SUITE_VERSION,
        "modes": ["golden"],
        "targetAgentId": AGENT,
        "tasks": documents,
    }


def task_id(index: int) -> str:
    return f"t{index:05d}"


# ── results ──────────────────────────────────────────────────────────


@dataclass
class DeriveResult:
    """Path 1: one eval create deriving from one large source (in-process)."""

    backend: str
    source_calls: int
    create_ms: list[float]
    """Each measured `create_eval_run`, in order."""
    best_create_ms: float
    median_create_ms: float
    create_cpu_ms: list[float]
    """Process CPU time (all threads) of each create: steadier than wall time on a shared
    machine."""
    anchor_ms: list[float]
    """Each measured read of the source's rows plus bulk insert of as many."""
    best_anchor_ms: float
    derived_entries: int
    """Entries in the last eval's `derived_fixtures` copy."""


@dataclass
class WireDeriveResult:
    """Path 2: the one-task eval of path 1, created over HTTP from the large source."""

    backend: str
    source_calls: int
    create_ms: list[float]
    """Each `POST /runs` → 201, in order."""
    median_create_ms: float
    best_create_ms: float
    anchor_ms: list[float]
    """Each read of the source's rows plus bulk insert of as many, from the bench process."""
    best_anchor_ms: float
    record_seconds: float
    """Recording the source over HTTP (not a figure; how long the set-up took)."""


@dataclass
class WireEval:
    create_ms: float
    """POST /runs → 201."""
    seconds: float
    """POST /runs → the run terminal."""
    tasks_per_second: float
    derived_rows: int


@dataclass
class WireResult:
    """Path 3: an eval of `tasks` tasks, each from its own recorded source, over HTTP."""

    backend: str
    tasks: int
    calls_per_task: int
    record_seconds: float
    """Recording the sources (not a figure; how long the set-up took)."""
    derived: WireEval
    inline: WireEval


@dataclass
class Report:
    source_calls: int
    tasks: int
    calls: int
    cpu_count: int | None
    python: str
    load_average: list[float] = field(default_factory=list)
    """1-minute load average at the start and at the end: a busy machine lowers every figure."""
    derive: list[DeriveResult] = field(default_factory=list)
    wire_derive: list[WireDeriveResult] = field(default_factory=list)
    wire: list[WireResult] = field(default_factory=list)


# ── stores ───────────────────────────────────────────────────────────


@contextlib.contextmanager
def fresh_store(database_url: str, scratch: Path) -> Iterator[str]:
    """The URL of an empty store: a SQLite file in `scratch`, or a fresh PostgreSQL database."""
    if database_url == "sqlite":
        yield f"sqlite:///{scratch / 'wopeval.db'}"
    elif database_url.startswith("sqlite"):
        yield database_url
    else:
        name = f"wopeval_derive_{secrets.token_hex(4)}"
        with postgres_database(database_url, name) as url:
            yield url.replace("postgresql://", "postgresql+psycopg://", 1)


async def count_rows(
    engine: AsyncEngine, run_id: str, *, live_calls: bool = False, entries: bool = False
) -> int:
    """`derived_fixtures` rows of an eval run, their entries, or the run's live tool calls."""
    if live_calls:
        query = (
            select(func.count())
            .select_from(tables.tool_calls)
            .where(tables.tool_calls.c.run_id == run_id, tables.tool_calls.c.served_by == "live")
        )
    elif entries:
        copies = select(tables.derived_fixtures.c.entries).where(
            tables.derived_fixtures.c.eval_run_id == run_id
        )
        async with engine.connect() as connection:
            held: list[Any] = [row[0] or [] for row in await connection.execute(copies)]
        return sum(len(entries_of) for entries_of in held)
    else:
        query = (
            select(func.count())
            .select_from(tables.derived_fixtures)
            .where(tables.derived_fixtures.c.eval_run_id == run_id)
        )
    async with engine.connect() as connection:
        return int((await connection.execute(query)).scalar_one())


# ── path 1: one large source, in-process ─────────────────────────────


async def derive_once(
    url: str, data_dir: Path, source_calls: int, repeat: int, profile: Path | None
) -> DeriveResult:
    settings = Settings(
        data_dir=data_dir,
        database_url=url,
        api_keys={TENANT: KEY},
        project=PROJECT,
        eval=EvalFeatures(),
    )
    host = await Host.start(settings)
    principal = Principal(TENANT, "key")
    try:
        source = await host.engine.create_workflow_run(
            principal,
            CreateRunRequest(workflowId=SOURCE_WORKFLOW, inputs=source_inputs(0, source_calls)),
        )
        await host.engine.wait_idle()
        recorded = await host.engine.get_run(principal, source.run_id)
        live = await count_rows(host.store.engine, source.run_id, live_calls=True)
        if recorded.status is not RunStatus.COMPLETED or live != source_calls:
            raise RuntimeError(
                f"the source did not record: {recorded.status.value}, {live} live calls"
            )
        # One task, given the source's inputs: it makes the calls the source recorded.
        document = suite_document("bench.evals.derive-one", 1, source_calls, inline=False)
        await host.engine.publish_suite(principal, document)
        request = CreateRunRequest(
            mode="eval",
            evalSuiteRef=f"{document['suiteId']}@{SUITE_VERSION}",
            agentId=AGENT,
            fixtureRuns={task_id(0): source.run_id},
        )
        create_ms, create_cpu_ms, anchor_ms, entries = [], [], [], -1
        for _ in range(repeat):
            anchor_ms.append(await copy_floor_ms(host.store.engine, source.run_id))
            profiler = cProfile.Profile() if profile is not None else None
            if profiler is not None:
                profiler.enable()
            started, cpu_started = time.perf_counter(), time.process_time()
            run = await host.engine.create_eval_run(principal, request)
            create_ms.append((time.perf_counter() - started) * 1000)
            create_cpu_ms.append((time.process_time() - cpu_started) * 1000)
            if profiler is not None and profile is not None:
                profiler.disable()
                profiler.dump_stats(profile)
            await host.engine.wait_idle()
            entries = await check_derived_eval(host, principal, run.run_id, source_calls)
    finally:
        await host.stop()
    return DeriveResult(
        backend=backend_name(url),
        source_calls=source_calls,
        create_ms=[round(ms, 2) for ms in create_ms],
        best_create_ms=round(min(create_ms), 2),
        median_create_ms=round(statistics.median(create_ms), 2),
        create_cpu_ms=[round(ms, 2) for ms in create_cpu_ms],
        anchor_ms=[round(ms, 2) for ms in anchor_ms],
        best_anchor_ms=round(min(anchor_ms), 2),
        derived_entries=entries,
    )


async def copy_floor_ms(engine: AsyncEngine, source_run_id: str) -> float:
    """Read the source's tool-call rows and bulk-insert as many under another run id, rolled
    back: what copying them costs the store, whatever the engine does besides."""
    calls = tables.tool_calls
    async with engine.connect() as connection:
        transaction = await connection.begin()
        started = time.perf_counter()
        result = await connection.execute(select(calls).where(calls.c.run_id == source_run_id))
        rows = [{**row, "run_id": "bench/floor"} for row in result.mappings()]
        await connection.execute(calls.insert(), rows)
        elapsed = (time.perf_counter() - started) * 1000
        await transaction.rollback()
    return elapsed


async def check_derived_eval(host: Host, principal: Principal, run_id: str, calls: int) -> int:
    """The eval completed and passed with no live call; returns its derived entry count."""
    final = await host.engine.get_run(principal, run_id)
    passed = final.summary is not None and final.summary.passed
    live = await count_rows(host.store.engine, run_id, live_calls=True)
    async with host.store.reading() as uow:
        copies = await uow.derived_fixtures.rows(final.handle)
    entries = sum(len(copy["entries"] or []) for copy in copies)
    if final.status is not RunStatus.COMPLETED or not passed or live or entries != calls:
        raise RuntimeError(
            f"the derived eval did not check out: {final.status.value}, passed "
            f"{passed}, {live} live calls, {entries} derived entries (want {calls})"
        )
    return entries


def run_derive(
    database_url: str, source_calls: int, repeat: int, profile: Path | None
) -> DeriveResult:
    with (
        tempfile.TemporaryDirectory(prefix="wopeval-derive-") as scratch,
        fresh_store(database_url, Path(scratch)) as url,
    ):
        return asyncio.run(derive_once(url, Path(scratch), source_calls, repeat, profile))


# ── paths 2 and 3: over the wire ─────────────────────────────────────


@contextlib.contextmanager
def serving(
    url: str, directory: Path, project: Path, env: dict[str, str] | None = None
) -> Iterator[str]:
    """A `wopeval serve` subprocess of `project` on the store at `url`, the bench tenant's
    key its only one; its base URL once it answers its health check."""
    processes = Processes(directory)
    port = free_port()
    try:
        processes.start(
            "serve",
            [
                "serve",
                "--port",
                str(port),
                "--data-dir",
                str(directory / "host"),
                "--database-url",
                url,
                "--api-key",
                f"{TENANT}={KEY}",
                "--project",
                str(project),
            ],
            env,
        )
        base = f"http://127.0.0.1:{port}"
        wait_ready(base + "/host/wopeval/health")
        yield base
    finally:
        processes.stop()


@contextlib.contextmanager
def served(url: str, directory: Path, max_tasks: int) -> Iterator[httpx.Client]:
    """A `wopeval serve` of the bench project (`serving`), and a client of it that
    authenticates as the bench tenant."""
    limits = {
        "WOPEVAL_EVAL_MAX_TASKS_PER_SUITE": str(max(max_tasks, 1)),
        "WOPEVAL_MAX_BODY_BYTES": "64000000",
    }
    with (
        serving(url, directory, PROJECT, limits) as base,
        httpx.Client(base_url=base, headers=HEADERS, timeout=300.0, trust_env=False) as http,
    ):
        yield http


def run_wire_derive(database_url: str, source_calls: int, repeat: int) -> WireDeriveResult:
    with tempfile.TemporaryDirectory(prefix="wopeval-derive-wire-one-") as scratch:
        directory = Path(scratch)
        with fresh_store(database_url, directory) as url, served(url, directory, 1) as http:
            started = time.perf_counter()
            (source,) = record_sources(http, 1, source_calls)
            record_seconds = time.perf_counter() - started
            published = http.put(
                "/host/wopeval/suites",
                json=suite_document("bench.evals.derive-one", 1, source_calls, inline=False),
            )
            if published.status_code != 201:
                raise RuntimeError(f"suite refused: {published.status_code} {published.text}")
            suite_ref = f"bench.evals.derive-one@{SUITE_VERSION}"
            create_ms, anchor_ms = [], []
            for _ in range(repeat):
                anchor_ms.append(asyncio.run(wire_copy_floor_ms(url, source)))
                timed = timed_eval(http, suite_ref, 1, {task_id(0): source})
                create_ms.append(timed.create_ms)
            asyncio.run(wire_counts(url, timed.run_id, None, 1, entries=source_calls))
    return WireDeriveResult(
        backend=backend_name(url),
        source_calls=source_calls,
        create_ms=[round(ms, 2) for ms in create_ms],
        median_create_ms=round(statistics.median(create_ms), 2),
        best_create_ms=round(min(create_ms), 2),
        anchor_ms=[round(ms, 2) for ms in anchor_ms],
        best_anchor_ms=round(min(anchor_ms), 2),
        record_seconds=round(record_seconds, 2),
    )


async def wire_copy_floor_ms(url: str, source_run_id: str) -> float:
    engine = create_engine(url)
    try:
        return await copy_floor_ms(engine, source_run_id)
    finally:
        await engine.dispose()


def run_wire(database_url: str, tasks: int, calls: int) -> WireResult:
    with tempfile.TemporaryDirectory(prefix="wopeval-derive-wire-") as scratch:
        directory = Path(scratch)
        with fresh_store(database_url, directory) as url:
            with served(url, directory, tasks) as http:
                started = time.perf_counter()
                sources = record_sources(http, tasks, calls)
                record_seconds = time.perf_counter() - started
                derived_suite = publish(http, tasks, calls, inline=False)
                inline_suite = publish(http, tasks, calls, inline=True)
                derived = timed_eval(
                    http, derived_suite, tasks, {task_id(i): s for i, s in enumerate(sources)}
                )
                inline = timed_eval(http, inline_suite, tasks, None)
            derived.derived_rows, inline.derived_rows = asyncio.run(
                wire_counts(url, derived.run_id, inline.run_id, tasks)
            )
    return WireResult(
        backend=backend_name(url),
        tasks=tasks,
        calls_per_task=calls,
        record_seconds=round(record_seconds, 2),
        derived=derived.figures(),
        inline=inline.figures(),
    )


def run_path(run_id: str) -> str:
    return "/runs/" + run_id.replace("/", "~2F")


def record_sources(http: httpx.Client, count: int, calls: int) -> list[str]:
    """`count` completed workflow runs, source `i` making `calls` live calls."""
    run_ids = []
    for index in range(count):
        body = {"workflowId": SOURCE_WORKFLOW, "inputs": source_inputs(index, calls)}
        created = http.post("/runs", json=body)
        if created.status_code != 201:
            raise RuntimeError(f"source create refused: {created.status_code} {created.text}")
        run_ids.append(created.json()["runId"])
    for run_id in run_ids:
        status = wait_terminal(http, run_id, poll_seconds=0.05)
        if status != "completed":
            raise RuntimeError(f"source {run_id} ended {status}")
    return run_ids


def wait_terminal(http: httpx.Client, run_id: str, *, poll_seconds: float) -> str:
    while (status := str(http.get(run_path(run_id)).json()["status"])) in ("running", "paused"):
        time.sleep(poll_seconds)
    return status


def publish(http: httpx.Client, tasks: int, calls: int, *, inline: bool) -> str:
    suite_id = f"bench.evals.derive-{'inline' if inline else 'derived'}"
    published = http.put(
        "/host/wopeval/suites", json=suite_document(suite_id, tasks, calls, inline=inline)
    )
    if published.status_code != 201:
        raise RuntimeError(f"suite refused: {published.status_code} {published.text}")
    return f"{suite_id}@{SUITE_VERSION}"


@dataclass
class _Timed:
    run_id: str
    create_ms: float
    seconds: float
    tasks: int
    derived_rows: int = -1

    def figures(self) -> WireEval:
        return WireEval(
            create_ms=round(self.create_ms, 2),
            seconds=round(self.seconds, 3),
            tasks_per_second=round(self.tasks / self.seconds, 1),
            derived_rows=self.derived_rows,
        )


def timed_eval(
    http: httpx.Client, suite_ref: str, tasks: int, fixture_runs: dict[str, str] | None
) -> _Timed:
    body: dict[str, Any] = {"mode": "eval", "evalSuiteRef": suite_ref, "agentId": AGENT}
    if fixture_runs is not None:
        body["fixtureRuns"] = fixture_runs
    started = time.perf_counter()
    created = http.post("/runs", json=body)
    create_ms = (time.perf_counter() - started) * 1000
    if created.status_code != 201:
        raise RuntimeError(f"eval create refused: {created.status_code} {created.text}")
    run_id = created.json()["runId"]
    status = wait_terminal(http, run_id, poll_seconds=0.02)
    seconds = time.perf_counter() - started
    summary = http.get(run_path(run_id) + "/eval-summary").json()
    if status != "completed" or summary.get("passedCount") != tasks:
        raise RuntimeError(f"the bench eval did not pass: {status} {summary}")
    return _Timed(run_id, create_ms, seconds, tasks)


async def wire_counts(
    url: str, derived_run: str, inline_run: str | None, tasks: int, *, entries: int | None = None
) -> tuple[int, int]:
    """Each eval's `derived_fixtures` rows, read from the host's store; neither made a live
    call, and the derived one keeps a copy per task (of `entries` entries, if given)."""
    engine = create_engine(url)
    runs = [derived_run] if inline_run is None else [derived_run, inline_run]
    try:
        derived = await count_rows(engine, derived_run)
        inline = 0 if inline_run is None else await count_rows(engine, inline_run)
        live = [await count_rows(engine, run, live_calls=True) for run in runs]
        copied = await count_rows(engine, derived_run, entries=True)
    finally:
        await engine.dispose()
    if derived != tasks or inline != 0 or any(live) or (entries is not None and copied != entries):
        raise RuntimeError(
            f"the wire evals did not check out: {derived} derived rows (want {tasks}), "
            f"{inline} for the inline eval (want 0), live calls {live} (want none), "
            f"{copied} derived entries (want {entries})"
        )
    return derived, inline


# ── command line ─────────────────────────────────────────────────────


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--source-calls", type=int, default=10_000, help="calls of path 1's one source"
    )
    parser.add_argument(
        "--repeat", type=int, default=5, help="creates of paths 1 and 2 (best and median shown)"
    )
    parser.add_argument("--tasks", type=int, default=1000, help="path 2's tasks (and sources)")
    parser.add_argument("--calls", type=int, default=10, help="path 2's calls per source")
    parser.add_argument(
        "--paths",
        default="derive,wire-derive,wire",
        help="comma list of the paths to run: derive, wire-derive, wire",
    )
    parser.add_argument(
        "--database-url",
        action="append",
        default=None,
        help="store (repeatable): 'sqlite' (the default) is SQLite in a fresh temp dir; "
        "another sqlite URL is used as given; a PostgreSQL URL names the server, where a "
        "uniquely named database is created and dropped after each path",
    )
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="cProfile path 1's creates into this .prof file (the last stays); "
        "profiling slows them, so their times are not figures",
    )
    args = parser.parse_args(argv)
    if min(args.source_calls, args.repeat, args.tasks, args.calls) < 1:
        parser.error("--source-calls, --repeat, --tasks and --calls must be >= 1")
    return args


def print_derive(result: DeriveResult) -> None:
    verdict = "meets" if result.best_create_ms < TARGET_DERIVE_MS else "MISSES"
    print(
        f"derive  {result.backend:<10} in-process create from a {result.source_calls}-call "
        f"source: {result.best_create_ms:.1f} ms (median {result.median_create_ms:.1f}, "
        f"cpu {min(result.create_cpu_ms):.1f}; "
        f"target < {TARGET_DERIVE_MS:.0f} ms: {verdict}); anchor read + bulk-insert "
        f"{result.source_calls} rows: {result.best_anchor_ms:.1f} ms; ratio "
        f"{result.best_create_ms / result.best_anchor_ms:.2f}x "
        f"({result.derived_entries} derived entries)",
        flush=True,
    )


def print_wire_derive(result: WireDeriveResult) -> None:
    median = result.median_create_ms
    verdict = "meets" if median <= TARGET_WIRE_DERIVE_MEDIAN_MS else "MISSES"
    print(
        f"wire    {result.backend:<10} POST /runs deriving from a {result.source_calls}-call "
        f"source: median {median:.1f} ms (best {result.best_create_ms:.1f}; target <= "
        f"{TARGET_WIRE_DERIVE_MEDIAN_MS:.0f} ms: {verdict}); anchor read + bulk-insert "
        f"{result.source_calls} rows: {result.best_anchor_ms:.1f} ms; ratio "
        f"{median / result.best_anchor_ms:.2f}x (source recorded in {result.record_seconds:.1f}s)",
        flush=True,
    )


def print_wire(result: WireResult) -> None:
    derived, inline = result.derived, result.inline
    create_verdict = "meets" if derived.create_ms < TARGET_WIRE_CREATE_MS else "MISSES"
    rate_verdict = "meets" if derived.tasks_per_second >= TARGET_WIRE_TASKS_PER_SECOND else "MISSES"
    print(
        f"wire    {result.backend:<10} create with {result.tasks} sources: "
        f"{derived.create_ms:.1f} ms (target < {TARGET_WIRE_CREATE_MS:.0f} ms: "
        f"{create_verdict}); anchor inline create: {inline.create_ms:.1f} ms; ratio "
        f"{derived.create_ms / inline.create_ms:.2f}x ({derived.derived_rows} derived rows)",
        flush=True,
    )
    print(
        f"wire    {result.backend:<10} create -> terminal, {result.tasks} tasks x "
        f"{result.calls_per_task} calls: {derived.tasks_per_second:.1f} tasks/s "
        f"(target >= {TARGET_WIRE_TASKS_PER_SECOND:.0f}: {rate_verdict}); anchor inline: "
        f"{inline.tasks_per_second:.1f} tasks/s; ratio "
        f"{derived.tasks_per_second / inline.tasks_per_second:.2f} "
        f"(sources recorded in {result.record_seconds:.1f}s)",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    paths = set(args.paths.split(","))
    report = Report(
        source_calls=args.source_calls,
        tasks=args.tasks,
        calls=args.calls,
        cpu_count=os.cpu_count(),
        python=sys.version.split()[0],
        load_average=[os.getloadavg()[0]],
    )
    for url in args.database_url or ["sqlite"]:
        if "derive" in paths:
            derive = run_derive(url, args.source_calls, args.repeat, args.profile)
            report.derive.append(derive)
            print_derive(derive)
        if "wire-derive" in paths:
            wire_derive = run_wire_derive(url, args.source_calls, args.repeat)
            report.wire_derive.append(wire_derive)
            print_wire_derive(wire_derive)
        if "wire" in paths:
            wire = run_wire(url, args.tasks, args.calls)
            report.wire.append(wire)
            print_wire(wire)
    finish(report, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
