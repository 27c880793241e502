"""Readers on one API process woken by a worker's commits, a listener that is cut and comes
back, and a worker with another project that leaves the work alone."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy.engine import make_url

from .conftest import (
    PROJECT,
    Fleet,
    assert_log_whole,
    events_of,
    landed_trials,
    snapshot,
    start_eval,
    suite,
    wait_terminal,
    wait_until,
)


def _listener_health(fleet: Fleet, index: int) -> dict[str, Any]:
    with fleet.http(fleet.apis[index]) as http:
        response = http.get("/host/wopeval/health")
    body: dict[str, Any] = response.json()
    # While its listener is down the process is not ready: the checks come in the 503's details.
    document = body if response.status_code == 200 else body["details"]
    listener: dict[str, Any] = document["listener"]
    return listener


def test_a_cut_listener_reconnects_and_its_readers_still_finish(fleet: Fleet) -> None:
    fleet.serve()
    follower = fleet.serve()
    fleet.worker()
    with fleet.http(fleet.apis[0]) as http:
        run_id = start_eval(http, suite(40, 1, sleep=0.1))
    streamed: list[Any] = []
    reader = threading.Thread(
        target=lambda: streamed.extend(
            fleet.client(follower).runs_events(run_id, stream_mode="debug", reconnect=False)
        )
    )
    reader.start()
    dsn = make_url(fleet.database_url).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(dsn, autocommit=True) as admin:
        cut = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE application_name = 'wopeval listener' AND datname = current_database()"
        ).fetchall()
    assert len(cut) == 2  # one listener per API process
    wait_until(lambda: _listener_health(fleet, 1)["connects"] >= 2, "the listener to reconnect")
    with fleet.http(follower) as http:
        assert wait_terminal(http, run_id)["status"] == "completed"
    reader.join(60)
    assert not reader.is_alive()
    stored = events_of(fleet, run_id)
    assert_log_whole(stored)
    assert [event.sequence for event in streamed] == [event["sequence"] for event in stored]
    assert _listener_health(fleet, 1)["ok"] is True


def test_a_long_poll_on_another_api_is_woken_by_a_workers_commit(fleet: Fleet) -> None:
    fleet.serve()
    follower = fleet.serve()
    fleet.worker()
    with fleet.http(fleet.apis[0]) as http:
        run_id = start_eval(http, suite(1, 1, sleep=1.0))
    with fleet.http(follower) as http:
        first = http.get(f"/runs/{run_id.replace('/', '~2F')}/events/poll").json()
        # The next commit is the trial's, a second away; the poll would wait 60 s without it.
        woken = http.get(
            f"/runs/{run_id.replace('/', '~2F')}/events/poll",
            params={"afterSequence": first["lastSequence"], "timeout": 60},
            timeout=30.0,
        ).json()
    assert woken["events"], woken
    assert woken["events"][0]["sequence"] == first["lastSequence"] + 1


def test_a_worker_with_another_project_leaves_the_work_and_says_so(
    fleet: Fleet, tmp_path: Path
) -> None:
    other = tmp_path / "other-project"
    shutil.copytree(PROJECT, other, ignore=shutil.ignore_patterns("__pycache__"))
    (other / "notes.txt").write_text("another version of the project\n")
    api = fleet.serve()
    stranger = fleet.worker(project=other)
    with fleet.http(api) as http:
        run_id = start_eval(http, suite(4, 1))
        wait_until(
            lambda: "leaves them for a worker of that project" in stranger.output(),
            "the mismatch to be logged",
        )
        assert snapshot(http, run_id)["status"] == "running"
        assert landed_trials(fleet, run_id) == []
        fleet.worker()
        assert wait_terminal(http, run_id)["status"] == "completed"
    assert len(landed_trials(fleet, run_id)) == 4


def test_a_worker_whose_lease_session_is_cut_takes_it_again(fleet: Fleet) -> None:
    """A worker holds its shared lease on a session of its own; cut, it is taken again."""
    fleet.serve()
    worker = fleet.worker(env=(("WOPEVAL_LEASE_CHECK_SECONDS", "0.2"),))
    dsn = make_url(fleet.database_url).set(drivername="postgresql").render_as_string(False)
    name = f"wopeval owner pid={worker.pid}"

    def sessions() -> list[int]:
        with psycopg.connect(dsn, autocommit=True) as connection:
            rows = connection.execute(
                "SELECT a.pid FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid"
                " WHERE a.application_name = %s AND l.locktype = 'advisory' AND l.granted",
                (name,),
            ).fetchall()
        return [pid for (pid,) in rows]

    (first,) = sessions()
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (first,))
    wait_until(lambda: sessions() not in ([], [first]), "the worker to take its lease again")
    assert worker.alive()
    assert worker.health()["ready"] is True
