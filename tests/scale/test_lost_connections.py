"""Every PostgreSQL backend of the fleet's database ended under it (a failover, a restart,
a pooler or an administrator ending them): the API process's pool and listener, the
worker's store, its queue connections (Procrastinate's pool and its LISTEN), its
heartbeat and everyone's lease session. The server itself is shared and stays up.

Work in flight must not be lost, nor run again where a run's agent or live tools would
repeat; the worker must go on taking jobs, and the API process on being woken by it.
"""

from __future__ import annotations

import random
import time
from functools import partial
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy.engine import make_url

from _backends import allow_connections, end_backends, terminate

from .conftest import (
    Fleet,
    assert_log_whole,
    events_of,
    landed_trials,
    start_eval,
    start_gated,
    stop_outside_transactions,
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


def test_a_worker_outlives_its_database_out_of_reach(fleet: Fleet) -> None:
    """Every backend ended and the database refusing connections for a few heartbeats (a
    restart, a failover, as a client sees it): the worker's heartbeat and fetch fail
    meanwhile; once the database is back it takes the next run's jobs."""
    api = fleet.serve()
    worker = fleet.worker()
    allow_connections(fleet.database_url, False)
    try:
        assert end_backends(fleet.database_url) > 0
        time.sleep(3 * worker.options.heartbeat_seconds)  # not a timing assertion: an outage
    finally:
        allow_connections(fleet.database_url, True)
    with fleet.http(api) as http:
        run_id = start_eval(http, suite(3, 1))
        final = wait_terminal(http, run_id)
    assert final["status"] == "completed", (final, worker.output()[-4000:])
    assert worker.alive(), worker.output()[-4000:]


def _end_worker_statement(fleet: Fleet, lock: str, function: str) -> None:
    """Hold `lock` in a transaction of the test's, until a statement of the worker's queue
    connections calling `function` waits on it; end that backend (its statement cut under
    way, as a failover cuts it), then let the lock go."""
    dsn = make_url(fleet.database_url).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(dsn) as holder, psycopg.connect(dsn, autocommit=True) as admin:
        holder.execute(lock)
        waiting: list[int] = []

        def found() -> bool:
            rows = admin.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                " AND application_name = 'wopeval worker' AND wait_event_type = 'Lock'"
                " AND query LIKE %s",
                (f"%{function}%",),
            ).fetchall()
            waiting[:] = [pid for (pid,) in rows]
            return bool(waiting)

        wait_until(found, f"the worker's {function} to wait")
        terminate(admin, waiting)
        holder.rollback()


def test_a_worker_whose_heartbeat_was_cut_under_way_keeps_taking_jobs(fleet: Fleet) -> None:
    """A heartbeat cut under way, waiting on a row lock (held before this branch:
    Procrastinate's heartbeat survives it)."""
    api = fleet.serve()
    worker = fleet.worker()
    _end_worker_statement(
        fleet,
        "SELECT 1 FROM procrastinate_workers FOR UPDATE",
        "procrastinate_update_heartbeat",
    )
    with fleet.http(api) as http:
        final = wait_terminal(http, start_eval(http, suite(3, 1)))
    assert final["status"] == "completed", (final, worker.output()[-4000:])
    assert worker.alive(), worker.output()[-4000:]


def test_a_worker_whose_fetch_was_cut_under_way_keeps_taking_jobs(fleet: Fleet) -> None:
    """Procrastinate's worker loop raises when a fetch fails under way; the worker process
    died of it (a fleet lost every worker fetching at a failover), and now starts its loop
    again."""
    api = fleet.serve()
    worker = fleet.worker()
    _end_worker_statement(
        fleet, "LOCK TABLE procrastinate_jobs IN ACCESS EXCLUSIVE MODE", "procrastinate_fetch_job"
    )
    with fleet.http(api) as http:
        final = wait_terminal(http, start_eval(http, suite(3, 1)))
    assert final["status"] == "completed", (final, worker.output()[-4000:])
    assert worker.alive(), worker.output()[-4000:]


