"""Runs through the official client: create, follow, read back, list, cancel (runs.md)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import httpx
from openwop_client.types import CreateRunRequest
from openwop_client.wire_id import project_id

from ._server import TENANT_A, ServerHandle
from ._support import (
    COUNTER_TOOL,
    COUNTER_WORKFLOW,
    NOOP_WORKFLOW,
    assert_error,
    assert_refused,
    counter_inputs,
    counter_request,
    create_counter_run,
    read_counter,
    run_to_end,
    store_unchanged,
    types_of,
    unique,
    wait_terminal,
)


def test_counter_run_followed_by_sse_and_poll(server: ServerHandle, http_a: httpx.Client) -> None:
    client = server.client()
    capabilities = client.discovery_capabilities()
    assert capabilities.protocolVersions == ["2.46"]
    assert COUNTER_WORKFLOW in capabilities.raw["fixtures"]

    key = unique("counter")
    created = client.runs_create(counter_request(key))
    assert created.runId.startswith(f"{TENANT_A}/")
    assert created.status in ("pending", "running")
    assert created.eventsUrl == f"/runs/{project_id(created.runId)}/events"

    streamed = list(client.runs_events(created.runId, stream_mode="debug", timeout_seconds=30))
    streamed_types = types_of(streamed)
    assert streamed_types[0] == "run.started"
    assert streamed_types[-1] == "run.completed"
    assert [e.sequence for e in streamed] == list(range(len(streamed)))
    called = next(e for e in streamed if e.type == "agent.tool-called")
    returned = next(e for e in streamed if e.type == "agent.tool-returned")
    assert called.payload["toolName"] == COUNTER_TOOL
    assert called.payload["inputs"] == {"op": "inc", "key": key}
    assert returned.payload["callId"] == called.payload["callId"]
    assert returned.payload["status"] == "ok"
    assert returned.payload["outcome"] == {"key": key, "count": 1}
    assert called.sequence < returned.sequence

    polled = wait_terminal(client, created.runId)
    assert [(e.eventId, e.sequence, e.type) for e in polled] == [
        (e.eventId, e.sequence, e.type) for e in streamed
    ]
    assert all(e.runId == created.runId for e in polled)

    snapshot = client.runs_get(created.runId)
    assert snapshot.runId == created.runId
    assert snapshot.workflowId == COUNTER_WORKFLOW
    assert snapshot.status == "completed"
    assert snapshot.eventLogSchemaVersion == 3
    assert snapshot.owner.tenant == TENANT_A
    assert snapshot.owner.subject.tenant == TENANT_A
    assert snapshot.owner.subject.lane == "api-key"
    assert snapshot.completedAt is not None
    assert snapshot.error is None
    assert read_counter(http_a, key) == 1


def test_links_of_the_created_run_resolve(server: ServerHandle, http_a: httpx.Client) -> None:
    created = server.client().runs_create(counter_request(unique("links")))
    assert http_a.get(created.statusUrl).json()["runId"] == created.runId
    poll = http_a.get(created.eventsUrl + "/poll", params={"timeout": 1})
    assert poll.status_code == 200
    assert poll.json()["runId"] == created.runId
    wait_terminal(server.client(), created.runId)


def test_list_is_newest_first_and_pages_with_the_cursor(server: ServerHandle) -> None:
    client = server.client()
    created = [
        client.runs_create(CreateRunRequest(workflowId=NOOP_WORKFLOW)).runId for _ in range(5)
    ]
    for run_id in created:
        wait_terminal(client, run_id)

    seen: list[str] = []
    pages = 0
    cursor = None
    while len(seen) < 5:
        page = client.runs_list(limit=2, cursor=cursor)
        assert 0 < len(page.runs) <= 2
        seen.extend(run.runId for run in page.runs)
        cursor = page.next_cursor
        pages += 1
        assert cursor is not None
    assert seen[:5] == list(reversed(created))
    assert pages == 3


def test_list_filters_by_workflow_and_status(server: ServerHandle) -> None:
    client = server.client()
    noop = client.runs_create(CreateRunRequest(workflowId=NOOP_WORKFLOW)).runId
    counter, _ = run_to_end(client, unique("filter"))
    wait_terminal(client, noop)

    noop_runs = client.runs_list(limit=200, workflow_id=NOOP_WORKFLOW).runs
    assert {run.workflowId for run in noop_runs} == {NOOP_WORKFLOW}
    assert noop in {run.runId for run in noop_runs}
    assert counter not in {run.runId for run in noop_runs}

    completed = client.runs_list(limit=200, status="completed").runs
    assert {run.status for run in completed} == {"completed"}
    assert {noop, counter} <= {run.runId for run in completed}

    running = client.runs_list(limit=200, status="running").runs
    assert not {noop, counter} & {run.runId for run in running}

    both = client.runs_list(limit=200, workflow_id=COUNTER_WORKFLOW, status="completed").runs
    assert counter in {run.runId for run in both}
    assert {(run.workflowId, run.status) for run in both} == {(COUNTER_WORKFLOW, "completed")}


def test_run_inputs_tags_and_metadata_read_back(server: ServerHandle) -> None:
    client = server.client()
    inputs = counter_inputs(unique("echo"))
    request = CreateRunRequest(
        workflowId=COUNTER_WORKFLOW, inputs=inputs, tags=["e2e", "echo"], metadata={"team": "qa"}
    )
    run_id = client.runs_create(request).runId
    wait_terminal(client, run_id)
    snapshot = client.runs_get(run_id)
    assert snapshot.tags == ["e2e", "echo"]
    assert snapshot.metadata == {"team": "qa"}
    assert client.runs_list(limit=200).runs[0].runId == run_id


def test_unknown_own_run_is_404(server: ServerHandle) -> None:
    client = server.client()
    missing = f"{TENANT_A}/{uuid.uuid4().hex}"
    with store_unchanged(server.database_url):
        assert_refused(lambda: client.runs_get(missing), 404, "not_found")
        assert_refused(
            lambda: client.runs_poll_events(missing, timeout_seconds=1), 404, "not_found"
        )
        assert_refused(lambda: list(client.runs_events(missing)), 404, "not_found")
        assert_refused(lambda: client.runs_cancel(missing), 404, "not_found")


def test_cancel_of_a_finished_run_is_409_run_terminal(server: ServerHandle) -> None:
    client = server.client()
    run_id, events = run_to_end(client, unique("cancel"))
    before = client.runs_get(run_id)
    with store_unchanged(server.database_url):
        assert_refused(lambda: client.runs_cancel(run_id), 409, "run_terminal")
    assert client.runs_get(run_id) == before
    assert types_of(wait_terminal(client, run_id)) == types_of(events)


def test_the_run_list_filters_by_tag_agent_and_creation_time(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    tag = unique("listed")
    before = http_a.get("/runs", params={"limit": 1}).json()["runs"]
    since = datetime.now(UTC).isoformat()
    tagged = [
        server.client()
        .runs_create(CreateRunRequest(workflowId=NOOP_WORKFLOW, tags=[tag, "other"]))
        .runId
        for _ in range(3)
    ]
    untagged = create_counter_run(server.client(), unique("untagged"))
    for run_id in (*tagged, untagged):
        wait_terminal(server.client(), run_id)

    def listed(**params: str) -> list[str]:
        response = http_a.get("/runs", params={"limit": 200, **params})
        assert response.status_code == 200, response.text
        return [run["runId"] for run in response.json()["runs"]]

    assert listed(tag=tag) == tagged[::-1]
    assert listed(tag=tag, limit="2") == tagged[:0:-1]
    assert listed(tag=unique("nobody")) == []
    assert set(listed(agentId="conformance.scripted-agent", createdAfter=since)) == {untagged}
    after = listed(createdAfter=since)
    assert set(after) == {*tagged, untagged}
    assert all(run["runId"] not in after for run in before)
    refused = http_a.get("/runs", params={"createdAfter": "yesterday"})
    assert_error(refused, 400, "validation_error")
