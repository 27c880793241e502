"""Helpers shared by the end-to-end tests: waiting on runs, reading envelopes and the store."""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.error import HTTPError

import httpx
import pytest
from openwop_client import OpenwopClient, WopError
from openwop_client._generated import ERROR_CODE_HTTP_STATUS, VENDOR_ERROR_CODE_PATTERN
from openwop_client.types import CreateRunRequest
from sqlalchemy import ColumnElement, Table, select

from wopeval.store import create_engine
from wopeval.store.tables import metadata

COUNTER_WORKFLOW = "conformance-agent-counter"
NOOP_WORKFLOW = "conformance-noop"
COUNTER_TOOL = "conformance.eval:counter"
TERMINAL_TYPES = ("run.completed", "run.failed", "run.cancelled")
RUN_DEADLINE_SECONDS = 60.0
PROTOCOL_VERSION = "2.46"
EVENT_ID = re.compile(r"^[A-Za-z0-9._~-]{16,128}$")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def counter_inputs(key: str, op: str = "inc", answer: str = "done") -> dict[str, Any]:
    return {"calls": [{"tool": COUNTER_TOOL, "args": {"op": op, "key": key}}], "answer": answer}


def counter_request(key: str) -> Any:
    return CreateRunRequest(workflowId=COUNTER_WORKFLOW, inputs=counter_inputs(key))


def create_counter_run(client: OpenwopClient, key: str) -> str:
    run_id: str = client.runs_create(counter_request(key)).runId
    return run_id


def wait_terminal(client: OpenwopClient, run_id: str) -> list[Any]:
    """Long-poll the run's log until it is terminal; returns every event, in order."""
    deadline = time.monotonic() + RUN_DEADLINE_SECONDS
    events: list[Any] = []
    after = -1
    while time.monotonic() < deadline:
        page = client.runs_poll_events(run_id, after_sequence=after, timeout_seconds=5)
        events.extend(page.events)
        if page.events:
            after = page.events[-1].sequence
        if page.isTerminal and after == page.lastSequence:
            return events
    raise AssertionError(f"run {run_id} did not finish within {RUN_DEADLINE_SECONDS}s")


def run_to_end(client: OpenwopClient, key: str) -> tuple[str, list[Any]]:
    run_id = create_counter_run(client, key)
    return run_id, wait_terminal(client, run_id)


def types_of(events: list[Any]) -> list[str]:
    return [event.type for event in events]


def read_counter(http: httpx.Client, key: str) -> int:
    response = http.get(f"/host/wopeval/conformance/counter/{key}")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["key"] == key
    count: int = body["count"]
    return count


def list_all_runs(http: httpx.Client, **filters: str) -> list[dict[str, Any]]:
    """Every run `GET /runs` shows this caller, newest first, walking the cursor."""
    runs: list[dict[str, Any]] = []
    params: dict[str, str | int] = {"limit": 200, **filters}
    while True:
        response = http.get("/runs", params=params)
        assert response.status_code == 200, response.text
        body = response.json()
        runs.extend(body["runs"])
        if "nextCursor" not in body:
            return runs
        params["cursor"] = body["nextCursor"]


# ── the error envelope ───────────────────────────────────────────────


def check_envelope(body: Any, status: int, code: str) -> dict[str, Any]:
    """The closed envelope, with a code that is registered for `status` or a vendor code."""
    assert isinstance(body, dict), body
    assert set(body) <= {"error", "message", "details"}, body
    assert body["error"] == code, body
    assert isinstance(body["message"], str), body
    assert body["message"], body
    if "details" in body:
        assert isinstance(body["details"], dict), body
    if code in ERROR_CODE_HTTP_STATUS:
        assert ERROR_CODE_HTTP_STATUS[code] == status, (code, status)
    else:
        assert VENDOR_ERROR_CODE_PATTERN.match(code), f"{code} is neither registered nor vendor"
    return body


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    assert response.headers.get("OpenWOP-Version") == PROTOCOL_VERSION
    return check_envelope(response.json(), status, code)


def assert_wop_error(error: WopError, status: int, code: str) -> dict[str, Any]:
    assert error.status == status, (error.status, error.raw_text)
    assert error.envelope is not None, error.raw_text
    assert error.envelope.error == code, error.raw_text
    return check_envelope(json.loads(error.raw_text), status, code)


def assert_refused(call: Callable[[], object], status: int, code: str) -> dict[str, Any]:
    """Run an official-client call that must be refused.

    The SDK raises `WopError` from its JSON operations and urllib's `HTTPError`
    from its SSE generator; both carry the envelope.
    """
    with pytest.raises((WopError, HTTPError)) as caught:
        call()
    error = caught.value
    if isinstance(error, WopError):
        return assert_wop_error(error, status, code)
    assert error.code == status, error.code
    return check_envelope(json.loads(error.read()), status, code)


# ── the store, read directly ─────────────────────────────────────────


async def _read_tables(
    url: str, tables: list[Table], where: list[ColumnElement[bool]]
) -> list[list[dict[str, Any]]]:
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            found = []
            for table in tables:
                query = select(table).where(*where).order_by(*table.primary_key.columns)
                result = await connection.execute(query)
                found.append([dict(row) for row in result.mappings()])
            return found
    finally:
        await engine.dispose()


def table_rows(url: str, name: str, **equal: Any) -> list[dict[str, Any]]:
    """Rows of one table of the host's database, filtered by column equality."""
    table = metadata.tables[name]
    where = [table.c[column] == value for column, value in equal.items()]
    return asyncio.run(_read_tables(url, [table], where))[0]


def whole_store(url: str) -> dict[str, list[dict[str, Any]]]:
    names = sorted(metadata.tables)
    tables = [metadata.tables[name] for name in names]
    return dict(zip(names, asyncio.run(_read_tables(url, tables, [])), strict=True))


@contextmanager
def store_unchanged(url: str) -> Iterator[None]:
    """Asserts that the block created, changed and deleted nothing in the host's database."""
    before = whole_store(url)
    yield
    after = whole_store(url)
    for name in before:
        assert after[name] == before[name], f"table {name} changed"
