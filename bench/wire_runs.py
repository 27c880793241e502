"""Production runs over HTTP: concurrent workflow runs making live tool calls, each durable.

What a team recording production pays: a real `wopeval serve` (one uvicorn process; SQLite
in a fresh data dir, or a fresh PostgreSQL database per `--database-url`) runs the
project record_path.py runs in-process (a python agent calling a no-op python tool
live); asked to, the agent returns its own per-call timings as its output, since it
runs in the serve's process (read from the run's `run.completed` event).
`--runs` runs are created at once, each a `POST /runs` of its own over concurrent
connections, each making `--calls` live calls: one round. One serve measures a warm-up
round (printed, not counted) and then `--rounds` rounds one after another; a round
lasts well under a second at the defaults, so one is noise on a shared machine, and
the figures given are the rounds' medians (the JSON keeps every round).

- calls/s: every run's calls ÷ the time from just before the first POST to the last
  run's `completedAt` (the server's clock; the runs are polled by one listing every
  50 ms until all have ended, their ends read from the runs themselves);
- p50 per call: the agent-side latency of every call of every run (each `call_tool`
  awaited: its `agent.tool-called` durable, the tool run, its outcome durable);
- serve CPU per call: the serve process's CPU time (all its threads, from /proc) from
  just before the first POST until every run has ended, ÷ the calls: on a machine
  shared with other work, the steadier figure of what a call costs the host;
- the anchors, in the same run just before the serve starts: the raw driver's two
  single-row commits per call on the same store (record_path.py's: Python's sqlite3 in
  WAL mode with `synchronous=NORMAL`, or psycopg in autocommit on the same server),
  one connection, as many calls as the runs make. Each figure is printed beside its
  anchor with the ratio, and beside its target (issue 29); nothing here is asserted.

After each measurement every run is checked over the wire: completed, its agent's
`--calls` timings in its outputs, and `--calls` live tool records
(`GET /host/wopeval/runs/{id}/live-calls`).

Run `python bench/wire_runs.py --help` for the options; bench/README.md has the
commands and the measured figures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import httpx

from derive_path import KEY, fresh_store, run_path, serving
from eval_throughput import backend_name
from record_path import (
    WORKFLOW,
    AnchorResult,
    Latency,
    postgres_anchor,
    run_bench,
    sqlite_anchor,
    write_project,
)

HEADERS = {"Authorization": f"Bearer {KEY}"}
TARGET_CALLS_PER_SECOND = {"sqlite": 4000.0, "postgresql": 2000.0}


# ── results ──────────────────────────────────────────────────────────


@dataclass
class WireResult:
    runs: int
    calls_per_run: int
    seconds: float
    """From just before the first POST to the last run's `completedAt`."""
    create_seconds: float
    """Until every POST had its 201."""
    calls_per_second: float
    per_call: Latency
    """The agent's own latency of every call of every run."""
    tool_call_rows: int
    serve_cpu_ms_per_call: float | None
    """The serve's CPU time (every thread) over the runs ÷ their calls; None where /proc
    does not say (not Linux)."""


@dataclass
class Medians:
    """The counted rounds' medians, each figure's own (not one round's)."""

    rounds: int
    calls_per_second: float
    p50_ms: float
    serve_cpu_ms_per_call: float | None
    tool_call_rows: int
    """Over every round, the warm-up's too: each one checked."""


@dataclass
class StoreResult:
    backend: str
    wire: Medians
    warm_up: WireResult
    """Measured and checked like the rest, not counted: the serve's first runs pay its
    imports, caches and the store's first pages."""
    rounds: list[WireResult]
    anchor: AnchorResult
    """The store's own driver: sqlite3 on SQLite, psycopg on PostgreSQL."""
    per_call_ratio: float
    """Host median p50 per call ÷ the anchor's p50 per call (two commits)."""
    throughput_ratio: float
    """Host median calls/s ÷ the anchor's calls/s."""


# ── the measurement ──────────────────────────────────────────────────


