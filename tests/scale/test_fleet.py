"""Two API processes and two workers on one PostgreSQL database: runs created on one API,
followed on the other, executed by the workers; an API restart fails nothing."""

from __future__ import annotations

import threading
from typing import Any

from wopeval.conformance.results import Disposition
from wopeval.conformance.runner import leg_ids, run_conformance
from wopeval.conformance.session import Target

from .conftest import (
    Fleet,
    assert_log_whole,
    events_of,
    landed_trials,
    start_eval,
    suite,
    wait_terminal,
)


def test_an_eval_created_on_one_api_streams_whole_from_the_other_across_a_restart(
    fleet: Fleet,
) -> None:
    first, second = fleet.serve(), fleet.serve()
    fleet.worker()
    fleet.worker()
    document = suite(200, 3, sleep=0.002)
    with fleet.http(first) as http:
        run_id = start_eval(http, document)
    streamed: list[Any] = []
    reader = threading.Thread(
        target=lambda: streamed.extend(
            fleet.client(second).runs_events(run_id, stream_mode="debug", reconnect=False)
        )
    )
    reader.start()
    first.stop()  # mid-run: API processes own no run, so this fails nothing
    restarted = fleet.serve()
    with fleet.http(restarted) as http:
        final = wait_terminal(http, run_id)
    reader.join(120)
    assert not reader.is_alive()
    assert final["status"] == "completed", final
    stored = events_of(fleet, run_id)
    assert_log_whole(stored)
    assert [event.sequence for event in streamed] == [event["sequence"] for event in stored]
    assert [event.eventId for event in streamed] == [event["eventId"] for event in stored]
    pairs = [(f"t{task:04d}", trial) for task in range(200) for trial in range(3)]
    assert landed_trials(fleet, run_id) == pairs
    types = [event["type"] for event in stored]
    assert types.count("eval.scored") == 200
    assert types.count("eval.completed") == 1
    assert types[-2:] == ["eval.completed", "run.completed"]
    assert "host_restarted" not in str(final)


def test_the_conformance_legs_pass_against_two_apis_and_two_workers(fleet: Fleet) -> None:
    fleet.serve()
    second = fleet.serve()
    fleet.worker()
    fleet.worker()
    report = run_conformance(Target(second.url, fleet.key, fleet.key_b))
    failing = [r for r in report.results if r.disposition is not Disposition.EXECUTED_PASS]
    assert not failing
    assert {r.id for r in report.results} == set(leg_ids())
    assert report.ok
