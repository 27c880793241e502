"""An integer beyond 64 bits in a recorded tool call comes back as the same integer.

JSON integers have no size limit (RFC 8259 §6) and real tools return them (amounts
in wei pass 2**64). A request body may not carry one (wire/strict_json.py refuses
it: I-JSON), but a live tool's answer, and the args an in-process agent builds, may.
orjson, the store's codec, writes none and reads one back as a float: every path
that keeps a call's content must still give the integer back, on both stores — the
events, a trial's calls, the fixtures derived from the run, the answer replayed to
the agent, and a bundle of the run.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from openwop_client.types import CreateRunRequest
from openwop_client.wire_id import project_id

from wopeval.engine.recording.grants import MCP_PATH

from ._bundles import bundle_rows, export_runs, import_bundle
from ._server import TENANT_B, ServerHandle
from ._support import wait_terminal
from .evals._evals import golden, live_calls, new_suite_id, publish, run_eval, suite

WEI = 123456789012345678901234567890
"""The tool's answer (tests/e2e/conftest.py `wei_tool`); its args carry `-2 * WEI`."""

EXACT = {"types": ["int", "int"], "exact": True}
"""What the agent decides when the answer it got is the tool's, integers and all."""

WEI_AGENT = "e2e.wei-agent"


def _events(http: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    """The run's events as the wire carries them, read with the standard library's parser
    (which keeps any integer): what the host wrote is what is checked."""
    response = http.get(f"/runs/{project_id(run_id)}/events/poll", params={"afterSequence": -1})
    assert response.status_code == 200, response.text
    events: list[dict[str, Any]] = json.loads(response.text)["events"]
    return events


def _completed(server: ServerHandle, workflow_id: str) -> tuple[str, list[dict[str, Any]]]:
    """A production run of `workflow_id`, completed, and its events (`_events`)."""
    client = server.client()
    run_id = client.runs_create(CreateRunRequest(workflowId=workflow_id)).runId
    assert wait_terminal(client, run_id)[-1].type == "run.completed"
    with server.http() as http:
        return run_id, _events(http, run_id)


def _payloads(events: list[dict[str, Any]], event_type: str) -> list[dict[str, Any]]:
    return [event["payload"] for event in events if event["type"] == event_type]


def _assert_exact(value: Any, expected: Any) -> None:
    """`value` is `expected` with every number of the same type (1.0 == 1 in Python)."""
    assert value == expected
    assert json.dumps(value) == json.dumps(expected)


def test_a_production_run_keeps_the_integer(project_server: ServerHandle, tmp_path: Path) -> None:
    client = project_server.client()
    run_id, events = _completed(project_server, "e2e-wei")
    (called,) = _payloads(events, "agent.tool-called")
    _assert_exact(called["inputs"], {"wei": -2 * WEI})
    (returned,) = _payloads(events, "agent.tool-returned")
    _assert_exact(returned["outcome"], {"wei": WEI, "args": {"wei": -2 * WEI}})
    (decided,) = _payloads(events, "agent.decided")
    assert decided["decision"] == EXACT

    # The fixtures derived from the run (RFC 0252) answer the agent with the same integers.
    with project_server.http() as http:
        ref = publish(http, suite(new_suite_id("wei"), [_task()], target=WEI_AGENT))
        replay = run_eval(client, http, ref, WEI_AGENT, fixtureRuns={"wei": run_id})
        assert live_calls(http, replay.run_id) == 0
        replay_events = _events(http, replay.run_id)
        detail = http.get(f"/host/wopeval/runs/{project_id(replay.run_id)}/tasks/wei")
    assert replay.summary["fixtureMissCount"] == 0
    assert replay.summary["passed"] is True
    (replayed,) = _payloads(replay_events, "agent.tool-returned")
    _assert_exact(replayed["outcome"], {"wei": WEI, "args": {"wei": -2 * WEI}})
    assert _payloads(replay_events, "agent.decided")[0]["decision"] == EXACT

    # A trial's calls, as the task detail shows them.
    assert detail.status_code == 200, detail.text
    (trial,) = json.loads(detail.text)["trialDetails"]
    (call,) = trial["calls"]
    _assert_exact(call["inputs"], {"wei": -2 * WEI})
    _assert_exact(call["outcome"], {"wei": WEI, "args": {"wei": -2 * WEI}})

    # A bundle of both runs: the source's call record, the eval run's derived fixtures.
    path = tmp_path / "wei.zip"
    asyncio.run(export_runs(project_server.database_url, [run_id, replay.run_id], path))
    with zipfile.ZipFile(path) as archive:
        (row,) = bundle_rows(archive, run_id, "tool_calls")
        _assert_exact(row["inputs"], {"wei": -2 * WEI})
        _assert_exact(row["result"], {"wei": WEI, "args": {"wei": -2 * WEI}})
        (derived,) = bundle_rows(archive, replay.run_id, "derived_fixtures")
        assert {WEI, -2 * WEI} <= set(_numbers(derived["entries"]))
        assert not [n for n in _numbers(derived["entries"]) if isinstance(n, float)]

    # The source's bundle, imported under another tenant, is a source there as good.
    source_bundle = tmp_path / "source.zip"
    asyncio.run(export_runs(project_server.database_url, [run_id], source_bundle))
    (imported,) = asyncio.run(import_bundle(project_server.database_url, source_bundle, TENANT_B))
    with project_server.http(TENANT_B) as http:
        ref = publish(http, suite(new_suite_id("wei"), [_task()], target=WEI_AGENT))
        client_b = project_server.client(TENANT_B)
        again = run_eval(client_b, http, ref, WEI_AGENT, fixtureRuns={"wei": imported})
        again_events = _events(http, again.run_id)
    assert again.summary["fixtureMissCount"] == 0
    assert again.summary["passed"] is True
    (replayed,) = _payloads(again_events, "agent.tool-returned")
    _assert_exact(replayed["outcome"], {"wei": WEI, "args": {"wei": -2 * WEI}})


def _task() -> dict[str, Any]:
    return {"taskId": "wei", "input": {}, "expected": golden(EXACT)}


def _numbers(value: Any) -> Iterator[int | float]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _numbers(item)
    elif isinstance(value, list):
        for item in value:
            yield from _numbers(item)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield value


def test_a_live_trials_calls_keep_the_integer(project_server: ServerHandle) -> None:
    """An eval trial's calls as its task detail shows them (the stored trial's detail)."""
    client = project_server.client()
    with project_server.http() as http:
        ref = publish(http, suite(new_suite_id("wei"), [_task()], target=WEI_AGENT))
        live = run_eval(client, http, ref, WEI_AGENT)
        assert live_calls(http, live.run_id) == 1
        detail = http.get(f"/host/wopeval/runs/{project_id(live.run_id)}/tasks/wei")
    assert live.summary["passed"] is True
    assert detail.status_code == 200, detail.text
    (trial,) = json.loads(detail.text)["trialDetails"]
    (call,) = trial["calls"]
    assert call["servedBy"] == "live"
    _assert_exact(call["inputs"], {"wei": -2 * WEI})
    _assert_exact(call["outcome"], {"wei": WEI, "args": {"wei": -2 * WEI}})


def test_a_hash_only_agents_run_hashes_the_args(project_server: ServerHandle) -> None:
    """An agent whose events carry only `argsHash` (`wire_content = "hash"`): its args
    beyond JCS's integers are hashed as their sorted text (evals/_canonical.py)."""
    _, events = _completed(project_server, "e2e-wei-hashed")
    (called,) = _payloads(events, "agent.tool-called")
    assert "inputs" not in called
    sorted_text = json.dumps({"wei": -2 * WEI}, sort_keys=True, separators=(",", ":"))
    assert called["argsHash"] == "sha256:" + hashlib.sha256(sorted_text.encode()).hexdigest()


def test_an_outside_agent_cannot_send_one(project_server: ServerHandle) -> None:
    """By design (wire/strict_json.py, I-JSON): a request body with an integer beyond 64
    bits is refused before any route reads it, the MCP endpoint's tool calls included, so
    an outside agent's args never carry one; only an in-process agent's may."""
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "e2e:wei", "arguments": {"wei": WEI}}}  # fmt: skip
    text = json.dumps(call)
    with project_server.http(None) as http:
        for path in (f"{MCP_PATH}not-a-token", "/runs"):
            response = http.post(path, content=text, headers={"Content-Type": "application/json"})
            assert response.status_code == 400, response.text
            refused = response.json()
            assert refused["error"] == "validation_error"
            assert "beyond 64 bits" in refused["message"]