async def create_runs(
    base: str, runs: int, calls: int, label: str
) -> tuple[float, float | None, float, list[str]]:
    """POST the runs at once, each on a connection of its own; the wall-clock start, the
    serve's CPU time then, the seconds until every 201, and the run ids. `label` names
    the round: the agent keeps its timings by run key, so each round's keys are its own."""
    limits = httpx.Limits(max_connections=runs)
    async with httpx.AsyncClient(
        base_url=base, headers=HEADERS, timeout=60.0, trust_env=False, limits=limits
    ) as http:
        # Every connection open before the clock: the figure is the runs, not TCP set-up.
        await asyncio.gather(*(http.get("/host/wopeval/health") for _ in range(runs)))
        # The serve's CPU from here, as from the clock: its readiness checks that opened
        # the connections (~1 ms each, as much as 0.02 ms a call) are not the runs'.
        cpu_before = serve_cpu_seconds()
        bodies = [
            {
                "workflowId": WORKFLOW,
                "inputs": {"key": f"{label}-{i}", "calls": calls, "report": True},
            }
            for i in range(runs)
        ]
        started, wall = time.perf_counter(), time.time()
        created = await asyncio.gather(*(http.post("/runs", json=body) for body in bodies))
        create_seconds = time.perf_counter() - started
    for answer in created:
        if answer.status_code != 201:
            raise RuntimeError(f"create refused: {answer.status_code} {answer.text}")
    return wall, cpu_before, create_seconds, [str(answer.json()["runId"]) for answer in created]


def wait_all_ended(http: httpx.Client, count: int) -> None:
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        listed = http.get("/runs", params={"limit": count}).json()["runs"]
        if len(listed) >= count and all(
            run["status"] not in ("running", "paused") for run in listed
        ):
            return
        time.sleep(0.05)
    raise RuntimeError("the runs did not end within 600 s")


def ended_at(run: dict[str, Any]) -> float:
    return datetime.fromisoformat(str(run["completedAt"]).replace("Z", "+00:00")).timestamp()


def check_run(http: httpx.Client, run_id: str, calls: int) -> tuple[list[float], int, float]:
    """The run's completed with its calls recorded live and ok: the agent's timings,
    the tool records, and the run's end (server clock)."""
    run = http.get(run_path(run_id)).json()
    if run["status"] != "completed":
        raise RuntimeError(f"run {run_id} ended {run['status']}: {run.get('error')}")
    # The agent's output is its node's, in the run's last event (after every call's two).
    tail = http.get(run_path(run_id) + "/events/poll", params={"afterSequence": 2 * calls}).json()
    (completed,) = [event for event in tail["events"] if event["type"] == "run.completed"]
    outputs = completed["payload"]["outputs"]["record"]["decision"]
    latencies = [float(seconds) for seconds in outputs["latencies"]]
    if len(latencies) != calls:
        raise RuntimeError(f"run {run_id}: the agent timed {len(latencies)} calls, not {calls}")
    live = http.get("/host/wopeval" + run_path(run_id) + "/live-calls").json()["liveCalls"]
    if live != calls:
        raise RuntimeError(f"run {run_id}: {live} live tool records, not {calls}")
    return latencies, live, ended_at(run)


def serve_cpu_seconds() -> float | None:
    """The CPU time so far of this process's one child, the serve (every thread: utime and
    stime of /proc/PID/stat); None where /proc does not say."""
    try:
        children = Path(f"/proc/self/task/{threading.get_native_id()}/children").read_text()
        (pid,) = children.split()
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except (OSError, ValueError):
        return None
    # After the command's name: utime and stime are the 12th and 13th fields.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(base: str, runs: int, calls: int, label: str) -> WireResult:
    wall, cpu_before, create_seconds, run_ids = asyncio.run(create_runs(base, runs, calls, label))
    with httpx.Client(base_url=base, headers=HEADERS, timeout=60.0, trust_env=False) as http:
        wait_all_ended(http, runs)
        cpu_after = serve_cpu_seconds()
        checked = [check_run(http, run_id, calls) for run_id in run_ids]
    seconds = max(end for _, _, end in checked) - wall
    return WireResult(
        runs=runs,
        calls_per_run=calls,
        seconds=round(seconds, 3),
        create_seconds=round(create_seconds, 3),
        calls_per_second=runs * calls / seconds,
        per_call=Latency.of([latency for latencies, _, _ in checked for latency in latencies]),
        tool_call_rows=sum(rows for _, rows, _ in checked),
        serve_cpu_ms_per_call=(
            None
            if cpu_before is None or cpu_after is None
            else (cpu_after - cpu_before) * 1000 / (runs * calls)
        ),
    )


