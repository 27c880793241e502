"""`Idempotency-Key` on createRun and forkRun (idempotency.md Layer 1)."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from openwop_client import WopError
from openwop_client.wire_id import project_id
from sqlalchemy import update

from _backends import Backend
from wopeval.engine.runlog.steps import now
from wopeval.store import IDEMPOTENCY_RETENTION, Store
from wopeval.store.tables import idempotency

from ._server import TENANT_A, TENANT_B, ServerHandle, host_settings, running_host
from ._support import (
    COUNTER_WORKFLOW,
    assert_error,
    assert_wop_error,
    counter_inputs,
    counter_request,
    list_all_runs,
    read_counter,
    store_unchanged,
    table_rows,
    unique,
    wait_terminal,
)
from .evals._evals import eval_body, new_suite_id, publish, suite, task

REPLAY = "OpenWOP-Idempotent-Replay"


def new_key() -> str:
    return f"idem-{uuid.uuid4().hex}"


def run_ids(http: httpx.Client) -> set[str]:
    return {run["runId"] for run in list_all_runs(http)}


def test_same_key_and_body_replays_the_same_run(server: ServerHandle, http_a: httpx.Client) -> None:
    counter_key, key = unique("idem"), new_key()
    before = run_ids(http_a)
    first = server.client().runs_create(counter_request(counter_key), idempotency_key=key)
    again = server.client().runs_create(counter_request(counter_key), idempotency_key=key)
    assert again.runId == first.runId
    assert again.eventsUrl == first.eventsUrl

    body = {"workflowId": COUNTER_WORKFLOW, "inputs": counter_inputs(counter_key)}
    raw = http_a.post("/runs", json=body, headers={"Idempotency-Key": key})
    assert raw.status_code == 201
    assert raw.headers[REPLAY] == "true"
    assert raw.json()["runId"] == first.runId

    assert run_ids(http_a) - before == {first.runId}
    wait_terminal(server.client(), first.runId)
    assert read_counter(http_a, counter_key) == 1


def test_the_body_is_compared_canonically(server: ServerHandle, http_a: httpx.Client) -> None:
    key = new_key()
    body = {"workflowId": COUNTER_WORKFLOW, "inputs": counter_inputs(unique("canon"))}
    first = http_a.post("/runs", json=body, headers={"Idempotency-Key": key})
    assert first.status_code == 201
    assert REPLAY not in first.headers
    reordered = json.dumps(dict(reversed(list(body.items()))), indent=2)
    again = http_a.post(
        "/runs",
        content=reordered,
        headers={"Idempotency-Key": key, "Content-Type": "application/json"},
    )
    assert again.status_code == 201
    assert again.headers[REPLAY] == "true"
    assert again.content == first.content


def test_same_key_with_another_body_is_409(server: ServerHandle, http_a: httpx.Client) -> None:
    key = new_key()
    first = server.client().runs_create(counter_request(unique("one")), idempotency_key=key)
    wait_terminal(server.client(), first.runId)
    with store_unchanged(server.database_url), pytest.raises(WopError) as caught:
        server.client().runs_create(counter_request(unique("two")), idempotency_key=key)
    assert_wop_error(caught.value, 409, "idempotency_key_mismatch")


@pytest.mark.parametrize(
    "key",
    ["short", "x" * 21, "x" * 129, "has space in it 0123456789", "slash/in/the/key/0123456789"],
    ids=["short", "21-chars", "129-chars", "space", "slash"],
)
def test_an_invalid_key_is_400_and_creates_nothing(
    server: ServerHandle, http_a: httpx.Client, key: str
) -> None:
    body = {"workflowId": COUNTER_WORKFLOW, "inputs": counter_inputs(unique("invalid"))}
    with store_unchanged(server.database_url):
        response = http_a.post("/runs", json=body, headers={"Idempotency-Key": key})
    assert_error(response, 400, "idempotency_key_invalid")


def test_a_refused_body_does_not_consume_the_key(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    key = new_key()
    with store_unchanged(server.database_url):
        bad = http_a.post(
            "/runs", json={"workflowId": "no-such-workflow"}, headers={"Idempotency-Key": key}
        )
    assert_error(bad, 400, "validation_error")
    good = http_a.post(
        "/runs",
        json={"workflowId": COUNTER_WORKFLOW, "inputs": counter_inputs(unique("after"))},
        headers={"Idempotency-Key": key},
    )
    assert good.status_code == 201
    assert REPLAY not in good.headers
    wait_terminal(server.client(), good.json()["runId"])


def test_keys_are_scoped_to_the_tenant(
    server: ServerHandle, http_a: httpx.Client, http_b: httpx.Client
) -> None:
    key, counter_key = new_key(), unique("scoped")
    a = server.client(TENANT_A).runs_create(counter_request(counter_key), idempotency_key=key)
    b = server.client(TENANT_B).runs_create(counter_request(counter_key), idempotency_key=key)
    assert a.runId.startswith(f"{TENANT_A}/")
    assert b.runId.startswith(f"{TENANT_B}/")
    wait_terminal(server.client(TENANT_A), a.runId)
    wait_terminal(server.client(TENANT_B), b.runId)
    assert read_counter(http_a, counter_key) == 1
    assert read_counter(http_b, counter_key) == 1
    # Each tenant's retry replays its own answer: B's answer kept under the same key never
    # reaches A (it would name B's run to A), nor A's B.
    again_a = server.client(TENANT_A).runs_create(counter_request(counter_key), idempotency_key=key)
    again_b = server.client(TENANT_B).runs_create(counter_request(counter_key), idempotency_key=key)
    assert (again_a.runId, again_b.runId) == (a.runId, b.runId)


def test_concurrent_requests_with_one_key_create_exactly_one_run(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    key, counter_key = new_key(), unique("race")
    body = {"workflowId": COUNTER_WORKFLOW, "inputs": counter_inputs(counter_key)}
    senders = 8
    barrier = threading.Barrier(senders)
    before = run_ids(http_a)

    def send(_: int) -> tuple[int, dict[str, Any], bool]:
        with server.http(TENANT_A) as http:
            barrier.wait()
            response = http.post("/runs", json=body, headers={"Idempotency-Key": key})
            return response.status_code, response.json(), response.headers.get(REPLAY) == "true"

    with ThreadPoolExecutor(senders) as pool:
        results = list(pool.map(send, range(senders)))

    created = [body for status, body, replay in results if status == 201 and not replay]
    replays = [body for status, body, replay in results if status == 201 and replay]
    assert len(created) == 1, results
    run_id = created[0]["runId"]
    assert all(body["runId"] == run_id for body in replays)
    # A request that found the first still in flight may be told so; it never creates a run.
    others = [body for status, body, _ in results if status != 201]
    assert all(body["error"] == "idempotency_in_flight" for body in others), others
    assert run_ids(http_a) - before == {run_id}
    wait_terminal(server.client(), run_id)
    assert read_counter(http_a, counter_key) == 1


async def _claim_unanswered(url: str, tenant: str, key: str, digest: str) -> None:
    """What a host killed between taking a key and answering leaves: a claim, no run."""
    store = await Store.open(url)
    try:
        async with store.transaction() as uow:
            assert await uow.idempotency.claim(tenant, "createRun", key, digest, now()) is None
    finally:
        await store.close()


def test_a_key_left_unanswered_by_a_stopped_host_is_free_at_the_next_start(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    body = {"workflowId": COUNTER_WORKFLOW, "inputs": counter_inputs(unique("orphan"))}
    first_key, orphan_key = new_key(), new_key()
    first = http_a.post("/runs", json=body, headers={"Idempotency-Key": first_key})
    assert first.status_code == 201
    wait_terminal(server.client(), first.json()["runId"])
    # The same body under another key: the same digest, the one the retry below sends.
    (kept,) = table_rows(server.database_url, "idempotency", key=first_key)
    server.stop()
    try:
        asyncio.run(_claim_unanswered(server.database_url, TENANT_A, orphan_key, kept["digest"]))
    finally:
        server.start()
    before = run_ids(http_a)
    with server.http() as http:
        retried = http.post("/runs", json=body, headers={"Idempotency-Key": orphan_key})
        assert retried.status_code == 201, retried.text
        assert REPLAY not in retried.headers
        assert run_ids(http) - before == {retried.json()["runId"]}
        again = http.post("/runs", json=body, headers={"Idempotency-Key": orphan_key})
        assert again.headers[REPLAY] == "true"
        assert again.json()["runId"] == retried.json()["runId"]
    wait_terminal(server.client(), retried.json()["runId"])


def test_a_server_error_is_not_kept_so_the_retry_creates_the_run(
    backend: Backend, tmp_path: Path
) -> None:
    """A createRun that meets a host shutting down answers 500; kept under its key, that 500
    would answer the client's retry after the restart, and the run would never be made."""
    body = {"workflowId": COUNTER_WORKFLOW, "inputs": counter_inputs(unique("stopping"))}
    key = new_key()
    with running_host(host_settings(backend, tmp_path), backend) as handle:
        # The engine stops while the server still answers, as in the host's shutdown.
        handle.on_host_loop(lambda host: host.engine.shutdown())
        with handle.http() as http:
            refused = http.post("/runs", json=body, headers={"Idempotency-Key": key})
        assert_error(refused, 500, "internal_error")
        handle.restart()
        with handle.http() as http:
            retried = http.post("/runs", json=body, headers={"Idempotency-Key": key})
            assert retried.status_code == 201, retried.text
            assert REPLAY not in retried.headers
            assert run_ids(http) == {retried.json()["runId"]}
        wait_terminal(handle.client(), retried.json()["runId"])


