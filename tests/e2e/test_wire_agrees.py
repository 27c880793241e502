"""The wire agrees with itself (issue 25, item 7): `configurable` is closed at every level, a
request no route serves is 404 or 405 before its body is read, a 405 names every method of its
path, and `createdAfter` is the RFC 3339 date-time `/openapi.json` says it is."""

from __future__ import annotations

import http.client
import json
from typing import Any

import httpx
import pytest

from wopeval.wire import ids, limits

from ._server import ServerHandle
from ._support import (
    NOOP_WORKFLOW,
    assert_error,
    check_envelope,
    run_to_end,
    store_unchanged,
    unique,
)

WHOLE_CONFIGURABLE: dict[str, Any] = {
    "version": 1,
    "run": {"recursionLimit": 5, "runTimeoutMs": 60000, "maxLoopIterations": 3},
    "ai": {
        "provider": "openai",
        "model": "gpt-test",
        "temperature": 0.5,
        "maxTokens": 100,
        "promptOverrides": {"system": "be brief"},
        "reasoningVerbosity": "summary",
        "maxRefusals": 0,
    },
    "distillation": {"tokenBudget": 1000},
    "budget": {"maxUsd": 1.5},
    "extensions": {"acme-labs": {"anything": [1, {"goes": True}]}},
}


@pytest.mark.parametrize(
    ("configurable", "field"),
    [
        ({"version": 1, "ai": {"bogus": "x"}}, "configurable.ai.bogus"),
        ({"version": 1, "run": {"bogus": 1}}, "configurable.run.bogus"),
        ({"version": 1, "distillation": {"bogus": 1}}, "configurable.distillation.bogus"),
        ({"version": 1, "ai": {"ai.provider": "x"}}, "configurable.ai.ai.provider"),
        ({"version": 1, "ai.provider": "x"}, "configurable.ai.provider"),
        ({"version": 1, "extensions": {"acme.labs": {}}}, "configurable.extensions.acme.labs"),
        ({"version": 1, "extensions": {"acme": "x"}}, "configurable.extensions.acme"),
        ({"version": 1, "run": {"recursionLimit": "5"}}, "configurable.run.recursionLimit"),
        ({"version": 1, "run": {"runTimeoutMs": 0}}, "configurable.run.runTimeoutMs"),
        ({"version": 1, "ai": {"temperature": 2.5}}, "configurable.ai.temperature"),
        ({"version": 1, "ai": {"reasoningVerbosity": "all"}}, "configurable.ai.reasoningVerbosity"),
        ({"version": 1, "ai": {"promptOverrides": {"x": 1}}}, "configurable.ai.promptOverrides.x"),
        ({"version": True}, "configurable.version"),
    ],
    ids=[
        "unknown-ai-key",
        "unknown-run-key",
        "unknown-distillation-key",
        "dotted-key-in-a-section",
        "dotted-key-at-the-root",
        "dotted-extension-org",
        "extension-not-an-object",
        "integer-as-text",
        "timeout-out-of-range",
        "temperature-out-of-range",
        "unknown-verbosity",
        "override-not-text",
        "version-as-boolean",
    ],
)
def test_configurable_is_closed_at_every_level(
    server: ServerHandle, http_a: httpx.Client, configurable: dict[str, Any], field: str
) -> None:
    """runs.md §Validation: an unknown root key, an unknown key inside a section, or a dotted
    key MUST be 400 `validation_error`; the refusal names where it sits, and nothing is kept."""
    with store_unchanged(server.database_url):
        response = http_a.post(
            "/runs", json={"workflowId": NOOP_WORKFLOW, "configurable": configurable}
        )
    envelope = assert_error(response, 400, "validation_error")
    assert envelope["details"] == {"field": field}
    assert field in envelope["message"]


