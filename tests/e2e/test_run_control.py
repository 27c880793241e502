"""A run's live calls as they happen, and a caller's commands racing the run (runs.md §Cancel,
§Bulk cancel, §Pause and resume) — over the wire with the official client."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openwop_client import OpenwopClient, WopError
from openwop_client.types import BulkCancelRunsRequest, CreateRunRequest, PauseRunRequest
from openwop_client.wire_id import project_id

from ._gate import DEADLINE_SECONDS
from ._server import TENANT_A, TENANT_B, ServerHandle
from ._support import (
    assert_refused,
    check_envelope,
    create_counter_run,
    table_rows,
    types_of,
    unique,
    wait_terminal,
)

STEPPER = "e2e-stepper"
TWO_STEPS = "e2e-two-steps"


class Steps:
    """The gates of a stepping run: call `i` of the waiting tool touches `entered-i`, then waits
    for `gate-i`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def wait_entered(self, index: int) -> None:
        deadline = time.monotonic() + DEADLINE_SECONDS
        while not (self.directory / f"entered-{index}").exists():
            assert time.monotonic() < deadline, f"call {index} never started"
            time.sleep(0.01)

    def entered(self, index: int) -> bool:
        return (self.directory / f"entered-{index}").exists()

    def release(self, index: int) -> None:
        (self.directory / f"gate-{index}").touch()

    def release_all(self, count: int = 20) -> None:
        for index in range(count):
            self.release(index)


@pytest.fixture
def steps(tmp_path: Path) -> Iterator[Steps]:
    gates = Steps(tmp_path)
    try:
        yield gates
    finally:
        gates.release_all()


def _start(client: OpenwopClient, workflow: str, steps: Steps, count: int) -> str:
    request = CreateRunRequest(
        workflowId=workflow, inputs={"steps": count, "dir": str(steps.directory)}
    )
    run_id: str = client.runs_create(request).runId
    return run_id


def _log(client: OpenwopClient, run_id: str) -> list[Any]:
    return list(client.runs_poll_events(run_id, timeout_seconds=1).events)


def _until(client: OpenwopClient, run_id: str, type_: str, count: int = 1) -> list[Any]:
    """Poll the log until it holds `count` events of `type_`; returns the log."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        events = _log(client, run_id)
        if types_of(events).count(type_) >= count:
            return events
        time.sleep(0.02)
    raise AssertionError(f"{type_} x{count} never appeared in {run_id}")


def _assert_no_event_follows(client: OpenwopClient, run_id: str, sequence: int) -> None:
    """Long-poll the log past `sequence`: an event a paused host should not write fails the
    test the moment it lands, naming itself, instead of after a blind sleep."""
    later = client.runs_poll_events(run_id, after_sequence=sequence, timeout_seconds=1).events
    assert not later, [event.type for event in later]


def test_a_follower_sees_each_live_call_while_the_invocation_runs(
    patient_server: ServerHandle, steps: Steps
) -> None:
    client = patient_server.client()
    run_id = _start(client, STEPPER, steps, 3)
    for index in range(3):
        steps.wait_entered(index)
        # The tool is still running: its call is already in the log and in the record.
        events = _log(client, run_id)
        assert types_of(events).count("agent.tool-called") == index + 1
        assert types_of(events).count("agent.tool-returned") == index
        assert events[-1].type == "agent.tool-called"
        recorded = table_rows(patient_server.database_url, "tool_calls", run_id=run_id)
        assert sorted(row["status"] for row in recorded) == sorted(["ok"] * index + ["unknown"])
        steps.release(index)
        returned = _until(client, run_id, "agent.tool-returned", index + 1)
        outcomes = [e.payload["outcome"] for e in returned if e.type == "agent.tool-returned"]
        assert outcomes == [{"index": done} for done in range(index + 1)]
    assert types_of(wait_terminal(client, run_id))[-1] == "run.completed"


def _cancel(client: OpenwopClient, run_id: str) -> str | WopError:
    """The cancel's answered status, or the refusal it got."""
    try:
        status: str = client.runs_cancel(run_id).status
    except WopError as refused:
        return refused
    return status


