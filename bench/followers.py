"""SSE fan-out: N followers of one run, the host's CPU per follower per event and its memory.

A real `wopeval serve` (SQLite in its data dir by default; `--database-url` a
PostgreSQL server, on which a fresh database is made and dropped) loads
`bench/followers_project`. Each run logs exactly `--events` events, held at its
start by a gate (an agent waiting for a file the bench writes):
- `--run eval` (default): an eval of up to 100 tasks at eval concurrency 1 whose
  calls fixtures serve; the host commits each task's events together (~100);
- `--run workflow`: the workflow `followers`, a gate node and a node making
  (events - 12) / 2 live tool calls, two events each; every event its own commit.

Each measurement creates one run and attaches its followers while the run is
held (`--attach held`), or once it has ended (`--attach finished`: every follower
reads the whole log from the store): `GET /runs/{runId}/events?streamMode=debug`
(`&bufferMs=` with `--buffer-ms`), `Accept: text/event-stream`. A stream the host
cuts for falling behind is resumed with `Last-Event-ID`, as the OpenWOP client does.
The followers live in `--client-processes` separate processes (spawned, fd limit raised), each an
asyncio loop of raw sockets speaking HTTP/1.0 (the body is the SSE stream until
the host closes it, no chunk framing to undo), so the load generator costs the
host's cores as little as it can. When every follower has its first frame the
bench samples the host's CPU time (psutil: user + system of the serve process,
all threads) and opens the gate; the window ends when the last follower has the
terminal event. In it the host both writes the run and serves every follower.

Checks, or the bench exits with an error: the run is `completed` with
lastSequence = events - 1, and every follower received exactly the sequences
0..last in order (the `id:` of each frame; inside a batch, each event's
`"sequence"`), no gap, no duplicate, ending with `run.completed`; an eval passes
every task.

Figures, each beside its anchor measured on the same host in the same run:
- CPU per follower per event: host CPU in the window / (followers x events),
  beside the same host serving one follower (CPU per event) and the ratio;
  also the marginal CPU of each follower beyond the first, per event;
- wall time from the gate opening to the last follower's terminal event,
  beside one follower's;
- delivered events/s (followers x events / wall);
- the host's RSS before the run (the baseline), its peak (VmHWM, reset at the
  baseline through /proc/PID/clear_refs: Linux) and its RSS once every follower has
  gone (the lowest of samples over 2 s), both above the baseline, beside one
  follower's; and how many streams were cut and resumed.
Nothing here is a test assertion. `--followers 5 --events 200` (each --run) is the CI smoke.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import re
import resource
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx
import psutil

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "tests"))
from _backends import PostgresDatabases  # noqa: E402
from _processes import ServeOptions, ServeProcess  # noqa: E402
from reporting import finish  # noqa: E402

PROJECT = HERE / "followers_project"
WORKFLOW = "followers"
CALLS_AGENT = "followers.calls"
TOOL = "followers:echo"
KEY = "bench_" + "f" * 24
# A workflow run's events besides its calls: run.started/completed, 5 per agent node.
WORKFLOW_FIXED_EVENTS = 12
# An eval run's: run.started, eval.started, eval.completed, run.completed, and per task
# invocation-started, decided, invocation-completed and eval.scored.
EVAL_FIXED_EVENTS = 4
EVAL_TASK_EVENTS = 4
EVAL_TASKS = 100
DEADLINE_SECONDS = 3600.0
"""How long attaching, and then the whole follow, may take (1,000 followers of a workflow run
of 10,000 events take over 10 minutes on 2 shared cores)."""
CONNECTS_AT_ONCE = 100
"""Followers connecting at a time: a burst of 1,000 SYNs is more than the listen backlog
needs to absorb, and a refused follower would end the measurement."""
SETTLE_SECONDS = 2.0
"""How long the host is watched after the last follower has gone, for its after-RSS."""
_FRAME_ID = re.compile(rb"^id: (\d+)$", re.MULTILINE)
_BATCHED_SEQUENCE = re.compile(rb'"sequence":(\d+)')
_TERMINAL_FRAME = b"run.completed"


@dataclass
class Received:
    """What one follower got: how many events, the last sequence, the first fault if any."""

    events: int
    last_sequence: int
    fault: str | None
    terminal_at: float
    """time.monotonic() when the frame with the terminal event arrived (system-wide clock)."""
    resumes: int
    """Times the host cut the stream for falling behind and the follower resumed it."""


class _Follower(asyncio.Protocol):
    """One SSE stream on a raw socket, its sequences checked as the frames arrive; a stream
    the host cuts after some frames is resumed from the last one (`Last-Event-ID`), as the
    OpenWOP client does."""

    def __init__(self, request: bytes, batched: bool) -> None:
        self._request = request
        self._sequences = _BATCHED_SEQUENCE if batched else _FRAME_ID
        self.next_sequence = 0
        self.fault: str | None = None
        self.terminal_at = 0.0
        self.resumes = 0
        self.first_frame = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._head: bytes | None = b""
        self._pending = b""
        self._last_chunk = b""
        self._connected_at = self.next_sequence
        self.cut = False
        self.closed = asyncio.get_running_loop().create_future()
        request = self._request
        if self.next_sequence:
            resume = f"Last-Event-ID: {self.next_sequence - 1}\r\n\r\n"
            request = request.removesuffix(b"\r\n") + resume.encode()
        transport.write(request)

    def data_received(self, data: bytes) -> None:
        if self._head is not None:
            self._head += data
            head, separator, data = self._head.partition(b"\r\n\r\n")
            if not separator:
                return
            self._head = None
            if not head.startswith((b"HTTP/1.0 200", b"HTTP/1.1 200")):
                self.fault = f"answered {head.splitlines()[0]!r}"
        complete, separator, self._pending = (self._pending + data).rpartition(b"\n\n")
        if not separator:
            return
        self.terminal_at = time.monotonic()
        self._last_chunk = complete
        found = [int(s) for s in self._sequences.findall(complete)]
        if found != list(range(self.next_sequence, self.next_sequence + len(found))):
            self.fault = self.fault or f"after {self.next_sequence - 1} came {found[:5]}"
        self.next_sequence += len(found)
        if found and not self.first_frame.done():
            self.first_frame.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None or self._pending.strip(b"\n"):
            self.fault = self.fault or f"ended mid-frame ({exc!r})"
        elif _TERMINAL_FRAME not in self._last_chunk:
            # Cut for falling behind: resumable once it brought something new.
            self.cut = self.fault is None and self.next_sequence > self._connected_at
            if not self.cut:
                self.fault = self.fault or "closed without the terminal event"
        if not self.first_frame.done():
            self.first_frame.set_result(None)
        self.closed.set_result(None)

    def received(self) -> Received:
        last = self.next_sequence - 1
        return Received(self.next_sequence, last, self.fault, self.terminal_at, self.resumes)


def raise_fd_limit() -> None:
    """Room for every follower's socket (the soft limit is often 1,024)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


