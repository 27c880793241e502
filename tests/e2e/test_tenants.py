"""Two tenants on one host: ids, lists and counters never cross (identity.md §5, runs.md)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from openwop_client import OpenwopClient

from ._server import TENANT_A, TENANT_B, ServerHandle
from ._support import (
    assert_error,
    assert_refused,
    list_all_runs,
    read_counter,
    run_to_end,
    store_unchanged,
    unique,
    wait_terminal,
)

Operation = Callable[[OpenwopClient, str], Any]

OPERATIONS: dict[str, Operation] = {
    "get": lambda client, run_id: client.runs_get(run_id),
    "poll": lambda client, run_id: client.runs_poll_events(run_id, timeout_seconds=1),
    "sse": lambda client, run_id: list(client.runs_events(run_id, timeout_seconds=5)),
    "sse-debug": lambda client, run_id: list(
        client.runs_events(run_id, stream_mode="debug", timeout_seconds=5)
    ),
    "cancel": lambda client, run_id: client.runs_cancel(run_id),
}


@pytest.fixture
def a_run(server: ServerHandle) -> str:
    run_id, _ = run_to_end(server.client(TENANT_A), unique("tenant"))
    return run_id


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
@pytest.mark.parametrize("exists", [True, False], ids=["existing", "missing"])
def test_a_run_id_of_tenant_a_is_403_for_tenant_b(
    server: ServerHandle, a_run: str, operation: str, exists: bool
) -> None:
    run_id = a_run if exists else f"{TENANT_A}/{uuid.uuid4().hex}"
    client_b = server.client(TENANT_B)
    with store_unchanged(server.database_url):
        assert_refused(lambda: OPERATIONS[operation](client_b, run_id), 403, "id_tenant_mismatch")


@pytest.mark.parametrize(
    "suffix", ["", "/events", "/events?streamMode=debug", "/events/poll", "/cancel"]
)
def test_the_refusal_is_the_same_bytes_whether_or_not_the_run_exists(
    server: ServerHandle, http_b: httpx.Client, a_run: str, suffix: str
) -> None:
    missing = f"{TENANT_A}/{uuid.uuid4().hex}"
    method = "POST" if suffix == "/cancel" else "GET"
    answers = []
    for run_id in (a_run, missing):
        response = http_b.request(method, f"/runs/{run_id.replace('/', '~2F')}{suffix}")
        assert_error(response, 403, "id_tenant_mismatch")
        answers.append(response.content)
    assert answers[0] == answers[1]


def test_a_foreign_tenant_segment_is_403_for_unknown_tenants_too(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    for run_id in (f"nobody/{uuid.uuid4().hex}", f"{TENANT_B}/not-even-an-opaque-id"):
        with store_unchanged(server.database_url):
            response = http_a.get(f"/runs/{run_id.replace('/', '~2F')}")
        assert_error(response, 403, "id_tenant_mismatch")


def test_lists_show_only_the_callers_runs(
    server: ServerHandle, http_a: httpx.Client, http_b: httpx.Client
) -> None:
    mine_a, _ = run_to_end(server.client(TENANT_A), unique("list-a"))
    mine_b, _ = run_to_end(server.client(TENANT_B), unique("list-b"))
    seen_a = list_all_runs(http_a)
    seen_b = list_all_runs(http_b)
    assert mine_a in {run["runId"] for run in seen_a}
    assert mine_b in {run["runId"] for run in seen_b}
    assert all(run["runId"].startswith(f"{TENANT_A}/") for run in seen_a)
    assert all(run["owner"]["tenant"] == TENANT_A for run in seen_a)
    assert all(run["runId"].startswith(f"{TENANT_B}/") for run in seen_b)
    assert all(run["owner"]["tenant"] == TENANT_B for run in seen_b)
    for status in ("completed", "running", "failed"):
        filtered = list_all_runs(http_b, status=status)
        assert not [run for run in filtered if not run["runId"].startswith(f"{TENANT_B}/")]
    client_b = server.client(TENANT_B)
    listed = client_b.runs_list(limit=200)
    assert mine_a not in {run.runId for run in listed.runs}


def test_each_tenant_has_its_own_counter(
    server: ServerHandle, http_a: httpx.Client, http_b: httpx.Client
) -> None:
    key = unique("shared-key")
    run_to_end(server.client(TENANT_A), key)
    run_to_end(server.client(TENANT_A), key)
    assert read_counter(http_a, key) == 2
    assert read_counter(http_b, key) == 0
    _, events_b = run_to_end(server.client(TENANT_B), key)
    returned = next(e for e in events_b if e.type == "agent.tool-returned")
    assert returned.payload["outcome"] == {"key": key, "count": 1}
    assert read_counter(http_b, key) == 1
    assert read_counter(http_a, key) == 2


def test_reading_a_counter_changes_nothing(server: ServerHandle, http_a: httpx.Client) -> None:
    key = unique("read-only")
    run_id, _ = run_to_end(server.client(TENANT_A), key)
    wait_terminal(server.client(TENANT_A), run_id)
    with store_unchanged(server.database_url):
        assert read_counter(http_a, key) == 1
        assert read_counter(http_a, key) == 1
