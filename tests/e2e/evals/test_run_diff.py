"""`diffRun` on eval runs: a changed agent replayed from its source, and an active run.

The file agent (`FILE_AGENT`) makes the calls a file lists, so one suite, one
agent id and one fixture source serve both replays; only the agent's behaviour
changes between them, as it does when a team edits its agent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from openwop_client.types import CreateRunRequest
from openwop_client.wire_id import project_id

from .._gate import Gate
from .._server import ServerHandle
from .._support import unique, wait_terminal
from ._evals import counter_call, golden, live_calls, new_suite_id, publish, run_eval, suite
from .conftest import FILE_AGENT, GATE_WORKFLOW


def _script(path: Path, calls: list[dict[str, Any]]) -> None:
    path.write_text(json.dumps({"calls": calls, "answer": "done"}))


def test_a_changed_agent_replayed_from_its_source_diverges_at_the_changed_call(
    eval_project_server: ServerHandle, tmp_path: Path
) -> None:
    client = eval_project_server.client()
    script = tmp_path / "agent.json"
    key, other = unique("diff-key"), unique("diff-other")
    _script(script, [counter_call("inc", key), counter_call("read", key)])
    task = {"taskId": "record", "input": {"script": str(script)}, "expected": golden("done")}
    document = suite(new_suite_id("diff"), [task], target=FILE_AGENT)
    with eval_project_server.http() as http:
        ref = publish(http, document)
        source = run_eval(client, http, ref, FILE_AGENT)
        given = {"fixtureRuns": {"record": source.run_id}}
        replay = run_eval(client, http, ref, FILE_AGENT, **given)
        _script(script, [counter_call("inc", key), counter_call("read", other)])
        drift = run_eval(client, http, ref, FILE_AGENT, **given)
        assert live_calls(http, replay.run_id) == live_calls(http, drift.run_id) == 0
    assert drift.summary["fixtureMissCount"] == 1

    # The replay took the source's answers: its trajectory is the source's, and only
    # what it was given (`eval.started.fixtureRuns`) sets it apart.
    same = client.runs_diff(source.run_id, replay.run_id)
    assert same is not None
    assert [(entry.seq, entry.op) for entry in same.eventDiffs] == [(1, "changed")]
    assert same.eventDiffs[0].bEvent is not None
    assert same.eventDiffs[0].bEvent["payload"]["fixtureRuns"] == {"record": source.run_id}
    assert same.stateDiff == {}

    diff = client.runs_diff(replay.run_id, drift.run_id)
    assert diff is not None
    calls = [e for e in replay.events if e.type == "agent.tool-called"]
    changed = calls[1].sequence
    assert diff.divergedAtSeq == changed
    called, returned = diff.eventDiffs[0], diff.eventDiffs[1]
    assert (called.seq, called.op) == (changed, "changed")
    assert (returned.seq, returned.op) == (changed + 1, "changed")
    assert called.aEvent is not None
    assert called.bEvent is not None
    assert called.aEvent["payload"]["inputs"] == {"op": "read", "key": key}
    assert called.bEvent["payload"]["inputs"] == {"op": "read", "key": other}
    assert returned.bEvent is not None
    assert returned.bEvent["payload"]["error"]["code"] == "fixture_miss"
    # Before the change both ran the same trajectory, under ids of their own.
    assert calls[0].payload["callId"] not in {e.payload.get("callId") for e in drift.events}
    assert diff.stateDiff["outputs"].keys() == {"a", "b"}


def _events(http: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    response = http.get(f"/runs/{project_id(run_id)}/events/poll", params={"timeout": 1})
    assert response.status_code == 200, response.text
    events: list[dict[str, Any]] = response.json()["events"]
    return events


def test_an_active_run_is_diffed_as_a_truncated_prefix(
    eval_project_server: ServerHandle, gate: Gate, tmp_path: Path
) -> None:
    client = eval_project_server.client()
    opened = Gate(tmp_path / "opened-entered", tmp_path / "opened-gate")
    opened.release()
    request = CreateRunRequest(workflowId=GATE_WORKFLOW, inputs=opened.inputs())
    finished = client.runs_create(request)
    wait_terminal(client, finished.runId)
    held = client.runs_create(CreateRunRequest(workflowId=GATE_WORKFLOW, inputs=gate.inputs()))
    gate.wait_entered()
    with eval_project_server.http() as http:
        assert len(_events(http, held.runId)) < len(_events(http, finished.runId))

    diff = client.runs_diff(held.runId, finished.runId)
    assert diff is not None
    assert diff.truncated is True
    # What the active run has written agrees; what it has not written yet is no difference.
    assert (diff.divergedAtSeq, diff.eventDiffs) == (None, [])
    assert diff.stateDiff["status"] == {"a": "running", "b": "completed"}

    gate.release()
    wait_terminal(client, held.runId)
    ended = client.runs_diff(held.runId, finished.runId)
    assert ended is not None
    assert (ended.divergedAtSeq, ended.eventDiffs, ended.stateDiff) == (None, [], {})
    assert ended.truncated is None
