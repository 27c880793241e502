"""A host killed outright (`kill -9`) mid-invocation leaves every executed live call recorded.

A real `wopeval serve` process runs an agent that increments the counter tool
in a loop; the counter's own rows are the ground truth of which calls ran.
After the kill, every increment that happened is in the run's record, a call
whose outcome never landed is `unknown`, and at the next start the run ends
`failed` once and is refused as an RFC 0252 fixture source.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from _backends import Backend
from wopeval.engine.eval_plan import UNUSABLE_SOURCE

from ._loopback import LoopbackApi
from ._server import TENANT_A, free_port
from ._support import table_rows, unique
from .conftest import CRM_ENV_VARIABLE, write_project

WOPEVAL = str(Path(sys.executable).with_name("wopeval"))
START_DEADLINE_SECONDS = 60.0


@contextmanager
def _serve(
    data_dir: Path, project: Path, database_url: str | None, key: str
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    command = [WOPEVAL, "serve", "--port", str(port), "--data-dir", str(data_dir)]
    command += ["--project", str(project), "--api-key", f"{TENANT_A}={key}"]
    if database_url is not None:
        command += ["--database-url", database_url]
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("WOPEVAL_")}
    env[CRM_ENV_VARIABLE] = "unused"
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        while True:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            try:
                if httpx.get(f"{url}/.well-known/openwop", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "wopeval serve did not start"
            time.sleep(0.05)
        yield url, process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
        if process.stderr is not None:
            process.stderr.close()


def _client(url: str, key: str) -> httpx.Client:
    return httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {key}"}, trust_env=False, timeout=30
    )


def test_a_kill_mid_invocation_leaves_every_executed_live_call_recorded(
    backend: Backend, tmp_path: Path, loopback_api: LoopbackApi
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    write_project(project, loopback_api, "unused")
    data_dir = tmp_path / "data"
    database_url = backend.new_database()
    key = "wop_crash_" + secrets.token_hex(16)
    counter_key = unique("crash")
    with _serve(data_dir, project, database_url, key) as (url, process), _client(url, key) as http:
        created = http.post(
            "/runs",
            json={
                "workflowId": "e2e-counting",
                "inputs": {"calls": 100_000, "key": counter_key},
            },
        )
        assert created.status_code == 201, created.text
        run_id = created.json()["runId"]
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        while http.get(f"/host/wopeval/conformance/counter/{counter_key}").json()["count"] < 200:
            assert time.monotonic() < deadline, "the agent never got going"
            time.sleep(0.02)
        os.kill(process.pid, signal.SIGKILL)

    store_url = database_url or f"sqlite+aiosqlite:///{(data_dir / 'wopeval.db').resolve()}"
    (counter,) = table_rows(store_url, "counters", key=counter_key)
    recorded = table_rows(store_url, "tool_calls", run_id=run_id)
    statuses = [row["status"] for row in recorded]
    done, unknown = statuses.count("ok"), statuses.count("unknown")
    assert set(statuses) <= {"ok", "unknown"}
    assert unknown <= 1
    # Every increment that happened is recorded; at most the one in flight has no outcome.
    assert done <= counter["count"] <= done + unknown
    assert counter["count"] >= 200

    with _serve(data_dir, project, database_url, key) as (url, _), _client(url, key) as http:
        log = http.get(f"/runs/{run_id.replace('/', '~2F')}/events/poll").json()
        kinds = [event["type"] for event in log["events"]]
        assert kinds[-1] == "run.failed"
        assert kinds.count("run.failed") == 1
        assert kinds.count("agent.tool-called") == len(recorded)
        assert kinds.count("agent.tool-returned") == done
        assert log["events"][-1]["payload"]["error"]["code"] == "host_restarted"
        suite = {
            "suiteId": "e2e.evals.crash-replay",
            "version": "1.0.0",
            "modes": ["golden"],
            "targetAgentId": "e2e.counting-agent",
            "tasks": [
                {
                    "taskId": "record",
                    "input": {"calls": 1, "key": counter_key},
                    "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "x"}},
                }
            ],
        }
        assert http.put("/host/wopeval/suites", json=suite).status_code == 201
        as_source = http.post(
            "/runs",
            json={
                "mode": "eval",
                "evalSuiteRef": "e2e.evals.crash-replay@1.0.0",
                "agentId": "e2e.counting-agent",
                "fixtureRuns": {"record": run_id},
            },
        )
        # RFC 0252 §C: a call whose outcome is unknown is not "held with its result".
        if unknown:
            assert as_source.status_code == 400, as_source.text
            assert as_source.json()["message"] == UNUSABLE_SOURCE
        else:
            assert as_source.status_code == 201, as_source.text