@pytest.mark.parametrize("tries", [60])
def test_cancel_races_give_only_spec_answers(patient_server: ServerHandle, tries: int) -> None:
    client = patient_server.client()
    outcomes: dict[str, int] = {"cancelled": 0, "refused": 0}
    for attempt in range(tries):
        run_id = create_counter_run(client, unique(f"race-{attempt}"))
        time.sleep(random.uniform(0, 0.01))
        answer = _cancel(client, run_id)
        if isinstance(answer, WopError):
            assert (answer.status, answer.envelope and answer.envelope.error) == (
                409,
                "run_terminal",
            )
            assert types_of(wait_terminal(client, run_id))[-1] == "run.completed"
            outcomes["refused"] += 1
            continue
        assert answer in ("cancelling", "cancelled")
        events = wait_terminal(client, run_id)
        assert types_of(events)[-1] == "run.cancelled"
        assert [e.type for e in events].count("run.cancelled") == 1
        assert "run.completed" not in types_of(events)
        assert client.runs_get(run_id).status == "cancelled"
        outcomes["cancelled"] += 1
    assert sum(outcomes.values()) == tries


def test_pause_lets_the_executing_node_finish_and_starts_no_other(
    patient_server: ServerHandle, steps: Steps
) -> None:
    client = patient_server.client()
    run_id = _start(client, TWO_STEPS, steps, 1)
    steps.wait_entered(0)
    paused = client.runs_pause(run_id)
    assert (paused.runId, paused.status) == (run_id, "paused")
    assert paused.pausedAt
    assert client.runs_get(run_id).status == "paused"
    assert_refused(lambda: client.runs_pause(run_id), 409, "run_state_conflict")
    steps.release(0)
    events = _until(client, run_id, "node.completed")
    # A host that ignored the pause would now start the next node (`node.started`).
    _assert_no_event_follows(client, run_id, events[-1].sequence)
    assert not steps.entered(1)
    assert _log(client, run_id)[-1].type == "node.completed"
    assert client.runs_get(run_id).status == "paused"
    paused_event = next(e for e in events if e.type == "run.paused")
    assert paused_event.payload == {"drainPolicy": "drain-current-node"}

    resumed = client.runs_resume(run_id)
    assert (resumed.status, bool(resumed.resumedAt)) == ("running", True)
    assert_refused(lambda: client.runs_resume(run_id), 409, "run_state_conflict")
    steps.wait_entered(1)
    steps.release(1)
    final = wait_terminal(client, run_id)
    kinds = types_of(final)
    assert kinds[-1] == "run.completed"
    assert kinds.index("run.paused") < kinds.index("node.completed") < kinds.index("run.resumed")
    assert kinds.count("node.started") == 2
    assert_refused(lambda: client.runs_pause(run_id), 409, "run_terminal")
    assert_refused(lambda: client.runs_resume(run_id), 409, "run_terminal")


def test_an_immediate_pause_cuts_the_attempt_which_starts_afresh_on_resume(
    patient_server: ServerHandle, steps: Steps
) -> None:
    client = patient_server.client()
    run_id = _start(client, TWO_STEPS, steps, 1)
    steps.wait_entered(0)
    client.runs_pause(run_id, PauseRunRequest(drainPolicy="immediate"))
    events = _until(client, run_id, "run.paused")
    # A host that let the attempt finish would now write `node.completed` (or `node.failed`).
    _assert_no_event_follows(client, run_id, events[-1].sequence)
    events = _log(client, run_id)
    assert events[-1].type == "run.paused"
    assert "node.completed" not in types_of(events)
    assert "node.failed" not in types_of(events)
    client.runs_resume(run_id)
    steps.wait_entered(1)  # the first node's fresh attempt calls the tool again
    steps.release(1)
    steps.wait_entered(2)  # then the second node
    steps.release(2)
    kinds = types_of(wait_terminal(client, run_id))
    assert kinds[-1] == "run.completed"
    first_attempts = kinds.count("node.started")
    assert first_attempts == 3  # first (cut), first (again), second
    assert kinds.count("node.completed") == 2
    cut = table_rows(patient_server.database_url, "tool_calls", run_id=run_id)
    # The cut attempt's live call ran (its effect may have happened): it stays on record.
    assert sorted(row["status"] for row in cut) == ["ok", "ok", "unknown"]


