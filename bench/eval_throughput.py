"""Eval throughput: wopeval (in-process, fully persisted) against Inspect AI on the same workload.

The workload: a suite of `--tasks` tasks; each task makes `--calls` tool calls, every one
served by a fixture, then answers; the answer is graded golden exact.

- wopeval: the seeded `conformance.scripted-agent` runs each task's script
  `{"calls": [{"tool": "bench:lookup", "args": ...}] x N, "answer": X}` against
  `fixtures: {toolResponses: [N entries], onMiss: "fail"}`; every event and every
  tool call is written to the store (SQLite in a fresh temp data dir, or the
  PostgreSQL server named by `--database-url`). Timed from `create_eval_run` to the
  run being terminal (`Engine.wait_idle`), then checked: the summary passed with
  every task, and the `events` / `tool_calls` row counts prove everything landed.
- Inspect AI: `mockllm/model` scripted per sample (N `ModelOutput.for_tool_call`
  outputs, then the answer), a `@tool` that returns a fixed value, `generate()` as
  the solver, scored by `exact()`; timed around `eval()`. Skipped, with a message,
  when inspect-ai is not installed or with `--skip-inspect`.

Run `python bench/eval_throughput.py --help` for the options; bench/README.md has
the commands and the measured figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import importlib.util
import os
import re
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Table, func, select
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection

from reporting import finish
from wopeval.hosting.host import Host
from wopeval.settings import EvalFeatures, Settings
from wopeval.store import tables
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest, RunStatus

TENANT = "bench"
API_KEY = "k" * 24
SUITE_ID = "bench.evals.throughput"
SUITE_VERSION = "1.0.0"
AGENT_ID = "conformance.scripted-agent"
TOOL = "bench:lookup"
TARGETS = {"sqlite": 1500.0, "postgresql": 1000.0}
"""Tasks/s per store the read-path issue asks of this bench (with the Inspect ratio below)."""
TARGET_RATIO = 100.0
BENCH_DATABASE = "wopeval_bench"
"""The prefix of each run's own database: two benches on one server never share one."""


# ── the workload ─────────────────────────────────────────────────────


def call_args(task: int, call: int) -> dict[str, Any]:
    return {"task": task, "call": call, "query": f"item-{task}-{call}"}


def answer_for(task: int) -> str:
    return f"answer-{task}"


def suite_document(tasks: int, calls: int) -> dict[str, Any]:
    """One golden task per index; each serves its `calls` calls from fixtures, fail on a miss."""
    return {
        "suiteId": SUITE_ID,
        "version": SUITE_VERSION,
        "modes": ["golden"],
        "tasks": [
            {
                "taskId": f"t{task:05d}",
                "input": {
                    "calls": [{"tool": TOOL, "args": call_args(task, c)} for c in range(calls)],
                    "answer": answer_for(task),
                },
                "expected": {
                    "kind": "golden",
                    "match": {"strategy": "exact", "value": answer_for(task)},
                },
                "fixtures": {
                    "toolResponses": [
                        {
                            "tool": TOOL,
                            "args": call_args(task, c),
                            "response": {"value": f"value-{task}-{c}"},
                        }
                        for c in range(calls)
                    ],
                    "onMiss": "fail",
                },
            }
            for task in range(tasks)
        ],
    }


# ── results ──────────────────────────────────────────────────────────


@dataclass
class WopevalResult:
    backend: str
    tasks: int
    calls_per_task: int
    concurrency: int
    seconds: float
    """From `create_eval_run` to the run being terminal."""
    create_seconds: float
    """Of which `create_eval_run` itself (resolve the plan, insert the run)."""
    cpu_seconds: float
    """Process CPU time (all threads) over the timed section: steadier than wall time on a
    shared machine, and what an optimisation actually saves."""
    tasks_per_second: float
    tool_calls_per_second: float
    passed: bool
    task_count: int
    passed_count: int
    event_rows: int
    tool_call_rows: int


@dataclass
class InspectResult:
    version: str
    samples: int
    calls_per_sample: int
    max_samples: int | None
    seconds: float
    samples_per_second: float
    tool_calls_per_second: float
    accuracy: float
    tool_calls_executed: int


@dataclass
class Report:
    tasks: int
    calls: int
    cpu_count: int | None
    python: str
    load_average: list[float] = field(default_factory=list)
    """1-minute load average at the start and at the end: a busy machine lowers every figure."""
    wopeval: list[WopevalResult] = field(default_factory=list)
    inspect: InspectResult | None = None
    inspect_skipped: str | None = None
    ratio: float | None = None
    """Best wopeval tasks/s on the first backend measured ÷ Inspect samples/s."""


