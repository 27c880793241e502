"""Input the stores cannot hold is refused at the edge: a 4xx envelope naming the field, the
store unchanged, and every later read still answering (issue 10, item 5)."""

from __future__ import annotations

import base64
import uuid
from typing import Any

import httpx
import pytest

from wopeval.wire import limits

from ._server import ServerHandle
from ._support import NOOP_WORKFLOW, assert_error, run_to_end, store_unchanged, unique

# Each template is a body with one `%s` hole, on a route that stores what it is sent.
BODY_SLOTS: dict[str, tuple[str, str, bytes, str]] = {
    "createRun.inputs": (
        "POST",
        "/runs",
        b'{"workflowId": "conformance-noop", "inputs": {"x": %s}}',
        "inputs.x",
    ),
    "createRun.metadata": (
        "POST",
        "/runs",
        b'{"workflowId": "conformance-noop", "metadata": {"deep": [1, %s]}}',
        "metadata.deep[1]",
    ),
    "forkRun.fromSeq": (
        "POST",
        "/runs/{run}:fork",
        b'{"mode": "replay", "fromSeq": %s}',
        "fromSeq",
    ),
    "cancelRun.reason": ("POST", "/runs/{run}/cancel", b'{"reason": %s}', "reason"),
    "putSuite.task": (
        "PUT",
        "/host/wopeval/suites",
        b'{"suiteId": "bad-input", "version": "1", "tasks": [{"id": "t", "input": %s}]}',
        "tasks[0].input",
    ),
}

BAD_VALUES: dict[str, bytes] = {
    "nan": b"NaN",
    "infinity": b"Infinity",
    "minus-infinity": b"-Infinity",
    "float-overflow": b"1e400",
    "int-past-64-bits": str(limits.INT64_MAX + 1).encode(),
    "int-below-64-bits": str(limits.INT64_MIN - 1).encode(),
    "int-of-5000-digits": b"7" * 5000,
    "nul-in-string": b'"a\\u0000b"',
    "nul-in-key": b'{"a\\u0000": 1}',
    "lone-surrogate": b'"\\ud800"',
    "nested-past-the-limit": b"[" * limits.JSON_MAX_DEPTH + b"]" * limits.JSON_MAX_DEPTH,
    "not-utf8": b'"caf\xe9"',
}


@pytest.fixture(scope="module")
def finished_run(server: ServerHandle) -> str:
    run_id, _ = run_to_end(server.client(), unique("bad-input"))
    return run_id


def _projected(run_id: str) -> str:
    return run_id.replace("/", "~2F")


@pytest.mark.parametrize("bad", list(BAD_VALUES))
def test_a_value_no_store_can_hold_is_400_naming_the_field(
    server: ServerHandle, http_a: httpx.Client, finished_run: str, bad: str
) -> None:
    with store_unchanged(server.database_url):
        for method, path, template, field in BODY_SLOTS.values():
            response = http_a.request(
                method,
                path.format(run=_projected(finished_run)),
                content=template % BAD_VALUES[bad],
                headers={"Content-Type": "application/json"},
            )
            details = assert_error(response, 400, "validation_error")["details"]
            if bad == "not-utf8":
                assert details == {"field": "body"}
            elif bad in ("nul-in-key", "nested-past-the-limit"):
                assert details["field"].startswith(field), (field, details)
            else:
                assert details == {"field": field}
    # The tenant's reads still answer: nothing half-stored poisons them.
    assert http_a.get("/runs").status_code == 200
    assert http_a.get(f"/runs/{_projected(finished_run)}").status_code == 200


def test_values_at_the_limits_are_stored_and_read_back_intact(http_a: httpx.Client) -> None:
    nested: Any = "bottom"
    # The body is one level and `inputs` another: this reaches the depth limit exactly.
    for _ in range(limits.JSON_MAX_DEPTH - 2):
        nested = [nested]
    inputs = {
        "max": limits.INT64_MAX,
        "min": limits.INT64_MIN,
        "float": 1.7976931348623157e308,
        "text": "café ✓ 🚀 \u2028",
        "nested": nested,
    }
    created = http_a.post("/runs", json={"workflowId": NOOP_WORKFLOW, "inputs": inputs})
    assert created.status_code == 201, created.text
    snapshot = http_a.get(f"/runs/{_projected(created.json()['runId'])}")
    assert snapshot.status_code == 200
    assert snapshot.json()["inputs"] == inputs


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/runs", {"workflowId": "conformance-noop\x00"}, "workflowId"),
        ("/runs", {"cursor": "\x00"}, "cursor"),
        ("/runs", {"status": "running\x00"}, "status"),
        ("/runs/{run}/events/poll", {"afterSequence": "\x00"}, "afterSequence"),
        ("/runs/{run}/events", {"streamMode": "debug\x00"}, "streamMode"),
        ("/host/wopeval/conformance/counter/a%00b", {}, "path"),
        ("/host/wopeval/suites/suite%00@1", {}, "path"),
        ("/workflows/conformance-noop%00", {}, "path"),
    ],
    ids=["workflowId", "cursor", "status", "afterSequence", "streamMode", "counter", "suite", "wf"],
)
def test_a_nul_in_a_filter_or_path_is_400_naming_it(
    server: ServerHandle,
    http_a: httpx.Client,
    finished_run: str,
    path: str,
    params: dict[str, str],
    field: str,
) -> None:
    with store_unchanged(server.database_url):
        response = http_a.get(path.format(run=_projected(finished_run)), params=params)
    assert assert_error(response, 400, "validation_error")["details"] == {"field": field}


