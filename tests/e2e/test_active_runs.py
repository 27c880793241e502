"""Runs that are still executing: cancel, live SSE and a long-poll on an active run."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from ._gate import DEADLINE_SECONDS, GatedRun, start_gated_run
from ._server import TENANT_A, TENANT_B, ServerHandle
from ._support import assert_refused, types_of, wait_terminal


@pytest.fixture
def gated(project_server: ServerHandle, tmp_path: Path) -> Iterator[GatedRun]:
    run = start_gated_run(project_server, tmp_path)
    try:
        yield run
    finally:
        run.release()
        wait_terminal(project_server.client(), run.run_id)


def test_cancel_of_a_running_run(project_server: ServerHandle, gated: GatedRun) -> None:
    client = project_server.client()
    assert client.runs_get(gated.run_id).status == "running"
    answer = client.runs_cancel(gated.run_id)
    assert answer.runId == gated.run_id
    assert answer.status in ("cancelling", "cancelled")
    events = wait_terminal(client, gated.run_id)
    assert types_of(events)[-1] == "run.cancelled"
    assert types_of(events).count("run.cancelled") == 1
    assert "run.completed" not in types_of(events)
    assert client.runs_get(gated.run_id).status == "cancelled"
    assert_refused(lambda: client.runs_cancel(gated.run_id), 409, "run_terminal")


def test_another_tenant_cannot_cancel_a_running_run(
    project_server: ServerHandle, gated: GatedRun
) -> None:
    client_b = project_server.client(TENANT_B)
    assert_refused(lambda: client_b.runs_cancel(gated.run_id), 403, "id_tenant_mismatch")
    assert project_server.client(TENANT_A).runs_get(gated.run_id).status == "running"
    gated.release()
    events = wait_terminal(project_server.client(), gated.run_id)
    assert types_of(events)[-1] == "run.completed"


def test_sse_follows_a_live_run_to_its_end(project_server: ServerHandle, gated: GatedRun) -> None:
    client = project_server.client()
    stream = client.runs_events(gated.run_id, stream_mode="debug", timeout_seconds=60)
    first = next(stream)
    # The stream is open and the run still waits at its gate: what follows arrives live.
    assert first.type == "run.started"
    assert client.runs_get(gated.run_id).status == "running"
    gated.release()
    streamed: list[Any] = [first, *stream]
    assert streamed[-1].type == "run.completed"
    assert [e.sequence for e in streamed] == list(range(len(streamed)))
    decided = next(e for e in streamed if e.type == "agent.decided")
    assert decided.payload["decision"] == "released"


def test_a_long_poll_on_an_active_run_returns_the_new_events(
    project_server: ServerHandle, gated: GatedRun
) -> None:
    client = project_server.client()
    first = client.runs_poll_events(gated.run_id, timeout_seconds=1)
    assert first.isTerminal is False
    last = first.lastSequence
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(
            lambda: client.runs_poll_events(gated.run_id, after_sequence=last, timeout_seconds=60)
        )
        gated.release()
        woken = waiting.result(timeout=DEADLINE_SECONDS)
    assert woken.events, "the long-poll returned without the new events"
    assert woken.events[0].sequence == last + 1
    rest = wait_terminal(client, gated.run_id)
    assert types_of(rest)[-1] == "run.completed"
