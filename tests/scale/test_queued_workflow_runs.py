"""Workflow runs executed by queue workers: a worker that lost its job writes nothing to the
run, and a pause reaches the worker that executes the run.

The run is the gated workflow (project/workflows/scale-gated.json): one node whose
agent waits, attempt by attempt, until the test opens that attempt's gate.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import httpx
import pytest
from openwop_client.wire_id import project_id

from _backends import allow_connections, end_backends

from .conftest import (
    Fleet,
    assert_log_whole,
    events_of,
    start_gated,
    stop_outside_transactions,
    wait_terminal,
    wait_until,
)

REFUSED = "is no longer this worker's"


def _types(fleet: Fleet, run_id: str) -> list[str]:
    return [event["type"] for event in events_of(fleet, run_id)]


def test_a_stopped_worker_that_comes_back_has_its_workflow_commits_refused(
    fleet: Fleet, tmp_path: Path
) -> None:
    api = fleet.serve()
    zombie = fleet.worker()
    with fleet.http(api) as http:
        run_id = start_gated(http, tmp_path)
        wait_until((tmp_path / "entered-0").exists, "the zombie's attempt to wait")
        stop_outside_transactions(fleet, zombie)
        fleet.worker()
        wait_until((tmp_path / "entered-1").exists, "another worker to run the node again")
        zombie.resume()
        (tmp_path / "gate-0").touch()  # the zombie's attempt ends: it tries to commit now
        wait_until(
            lambda: REFUSED in zombie.output() or "node.completed" in _types(fleet, run_id),
            "the zombie's commit",
        )
        assert REFUSED in zombie.output()
        assert not {"node.completed", "eval.scored"} & set(_types(fleet, run_id))
        (tmp_path / "gate-1").touch()
        final = wait_terminal(http, run_id)
    assert final["status"] == "completed", final
    events = events_of(fleet, run_id)
    assert_log_whole(events)
    assert [event["type"] for event in events].count("node.completed") == 1


def test_an_immediate_pause_cuts_the_workers_node_which_starts_afresh_on_resume(
    fleet: Fleet, tmp_path: Path
) -> None:
    api = fleet.serve()
    fleet.worker()
    with fleet.http(api) as http:
        run_id = start_gated(http, tmp_path)
        wire_id = project_id(run_id)
        wait_until((tmp_path / "entered-0").exists, "the node's attempt to wait")
        paused = http.post(f"/runs/{wire_id}:pause", json={"drainPolicy": "immediate"})
        assert paused.status_code == 202, paused.text
        assert paused.json()["status"] == "paused"
        wait_until((tmp_path / "cut-0").exists, "the worker to cut the attempt")
        kinds = _types(fleet, run_id)
        assert kinds[-1] == "run.paused"
        assert "node.completed" not in kinds
        assert "node.failed" not in kinds
        resumed = http.post(f"/runs/{wire_id}:resume", json={})
        assert resumed.status_code == 202, resumed.text
        wait_until((tmp_path / "entered-1").exists, "the node's fresh attempt")
        (tmp_path / "gate-1").touch()
        final = wait_terminal(http, run_id)
    assert final["status"] == "completed", final
    events = events_of(fleet, run_id)
    assert_log_whole(events)
    kinds = [event["type"] for event in events]
    # The worker writes a node's steps when the node ends: the cut attempt left none.
    assert (kinds.count("node.started"), kinds.count("node.completed")) == (1, 1)
    assert kinds.index("run.paused") < kinds.index("run.resumed") < kinds.index("node.completed")


def _start_eval(http: httpx.Client, gates: Path) -> str:
    """An eval run of one task, one trial, of the gated agent."""
    suite = {
        "suiteId": f"scale-{secrets.token_hex(6)}.evals.gated",
        "version": "1.0.0",
        "modes": ["golden"],
        "targetAgentId": GATED,
        "tasks": [
            {
                "taskId": "t1",
                "input": {"dir": str(gates)},
                "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "released"}},
            }
        ],
    }
    published = http.put("/host/wopeval/suites", json=suite)
    assert published.status_code == 201, published.text
    ref = f"{suite['suiteId']}@{suite['version']}"
    created = http.post("/runs", json={"mode": "eval", "evalSuiteRef": ref, "agentId": GATED})
    assert created.status_code == 201, created.text
    run_id: str = created.json()["runId"]
    return run_id


GATED = "scale.gated"


@pytest.mark.parametrize("mode", ["workflow", "eval"])
def test_a_step_a_worker_cannot_land_ends_its_run_failed_store_unreachable(
    fleet: Fleet, tmp_path: Path, mode: str
) -> None:
    """The database out of reach when the worker's node or trial ends: its step does not
    land, and the run ends failed `store_unreachable` once the database is back, not as a
    crash of the worker (`internal_error`)."""
    api = fleet.serve()
    worker = fleet.worker()
    with fleet.http(api) as http:
        run_id = (start_gated if mode == "workflow" else _start_eval)(http, tmp_path)
        wait_until((tmp_path / "entered-0").exists, "the node's attempt to wait")
        allow_connections(fleet.database_url, False)
        try:
            assert end_backends(fleet.database_url) > 0
            (tmp_path / "gate-0").touch()
            wait_until(lambda: "did not land" in worker.output(), "the step not to land")
        finally:
            allow_connections(fleet.database_url, True)
        final = wait_terminal(http, run_id)
    assert final["status"] == "failed", final
    assert final["error"]["code"] == "store_unreachable", final
    assert "crashed" not in worker.output()
    assert not {"node.completed", "eval.scored"} & set(_types(fleet, run_id))