async def _follow_all(
    port: int, request: bytes, count: int, batched: bool, pipe: Connection
) -> None:
    loop = asyncio.get_running_loop()
    followers = [_Follower(request, batched) for _ in range(count)]
    connects = asyncio.Semaphore(CONNECTS_AT_ONCE)

    async def follow(follower: _Follower) -> None:
        while True:
            async with connects:
                await loop.create_connection(lambda: follower, "127.0.0.1", port)
            await follower.closed
            if not follower.cut:
                return
            follower.resumes += 1

    streams = [asyncio.ensure_future(follow(follower)) for follower in followers]
    await asyncio.wait_for(
        asyncio.gather(*(follower.first_frame for follower in followers)), DEADLINE_SECONDS
    )
    pipe.send("attached")
    await asyncio.wait_for(asyncio.gather(*streams), DEADLINE_SECONDS)
    pipe.send([follower.received() for follower in followers])


def follower_process(
    port: int, request: bytes, count: int, batched: bool, pipe: Connection
) -> None:
    """A load generator: `count` followers on one event loop; its own CPU time goes last."""
    raise_fd_limit()
    asyncio.run(_follow_all(port, request, count, batched, pipe))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    pipe.send(usage.ru_utime + usage.ru_stime)


@dataclass
class Figure:
    followers: int
    events: int
    wall_seconds: float
    """From the gate opening to the last follower's terminal event."""
    host_cpu_seconds: float
    client_cpu_seconds: float
    """The load generator processes' CPU time, all of it (attach included)."""
    host_cpu_us_per_follower_event: float
    delivered_events_per_second: float
    baseline_rss_mb: float
    """The host's RSS before the run was created."""
    peak_rss_above_baseline_mb: float
    """The host's peak RSS (VmHWM, reset at the baseline) less the baseline."""
    after_rss_above_baseline_mb: float
    """The host's RSS once every follower has gone, less the baseline."""
    resumed_streams: int
    """Streams the host cut for falling behind, each resumed by its follower."""


