"""Queue-mode throughput: eval tasks/s at 1, 2 and 4 workers, and the queue's cost.

Real processes on a fresh PostgreSQL database: one `wopeval serve --executor
queue` and W `wopeval worker --concurrency C`, all loading `bench/queue_project`.
An eval of `--tasks` tasks (one trial each) is created through the API and timed
from the create request to the run being terminal (polled every 20 ms), then
checked: completed, every task passed, one trial per task in `task_trials`.

Workloads (the agent's input, bench/queue_project/bench_agents.py):
- `io`: each trial waits 50 ms (`asyncio.sleep`), as a model call would;
- `cpu`: each trial burns 20 ms of CPU;
- `replay`: no wait, 10 fixture-served calls (the fully replayed case), run both
  through the queue and by an in-process `wopeval serve` at equal total
  concurrency (its `WOPEVAL_EVAL_CONCURRENCY`).

Each figure is printed beside its anchor (the issue's goal); nothing here is a
test assertion. `--tasks 20 --workers 1 --workloads io` is the CI smoke.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
from sqlalchemy.engine import make_url

from reporting import finish

HERE = Path(__file__).parent
PROJECT = HERE / "queue_project"
WOPEVAL = str(Path(sys.executable).with_name("wopeval"))
AGENT = "bench.agent"
TOOL = "bench:lookup"
DATABASE = "wopeval_queue_bench"
KEY = "bench_" + "k" * 24
WORKLOADS: dict[str, dict[str, Any]] = {
    "io": {"wait": 0.05},
    "cpu": {"burn": 0.02},
    "replay": {"calls": 10},
}


@dataclass
class Figure:
    workload: str
    executor: str
    workers: int
    concurrency: int
    """Per worker (queue) or the host's eval concurrency (in-process)."""
    tasks: int
    seconds: float
    tasks_per_second: float


@dataclass
class Report:
    tasks: int
    cpu_count: int | None
    load_average: list[float] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)


def suite_document(tasks: int, workload: dict[str, Any]) -> dict[str, Any]:
    documents = []
    for index in range(tasks):
        calls = [
            {"tool": TOOL, "args": {"task": index, "call": c}}
            for c in range(workload.get("calls", 0))
        ]
        documents.append(
            {
                "taskId": f"t{index:05d}",
                "input": {
                    "wait": workload.get("wait", 0),
                    "burn": workload.get("burn", 0),
                    "calls": calls,
                    "answer": f"a{index}",
                },
                "expected": {
                    "kind": "golden",
                    "match": {"strategy": "exact", "value": f"a{index}"},
                },
                "fixtures": {
                    "toolResponses": [
                        {"tool": TOOL, "args": call["args"], "response": {"v": index}}
                        for call in calls
                    ],
                    "onMiss": "fail",
                },
            }
        )
    return {
        "suiteId": f"bench-{secrets.token_hex(4)}.evals.queue",
        "version": "1.0.0",
        "modes": ["golden"],
        "targetAgentId": AGENT,
        "tasks": documents,
    }


