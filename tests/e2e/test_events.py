"""A run's events: long-poll and SSE, stream modes and Last-Event-ID resumption (events.md)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from openwop_client.wire_id import project_id

from ._server import ServerHandle
from ._support import (
    EVENT_ID,
    PROTOCOL_VERSION,
    TERMINAL_TYPES,
    assert_error,
    run_to_end,
    store_unchanged,
    types_of,
    unique,
)


def sse_frames(http: httpx.Client, run_id: str, **options: Any) -> list[dict[str, Any]]:
    """Read an SSE response to its end; each frame as `{id, event, data}` (data parsed)."""
    headers = options.pop("headers", {})
    frames: list[dict[str, Any]] = []
    with http.stream(
        "GET", f"/runs/{project_id(run_id)}/events", params=options, headers=headers
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["OpenWOP-Version"] == PROTOCOL_VERSION
        text = "".join(response.iter_text())
    for block in text.split("\n\n"):
        fields: dict[str, Any] = {}
        for line in block.splitlines():
            if line.startswith(":") or ":" not in line:
                continue
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
        if "data" in fields:
            fields["data"] = json.loads(fields["data"])
            frames.append(fields)
    return frames


def test_poll_returns_the_whole_log_in_order(server: ServerHandle) -> None:
    client = server.client()
    run_id, events = run_to_end(client, unique("poll"))
    assert [e.sequence for e in events] == list(range(len(events)))
    assert events[0].type == "run.started"
    assert events[0].payload["owner"]["tenant"] == "tenant-a"
    assert types_of(events).count("run.completed") == 1
    assert events[-1].type == "run.completed"
    for event in events:
        assert event.runId == run_id
        assert EVENT_ID.match(event.eventId)
        assert event.schemaVersion >= 1
    assert len({e.eventId for e in events}) == len(events)

    tail = client.runs_poll_events(run_id, after_sequence=events[2].sequence, timeout_seconds=30)
    assert [e.eventId for e in tail.events] == [e.eventId for e in events[3:]]
    done = client.runs_poll_events(run_id, after_sequence=events[-1].sequence, timeout_seconds=30)
    assert done.events == []
    assert done.isTerminal is True
    assert done.status == "completed"
    assert done.lastSequence == events[-1].sequence


def test_sse_updates_mode_carries_transitions_only(server: ServerHandle) -> None:
    """`updates` (the default): run transitions and terminal node transitions, no agent.*."""
    client = server.client()
    run_id, events = run_to_end(client, unique("updates"))
    updates = list(client.runs_events(run_id, timeout_seconds=30))
    expected = [
        e.eventId
        for e in events
        if e.type.startswith("run.") or e.type in ("node.completed", "node.failed")
    ]
    assert [e.eventId for e in updates] == expected
    assert updates[0].type == "run.started"
    assert updates[-1].type == "run.completed"
    assert "node.completed" in types_of(updates)


def test_sse_debug_mode_carries_every_event_as_frames(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    run_id, events = run_to_end(server.client(), unique("debug"))
    frames = sse_frames(http_a, run_id, streamMode="debug")
    assert [frame["data"]["eventId"] for frame in frames] == [e.eventId for e in events]
    for frame in frames:
        assert frame["id"] == str(frame["data"]["sequence"])
        assert frame["event"] == frame["data"]["type"]
    assert {"agent.tool-called", "agent.tool-returned"} <= {frame["event"] for frame in frames}


@pytest.mark.parametrize("resume_after", [0, 3])
def test_sse_resumes_after_last_event_id_without_re_emitting(
    server: ServerHandle, http_a: httpx.Client, resume_after: int
) -> None:
    client = server.client()
    run_id, events = run_to_end(client, unique("resume"))
    resumed = list(
        client.runs_events(
            run_id, stream_mode="debug", last_event_id=str(resume_after), timeout_seconds=30
        )
    )
    assert [e.eventId for e in resumed] == [e.eventId for e in events[resume_after + 1 :]]
    frames = sse_frames(
        http_a, run_id, streamMode="debug", headers={"Last-Event-ID": str(resume_after)}
    )
    assert [int(frame["id"]) for frame in frames] == [
        e.sequence for e in events[resume_after + 1 :]
    ]


def test_sse_of_a_finished_run_resumed_at_its_end_closes_at_once(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    client = server.client()
    run_id, events = run_to_end(client, unique("closed"))
    last = str(events[-1].sequence)
    with http_a.stream(
        "GET",
        f"/runs/{project_id(run_id)}/events",
        params={"streamMode": "debug"},
        headers={"Last-Event-ID": last},
        timeout=httpx.Timeout(30.0),
    ) as response:
        assert response.status_code == 200
        body = response.read()
    assert b"data:" not in body
    assert list(client.runs_events(run_id, last_event_id=last, timeout_seconds=30)) == []


def test_sse_ends_after_the_terminal_event(server: ServerHandle, http_a: httpx.Client) -> None:
    run_id, _ = run_to_end(server.client(), unique("terminal"))
    frames = sse_frames(http_a, run_id)
    assert frames[-1]["event"] in TERMINAL_TYPES
    assert [frame["event"] for frame in frames].count(frames[-1]["event"]) == 1


@pytest.mark.parametrize("mode", ["everything", "debug,values", "updates,", "DEBUG", ""])
def test_a_bad_stream_mode_is_400_naming_the_supported_ones(
    server: ServerHandle, http_a: httpx.Client, mode: str
) -> None:
    run_id, _ = run_to_end(server.client(), unique("mode"))
    with store_unchanged(server.database_url):
        response = http_a.get(f"/runs/{project_id(run_id)}/events", params={"streamMode": mode})
    body = assert_error(response, 400, "unsupported_stream_mode")
    assert {"updates", "debug"} <= set(body["details"]["supported"])


def test_a_last_event_id_that_is_not_a_sequence_is_400(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    run_id, _ = run_to_end(server.client(), unique("bad-id"))
    response = http_a.get(
        f"/runs/{project_id(run_id)}/events", headers={"Last-Event-ID": "not-a-number"}
    )
    assert_error(response, 400, "validation_error")