def test_a_paused_run_can_be_cancelled(patient_server: ServerHandle, steps: Steps) -> None:
    client = patient_server.client()
    run_id = _start(client, TWO_STEPS, steps, 1)
    steps.wait_entered(0)
    client.runs_pause(run_id)
    steps.release(0)
    _until(client, run_id, "node.completed")
    answer = client.runs_cancel(run_id)
    assert answer.status in ("cancelling", "cancelled")
    kinds = types_of(wait_terminal(client, run_id))
    assert kinds[-1] == "run.cancelled"
    assert kinds.count("node.started") == 1


def test_bulk_cancel_answers_each_id_in_request_order(
    patient_server: ServerHandle, steps: Steps
) -> None:
    client = patient_server.client()
    first = _start(client, STEPPER, steps, 1)
    steps.wait_entered(0)
    finished = create_counter_run(client, unique("bulk"))
    wait_terminal(client, finished)
    foreign = patient_server.client(TENANT_B).runs_create(
        CreateRunRequest(workflowId="conformance-noop")
    )
    unknown = f"{TENANT_A}/{'0' * 32}"
    asked = [first, finished, foreign.runId, unknown, "not an id"]
    answer = client.runs_bulk_cancel(BulkCancelRunsRequest(runIds=asked, reason="cleanup"))
    results = answer.results
    assert [result.runId for result in results] == asked
    assert results[0].ok
    assert results[0].status in ("cancelling", "cancelled")
    codes = [(r.ok, (r.error or {}).get("error")) for r in results[1:]]
    assert codes == [
        (False, "run_terminal"),
        (False, "id_tenant_mismatch"),
        (False, "not_found"),
        (False, "not_found"),
    ]
    for result, status in zip(results[1:], (409, 403, 404, 404), strict=True):
        check_envelope(result.error, status, (result.error or {})["error"])
    events = wait_terminal(client, first)
    assert events[-1].type == "run.cancelled"
    assert events[-1].payload == {"reason": "cleanup"}


def test_bulk_cancel_over_the_cap_is_refused_whole(patient_server: ServerHandle) -> None:
    client = patient_server.client()
    ids = [f"{TENANT_A}/{index:032x}" for index in range(101)]
    body = assert_refused(
        lambda: client.runs_bulk_cancel(BulkCancelRunsRequest(runIds=ids)), 400, "validation_error"
    )
    assert body["details"] == {"maxRunIds": 100}


def test_an_active_runs_tool_content_cannot_be_erased_until_it_ends(
    patient_server: ServerHandle, steps: Steps
) -> None:
    """Erasing a running run's tool content would leave what it records next (and what its
    agent holds) unerased: refused with 409 `run_state_conflict` saying the run itself is
    active (not a copy of it), nothing erased; once it has ended, the same request erases it."""
    client = patient_server.client()
    run_id = _start(client, STEPPER, steps, 1)
    steps.wait_entered(0)
    path = f"/host/wopeval/runs/{project_id(run_id)}:erase-tool-content"
    with patient_server.http(TENANT_A) as http:
        refused = http.post(path)
        envelope = check_envelope(refused.json(), 409, "run_state_conflict")
        assert refused.status_code == 409
        assert envelope["message"] == "An active run's tool content cannot be erased yet."
        assert envelope["details"] == {"runStatus": "running"}
        recorded = table_rows(patient_server.database_url, "tool_calls", run_id=run_id)
        assert [row["erased_at"] for row in recorded] == [None]
        steps.release(0)
        wait_terminal(client, run_id)
        assert http.post(path).status_code == 200