def _cursor(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        (
            "/runs/{run}/events/poll",
            {"afterSequence": str(limits.SEQUENCE_MAX + 1)},
            "afterSequence",
        ),
        ("/runs/{run}/events/poll", {"afterSequence": str(2**63)}, "afterSequence"),
        ("/runs/{run}/events/poll", {"afterSequence": "9" * 5000}, "afterSequence"),
        ("/runs/{run}/events/poll", {"afterSequence": "-2"}, "afterSequence"),
        ("/runs/{run}/events/poll", {"timeout": str(2**63)}, "timeout"),
        ("/runs", {"limit": str(limits.RUN_LIST_MAX_PAGE_SIZE + 1)}, "limit"),
        ("/runs", {"limit": str(2**63)}, "limit"),
        ("/runs", {"cursor": _cursor(f"v1:{2**63}")}, "cursor"),
        ("/runs", {"cursor": _cursor("v1:" + "9" * 5000)}, "cursor"),
        ("/runs", {"cursor": _cursor("v1:-1")}, "cursor"),
        ("/runs", {"cursor": _cursor("v1:1_000")}, "cursor"),
    ],
    ids=[
        "after-past-int32",
        "after-past-int64",
        "after-5000-digits",
        "after-below-minus-1",
        "timeout-past-int64",
        "limit-past-page-size",
        "limit-past-int64",
        "cursor-past-int64",
        "cursor-5000-digits",
        "cursor-negative",
        "cursor-underscored",
    ],
)
def test_an_out_of_range_number_in_a_query_is_400_naming_it(
    server: ServerHandle,
    http_a: httpx.Client,
    finished_run: str,
    path: str,
    params: dict[str, str],
    field: str,
) -> None:
    with store_unchanged(server.database_url):
        response = http_a.get(path.format(run=_projected(finished_run)), params=params)
    assert assert_error(response, 400, "validation_error")["details"] == {"field": field}


@pytest.mark.parametrize(
    "last_event_id", [str(limits.SEQUENCE_MAX + 1), str(2**63), "+3", "1_0", "-2", "three"]
)
def test_a_resume_point_that_is_no_sequence_is_400(
    server: ServerHandle, http_a: httpx.Client, finished_run: str, last_event_id: str
) -> None:
    with store_unchanged(server.database_url):
        response = http_a.get(
            f"/runs/{_projected(finished_run)}/events", headers={"Last-Event-ID": last_event_id}
        )
    assert assert_error(response, 400, "validation_error")["details"] == {"field": "Last-Event-ID"}


def test_the_largest_advertised_page_is_served(http_a: httpx.Client) -> None:
    facet = http_a.get("/.well-known/openwop").json()["runList"]
    assert facet["maxPageSize"] == limits.RUN_LIST_MAX_PAGE_SIZE
    assert set(facet["filters"]) == {"workflowId", "status", "tag"}
    assert http_a.get("/runs", params={"limit": facet["maxPageSize"]}).status_code == 200


RUN_ROUTES = [
    ("GET", ""),
    ("GET", "/events/poll"),
    ("GET", "/events"),
    ("POST", "/cancel"),
    ("POST", ":fork"),
    ("GET", "/eval-summary"),
]


@pytest.mark.parametrize(
    "segment",
    [f"tenant-a~7E2F{uuid.uuid4().hex}", f"tenant-b~7E2F{uuid.uuid4().hex}", uuid.uuid4().hex],
    ids=["projected-twice", "foreign-projected-twice", "bare"],
)
def test_a_path_id_that_is_not_tenant_bound_is_400(
    server: ServerHandle, http_a: httpx.Client, segment: str
) -> None:
    with store_unchanged(server.database_url):
        for method, suffix in RUN_ROUTES:
            body = {"mode": "replay"} if suffix == ":fork" else None
            response = http_a.request(method, f"/runs/{segment}{suffix}", json=body)
            envelope = assert_error(response, 400, "validation_error")
            assert envelope["details"] == {"field": "runId"}, (method, suffix)
        live = http_a.get(f"/host/wopeval/runs/{segment}/live-calls")
        assert_error(live, 400, "validation_error")
