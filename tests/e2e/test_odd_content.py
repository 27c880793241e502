"""A live tool's odd but legal answer is recorded and replayed exactly, on both stores.

A request body is guarded (wire/strict_json.py), but a live tool's answer is not one:
a python-lane tool, or an MCP server written in JS, may answer with a string holding a
NUL character (PostgreSQL keeps none in `text` or `jsonb`), a lone surrogate (legal JSON
text, `"\\ud800"`, which orjson will not write), a value nested deeper than orjson's
limit of 255, or an empty key or a key with a NUL. Whatever the tool gave, the run ends,
its events and task details read back, and the fixtures derived from it answer the agent
with the same content (docs/decisions.md, "Odd content in a live tool's answer").
"""

from __future__ import annotations

import asyncio
import json
import zipfile
from pathlib import Path
from typing import Any

import httpx
import pytest
from openwop_client.types import CreateRunRequest, ForkRunRequest
from openwop_client.wire_id import project_id

from ._bundles import bundle_rows, export_runs, import_bundle
from ._server import TENANT_B, ServerHandle
from ._support import wait_terminal
from .evals._evals import golden, live_calls, new_suite_id, publish, run_eval, suite


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


ODD: dict[str, Any] = {
    "nul": "a\u0000b",
    "surrogate": "\ud800",
    "deep": _nested(300),
    "keys": {"": 1, "a\u0000b": 2},
}
"""What tests/e2e/conftest.py's `odd_tool` answers (under `odd`), by the kind it is asked."""

ODD_AGENT = "e2e.odd-agent"
EXACT = {"exact": True}
"""What the agent decides when the answer it got is the tool's, exactly."""


def _get(http: httpx.Client, path: str, **params: Any) -> Any:
    """A read of the API, parsed by the standard library (which reads lone surrogates and
    any depth): what the host wrote is what is checked."""
    response = http.get(path, params=params)
    assert response.status_code == 200, response.text
    return json.loads(response.text)