@contextlib.contextmanager
def fresh_database(admin_url: str) -> Iterator[str]:
    url = make_url(admin_url)
    dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {DATABASE}")
    try:
        yield url.set(drivername="postgresql+psycopg", database=DATABASE).render_as_string(False)
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("WOPEVAL_") and "proxy" not in k.lower()
    }
    env.update(extra)
    return env


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Processes:
    """The fleet of one measurement, ended by PID."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.started: list[subprocess.Popen[bytes]] = []

    def start(self, name: str, arguments: list[str], env: dict[str, str] | None = None) -> None:
        log = (self.directory / f"{name}.log").open("wb")
        self.started.append(
            subprocess.Popen(
                [WOPEVAL, *arguments], stdout=log, stderr=subprocess.STDOUT, env=_env(env or {})
            )
        )

    def stop(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
            process.wait(30)


def wait_ready(url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(url, timeout=2.0, trust_env=False).status_code == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"{url} never became ready")


def _worker_ready(log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = log.read_text() if log.exists() else ""
        if "health on " in text:
            wait_ready(text.split("health on ", 1)[1].split()[0])
            return
        time.sleep(0.1)
    raise RuntimeError(f"worker never started: {log.read_text()}")


def measure(admin_url: str, workload: str, tasks: int, *, workers: int, concurrency: int) -> Figure:
    """One eval through the queue (`workers` > 0) or in-process (`workers` 0)."""
    with fresh_database(admin_url) as url, tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        processes = Processes(directory)
        port = free_port()
        common = ["--database-url", url, "--project", str(PROJECT)]
        try:
            serve = [
                "serve",
                "--port",
                str(port),
                "--data-dir",
                str(directory / "api"),
                "--api-key",
                f"bench={KEY}",
                *common,
            ]
            # A replay suite of 1,000 tasks x 10 fixtures is ~1.7 MB, past the default limit.
            limits = {
                "WOPEVAL_EVAL_MAX_TASKS_PER_SUITE": str(tasks),
                "WOPEVAL_MAX_BODY_BYTES": "64000000",
            }
            if workers:
                processes.start("api", [*serve, "--executor", "queue"], limits)
            else:
                processes.start(
                    "api", serve, {**limits, "WOPEVAL_EVAL_CONCURRENCY": str(concurrency)}
                )
            base = f"http://127.0.0.1:{port}"
            wait_ready(base + "/host/wopeval/health")
            for index in range(workers):
                processes.start(
                    f"worker-{index}",
                    [
                        "worker",
                        *common,
                        "--port",
                        "0",
                        "--data-dir",
                        str(directory / f"w{index}"),
                        "--concurrency",
                        str(concurrency),
                    ],
                )
                _worker_ready(directory / f"worker-{index}.log")
            return _timed_eval(base, workload, tasks, workers, concurrency)
        finally:
            processes.stop()


def _timed_eval(base: str, workload: str, tasks: int, workers: int, concurrency: int) -> Figure:
    headers = {"Authorization": f"Bearer {KEY}", "OpenWOP-Version": "2.0"}
    with httpx.Client(base_url=base, headers=headers, timeout=120.0, trust_env=False) as http:
        document = suite_document(tasks, WORKLOADS[workload])
        assert http.put("/host/wopeval/suites", json=document).status_code == 201
        body = {"mode": "eval", "evalSuiteRef": f"{document['suiteId']}@1.0.0", "agentId": AGENT}
        started = time.perf_counter()
        created = http.post("/runs", json=body)
        assert created.status_code == 201, created.text
        path = "/runs/" + created.json()["runId"].replace("/", "~2F")
        while (status := http.get(path).json()["status"]) in ("running", "paused"):
            time.sleep(0.02)
        seconds = time.perf_counter() - started
        summary = http.get(path + "/eval-summary").json()
    if status != "completed" or summary["passedCount"] != tasks:
        raise SystemExit(f"the bench eval did not pass: {status} {summary}")
    executor = "queue" if workers else "in-process"
    return Figure(
        workload,
        executor,
        workers,
        concurrency,
        tasks,
        round(seconds, 3),
        round(tasks / seconds, 1),
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--workers", default="1,2,4", help="comma list of worker counts")
    parser.add_argument("--concurrency", type=int, default=8, help="per worker")
    parser.add_argument("--workloads", default="io,cpu,replay")
    parser.add_argument("--replay-workers", type=int, default=2)
    parser.add_argument(
        "--database-url", default="postgresql+psycopg://postgres@127.0.0.1:5432/test"
    )
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    report = Report(options.tasks, os.cpu_count(), [os.getloadavg()[0]])
    counts = [int(n) for n in options.workers.split(",")]
    for workload in options.workloads.split(","):
        if workload == "replay":
            total = options.replay_workers * options.concurrency
            queued = measure(
                options.database_url,
                workload,
                options.tasks,
                workers=options.replay_workers,
                concurrency=options.concurrency,
            )
            local = measure(
                options.database_url, workload, options.tasks, workers=0, concurrency=total
            )
            report.figures += [queued, local]
            ratio = queued.tasks_per_second / local.tasks_per_second
            print(
                f"replay  queue {queued.workers}x{queued.concurrency}:"
                f" {queued.tasks_per_second} tasks/s;"
                f" in-process at {total}: {local.tasks_per_second} tasks/s;"
                f" queue/in-process {ratio:.2f} (anchor: >= 0.75)"
            )
            continue
        figures = [
            measure(
                options.database_url,
                workload,
                options.tasks,
                workers=n,
                concurrency=options.concurrency,
            )
            for n in counts
        ]
        report.figures += figures
        one = figures[0].tasks_per_second
        for figure in figures:
            anchors = {2: " (anchor: >= 1.8x)", 4: " (anchor: >= 3x)"} if workload == "io" else {}
            anchor = anchors.get(figure.workers, "")
            print(
                f"{workload:6}  {figure.workers} worker(s) x {figure.concurrency}:"
                f" {figure.tasks_per_second} tasks/s, {figure.tasks_per_second / one:.2f}x{anchor}"
            )
    finish(report, options.json)


if __name__ == "__main__":
    main()