def test_a_workflow_cut_while_its_agent_waits_runs_its_node_once(
    fleet: Fleet, tmp_path: Path
) -> None:
    api = fleet.serve()
    worker = fleet.worker()
    with fleet.http(api) as http:
        run_id = start_gated(http, tmp_path)
        wait_until((tmp_path / "entered-0").exists, "the node's agent to wait")
        assert end_backends(fleet.database_url) > 0
        (tmp_path / "gate-0").touch()
        final = wait_terminal(http, run_id)
    assert final["status"] == "completed", (final, worker.output()[-4000:])
    assert sorted(path.name for path in tmp_path.glob("entered-*")) == ["entered-0"]
    assert_log_whole(events_of(fleet, run_id))
    assert worker.alive()


def test_a_storm_of_cuts_leaves_no_run_hanging(fleet: Fleet, tmp_path: Path) -> None:
    """25 cuts of every backend a few tens of ms apart, while eval and workflow runs execute
    on a worker: each run ends (completed, or failed `store_unreachable` where a step could
    not land), its log whole, and the worker lives on. A run that never ends fails the
    test by its deadline."""
    api = fleet.serve()
    worker = fleet.worker()
    with fleet.http(api) as http:
        runs = [start_eval(http, suite(20, 2, sleep=0.05, calls=2)) for _ in range(2)]
        for index in range(3):
            gates = tmp_path / f"workflow-{index}"
            gates.mkdir()
            for attempt in range(30):  # every attempt of its node goes through at once
                (gates / f"gate-{attempt}").touch()
            runs.append(start_gated(http, gates))
        for _ in range(25):
            end_backends(fleet.database_url)
            time.sleep(random.uniform(0.0, 0.06))  # not a timing assertion: the storm's gaps
        for run_id in runs:
            final = wait_terminal(http, run_id)
            assert final["status"] in ("completed", "failed"), final
            if final["status"] == "failed":
                assert final["error"]["code"] == "store_unreachable", final
            assert_log_whole(events_of(fleet, run_id))
    assert worker.alive(), worker.output()[-4000:]


def test_a_job_whose_end_was_cut_under_way_does_not_stay_running(fleet: Fleet) -> None:
    """Procrastinate's write of a job's end (its row deleted, succeeded) cut under way: the
    job stayed `doing` under its live worker for good, which no stall or orphan check
    takes (here its run had completed; a job that ended before its work did left its run
    running for good, below). The worker's maintenance takes it."""
    api = fleet.serve()
    worker = fleet.worker()
    with fleet.http(api) as http:
        run_id = start_eval(http, suite(1, 1, sleep=1.0))
        wait_until(lambda: [job["status"] for job in fleet.jobs(run_id)] == ["doing"], "its job")
        # Its row's delete cascades to Procrastinate's events, which the lock holds back.
        _end_worker_statement(
            fleet, "LOCK TABLE procrastinate_events IN EXCLUSIVE MODE", "procrastinate_finish_job"
        )
        assert wait_terminal(http, run_id)["status"] == "completed"
    wait_until(
        lambda: all(job["status"] != "doing" for job in fleet.jobs(run_id)), "its job to end"
    )
    assert worker.alive(), worker.output()[-4000:]


def test_a_job_whose_end_went_unrecorded_runs_again(fleet: Fleet) -> None:
    """A job the queue holds as a live worker's (`doing`, its heartbeat fresh) that runs
    nowhere in it: Procrastinate wrote the job's end on a connection that was lost, here
    made by hand. No stall or orphan check would take it, and its run hung; the worker's
    maintenance finds it and runs its work again, and the run completes."""
    api = fleet.serve()
    worker = fleet.worker(stall_seconds=60.0)  # held back a moment, it is not stalled
    dsn = make_url(fleet.database_url).set(drivername="postgresql").render_as_string(False)
    with fleet.http(api) as http:
        stop_outside_transactions(fleet, worker)
        try:
            run_id = start_eval(http, suite(3, 1))
            with psycopg.connect(dsn) as connection:
                taken = connection.execute(
                    "UPDATE procrastinate_jobs SET status = 'doing',"
                    " worker_id = (SELECT id FROM procrastinate_workers)"
                    " WHERE args ->> 'run_id' = %s AND status = 'todo'",
                    (run_id,),
                ).rowcount
            assert taken == 1
        finally:
            worker.resume()
        final = wait_terminal(http, run_id)
    assert final["status"] == "completed", (final, worker.output()[-4000:])
    assert landed_trials(fleet, run_id) == [(f"t{task:04d}", 0) for task in range(3)]
    assert_log_whole(events_of(fleet, run_id))
