"""An immediate pause reaches a queue worker's eval trials: a trial cut before it handed its
last step to the log runs again after the resume, one cut while that step is on its way
lands once and is not run again (before, it landed and then ran its live calls again; its
second landing was a no-op, so only the repeated live calls showed it)."""

from __future__ import annotations

import random
import time
from collections import defaultdict

from openwop_client.wire_id import project_id

from .conftest import (
    AGENT,
    LIVE_TOOL,
    Fleet,
    assert_log_whole,
    events_of,
    landed_trials,
    live_suite,
    wait_terminal,
)

TASKS = 150


def test_immediate_pauses_of_a_queued_eval_run_no_landed_trial_again(fleet: Fleet) -> None:
    api = fleet.serve()
    fleet.worker(concurrency=16)
    # The tasks wait 0 to 80 ms first, so a pause finds their trials at different steps.
    document = live_suite(
        "scale-pauses.evals.live", TASKS, lambda index: {"sleep": (index % 5) * 0.02}
    )
    with fleet.http(api) as http:
        assert http.put("/host/wopeval/suites", json=document).status_code == 201
        created = http.post(
            "/runs",
            json={
                "mode": "eval",
                "evalSuiteRef": "scale-pauses.evals.live@1.0.0",
                "agentId": AGENT,
            },
        )
        assert created.status_code == 201, created.text
        run_id = created.json()["runId"]
        wire_id = project_id(run_id)
        pauses = 0
        # Each pause reaches the worker at its next look at the run (every 0.2 s) and cuts the
        # 16 trials running then, some of them with their last step on its way to the log;
        # pausing at random moments keeps the cuts from always finding the same step.
        while True:
            time.sleep(random.uniform(0.2, 0.6))
            paused = http.post(f"/runs/{wire_id}:pause", json={"drainPolicy": "immediate"})
            if paused.status_code == 409:
                break
            assert paused.status_code == 202, paused.text
            pauses += 1
            time.sleep(0.5)
            resumed = http.post(f"/runs/{wire_id}:resume", json={})
            assert resumed.status_code == 202, resumed.text
        final = wait_terminal(http, run_id)
    assert final["status"] == "completed", final
    assert pauses > 0
    assert landed_trials(fleet, run_id) == [(f"t{index:04d}", 0) for index in range(TASKS)]
    events = events_of(fleet, run_id)
    assert_log_whole(events)
    scored = [event["payload"]["taskId"] for event in events if event["type"] == "eval.scored"]
    assert sorted(scored) == [f"t{index:04d}" for index in range(TASKS)]
    # Every attempt of a trial made its live call (landed `unknown` before the tool ran); the
    # attempt that landed the trial is its last, so no live call of a task follows its own.
    landed = {row["invocation_id"] for row in fleet.rows("invocations", run_id=run_id)}
    calls: dict[str, list[tuple[int, bool]]] = defaultdict(list)
    for row in fleet.rows("tool_calls", run_id=run_id):
        assert (row["tool"], row["served_by"]) == (LIVE_TOOL, "live")
        calls[row["inputs"]["key"]].append((row["sequence"], row["invocation_id"] in landed))
    again = {task: sorted(made) for task, made in calls.items() if not max(made)[1]}
    assert again == {}
    # The pauses did cut attempts, which ran again (each task's earlier calls, unlanded).
    assert any(len(made) > 1 for made in calls.values())
    assert sorted(calls) == [f"t{index:04d}" for index in range(TASKS)]