# ── wopeval ──────────────────────────────────────────────────────────


def backend_name(url: str | None) -> str:
    if url is None or url.startswith("sqlite"):
        return "sqlite"
    return make_url(url).get_backend_name()


@contextlib.contextmanager
def postgres_database(admin_url: str, name: str | None = None) -> Iterator[str]:
    """Create a fresh database `name` (by default a unique one) beside the one `admin_url`
    names; drop it after."""
    name = name or f"{BENCH_DATABASE}_{secrets.token_hex(4)}"
    import psycopg

    url = make_url(admin_url)
    dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield url.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


async def run_wopeval_once(
    tasks: int,
    calls: int,
    concurrency: int,
    database_url: str | None,
    data_dir: Path,
    profile: Path | None = None,
) -> WopevalResult:
    settings = Settings(
        data_dir=data_dir,
        database_url=database_url,
        api_keys={TENANT: API_KEY},
        eval=EvalFeatures(max_tasks_per_suite=max(tasks, 1), concurrency=concurrency),
    )
    host = await Host.start(settings)
    try:
        principal = Principal(TENANT, "key")
        # Published as a user publishes one (`PUT /host/wopeval/suites`), before the clock.
        _, stored = await host.engine.publish_suite(principal, suite_document(tasks, calls))
        if not stored:
            raise RuntimeError("the bench suite already exists in this store; use a fresh one")
        request = CreateRunRequest(
            mode="eval", evalSuiteRef=f"{SUITE_ID}@{SUITE_VERSION}", agentId=AGENT_ID
        )
        profiler = cProfile.Profile() if profile is not None else None
        if profiler is not None:
            profiler.enable()
        started, cpu_started = time.perf_counter(), time.process_time()
        record = await host.engine.create_eval_run(principal, request)
        created = time.perf_counter() - started
        await host.engine.wait_idle()
        seconds = time.perf_counter() - started
        cpu_seconds = time.process_time() - cpu_started
        if profiler is not None and profile is not None:
            profiler.disable()
            profiler.dump_stats(profile)

        final = await host.engine.get_run(principal, record.run_id)
        async with host.store.reading() as uow:
            event_rows = await _count(uow.connection, tables.events, record.run_id)
            call_rows = await _count(uow.connection, tables.tool_calls, record.run_id)
    finally:
        await host.stop()

    summary = final.summary
    result = WopevalResult(
        backend=backend_name(database_url),
        tasks=tasks,
        calls_per_task=calls,
        concurrency=concurrency,
        seconds=seconds,
        create_seconds=created,
        cpu_seconds=cpu_seconds,
        tasks_per_second=tasks / seconds,
        tool_calls_per_second=tasks * calls / seconds,
        passed=summary is not None and summary.passed,
        task_count=-1 if summary is None else summary.taskCount,
        passed_count=-1 if summary is None else summary.passedCount,
        event_rows=event_rows,
        tool_call_rows=call_rows,
    )
    problems: list[str] = []
    if final.status is not RunStatus.COMPLETED:
        problems.append(f"run ended {final.status.value}: {final.error}")
    if not result.passed or result.task_count != tasks or result.passed_count != tasks:
        problems.append(
            f"summary: passed={result.passed} taskCount={result.task_count} "
            f"passedCount={result.passed_count} (want {tasks} of {tasks})"
        )
    if call_rows != tasks * calls:
        problems.append(f"tool_calls rows {call_rows}, want {tasks * calls}")
    # run.started, eval.started; per task: invocation started/completed, decided,
    # 2 per call, eval.scored; eval.completed, run.completed.
    want_events = 4 + tasks * (4 + 2 * calls)
    if event_rows != want_events:
        problems.append(f"events rows {event_rows}, want {want_events}")
    if problems:
        raise RuntimeError("wopeval run did not check out: " + "; ".join(problems))
    return result


async def _count(connection: AsyncConnection, table: Table, run_id: str) -> int:
    result = await connection.execute(
        select(func.count()).select_from(table).where(table.c.run_id == run_id)
    )
    return int(result.scalar_one())


def run_wopeval(
    tasks: int,
    calls: int,
    concurrency: int,
    database_url: str | None,
    profile: Path | None = None,
) -> WopevalResult:
    """One measured run on a fresh store.

    `None` or `"sqlite"`: SQLite in a temp data dir. Another SQLite URL is used as given.
    A PostgreSQL URL names a server: a fresh database is created there and dropped after.
    """
    with tempfile.TemporaryDirectory(prefix="wopeval-bench-") as tmp:
        if database_url is None or database_url == "sqlite":
            url = None
        elif database_url.startswith("sqlite"):
            url = database_url
        else:
            with postgres_database(database_url) as fresh:
                return asyncio.run(
                    run_wopeval_once(tasks, calls, concurrency, fresh, Path(tmp), profile)
                )
        return asyncio.run(run_wopeval_once(tasks, calls, concurrency, url, Path(tmp), profile))


