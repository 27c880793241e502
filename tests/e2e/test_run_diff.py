"""`GET /runs/{runId}:diff?against=` (runs.md `diffRun`, RFC 0054) on the real host.

Replays against their sources, the tenant rules of `GET /runs/{runId}` for both
ids, and a host with the operation switched off. The eval cases (a changed
agent replayed from its source, an active run) are in `evals/test_run_diff.py`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from openwop_client.types import CreateRunRequest, ForkRunRequest
from openwop_client.wire_id import project_id

from _backends import Backend

from ._server import TENANT_A, TENANT_B, ServerHandle, host_settings, running_host
from ._support import (
    NOOP_WORKFLOW,
    assert_error,
    assert_refused,
    run_to_end,
    unique,
    wait_terminal,
)


def _diff_path(run_id: str) -> str:
    return f"/runs/{project_id(run_id)}:diff"


def _log(http: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    """The run's event documents as the host serves them."""
    response = http.get(f"/runs/{project_id(run_id)}/events/poll", params={"timeout": 1})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["isTerminal"], body
    events: list[dict[str, Any]] = body["events"]
    return events


@pytest.fixture
def a_run(server: ServerHandle) -> str:
    run_id, _ = run_to_end(server.client(TENANT_A), unique("diff"))
    return run_id


# ── replays and their sources ────────────────────────────────────────


def test_a_workflow_run_and_its_replay_fork_do_not_diverge(
    server: ServerHandle, http_a: httpx.Client, a_run: str
) -> None:
    client = server.client()
    fork = client.runs_fork(a_run, ForkRunRequest(mode="replay", fromSeq=0))
    wait_terminal(client, fork.runId)
    # The fork's log is the source's under new run and event ids.
    source_log, fork_log = _log(http_a, a_run), _log(http_a, fork.runId)
    assert [e["type"] for e in fork_log] == [e["type"] for e in source_log]
    assert {e["eventId"] for e in fork_log}.isdisjoint(e["eventId"] for e in source_log)

    diff = client.runs_diff(a_run, fork.runId)
    assert diff is not None
    assert (diff.a, diff.b) == (a_run, fork.runId)
    assert (diff.divergedAtSeq, diff.eventDiffs, diff.stateDiff) == (None, [], {})
    assert diff.truncated is None
    raw = http_a.get(_diff_path(a_run), params={"against": project_id(fork.runId)})
    assert raw.json() == {
        "a": a_run,
        "b": fork.runId,
        "divergedAtSeq": None,
        "eventDiffs": [],
        "stateDiff": {},
    }


def test_two_noop_runs_are_identical_logs(server: ServerHandle) -> None:
    client = server.client()
    runs = [client.runs_create(CreateRunRequest(workflowId=NOOP_WORKFLOW)).runId for _ in "ab"]
    for run_id in runs:
        wait_terminal(client, run_id)
    diff = client.runs_diff(*runs)
    assert diff is not None
    assert (diff.divergedAtSeq, diff.eventDiffs, diff.stateDiff) == (None, [], {})


