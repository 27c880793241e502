"""Every PostgreSQL backend of the fleet's database ended under it (a failover, a restart,
a pooler or an administrator ending them): the API process's pool and listener, the
worker's store, its queue connections (Procrastinate's pool and its LISTEN), its
heartbeat and everyone's lease session. The server itself is shared and stays up.

Work in flight must not be lost, nor run again where a run's agent or live tools would
repeat; the worker must go on taking jobs, and the API process on being woken by it.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from _backends import end_backends

from .conftest import (
    Fleet,
    assert_log_whole,
    events_of,
    landed_trials,
    start_eval,
    suite,
    wait_terminal,
    wait_until,
)


def _landed_at_least(fleet: Fleet, run_id: str, count: int) -> bool:
    return len(landed_trials(fleet, run_id)) >= count


def _health(fleet: Fleet, index: int) -> dict[str, Any]:
    with fleet.http(fleet.apis[index]) as http:
        document: dict[str, Any] = http.get("/host/wopeval/health").json()
    return document


def test_an_eval_whose_every_connection_was_cut_lands_each_trial_once(fleet: Fleet) -> None:
    api = fleet.serve()
    worker = fleet.worker()
    document = suite(40, 2, sleep=0.05)
    with fleet.http(api) as http:
        run_id = start_eval(http, document)
        for landed in (5, 30):
            wait_until(partial(_landed_at_least, fleet, run_id, landed), "trials to land")
            assert end_backends(fleet.database_url) > 0
        final = wait_terminal(http, run_id)
        assert final["status"] == "completed", (final, worker.output()[-4000:])
        pairs = [(f"t{task:04d}", trial) for task in range(40) for trial in range(2)]
        assert landed_trials(fleet, run_id) == pairs
        assert_log_whole(events_of(fleet, run_id))
        # The worker takes the next run's jobs, enqueued after another cut.
        assert end_backends(fleet.database_url) > 0
        after = start_eval(http, suite(3, 1))
        assert wait_terminal(http, after)["status"] == "completed"
    assert worker.alive()
    assert api.process.poll() is None
    wait_until(lambda: _health(fleet, 0).get("listener", {}).get("ok") is True, "listener")


def test_a_workflow_cut_while_its_agent_waits_runs_its_node_once(
    fleet: Fleet, tmp_path: Path
) -> None:
    api = fleet.serve()
    worker = fleet.worker()
    with fleet.http(api) as http:
        created = http.post(
            "/runs", json={"workflowId": "scale-gated", "inputs": {"dir": str(tmp_path)}}
        )
        assert created.status_code == 201, created.text
        run_id = created.json()["runId"]
        wait_until((tmp_path / "entered-0").exists, "the node's agent to wait")
        assert end_backends(fleet.database_url) > 0
        (tmp_path / "gate-0").touch()
        final = wait_terminal(http, run_id)
    assert final["status"] == "completed", (final, worker.output()[-4000:])
    assert sorted(path.name for path in tmp_path.glob("entered-*")) == ["entered-0"]
    assert_log_whole(events_of(fleet, run_id))
    assert worker.alive()
