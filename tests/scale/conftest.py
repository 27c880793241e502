"""The scale tier: real `wopeval serve --executor queue` and `wopeval worker` processes.

PostgreSQL only. Each test gets its own database and its own fleet (API processes
and workers started and stopped by PID), with heartbeat and stall intervals of
seconds, so a killed or stopped worker's work comes back within the test.
"""

from __future__ import annotations

import random
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg
import pytest
from openwop_client import OpenwopClient
from openwop_client.wire_id import project_id
from sqlalchemy.engine import make_url

from _backends import PostgresDatabases
from _processes import (
    START_DEADLINE_SECONDS,
    ServeOptions,
    ServeProcess,
    WorkerOptions,
    WorkerProcess,
)
from e2e._support import table_rows

pytestmark = pytest.mark.postgres

PROJECT = Path(__file__).parent / "project"
AGENT = "scale.agent"
TENANT = "scale"
TOOL = "scale:lookup"
LIVE_TOOL = "conformance.eval:counter"
RUN_DEADLINE_SECONDS = 180.0


@dataclass
class Fleet:
    """API processes and workers on one fresh database."""

    database_url: str
    directory: Path
    key: str
    key_b: str
    """Tenant `scale-b`'s key, for the cross-tenant conformance legs."""
    apis: list[ServeProcess] = field(default_factory=list)
    workers: list[WorkerProcess] = field(default_factory=list)
    worker_options: WorkerOptions | None = None

    def serve(self, **extra: Any) -> ServeProcess:
        index = len(self.apis)
        options = ServeOptions(
            self.directory / f"api-{index}",
            self.database_url,
            (f"{TENANT}={self.key}", f"{TENANT}-b={self.key_b}"),
            PROJECT,
            extra=("--executor", "queue", "--chunk-size", str(extra.get("chunk_size", 16))),
        )
        api = ServeProcess(options, self.directory / f"api-{index}.log")
        api.wait_up()
        self.apis.append(api)
        return api

    def worker(self, *, poison_may_kill: bool = False, **changes: Any) -> WorkerProcess:
        """A started worker, ready; with `poison_may_kill`, one that a poison trial killed
        while it was starting (it took that trial, so it came up far enough) is returned
        too, dead, for the next `replace_dead_workers` to replace."""
        index = len(self.workers)
        base = self.worker_options or WorkerOptions(
            self.directory / "worker", self.database_url, PROJECT
        )
        options = replace(base, data_dir=self.directory / f"worker-{index}", **changes)
        worker = WorkerProcess(options, self.directory / f"worker-{index}.log")
        self.workers.append(worker)
        worker.wait_up(killed_is_up=poison_may_kill)
        return worker

    def replace_dead_workers(self, **changes: Any) -> None:
        """Start a new worker for each one that died (a poison trial kills its worker)."""
        for worker in list(self.workers):
            if not worker.alive() and not worker.replaced:
                worker.kill()  # reaps it and closes its log
                worker.replaced = True
                self.worker(poison_may_kill=True, **changes)

    def http(self, api: ServeProcess) -> httpx.Client:
        return api.http(self.key)

    def client(self, api: ServeProcess) -> OpenwopClient:
        return OpenwopClient(api.url, self.key, timeout=60.0)

    def stop(self) -> None:
        for worker in self.workers:
            worker.kill()
        for api in self.apis:
            api.kill()

    def rows(self, table: str, **equal: Any) -> list[dict[str, Any]]:
        return table_rows(self.database_url, table, **equal)

    def jobs(self, run_id: str) -> list[dict[str, Any]]:
        """The run's queue jobs: `{id, status, worker_id, args}` (Procrastinate's table)."""
        dsn = make_url(self.database_url).set(drivername="postgresql").render_as_string(False)
        with psycopg.connect(dsn) as connection:
            rows = connection.execute(
                "SELECT id, status::text, worker_id, args FROM procrastinate_jobs"
                " WHERE args ->> 'run_id' = %s ORDER BY id",
                (run_id,),
            ).fetchall()
        return [
            {"id": job_id, "status": status, "worker_id": worker, "args": args}
            for job_id, status, worker, args in rows
        ]


@pytest.fixture
def fleet(postgres_databases: PostgresDatabases, tmp_path: Path) -> Iterator[Fleet]:
    built = Fleet(
        postgres_databases.create(),
        tmp_path,
        "scale_" + secrets.token_urlsafe(24),
        "scale_b_" + secrets.token_urlsafe(24),
    )
    try:
        yield built
    finally:
        built.stop()


def suite(
    tasks: int, trials: int, *, sleep: float = 0.0, calls: int = 1, **per_task: Any
) -> dict[str, Any]:
    """A suite for `scale.agent`: each task waits `sleep`, makes `calls` fixture-served calls
    and answers; `per_task` maps a task index to extra input (e.g. `{3: {"kill": True}}`)."""
    extra: dict[int, dict[str, Any]] = per_task.get("inputs", {})
    documents = []
    for index in range(tasks):
        call_list = [{"tool": TOOL, "args": {"task": index, "call": c}} for c in range(calls)]
        documents.append(
            {
                "taskId": f"t{index:04d}",
                "input": {
                    "sleep": sleep,
                    "calls": call_list,
                    "answer": f"a{index}",
                    **extra.get(index, {}),
                },
                "expected": {
                    "kind": "golden",
                    "match": {"strategy": "exact", "value": f"a{index}"},
                },
                "fixtures": {
                    "toolResponses": [
                        {"tool": TOOL, "args": call["args"], "response": {"ok": index}}
                        for call in call_list
                    ],
                    "onMiss": "fail",
                },
            }
        )
    return {
        "suiteId": f"scale-{secrets.token_hex(6)}.evals.fleet",
        "version": "1.0.0",
        "modes": ["golden"],
        "trials": trials,
        "targetAgentId": AGENT,
        "tasks": documents,
    }


