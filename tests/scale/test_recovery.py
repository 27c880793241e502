"""Recovery by lease: killed, stopped and poisoned workers; a cancel from another API process.

Each run must end once: every (task, trial) committed exactly once, sequences
exactly 0…last, no event id twice, one terminal event, last.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from openwop_client.wire_id import project_id

from .conftest import (
    Fleet,
    assert_log_whole,
    events_of,
    landed_trials,
    live_suite,
    snapshot,
    start_eval,
    stop_outside_transactions,
    suite,
    wait_terminal,
    wait_until,
    without_latency,
)


def _doing(fleet: Fleet, run_id: str) -> list[dict[str, object]]:
    return [job for job in fleet.jobs(run_id) if job["status"] == "doing"]


def test_a_killed_worker_loses_nothing_and_repeats_nothing(fleet: Fleet) -> None:
    api = fleet.serve()
    fleet.worker()
    fleet.worker()
    document = suite(60, 2, sleep=0.05)
    with fleet.http(api) as http:
        reference = start_eval(http, document)
        expected = wait_terminal(http, reference)
        assert expected["status"] == "completed"
        run_id = http.post(
            "/runs",
            json={
                "mode": "eval",
                "evalSuiteRef": f"{document['suiteId']}@1.0.0",
                "agentId": "scale.agent",
            },
        ).json()["runId"]
        wait_until(lambda: len(landed_trials(fleet, run_id)) >= 10, "trials to land")
        fleet.workers[0].kill()
        final = wait_terminal(http, run_id)
        summaries = [
            http.get(f"/runs/{project_id(run)}/eval-summary").json() for run in (reference, run_id)
        ]
    assert final["status"] == "completed", final
    pairs = [(f"t{task:04d}", trial) for task in range(60) for trial in range(2)]
    assert landed_trials(fleet, run_id) == pairs
    assert_log_whole(events_of(fleet, run_id))
    assert without_latency(summaries[0]) == without_latency(summaries[1])


def test_a_killed_workers_job_run_again_makes_no_landed_trials_live_calls_again(
    fleet: Fleet,
) -> None:
    """The job taken over from a killed worker skips the trials that had landed: run again,
    their live calls would repeat (their second landing refused, they show nowhere else)."""
    api = fleet.serve()
    killed = fleet.worker()
    gate = fleet.directory / "gate"
    last_gated = {3: {"gate": str(gate)}}
    gated = live_suite("scale-recovery.evals.live", 4, lambda index: last_gated.get(index, {}))
    with fleet.http(api) as http:
        run_id = start_eval(http, gated)
        landed = [(f"t{task:04d}", 0) for task in range(3)]
        wait_until(lambda: landed_trials(fleet, run_id) == landed, "three trials to land")
        # The fourth waits at its gate, before its live call; its job is the worker's.
        assert [job["status"] for job in fleet.jobs(run_id)] == ["doing"]
        killed.kill()
        fleet.worker()
        gate.touch()
        final = wait_terminal(http, run_id)
    assert final["status"] == "completed", final
    assert landed_trials(fleet, run_id) == [*landed, ("t0003", 0)]
    made = sorted(row["inputs"]["key"] for row in fleet.rows("tool_calls", run_id=run_id))
    assert made == [f"t{task:04d}" for task in range(4)]


def test_a_stopped_worker_that_comes_back_has_its_late_commits_refused(fleet: Fleet) -> None:
    api = fleet.serve()
    zombie = fleet.worker()
    with fleet.http(api) as http:
        run_id = start_eval(http, suite(8, 1, sleep=1.5))
        wait_until(lambda: bool(_doing(fleet, run_id)), "the zombie to take the job")
        time.sleep(0.3)  # its trials are now sleeping in the agent, uncommitted
        stop_outside_transactions(fleet, zombie)
        taken = _doing(fleet, run_id)[0]["id"]
        fleet.worker()
        wait_until(
            lambda: any(job["id"] != taken for job in _doing(fleet, run_id)),
            "another worker to run the zombie's work",
        )
        zombie.resume()  # its sleeps are over: it tries to commit its trials now
        wait_until(lambda: "is no longer this worker's" in zombie.output(), "a refusal")
        final = wait_terminal(http, run_id)
    assert final["status"] == "completed", final
    assert landed_trials(fleet, run_id) == [(f"t{task:04d}", 0) for task in range(8)]
    assert_log_whole(events_of(fleet, run_id))


def test_a_trial_that_kills_its_worker_every_time_fails_the_run_once(fleet: Fleet) -> None:
    api = fleet.serve(chunk_size=1)
    fleet.worker(max_stalls=2)
    fleet.worker(max_stalls=2)
    with fleet.http(api) as http:
        run_id = start_eval(http, suite(6, 1, sleep=0.05, inputs={3: {"kill": True}}))

        def ended() -> bool:
            fleet.replace_dead_workers(max_stalls=2)
            return snapshot(http, run_id)["status"] not in ("running", "paused")

        wait_until(ended, "the poisoned run to end")
        final = snapshot(http, run_id)
    assert final["status"] == "failed", final
    events = events_of(fleet, run_id)
    assert_log_whole(events)
    failed = [event for event in events if event["type"] == "run.failed"]
    assert failed[0]["payload"]["error"]["code"] == "worker_lost"
    assert ("t0003", 0) not in landed_trials(fleet, run_id)


def test_a_cancel_on_another_api_ends_the_run_once_and_idles_its_workers(fleet: Fleet) -> None:
    first, second = fleet.serve(chunk_size=4), fleet.serve(chunk_size=4)
    fleet.worker()
    fleet.worker()
    with fleet.http(first) as http:
        run_id = start_eval(http, suite(40, 1, sleep=1.0))
    wait_until(lambda: len(_doing(fleet, run_id)) >= 2, "both workers to be busy")
    with fleet.http(second) as http:
        answer = http.post(f"/runs/{project_id(run_id)}/cancel", json={"reason": "enough"})
        assert answer.status_code == 200, answer.text
        assert answer.json()["status"] == "cancelled"
        # Once no worker runs a trial, whatever was in flight has tried to commit.
        wait_until(_workers_idle(fleet), "the workers to finish the trials in flight")
        assert snapshot(http, run_id)["status"] == "cancelled"
    events = events_of(fleet, run_id)
    assert_log_whole(events)
    assert events[-1]["type"] == "run.cancelled"
    assert events[-1]["payload"]["reason"] == "enough"
    live = [job for job in fleet.jobs(run_id) if job["status"] in ("todo", "doing")]
    assert live == []
    assert _workers_idle(fleet)()
    assert json.dumps(events).count("run.cancelled") == 1


def _workers_idle(fleet: Fleet) -> Callable[[], bool]:
    """Whether every worker says it runs and waits on nothing."""

    def idle() -> bool:
        for worker in fleet.workers:
            queue = worker.health()["queue"]
            assert isinstance(queue, dict)
            if (queue["running"], queue["waiting"]) != (0, 0):
                return False
        return True

    return idle