def test_two_runs_diverge_where_the_tool_answered_differently(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    client = server.client()
    key = unique("diverge")
    first, _ = run_to_end(client, key)
    second, _ = run_to_end(client, key)  # the counter answers 2 this time
    diff = client.runs_diff(first, second)
    assert diff is not None
    first_log, second_log = _log(http_a, first), _log(http_a, second)
    returned = next(e["sequence"] for e in first_log if e["type"] == "agent.tool-returned")
    assert diff.divergedAtSeq == returned
    (entry,) = diff.eventDiffs
    assert (entry.seq, entry.op) == (returned, "changed")
    assert entry.aEvent == first_log[returned]
    assert entry.bEvent == second_log[returned]
    assert entry.aEvent["payload"]["outcome"] == {"key": key, "count": 1}
    assert entry.bEvent["payload"]["outcome"] == {"key": key, "count": 2}
    assert diff.stateDiff == {}


def test_against_is_read_in_either_form_a_client_sends(
    server: ServerHandle, http_a: httpx.Client, a_run: str
) -> None:
    # The official client sends the `~2F` projection; `encodeURIComponent` sends `%2F`,
    # which a query decodes to `/` and the path-id middleware keeps inside the segment.
    encoded = a_run.replace("/", "%2F")
    projected = http_a.get(_diff_path(a_run), params={"against": project_id(a_run)})
    plain = http_a.get(f"/runs/{encoded}:diff?against={encoded}")
    assert projected.status_code == plain.status_code == 200
    assert projected.json() == plain.json()
    assert (projected.json()["a"], projected.json()["b"]) == (a_run, a_run)


# ── tenants: the rules of GET /runs/{runId}, for both ids ────────────


def _missing(tenant: str) -> str:
    return f"{tenant}/{uuid.uuid4().hex}"


@pytest.mark.parametrize("exists", [True, False], ids=["existing", "missing"])
def test_a_foreign_run_is_403_in_the_path_and_in_against(
    server: ServerHandle, http_b: httpx.Client, a_run: str, exists: bool
) -> None:
    foreign = a_run if exists else _missing(TENANT_A)
    own, _ = run_to_end(server.client(TENANT_B), unique("diff-b"))
    get = http_b.get(f"/runs/{project_id(foreign)}")
    assert_error(get, 403, "id_tenant_mismatch")
    for path, against in ((foreign, own), (own, foreign), (foreign, foreign)):
        response = http_b.get(_diff_path(path), params={"against": project_id(against)})
        assert_error(response, 403, "id_tenant_mismatch")
        assert response.content == get.content
    client_b = server.client(TENANT_B)
    assert_refused(lambda: client_b.runs_diff(foreign, own), 403, "id_tenant_mismatch")
    assert_refused(lambda: client_b.runs_diff(own, foreign), 403, "id_tenant_mismatch")


def test_the_refusal_is_the_same_bytes_whether_or_not_the_foreign_run_exists(
    http_b: httpx.Client, a_run: str
) -> None:
    own_missing = _missing(TENANT_B)
    answers = []
    for foreign in (a_run, _missing(TENANT_A)):
        for path, against in ((foreign, own_missing), (own_missing, foreign)):
            response = http_b.get(_diff_path(path), params={"against": project_id(against)})
            assert_error(response, 403, "id_tenant_mismatch")
            answers.append(response.content)
    assert len(set(answers)) == 1


def test_an_unknown_run_of_ones_own_is_404_as_on_get(http_a: httpx.Client, a_run: str) -> None:
    missing = _missing(TENANT_A)
    get = http_a.get(f"/runs/{project_id(missing)}")
    assert_error(get, 404, "not_found")
    for path, against in ((missing, a_run), (a_run, missing)):
        response = http_a.get(_diff_path(path), params={"against": project_id(against)})
        assert_error(response, 404, "not_found")
        assert response.content == get.content


def test_a_missing_or_unbound_against_is_400(http_a: httpx.Client, a_run: str) -> None:
    body = assert_error(http_a.get(_diff_path(a_run)), 400, "validation_error")
    assert body["details"] == {"field": "against"}
    for against in ("", uuid.uuid4().hex, "nobody~7E2Fx"):
        response = http_a.get(_diff_path(a_run), params={"against": against})
        body = assert_error(response, 400, "validation_error")
        assert body["details"] == {"field": "against"}
    # A bare id in the path is refused as `GET /runs/{runId}` refuses it.
    bare = http_a.get(f"/runs/{uuid.uuid4().hex}:diff", params={"against": project_id(a_run)})
    assert_error(bare, 400, "validation_error")
    assert bare.content == http_a.get(f"/runs/{uuid.uuid4().hex}").content


# ── switched off ─────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def diff_off(backend: Backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerHandle]:
    data_dir = tmp_path_factory.mktemp(f"diff-off-{backend.name}")
    with running_host(host_settings(backend, data_dir, run_diff=False), backend) as handle:
        yield handle


def test_switched_off_it_answers_404_and_is_not_described(
    server: ServerHandle, diff_off: ServerHandle
) -> None:
    client = diff_off.client()
    run_id, _ = run_to_end(client, unique("diff-off"))
    assert client.runs_diff(run_id, run_id) is None
    with diff_off.http(TENANT_A) as http:
        # 404 for every request, before any id or parameter is read.
        for path, query in (
            (_diff_path(run_id), {"against": project_id(run_id)}),
            (_diff_path(_missing(TENANT_B)), {"against": project_id(run_id)}),
            (_diff_path(run_id), {}),
        ):
            assert_error(http.get(path, params=query), 404, "not_found")
        assert "/runs/{runId}:diff" not in http.get("/openapi.json").json()["paths"]
        off_discovery = http.get("/.well-known/openwop").json()
    with diff_off.http(None) as anonymous:
        assert_error(anonymous.get(_diff_path(run_id)), 401, "unauthenticated")
    with server.http(TENANT_A) as http:
        described = http.get("/openapi.json").json()["paths"]["/runs/{runId}:diff"]
        assert described["get"]["operationId"] == "diffRun"
        # The v2 root has no key for diffRun (runs.md: OPTIONAL, probed by its 404).
        assert http.get("/.well-known/openwop").json() == off_discovery
