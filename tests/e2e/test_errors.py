"""Bad input of every kind: the right status and code, and nothing created or changed."""

from __future__ import annotations

import base64
import uuid
from typing import Any

import httpx
import pytest

from ._server import TENANT_A, ServerHandle
from ._support import (
    COUNTER_WORKFLOW,
    NOOP_WORKFLOW,
    assert_error,
    counter_inputs,
    run_to_end,
    store_unchanged,
    unique,
)


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"workflowId": NOOP_WORKFLOW, "bogus": 1}, "bogus"),
        (
            {"workflowId": NOOP_WORKFLOW, "configurable": {"version": 1, "evalModes": ["golden"]}},
            "evalModes",
        ),
        (
            {"workflowId": NOOP_WORKFLOW, "configurable": {"version": 1, "baselineRunId": "a/b"}},
            "baselineRunId",
        ),
    ],
    ids=["root", "configurable.evalModes", "configurable.baselineRunId"],
)
def test_an_unknown_body_property_is_named_in_a_400(
    server: ServerHandle, http_a: httpx.Client, body: dict[str, Any], named: str
) -> None:
    with store_unchanged(server.database_url):
        response = http_a.post("/runs", json=body)
    assert named in assert_error(response, 400, "validation_error")["message"]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"workflowId": ""},
        {"workflowId": "no-such-workflow"},
        {"workflowId": NOOP_WORKFLOW, "configurable": {"run": {}}},
        {"workflowId": NOOP_WORKFLOW, "inputs": []},
        {"workflowId": NOOP_WORKFLOW, "tags": ["x" * 257]},
        {"workflowId": NOOP_WORKFLOW, "tenantId": "tenant-b"},
        {"workflowId": NOOP_WORKFLOW, "evalModes": ["golden"]},
        {"workflowId": NOOP_WORKFLOW, "mode": "replay"},
    ],
    ids=[
        "empty",
        "empty-workflow-id",
        "unknown-workflow",
        "configurable-without-version",
        "inputs-not-object",
        "tag-too-long",
        "foreign-tenant-id",
        "eval-field-without-eval-mode",
        "unknown-mode",
    ],
)
def test_an_invalid_create_body_is_400(
    server: ServerHandle, http_a: httpx.Client, body: dict[str, Any]
) -> None:
    with store_unchanged(server.database_url):
        response = http_a.post("/runs", json=body)
    assert_error(response, 400, "validation_error")


@pytest.mark.parametrize(
    "content", [b"{not json", b"", b"[1, 2", b'{"workflowId": "conformance-noop",}']
)
def test_malformed_json_is_400(server: ServerHandle, http_a: httpx.Client, content: bytes) -> None:
    with store_unchanged(server.database_url):
        response = http_a.post(
            "/runs", content=content, headers={"Content-Type": "application/json"}
        )
    assert_error(response, 400, "validation_error")


@pytest.mark.parametrize("path", ["/nowhere", "/runs/a/b/c", "/v2/runs", "/host/wopeval/nothing"])
def test_an_unknown_route_is_a_404_envelope(
    server: ServerHandle, http_a: httpx.Client, path: str
) -> None:
    with store_unchanged(server.database_url):
        assert_error(http_a.get(path), 404, "not_found")
        assert_error(http_a.post(path, json={}), 404, "not_found")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("DELETE", "/runs"),
        ("PUT", "/runs"),
        ("POST", "/.well-known/openwop"),
        ("GET", "/runs/{run}/cancel"),
        ("DELETE", "/runs/{run}"),
    ],
)
def test_a_wrong_method_is_405(
    server: ServerHandle, http_a: httpx.Client, method: str, path: str
) -> None:
    run_id, _ = run_to_end(server.client(), unique("method"))
    with store_unchanged(server.database_url):
        response = http_a.request(method, path.format(run=run_id.replace("/", "~2F")))
    assert response.status_code == 405
    assert_error(response, 405, response.json()["error"])
    assert response.headers.get("Allow")


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer", "Bearer not-a-key", "Basic dGVuYW50LWE6eA==", "not-a-scheme"],
    ids=["missing", "empty", "wrong-key", "basic", "garbage"],
)
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/runs"),
        ("POST", "/runs"),
        ("GET", "/runs/{run}"),
        ("GET", "/runs/{run}/events"),
        ("POST", "/runs/{run}/cancel"),
        ("GET", "/host/wopeval/conformance/counter/k"),
    ],
)
def test_a_missing_or_wrong_bearer_is_401_with_a_challenge(
    server: ServerHandle,
    http_anonymous: httpx.Client,
    authorization: str | None,
    method: str,
    path: str,
) -> None:
    run = f"{TENANT_A}~2F{uuid.uuid4().hex}"
    headers = {"Authorization": authorization} if authorization is not None else {}
    body = (
        {"workflowId": COUNTER_WORKFLOW, "inputs": counter_inputs("k")}
        if method == "POST"
        else None
    )
    with store_unchanged(server.database_url):
        response = http_anonymous.request(method, path.format(run=run), headers=headers, json=body)
    assert_error(response, 401, "unauthenticated")
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_a_real_key_under_another_scheme_is_401(
    server: ServerHandle, http_anonymous: httpx.Client
) -> None:
    """Only `Bearer` carries a key: a real key sent as `Basic` or `Token` credentials (a
    client or proxy that mangles the header) is refused, not taken."""
    for scheme in ("Basic", "Token"):
        authorization = f"{scheme} {server.keys[TENANT_A]}"
        response = http_anonymous.get("/runs", headers={"Authorization": authorization})
        assert_error(response, 401, "unauthenticated")


