"""A host killed outright (`kill -9`) mid-invocation leaves every executed live call recorded.

A real `wopeval serve` process runs an agent that increments the counter tool
in a loop; the counter's own rows are the ground truth of which calls ran.
After the kill, every increment that happened is in the run's record, a call
whose outcome never landed is `unknown`, and at the next start the run ends
`failed` once and is refused as an RFC 0252 fixture source.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

from _backends import Backend
from _processes import START_DEADLINE_SECONDS, ServeOptions, ServeProcess
from wopeval.engine.eval_runs.eval_plan import UNUSABLE_SOURCE

from ._loopback import LoopbackApi
from ._server import TENANT_A
from ._support import table_rows, unique
from .conftest import CRM_ENV_VARIABLE, write_project


def test_a_kill_mid_invocation_leaves_every_executed_live_call_recorded(
    backend: Backend, tmp_path: Path, loopback_api: LoopbackApi
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    write_project(project, loopback_api, "unused")
    data_dir = tmp_path / "data"
    key = "wop_crash_" + secrets.token_hex(16)
    options = ServeOptions(
        data_dir,
        backend.new_database(),
        (f"{TENANT_A}={key}",),
        project,
        env=((CRM_ENV_VARIABLE, "unused"),),
    )
    counter_key = unique("crash")
    serve = ServeProcess(options, tmp_path / "serve.log")
    serve.wait_up()
    with serve.http(key) as http:
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
        serve.kill()

    store_url = options.resolved_database_url()
    (counter,) = table_rows(store_url, "counters", key=counter_key)
    recorded = table_rows(store_url, "tool_calls", run_id=run_id)
    statuses = [row["status"] for row in recorded]
    done, unknown = statuses.count("ok"), statuses.count("unknown")
    assert set(statuses) <= {"ok", "unknown"}
    assert unknown <= 1
    # Every increment that happened is recorded; at most the one in flight has no outcome.
    assert done <= counter["count"] <= done + unknown
    assert counter["count"] >= 200

    serve = ServeProcess(options, tmp_path / "serve-again.log")
    serve.wait_up()
    with serve.http(key) as http:
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
    serve.stop()