# ── Inspect AI ───────────────────────────────────────────────────────

_OFFLINE_ENV = {
    # Nothing of the Inspect half may reach the network: no hub, no tokenizer download,
    # and any HTTP client that tries anyway meets a closed local port.
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "ALL_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "",
    "INSPECT_LOG_LEVEL": "warning",
}


def inspect_missing() -> str | None:
    if importlib.util.find_spec("inspect_ai") is None:
        return (
            "inspect-ai is not installed: skipping the Inspect AI half "
            "(pip install 'inspect-ai>=0.3.285', or the `bench` extra)"
        )
    return None


def run_inspect(samples: int, calls: int, max_samples: int | None) -> InspectResult:
    os.environ.update(_OFFLINE_ENV)
    from importlib.metadata import version

    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import (
        ChatMessage,
        ChatMessageTool,
        GenerateConfig,
        ModelOutput,
        ModelUsage,
        get_model,
    )
    from inspect_ai.scorer import exact
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import Tool, ToolChoice, ToolInfo, tool

    usage = ModelUsage(input_tokens=10, output_tokens=10, total_tokens=20)

    def scripted(index: int) -> list[ModelOutput]:
        """Sample `index`: its calls, in order, then its answer (each with a usage)."""
        outputs = [
            ModelOutput.for_tool_call(
                "mockllm/model",
                "lookup",
                call_args(index, c),
                tool_call_id=f"call-{index}-{c}",
            )
            for c in range(calls)
        ]
        outputs.append(ModelOutput.from_content("mockllm/model", answer_for(index)))
        for output in outputs:
            output.usage = usage
        return outputs

    scripts = {index: scripted(index) for index in range(samples)}
    sample_marker = re.compile(r"bench sample (\d+)")

    def next_output(
        messages: list[ChatMessage],
        _tools: list[ToolInfo],
        _choice: ToolChoice,
        _config: GenerateConfig,
    ) -> ModelOutput:
        # Scripted per sample: the sample is named in its prompt, and the number of
        # tool results so far says which of its outputs comes next.
        found = sample_marker.search(messages[0].text)
        if found is None:
            raise RuntimeError("bench prompt without its sample number")
        done = sum(1 for m in messages if isinstance(m, ChatMessageTool))
        return scripts[int(found.group(1))][done]

    executed = [0]

    @tool
    def lookup() -> Tool:
        async def execute(task: int, call: int, query: str) -> str:
            """Look an item up.

            Args:
                task: The task number.
                call: The call number within the task.
                query: The item to look up.
            """
            executed[0] += 1
            return "fixed answer"

        return execute

    dataset = [
        Sample(id=index, input=f"bench sample {index}", target=answer_for(index))
        for index in range(samples)
    ]
    task = Task(dataset=dataset, solver=[use_tools(lookup()), generate()], scorer=exact())
    model = get_model("mockllm/model", custom_outputs=next_output)
    with tempfile.TemporaryDirectory(prefix="inspect-bench-") as log_dir:
        started = time.perf_counter()
        logs = eval(task, model=model, display="none", log_dir=log_dir, max_samples=max_samples)
        seconds = time.perf_counter() - started
        log = logs[0]
        if log.status != "success" or log.results is None:
            raise RuntimeError(f"Inspect AI eval ended {log.status}: {log.error}")
        metrics = log.results.scores[0].metrics  # exact() reports `mean`, match() `accuracy`
        accuracy = float((metrics.get("mean") or metrics["accuracy"]).value)
    if accuracy != 1.0 or executed[0] != samples * calls:
        raise RuntimeError(
            f"Inspect AI run did not check out: score {accuracy}, {executed[0]} tool calls "
            f"(want 1.0 and {samples * calls})"
        )
    return InspectResult(
        version=version("inspect-ai"),
        samples=samples,
        calls_per_sample=calls,
        max_samples=max_samples,
        seconds=seconds,
        samples_per_second=samples / seconds,
        tool_calls_per_second=samples * calls / seconds,
        accuracy=accuracy,
        tool_calls_executed=executed[0],
    )


# ── command line ─────────────────────────────────────────────────────