def medians(warm_up: WireResult, rounds: list[WireResult]) -> Medians:
    cpu = [each.serve_cpu_ms_per_call for each in rounds]
    return Medians(
        rounds=len(rounds),
        calls_per_second=statistics.median(each.calls_per_second for each in rounds),
        p50_ms=statistics.median(each.per_call.p50_ms for each in rounds),
        serve_cpu_ms_per_call=(
            None if None in cpu else statistics.median(ms for ms in cpu if ms is not None)
        ),
        tool_call_rows=sum(each.tool_call_rows for each in [warm_up, *rounds]),
    )


def run_store(database_url: str, runs: int, calls: int, *, rounds: int) -> StoreResult:
    with tempfile.TemporaryDirectory(prefix="wopeval-wire-bench-") as scratch:
        directory = Path(scratch)
        (directory / "project").mkdir()
        write_project(directory / "project")
        with fresh_store(database_url, directory) as url:
            sqlite = url.startswith("sqlite")
            anchor = (
                sqlite_anchor(directory, runs * calls)
                if sqlite
                else postgres_anchor(url, runs * calls)
            )
            store = backend_name(None if sqlite else url)
            with serving(url, directory, directory / "project") as base:
                warm_up = measure(base, runs, calls, "warm-up")
                print_round(store, "warm-up", warm_up)
                measured = []
                for index in range(rounds):
                    measured.append(measure(base, runs, calls, f"round-{index + 1}"))
                    print_round(store, f"round {index + 1}", measured[-1])
    wire = medians(warm_up, measured)
    return StoreResult(
        backend=store,
        wire=wire,
        warm_up=warm_up,
        rounds=measured,
        anchor=anchor,
        per_call_ratio=wire.p50_ms / anchor.per_call.p50_ms,
        throughput_ratio=wire.calls_per_second / anchor.calls_per_second,
    )


# ── command line ─────────────────────────────────────────────────────


def print_round(store: str, name: str, wire: WireResult) -> None:
    cpu = wire.serve_cpu_ms_per_call
    print(
        f"{name:<10} {store:<10} {wire.runs} runs x {wire.calls_per_run} live calls over HTTP: "
        f"{wire.calls_per_second:8.0f} calls/s ({wire.seconds:.2f}s, creates "
        f"{wire.create_seconds:.2f}s), p50 {wire.per_call.p50_ms:.3f} ms/call "
        f"(p90 {wire.per_call.p90_ms:.3f}, p99 {wire.per_call.p99_ms:.3f})"
        + ("" if cpu is None else f", serve cpu {cpu:.3f} ms/call"),
        flush=True,
    )


def print_store(result: StoreResult) -> None:
    wire, anchor, store = result.wire, result.anchor, result.backend
    first = result.rounds[0]
    print(
        f"wire       {store:<10} {first.runs} runs x {first.calls_per_run} live calls over HTTP, "
        f"median of {wire.rounds} rounds: {wire.calls_per_second:8.0f} calls/s, "
        f"p50 {wire.p50_ms:.3f} ms/call",
        flush=True,
    )
    print(
        f"anchor     {store:<10} {anchor.driver} 2 commits: p50 {anchor.per_call.p50_ms:.3f} "
        f"ms/call, {anchor.calls_per_second:.0f} calls/s; host/anchor (medians): per call "
        f"{result.per_call_ratio:.1f}x, throughput {result.throughput_ratio:.2f}",
        flush=True,
    )
    if wire.serve_cpu_ms_per_call is not None:
        print(
            f"serve cpu  {store:<10} {wire.serve_cpu_ms_per_call:.3f} ms/call (median)", flush=True
        )
    print(f"rows       {store:<10} {wire.tool_call_rows} tool records, all checked", flush=True)
    target = TARGET_CALLS_PER_SECOND.get(store)
    if target is not None:
        met = "meets" if wire.calls_per_second >= target else "MISSES"
        print(f"target     {store:<10} >= {target:.0f} calls/s over the wire: {met}")


def main(argv: list[str] | None = None) -> int:
    rounds = argparse.ArgumentParser(add_help=False)
    rounds.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="rounds counted, after one warm-up round, on the same serve (default 5)",
    )
    known, rest = rounds.parse_known_args(argv)
    if known.rounds < 1:
        rounds.error("--rounds must be >= 1")
    return run_bench(
        rest,
        partial(run_store, rounds=known.rounds),
        print_store,
        description=__doc__,
        calls=50,
        parents=[rounds],
    )


if __name__ == "__main__":
    sys.exit(main())