def test_an_eval_run_and_a_fork_are_replayed_under_their_keys(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    ref = publish(http_a, suite(new_suite_id("idem"), [task("only")]))
    eval_key, fork_key = new_key(), new_key()
    before = run_ids(http_a)
    created = [
        http_a.post("/runs", json=eval_body(ref), headers={"Idempotency-Key": eval_key})
        for _ in range(2)
    ]
    assert [response.status_code for response in created] == [201, 201]
    assert created[1].headers[REPLAY] == "true"
    assert created[1].content == created[0].content
    eval_run = created[0].json()["runId"]
    wait_terminal(server.client(), eval_run)

    path = f"/runs/{project_id(eval_run)}:fork"
    forks = [
        http_a.post(path, json={"mode": "replay"}, headers={"Idempotency-Key": fork_key})
        for _ in range(2)
    ]
    assert [response.status_code for response in forks] == [201, 201]
    assert forks[1].headers[REPLAY] == "true"
    assert forks[1].content == forks[0].content
    assert forks[0].json()["sourceRunId"] == eval_run
    assert run_ids(http_a) - before == {eval_run, forks[0].json()["runId"]}


async def _age_key(url: str, key: str, by: timedelta) -> None:
    store = await Store.open(url)
    try:
        async with store.transaction() as uow:
            await uow.connection.execute(
                update(idempotency).where(idempotency.c.key == key).values(created_at=now() - by)
            )
    finally:
        await store.close()


def test_a_key_kept_past_its_retention_is_free_again(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    """A key's answer is kept 24 h (`IDEMPOTENCY_RETENTION`): a request with a key older than
    that is a new request, whose answer is then kept under the key."""
    body = {"workflowId": COUNTER_WORKFLOW, "inputs": counter_inputs(unique("expired"))}
    key = new_key()
    first = http_a.post("/runs", json=body, headers={"Idempotency-Key": key})
    assert first.status_code == 201
    wait_terminal(server.client(), first.json()["runId"])
    # Aged under the running host: a restart's housekeeping would delete it before any request.
    asyncio.run(_age_key(server.database_url, key, IDEMPOTENCY_RETENTION + timedelta(hours=1)))
    with server.http() as http:
        fresh = http.post("/runs", json=body, headers={"Idempotency-Key": key})
        assert fresh.status_code == 201, fresh.text
        assert REPLAY not in fresh.headers
        assert fresh.json()["runId"] != first.json()["runId"]
        again = http.post("/runs", json=body, headers={"Idempotency-Key": key})
        assert again.headers[REPLAY] == "true"
        assert again.json()["runId"] == fresh.json()["runId"]
    wait_terminal(server.client(), fresh.json()["runId"])