@dataclass
class Report:
    run: str
    followers: int
    events: int
    buffer_ms: int | None
    database: str
    client_processes: int
    attach: str
    cpu_count: int | None
    load_average: list[float] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    marginal_cpu_us_per_follower_event: float | None = None


def stream_request(run_id: str, buffer_ms: int | None) -> bytes:
    query = "streamMode=debug" + ("" if buffer_ms is None else f"&bufferMs={buffer_ms}")
    path = f"/runs/{run_id.replace('/', '~2F')}/events?{query}"
    return (
        f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        f"Authorization: Bearer {KEY}\r\nOpenWOP-Version: 2.0\r\n\r\n"
    ).encode()


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def eval_suite(events: int, gate: Path) -> dict[str, Any]:
    """A suite whose eval logs `events` events: its calls spread over up to 100 tasks, each
    served by fixtures, the first task held at `gate`."""
    tasks = max(1, min(EVAL_TASKS, events // 100))
    calls = (events - EVAL_FIXED_EVENTS - EVAL_TASK_EVENTS * tasks) // 2
    documents = []
    for index in range(tasks):
        task_calls = calls // tasks + (index < calls % tasks)
        task_input: dict[str, Any] = {"calls": task_calls}
        if index == 0:
            task_input["gate"] = str(gate)
        documents.append(
            {
                "taskId": f"task-{index}",
                "input": task_input,
                "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "done"}},
                "fixtures": {
                    "toolResponses": [{"tool": TOOL, "response": {"served": True}}] * task_calls
                },
            }
        )
    return {
        "suiteId": f"followers-{secrets.token_hex(4)}.evals.fan-out",
        "version": "1.0.0",
        "modes": ["golden"],
        "targetAgentId": CALLS_AGENT,
        "tasks": documents,
    }


def create_run(http: httpx.Client, run: str, events: int, gate: Path) -> str:
    """A run of `events` events, held at `gate` until the bench writes it."""
    if run == "workflow":
        inputs = {"gate": str(gate), "calls": (events - WORKFLOW_FIXED_EVENTS) // 2}
        body: dict[str, Any] = {"workflowId": WORKFLOW, "inputs": inputs}
    else:
        suite = eval_suite(events, gate)
        put = http.put("/host/wopeval/suites", json=suite)
        if put.status_code != 201:
            raise SystemExit(f"the suite was not stored: {put.status_code} {put.text}")
        ref = f"{suite['suiteId']}@{suite['version']}"
        body = {"mode": "eval", "evalSuiteRef": ref, "agentId": CALLS_AGENT}
    created = http.post("/runs", json=body)
    if created.status_code != 201:
        raise SystemExit(f"the run was not created: {created.status_code} {created.text}")
    run_id: str = created.json()["runId"]
    return run_id


def measure(
    host: ServeProcess,
    http: httpx.Client,
    *,
    followers: int,
    run: str,
    events: int,
    buffer_ms: int | None,
    client_processes: int,
    attach: str,
    scratch: Path,
) -> Figure:
    """One gated run followed by `followers` streams, spread over the load generators: attached
    while the run is held (`attach` "held"), or once it has ended ("finished")."""
    gate = scratch / f"gate-{secrets.token_hex(4)}"
    serving = psutil.Process(host.pid)
    baseline = start_peak(serving)
    run_id = create_run(http, run, events, gate)
    request = stream_request(run_id, buffer_ms)
    if attach == "finished":
        gate.touch()
        wait_until_ended(http, run_id)
        cpu_before, released = cpu_seconds(serving), time.monotonic()
    spawn = multiprocessing.get_context("spawn")
    shares = [
        followers // client_processes + (i < followers % client_processes)
        for i in range(client_processes)
    ]
    pipes, generators = [], []
    for share in (s for s in shares if s):
        ours, theirs = spawn.Pipe()
        generator = spawn.Process(
            target=follower_process, args=(host.port, request, share, buffer_ms is not None, theirs)
        )
        generator.start()
        pipes.append(ours)
        generators.append(generator)
    try:
        for pipe in pipes:
            if not pipe.poll(DEADLINE_SECONDS) or pipe.recv() != "attached":
                raise SystemExit("the followers did not attach")
        if attach == "held":
            cpu_before, released = cpu_seconds(serving), time.monotonic()
            gate.touch()
        received: list[Received] = []
        for pipe in pipes:
            if not pipe.poll(DEADLINE_SECONDS):
                raise SystemExit("the followers did not finish")
            received += pipe.recv()
        host_cpu = cpu_seconds(serving) - cpu_before
        client_cpu = sum(pipe.recv() for pipe in pipes)
    finally:
        for generator in generators:
            generator.join(30)
            if generator.is_alive():
                generator.kill()
    check(http, run_id, events, received)
    if run == "eval":
        summary = http.get(f"/runs/{run_id.replace('/', '~2F')}/eval-summary").json()
        if summary["passedCount"] != summary["taskCount"]:
            raise SystemExit(f"the eval did not pass: {summary}")
    wall = max(one.terminal_at for one in received) - released
    peak = peak_rss(serving)
    after = settled_rss(serving)
    return Figure(
        followers=followers,
        events=events,
        wall_seconds=round(wall, 3),
        host_cpu_seconds=round(host_cpu, 3),
        client_cpu_seconds=round(client_cpu, 3),
        host_cpu_us_per_follower_event=round(host_cpu / (followers * events) * 1e6, 3),
        delivered_events_per_second=round(followers * events / wall),
        baseline_rss_mb=megabytes(baseline),
        peak_rss_above_baseline_mb=megabytes(peak - baseline),
        after_rss_above_baseline_mb=megabytes(after - baseline),
        resumed_streams=sum(one.resumes for one in received),
    )


def start_peak(process: psutil.Process) -> int:
    """The process's RSS now, from which its peak (VmHWM) counts again (Linux: clear_refs 5)."""
    Path(f"/proc/{process.pid}/clear_refs").write_text("5")
    return int(process.memory_info().rss)


def peak_rss(process: psutil.Process) -> int:
    """The process's highest RSS since `start_peak` (VmHWM in /proc/PID/status)."""
    status = Path(f"/proc/{process.pid}/status").read_text()
    kilobytes = re.search(r"^VmHWM:\s+(\d+) kB$", status, re.MULTILINE)
    if kilobytes is None:
        raise SystemExit("the host's peak RSS is not readable (VmHWM)")
    return int(kilobytes.group(1)) * 1024


def settled_rss(process: psutil.Process) -> int:
    """The process's RSS once the followers' streams have ended on its side: the lowest of
    a few samples over `SETTLE_SECONDS` (a stream's last frames leave after the client has
    them; the host's tail stops with its last follower)."""
    samples = []
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        samples.append(int(process.memory_info().rss))
        time.sleep(0.1)
    return min(samples)


def megabytes(size: int) -> float:
    return round(size / 2**20, 1)


def wait_until_ended(http: httpx.Client, run_id: str) -> None:
    """Long-polls the run's status until it is terminal."""
    path = f"/runs/{run_id.replace('/', '~2F')}"
    deadline = time.monotonic() + DEADLINE_SECONDS
    while http.get(path).json()["status"] not in ("completed", "failed", "cancelled"):
        if time.monotonic() > deadline:
            raise SystemExit("the run did not end")
        time.sleep(0.2)


def check(http: httpx.Client, run_id: str, events: int, received: list[Received]) -> None:
    """The run completed with `events` events and every follower got each of them once."""
    tail = http.get(
        f"/runs/{run_id.replace('/', '~2F')}/events/poll",
        params={"afterSequence": events - 2, "timeout": 1},
    ).json()
    logged = (tail["status"], tail["lastSequence"], [e["type"] for e in tail["events"]])
    if logged != ("completed", events - 1, ["run.completed"]):
        raise SystemExit(f"the run did not log {events} events: {logged}")
    faults = [one for one in received if one.fault or one.last_sequence != events - 1]
    if faults:
        first = faults[0]
        raise SystemExit(
            f"{len(faults)} of {len(received)} followers missed events; the first got"
            f" {first.events} (last {first.last_sequence}): {first.fault}"
        )


@contextlib.contextmanager
def database(url: str) -> Iterator[str | None]:
    """None (the host's own SQLite) for `sqlite`, else a fresh database on that server."""
    if url == "sqlite":
        yield None
        return
    databases = PostgresDatabases(url, prefix=f"wopeval_followers_{secrets.token_hex(4)}")
    try:
        yield databases.create()
    finally:
        databases.drop_all()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--followers", type=int, default=1000)
    parser.add_argument("--events", type=int, default=10_000, help="even, at least 12")
    parser.add_argument(
        "--run",
        choices=("eval", "workflow"),
        default="eval",
        help="eval: one commit per task of ~100 events; workflow: one commit per event",
    )
    parser.add_argument("--buffer-ms", type=int, help="bufferMs of every stream (default: none)")
    parser.add_argument("--client-processes", type=int, default=2)
    parser.add_argument(
        "--attach",
        choices=("held", "finished"),
        default="held",
        help="held: followers attach while the run is held at its start and follow it as it is"
        " written; finished: they attach once it has ended and read its log from the store",
    )
    parser.add_argument("--database-url", default="sqlite")
    parser.add_argument("--profile", type=Path, help="py-spy raw profile of the host, N followers")
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    if options.events < WORKFLOW_FIXED_EVENTS or options.events % 2:
        parser.error(f"--events must be even and at least {WORKFLOW_FIXED_EVENTS}")
    raise_fd_limit()  # the host inherits it: it holds one socket per follower too
    report = Report(
        options.run,
        options.followers,
        options.events,
        options.buffer_ms,
        "sqlite" if options.database_url == "sqlite" else "postgresql",
        options.client_processes,
        options.attach,
        os.cpu_count(),
        [os.getloadavg()[0]],
    )
    with database(options.database_url) as url, tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        host = ServeProcess(
            ServeOptions(
                directory / "host",
                url,
                api_keys=(f"bench={KEY}",),
                project=PROJECT,
                # One task at a time: the held first task holds the whole eval at its start.
                env=(("WOPEVAL_EVAL_CONCURRENCY", "1"),),
            ),
            directory / "serve.log",
        )
        try:
            host.wait_up()
            with host.http(KEY) as http:
                common = {
                    "run": options.run,
                    "events": options.events,
                    "buffer_ms": options.buffer_ms,
                    "client_processes": options.client_processes,
                    "attach": options.attach,
                    "scratch": directory,
                }
                one = measure(host, http, followers=1, **common)
                with profiled(host.pid, options.profile):
                    many = measure(host, http, followers=options.followers, **common)
        finally:
            host.stop()
    report.figures = [one, many]
    if many.followers > 1:
        marginal = (many.host_cpu_seconds - one.host_cpu_seconds) / (
            (many.followers - 1) * many.events
        )
        report.marginal_cpu_us_per_follower_event = round(marginal * 1e6, 3)
    print_report(report, one, many)
    finish(report, options.json)


@contextlib.contextmanager
def profiled(pid: int, output: Path | None) -> Iterator[None]:
    """py-spy over the host for the block (`--profile`): its figures are then not real ones."""
    if output is None:
        yield
        return
    py_spy = str(Path(sys.executable).with_name("py-spy"))
    command = [py_spy, "record", "--pid", str(pid), "-f", "raw", "-o", str(output), "--nonblocking"]
    recorder = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)  # py-spy attaches before the run is released
        yield
    finally:
        recorder.send_signal(2)  # SIGINT: py-spy writes its profile and exits
        recorder.wait(60)


def print_report(report: Report, one: Figure, many: Figure) -> None:
    mode = "" if report.buffer_ms is None else f", bufferMs={report.buffer_ms}"
    print(
        f"{report.database}, {report.run} run of {many.events} events{mode}, followers in"
        f" {report.client_processes} client process(es), attached to the run {report.attach}"
    )
    each, alone = many.host_cpu_us_per_follower_event, one.host_cpu_us_per_follower_event
    print(
        f"host CPU per follower per event: {many.followers} followers {each} us;"
        f" 1 follower {alone} us; ratio {each / alone:.3f}"
    )
    if report.marginal_cpu_us_per_follower_event is not None:
        marginal = report.marginal_cpu_us_per_follower_event
        print(f"marginal host CPU per extra follower per event: {marginal} us")
    print(
        f"wall to the last terminal event: {many.followers} followers {many.wall_seconds} s;"
        f" 1 follower {one.wall_seconds} s; ratio {many.wall_seconds / one.wall_seconds:.2f}"
    )
    print(
        f"delivered events/s: {many.followers} followers {many.delivered_events_per_second};"
        f" 1 follower {one.delivered_events_per_second}"
    )
    print(
        f"host RSS peak above baseline: {many.followers} followers"
        f" {many.peak_rss_above_baseline_mb} MB; 1 follower {one.peak_rss_above_baseline_mb} MB"
        f" (baselines {many.baseline_rss_mb} / {one.baseline_rss_mb} MB)"
    )
    print(
        f"host RSS after the followers left, above baseline: {many.followers} followers"
        f" {many.after_rss_above_baseline_mb} MB; 1 follower {one.after_rss_above_baseline_mb} MB"
    )
    print(
        f"streams cut for falling behind and resumed: {many.followers} followers"
        f" {many.resumed_streams}; 1 follower {one.resumed_streams}"
    )
    print(
        f"host CPU s: {many.host_cpu_seconds} / {one.host_cpu_seconds};"
        f" client CPU s: {many.client_cpu_seconds} / {one.client_cpu_seconds}"
    )


if __name__ == "__main__":
    main()