def live_suite(
    suite_id: str, tasks: int, extra: Callable[[int], dict[str, Any]] = lambda _: {}
) -> dict[str, Any]:
    """A suite for `scale.agent`: one trial a task, each making one live call of the
    tenant's counter (no fixtures: every call runs live), its key the task's id; `extra`
    adds to a task's input by its index (a sleep, a gate)."""
    return {
        "suiteId": suite_id,
        "version": "1.0.0",
        "modes": ["golden"],
        "targetAgentId": AGENT,
        "tasks": [
            {
                "taskId": f"t{index:04d}",
                "input": {
                    "calls": [{"tool": LIVE_TOOL, "args": {"op": "inc", "key": f"t{index:04d}"}}],
                    "answer": f"a{index}",
                    **extra(index),
                },
                "expected": {
                    "kind": "golden",
                    "match": {"strategy": "exact", "value": f"a{index}"},
                },
            }
            for index in range(tasks)
        ],
    }


def start_eval(http: httpx.Client, document: dict[str, Any]) -> str:
    """Publish `document` and create an eval run of it; returns the run id."""
    published = http.put("/host/wopeval/suites", json=document)
    assert published.status_code in (200, 201), published.text
    ref = f"{document['suiteId']}@{document['version']}"
    created = http.post("/runs", json={"mode": "eval", "evalSuiteRef": ref, "agentId": AGENT})
    assert created.status_code == 201, created.text
    run_id: str = created.json()["runId"]
    return run_id


def start_gated(http: httpx.Client, gates: Path) -> str:
    """Create a run of the gated workflow (project/workflows/scale-gated.json), whose node's
    agent waits in `gates` for its attempt's gate file; returns the run id."""
    created = http.post("/runs", json={"workflowId": "scale-gated", "inputs": {"dir": str(gates)}})
    assert created.status_code == 201, created.text
    run_id: str = created.json()["runId"]
    return run_id


def snapshot(http: httpx.Client, run_id: str) -> dict[str, Any]:
    response = http.get(f"/runs/{project_id(run_id)}")
    assert response.status_code == 200, response.text
    document: dict[str, Any] = response.json()
    return document


def stop_outside_transactions(fleet: Fleet, worker: WorkerProcess) -> None:
    """SIGSTOP the worker at a moment none of its database sessions is in a transaction or
    a statement: stopped holding a lock (a heartbeat, a job row its fence share-locks), it
    would hold back the worker that is to take its work over, and the test with it."""
    url = make_url(fleet.database_url).set(drivername="postgresql")
    with psycopg.connect(url.render_as_string(hide_password=False), autocommit=True) as admin:
        for _ in range(200):
            worker.pause()
            ports = [
                connection.laddr.port
                for connection in psutil.Process(worker.pid).net_connections(kind="tcp")
                if connection.raddr and connection.raddr.port == (url.port or 5432)
            ]
            busy = admin.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE client_port = ANY(%s) AND state <> 'idle'",
                (ports,),
            ).fetchone()
            if busy is not None and busy[0] == 0:
                return
            worker.resume()
            time.sleep(random.uniform(0, 0.01))
    raise AssertionError("the worker was never caught outside a transaction")


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + RUN_DEADLINE_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def wait_terminal(http: httpx.Client, run_id: str) -> dict[str, Any]:
    found: dict[str, Any] = {}

    def ended() -> bool:
        found.update(snapshot(http, run_id))
        return found["status"] not in ("running", "paused", "cancelling")

    wait_until(ended, f"run {run_id} to end")
    return found


def events_of(fleet: Fleet, run_id: str) -> list[dict[str, Any]]:
    """The run's stored events, by sequence, each as its stored document."""
    import json

    rows = sorted(fleet.rows("events", run_id=run_id), key=lambda row: row["sequence"])
    return [json.loads(row["doc"]) for row in rows]


def landed_trials(fleet: Fleet, run_id: str) -> list[tuple[str, int]]:
    return sorted(
        (row["task_id"], row["trial"]) for row in fleet.rows("task_trials", run_id=run_id)
    )


def assert_log_whole(events: list[dict[str, Any]]) -> None:
    """Sequences exactly 0…last, event ids unique, one terminal event, last."""
    assert [event["sequence"] for event in events] == list(range(len(events)))
    assert len({event["eventId"] for event in events}) == len(events)
    terminal = [e for e in events if e["type"] in ("run.completed", "run.failed", "run.cancelled")]
    assert len(terminal) == 1
    assert events[-1] is terminal[0]


def without_latency(summary: dict[str, Any]) -> dict[str, Any]:
    """A summary with its measured latencies left out (wall time differs run to run)."""
    kept = {key: value for key, value in summary.items() if key != "tasks"}
    kept["tasks"] = [
        {key: value for key, value in task.items() if key != "latencyMs"}
        for task in summary["tasks"]
    ]
    return kept


__all__ = ["START_DEADLINE_SECONDS"]