def concurrency_list(text: str) -> list[int]:
    values = [int(part) for part in text.split(",") if part.strip()]
    if not values or any(v < 1 or v > 1024 for v in values):
        raise argparse.ArgumentTypeError("give 1..1024, or a comma list such as 1,8,32,128")
    return values


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tasks", type=int, default=1000, help="tasks (and Inspect samples)")
    parser.add_argument("--calls", type=int, default=10, help="tool calls per task")
    parser.add_argument(
        "--concurrency",
        type=concurrency_list,
        default=[32],
        help="EvalFeatures.concurrency; a comma list (1,8,32,128) runs each on a fresh store",
    )
    parser.add_argument(
        "--database-url",
        action="append",
        default=None,
        help="store (repeatable): 'sqlite' (the default) is SQLite in a fresh temp data dir; "
        "another sqlite URL is used as given; a PostgreSQL URL names the server, where the bench "
        "creates a uniquely named database for each run and drops it after",
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per setting (best is used)")
    parser.add_argument("--skip-inspect", action="store_true", help="skip the Inspect AI half")
    parser.add_argument(
        "--inspect-max-samples",
        type=int,
        default=None,
        help="Inspect AI max_samples (default: Inspect's own default)",
    )
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="cProfile the timed wopeval section (create → terminal) of each run into this "
        ".prof file (the last run's stays); profiling slows the run, so its rate is not a figure",
    )
    parser.add_argument(
        "--fail-below-target",
        action="store_true",
        help="exit 1 when wopeval stays under a store's target (SQLite 1,500, PostgreSQL 1,000)",
    )
    args = parser.parse_args(argv)
    if args.tasks < 1 or args.calls < 0 or args.repeat < 1:
        parser.error("--tasks and --repeat must be >= 1, --calls >= 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    report = Report(
        tasks=args.tasks,
        calls=args.calls,
        cpu_count=os.cpu_count(),
        python=sys.version.split()[0],
        load_average=[os.getloadavg()[0]],
    )
    urls: list[str | None] = list(args.database_url or [None])
    best_by_backend: dict[str, float] = {}
    for url in urls:
        for concurrency in args.concurrency:
            runs = [
                run_wopeval(args.tasks, args.calls, concurrency, url, args.profile)
                for _ in range(args.repeat)
            ]
            for result in runs:
                report.wopeval.append(result)
            best = max(runs, key=lambda r: r.tasks_per_second)
            rates = [r.tasks_per_second for r in runs]
            spread = f" (median {statistics.median(rates):.0f})" if len(runs) > 1 else ""
            print(
                f"wopeval  {best.backend:<10} concurrency {concurrency:>4}: "
                f"{best.tasks_per_second:8.1f} tasks/s{spread}, "
                f"{best.tool_calls_per_second:9.1f} tool calls/s "
                f"({best.tasks} tasks in {best.seconds:.2f}s, create {best.create_seconds:.2f}s, "
                f"cpu {best.cpu_seconds:.2f}s; "
                f"rows: {best.event_rows} events, "
                f"{best.tool_call_rows} tool_calls; summary passed {best.passed_count}/"
                f"{best.task_count})",
                flush=True,
            )
            previous = best_by_backend.get(best.backend, 0.0)
            best_by_backend[best.backend] = max(previous, best.tasks_per_second)

    skip = "--skip-inspect given: skipping the Inspect AI half" if args.skip_inspect else None
    skip = skip or inspect_missing()
    if skip is not None:
        report.inspect_skipped = skip
        print(skip, flush=True)
    else:
        inspect = run_inspect(args.tasks, args.calls, args.inspect_max_samples)
        report.inspect = inspect
        print(
            f"inspect  ai {inspect.version:<9}: {inspect.samples_per_second:8.1f} samples/s, "
            f"{inspect.tool_calls_per_second:9.1f} tool calls/s "
            f"({inspect.samples} samples in {inspect.seconds:.2f}s, accuracy {inspect.accuracy})",
            flush=True,
        )
        first = report.wopeval[0].backend
        report.ratio = best_by_backend[first] / inspect.samples_per_second
        print(
            f"ratio    wopeval {first} tasks/s ÷ Inspect samples/s = {report.ratio:.1f}x",
            flush=True,
        )

    ok = True
    for backend, rate in best_by_backend.items():
        target = TARGETS.get(backend)
        if target is None:
            continue
        verdict = "meets" if rate >= target else "MISSES"
        ok = ok and (rate >= target or not args.fail_below_target)
        print(f"target   wopeval {backend} >= {target:.0f} tasks/s: {verdict} ({rate:.1f})")
    if report.ratio is not None:
        verdict = "meets" if report.ratio >= TARGET_RATIO else "MISSES"
        print(f"target   ratio >= {TARGET_RATIO:.0f}x: {verdict} ({report.ratio:.1f}x)")
    finish(report, args.json)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