def _events(http: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    body = _get(http, f"/runs/{project_id(run_id)}/events/poll", afterSequence=-1)
    events: list[dict[str, Any]] = body["events"]
    return events


def _payloads(events: list[dict[str, Any]], event_type: str) -> list[dict[str, Any]]:
    return [event["payload"] for event in events if event["type"] == event_type]


def _task(kind: str) -> dict[str, Any]:
    return {"taskId": kind, "input": {"kind": kind}, "expected": golden(EXACT)}


@pytest.mark.parametrize("kind", sorted(ODD))
def test_a_live_tools_odd_answer_is_kept(
    project_server: ServerHandle, kind: str, tmp_path: Path
) -> None:
    answer = {"odd": ODD[kind]}
    client = project_server.client()
    run_id = client.runs_create(CreateRunRequest(workflowId="e2e-odd", inputs={"kind": kind})).runId
    assert wait_terminal(client, run_id)[-1].type == "run.completed"
    with project_server.http() as http:
        _get(http, f"/runs/{project_id(run_id)}")
        events = _events(http, run_id)
        _get(http, f"/host/wopeval/runs/{project_id(run_id)}/invocations")
    (returned,) = _payloads(events, "agent.tool-returned")
    assert returned["outcome"] == answer
    assert _payloads(events, "agent.decided")[0]["decision"] == EXACT

    # Its events as a stream (SSE, every event).
    with project_server.http() as http:
        streamed = http.get(
            f"/runs/{project_id(run_id)}/events",
            params={"streamMode": "debug"},
            headers={"Accept": "text/event-stream"},
        )
        assert streamed.status_code == 200, streamed.text
    (frame,) = [f for f in streamed.text.split("\n\n") if "event: agent.tool-returned" in f]
    data = "".join(line[6:] for line in frame.splitlines() if line.startswith("data: "))
    assert json.loads(data)["payload"]["outcome"] == answer

    # The dashboard's run page and list show it.
    with httpx.Client(base_url=project_server.base_url, trust_env=False, timeout=60.0) as browser:
        signed = browser.post("/ui/sign-in", data={"key": project_server.key_a, "next": "/ui/runs"})
        assert signed.status_code == 303, signed.text
        for page in (f"/ui/runs/{project_id(run_id)}", "/ui/runs"):
            shown = browser.get(page)
            assert shown.status_code == 200, (page, shown.text[:500])

    # A replay fork of the run is answered from its record; a diff against a run whose
    # tool answered otherwise shows the answer.
    fork = client.runs_fork(run_id, ForkRunRequest(mode="replay", fromSeq=0)).runId
    assert wait_terminal(client, fork)[-1].type == "run.completed"
    other_kind = "nul" if kind != "nul" else "keys"
    other = client.runs_create(
        CreateRunRequest(workflowId="e2e-odd", inputs={"kind": other_kind})
    ).runId
    assert wait_terminal(client, other)[-1].type == "run.completed"
    with project_server.http() as http:
        (forked,) = _payloads(_events(http, fork), "agent.tool-returned")
        same = _get(http, f"/runs/{project_id(run_id)}:diff", against=project_id(fork))
        diff = _get(http, f"/runs/{project_id(run_id)}:diff", against=project_id(other))
    assert forked["outcome"] == answer
    assert same["divergedAtSeq"] is None, same
    diverged = [
        entry for entry in diff["eventDiffs"] if entry["aEvent"]["type"] == "agent.tool-returned"
    ]
    assert diverged[0]["aEvent"]["payload"]["outcome"] == answer
    assert diverged[0]["bEvent"]["payload"]["outcome"] == {"odd": ODD[other_kind]}

    # The fixtures derived from the run (RFC 0252) answer the agent with the same content.
    with project_server.http() as http:
        ref = publish(http, suite(new_suite_id("odd"), [_task(kind)], target=ODD_AGENT))
        replay = run_eval(client, http, ref, ODD_AGENT, fixtureRuns={kind: run_id})
        assert live_calls(http, replay.run_id) == 0
        replay_events = _events(http, replay.run_id)
        detail = _get(http, f"/host/wopeval/runs/{project_id(replay.run_id)}/tasks/{kind}")
        _get(http, f"/host/wopeval/runs/{project_id(replay.run_id)}/tasks")
    assert replay.summary["fixtureMissCount"] == 0
    assert replay.summary["passed"] is True
    (replayed,) = _payloads(replay_events, "agent.tool-returned")
    assert replayed["outcome"] == answer
    (trial,) = detail["trialDetails"]
    (call,) = trial["calls"]
    assert call["outcome"] == answer

    # A live eval trial's calls, as its stored task detail shows them.
    with project_server.http() as http:
        live = run_eval(client, http, ref, ODD_AGENT)
        assert live_calls(http, live.run_id) == 1
        detail = _get(http, f"/host/wopeval/runs/{project_id(live.run_id)}/tasks/{kind}")
    assert live.summary["passed"] is True
    (trial,) = detail["trialDetails"]
    (call,) = trial["calls"]
    assert call["servedBy"] == "live"
    assert call["outcome"] == answer

    # A bundle of the run, and the run it imports as under another tenant: a source there
    # as good.
    path = tmp_path / "odd.zip"
    asyncio.run(export_runs(project_server.database_url, [run_id], path))
    with zipfile.ZipFile(path) as archive:
        (row,) = bundle_rows(archive, run_id, "tool_calls")
    assert row["result"] == answer
    (imported,) = asyncio.run(import_bundle(project_server.database_url, path, TENANT_B))
    with project_server.http(TENANT_B) as http:
        ref = publish(http, suite(new_suite_id("odd"), [_task(kind)], target=ODD_AGENT))
        again = run_eval(
            project_server.client(TENANT_B), http, ref, ODD_AGENT, fixtureRuns={kind: imported}
        )
        (replayed,) = _payloads(_events(http, again.run_id), "agent.tool-returned")
    assert again.summary["passed"] is True
    assert replayed["outcome"] == answer