def test_the_key_of_another_tenant_works_only_as_that_tenant(
    server: ServerHandle, http_b: httpx.Client
) -> None:
    response = http_b.get("/runs", params={"limit": 1})
    assert response.status_code == 200
    assert all(run["owner"]["tenant"] == "tenant-b" for run in response.json()["runs"])


@pytest.mark.parametrize(
    "segment",
    ["tenant-a~2", "tenant-a~ZZ0123456789abcdef", "tenant-a~2G0123456789abcdef", "~"],
)
def test_a_bad_tilde_escape_in_a_path_id_is_400(
    server: ServerHandle, http_a: httpx.Client, segment: str
) -> None:
    with store_unchanged(server.database_url):
        for method, suffix in (("GET", ""), ("GET", "/events/poll"), ("POST", "/cancel")):
            response = http_a.request(method, f"/runs/{segment}{suffix}")
            assert_error(response, 400, "validation_error")


def test_a_legacy_percent_encoded_path_id_is_accepted(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    run_id, events = run_to_end(server.client(), unique("legacy"))
    legacy = run_id.replace("/", "%2F")
    projected = run_id.replace("/", "~2F")
    assert http_a.get(f"/runs/{legacy}").json() == http_a.get(f"/runs/{projected}").json()
    polled = http_a.get(f"/runs/{legacy}/events/poll").json()
    assert [event["eventId"] for event in polled["events"]] == [e.eventId for e in events]
    lower = http_a.get(f"/runs/{run_id.replace('/', '%2f')}")
    assert lower.json()["runId"] == run_id
    lower_projection = http_a.get(f"/runs/{run_id.replace('/', '~2f')}")
    assert lower_projection.json()["runId"] == run_id


def _cursor(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "params",
    [
        {"cursor": "not-a-cursor"},
        {"cursor": _cursor("v9:12")},
        {"cursor": _cursor("v1:twelve")},
        {"cursor": "%%%"},
        {"limit": "0"},
        {"limit": "100000"},
        {"limit": "many"},
        {"status": "sleeping"},
    ],
    ids=[
        "garbage",
        "other-version",
        "not-a-number",
        "not-base64",
        "limit-0",
        "limit-huge",
        "limit-text",
        "unknown-status",
    ],
)
def test_bad_list_parameters_are_400(
    server: ServerHandle, http_a: httpx.Client, params: dict[str, str]
) -> None:
    with store_unchanged(server.database_url):
        response = http_a.get("/runs", params=params)
    assert_error(response, 400, "validation_error")


@pytest.mark.parametrize(
    ("params", "headers"),
    [({"afterSequence": "x"}, {}), ({"timeout": "0"}, {}), ({"timeout": "600"}, {})],
    ids=["after-not-int", "timeout-0", "timeout-huge"],
)
def test_bad_poll_parameters_are_400(
    server: ServerHandle, http_a: httpx.Client, params: dict[str, str], headers: dict[str, str]
) -> None:
    run_id, _ = run_to_end(server.client(), unique("poll"))
    with store_unchanged(server.database_url):
        response = http_a.get(
            f"/runs/{run_id.replace('/', '~2F')}/events/poll", params=params, headers=headers
        )
    assert_error(response, 400, "validation_error")