def test_a_configurable_of_every_section_is_kept_as_sent(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    created = http_a.post(
        "/runs", json={"workflowId": NOOP_WORKFLOW, "configurable": WHOLE_CONFIGURABLE}
    )
    assert created.status_code == 201, created.text
    snapshot = http_a.get(f"/runs/{ids.project(created.json()['runId'])}")
    assert snapshot.status_code == 200, snapshot.text
    assert snapshot.json()["configurable"] == WHOLE_CONFIGURABLE


BODIES_NO_ROUTE_READS: dict[str, bytes] = {"malformed-json": b"{not json", "nan": b'{"x": NaN}'}


@pytest.mark.parametrize("body", list(BODIES_NO_ROUTE_READS))
@pytest.mark.parametrize("path", ["/nowhere", "/runs/a/b/c", "/host/wopeval/nothing"])
def test_a_path_no_route_serves_is_404_whatever_the_body(
    server: ServerHandle, http_a: httpx.Client, path: str, body: str
) -> None:
    with store_unchanged(server.database_url):
        response = http_a.post(
            path, content=BODIES_NO_ROUTE_READS[body], headers={"Content-Type": "application/json"}
        )
    assert_error(response, 404, "not_found")


@pytest.mark.parametrize("body", list(BODIES_NO_ROUTE_READS))
@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PUT", "/runs", "GET, POST"),
        ("PATCH", "/runs/{run}:pause", "POST"),
        ("DELETE", "/runs/{run}/cancel", "POST"),
        ("PUT", "/.well-known/openwop", "GET"),
    ],
)
def test_a_method_a_path_does_not_serve_is_405_whatever_the_body(
    server: ServerHandle,
    http_a: httpx.Client,
    finished_run: str,
    method: str,
    path: str,
    allow: str,
    body: str,
) -> None:
    with store_unchanged(server.database_url):
        response = http_a.request(
            method,
            path.format(run=ids.project(finished_run)),
            content=BODIES_NO_ROUTE_READS[body],
            headers={"Content-Type": "application/json"},
        )
    assert_error(response, 405, "wopeval.method_not_allowed")
    assert response.headers["Allow"] == allow


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("POST", "/nowhere", 404, "not_found"),
        ("PUT", "/runs", 405, "wopeval.method_not_allowed"),
        ("PATCH", "/runs/{run}:fork", 405, "wopeval.method_not_allowed"),
    ],
)
def test_a_request_no_route_serves_is_answered_before_its_body_arrives(
    server: ServerHandle, finished_run: str, method: str, path: str, status: int, code: str
) -> None:
    """Only the headers are sent, with a `Content-Length` over the body limit: the answer is
    the route table's, not a 413, and it cannot have waited for the body."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        connection.putrequest(method, path.format(run=ids.project(finished_run)))
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", str(limits.DEFAULT_MAX_BODY_BYTES * 48))
        connection.endheaders()
        response = connection.getresponse()
        assert response.status == status
        check_envelope(json.loads(response.read()), status, code)
    finally:
        connection.close()


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("OPTIONS", "/runs", "GET, POST"),
        ("DELETE", "/runs", "GET, POST"),
        ("OPTIONS", "/runs/{run}", "GET"),
        ("OPTIONS", "/runs/{run}:fork", "POST"),
        ("GET", "/runs/{run}:fork", "POST"),
        ("GET", "/runs/{run}:pause", "POST"),
        ("GET", "/runs/{run}:resume", "POST"),
        ("OPTIONS", "/runs/{run}:diff", "GET"),
    ],
)
def test_a_405_names_every_method_of_its_path_and_no_other(
    server: ServerHandle,
    http_a: httpx.Client,
    finished_run: str,
    method: str,
    path: str,
    allow: str,
) -> None:
    """RFC 9110 §10.2.1, and the same methods `/openapi.json` gives the path: `/runs` is two
    routes, and `/runs/<id>:fork` is never a run named `<id>:fork`."""
    response = http_a.request(method, path.format(run=ids.project(finished_run)))
    assert_error(response, 405, "wopeval.method_not_allowed")
    assert response.headers["Allow"] == allow


@pytest.mark.parametrize(
    "value",
    [
        "2000-01-01",
        "2000-01-01T00:00:00",
        "2000-01-01 00:00:00Z",
        "946684800",
        "2000-13-01T00:00:00Z",
        "2000-01-01T00:00:00+24:00",
        "yesterday",
    ],
    ids=[
        "bare-date",
        "no-offset",
        "space-for-t",
        "epoch-seconds",
        "month-13",
        "offset-24h",
        "words",
    ],
)
def test_created_after_is_an_rfc3339_date_time_or_400(http_a: httpx.Client, value: str) -> None:
    envelope = assert_error(
        http_a.get("/runs", params={"createdAfter": value}), 400, "validation_error"
    )
    assert envelope["details"] == {"field": "createdAfter"}


def test_created_after_takes_every_rfc3339_form(http_a: httpx.Client, finished_run: str) -> None:
    """One instant written three ways selects the same runs; one after them all selects none."""
    pages = []
    for value in ("2000-01-01T00:00:00Z", "2000-01-01t00:00:00.000z", "2000-01-01T05:30:00+05:30"):
        response = http_a.get("/runs", params={"createdAfter": value})
        assert response.status_code == 200, (value, response.text)
        pages.append([run["runId"] for run in response.json()["runs"]])
    assert pages[0]
    assert pages[0] == pages[1] == pages[2]
    later = http_a.get("/runs", params={"createdAfter": "2999-01-01T00:00:00Z"})
    assert later.status_code == 200, later.text
    assert later.json()["runs"] == []


@pytest.fixture(scope="module")
def finished_run(server: ServerHandle) -> str:
    run_id, _ = run_to_end(server.client(), unique("wire-agrees"))
    return run_id
