"""Helpers of the eval end-to-end tests: suite documents, eval runs, refusals, the raw store."""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
from openwop_client import OpenwopClient
from openwop_client.types import CreateRunRequest
from openwop_client.wire_id import project_id
from sqlalchemy import delete, update

from wopeval.store import create_engine
from wopeval.store.tables import metadata

from .._support import COUNTER_TOOL, list_all_runs, wait_terminal

SCRIPTED_AGENT = "conformance.scripted-agent"
RECORDED_KEY = "conformance-recorded"
RECORDED_SOURCE = "conformance-eval-recorded-source"
RECORDED_REPLAY = "conformance-eval-recorded-replay"
RECORDED_DRIFT = "conformance-eval-recorded-drift"
REGRESSION_BASE = "conformance-eval-regression-base"
REGRESSION_CANDIDATE = "conformance-eval-regression-candidate"
SEEDED_SUITES = (
    RECORDED_SOURCE,
    RECORDED_REPLAY,
    RECORDED_DRIFT,
    REGRESSION_BASE,
    REGRESSION_CANDIDATE,
)
# wire digest §2.3: none of these may appear in an eval.* payload or a summary.
FORBIDDEN_KEYS = frozenset(
    {"taskOutput", "output", "rubric", "completion", "prompt", "body", "secret",
     "credentials", "token", "apiKey"}
)  # fmt: skip


# ── suite documents ──────────────────────────────────────────────────


def new_suite_id(label: str) -> str:
    """A suiteId no other test uses (`^[a-z0-9.-]+\\.evals\\.[a-z0-9-]+$`)."""
    return f"e2e-{uuid.uuid4().hex[:12]}.evals.{label}"


def counter_call(op: str, key: str) -> dict[str, Any]:
    return {"tool": COUNTER_TOOL, "args": {"op": op, "key": key}}


def golden(value: Any, strategy: str = "exact") -> dict[str, Any]:
    return {"kind": "golden", "match": {"strategy": strategy, "value": value}}


def task(
    task_id: str,
    calls: list[dict[str, Any]] | None = None,
    answer: Any = "done",
    *,
    expected: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A task for the scripted agent: make `calls`, then decide `answer` (golden on `answer`)."""
    document: dict[str, Any] = {
        "taskId": task_id,
        "input": {"calls": calls or [], "answer": answer},
        "expected": expected if expected is not None else golden(answer),
    }
    document.update(extra)
    return document


def suite(
    suite_id: str,
    tasks: list[dict[str, Any]],
    *,
    version: str = "1.0.0",
    modes: tuple[str, ...] = ("golden",),
    target: str | None = SCRIPTED_AGENT,
    **extra: Any,
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "suiteId": suite_id,
        "version": version,
        "modes": list(modes),
        "tasks": tasks,
    }
    if target is not None:
        document["targetAgentId"] = target
    document.update(extra)
    return document


def publish(http: httpx.Client, document: dict[str, Any]) -> str:
    """PUT the suite for the caller's tenant; returns its `<suiteId>@<version>` ref."""
    response = http.put("/host/wopeval/suites", json=document)
    assert response.status_code == 201, response.text
    assert response.json()["scope"] == "tenant"
    return f"{document['suiteId']}@{document['version']}"


# ── eval runs ────────────────────────────────────────────────────────


@dataclass(frozen=True)
class EvalRun:
    run_id: str
    events: list[Any]
    summary: dict[str, Any]
    """The raw `GET /runs/{id}/eval-summary` body, host additions included."""

    def of_type(self, event_type: str) -> list[dict[str, Any]]:
        return payloads(self.events, event_type)

    @property
    def started(self) -> dict[str, Any]:
        (only,) = self.of_type("eval.started")
        return only

    def task(self, task_id: str) -> dict[str, Any]:
        found: dict[str, Any] = next(t for t in self.summary["tasks"] if t["taskId"] == task_id)
        return found


def eval_request(ref: str, agent: str = SCRIPTED_AGENT, **fields: Any) -> CreateRunRequest:
    return CreateRunRequest(mode="eval", evalSuiteRef=ref, agentId=agent, **fields)


def start_eval(client: OpenwopClient, ref: str, agent: str = SCRIPTED_AGENT, **fields: Any) -> str:
    created = client.runs_create(eval_request(ref, agent, **fields))
    assert created.status in ("pending", "running"), created
    run_id: str = created.runId
    return run_id


def finish(client: OpenwopClient, http: httpx.Client, run_id: str) -> EvalRun:
    """Wait for the eval run's terminal event and read its raw summary."""
    events = wait_terminal(client, run_id)
    assert events[-1].type == "run.completed", [e.type for e in events]
    return EvalRun(run_id, events, raw_summary(http, run_id))


def run_eval(
    client: OpenwopClient, http: httpx.Client, ref: str, agent: str = SCRIPTED_AGENT, **fields: Any
) -> EvalRun:
    return finish(client, http, start_eval(client, ref, agent, **fields))


def raw_summary(http: httpx.Client, run_id: str) -> dict[str, Any]:
    response = http.get(f"/runs/{project_id(run_id)}/eval-summary")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def payloads(events: list[Any], event_type: str) -> list[dict[str, Any]]:
    return [event.payload for event in events if event.type == event_type]


def live_calls(http: httpx.Client, run_id: str) -> int:
    response = http.get(f"/host/wopeval/runs/{project_id(run_id)}/live-calls")
    assert response.status_code == 200, response.text
    count: int = response.json()["liveCalls"]
    return count


def tool_outcomes(events: list[Any]) -> list[Any]:
    return [p.get("outcome") for p in payloads(events, "agent.tool-returned")]


# ── content and refusals ─────────────────────────────────────────────


def assert_content_free(value: Any, markers: tuple[str, ...] = ()) -> None:
    """No forbidden key anywhere inside `value`, and none of `markers` in its JSON text."""

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for key, child in node.items():
                assert key not in FORBIDDEN_KEYS, f"{path}.{key} carries content"
                walk(child, f"{path}.{key}")
        elif isinstance(node, list):
            for index, child in enumerate(node):
                walk(child, f"{path}[{index}]")

    walk(value, "$")
    text = json.dumps(value)
    for marker in markers:
        assert marker not in text, f"{marker!r} leaked into {text}"


def assert_no_id(text: str, run_id: str) -> None:
    """Neither the id nor its opaque part (after the tenant) appears in `text`."""
    assert run_id not in text, f"{run_id!r} echoed in {text}"
    opaque = run_id.partition("/")[2]
    assert not opaque or opaque not in text, f"{opaque!r} echoed in {text}"


def run_count(http: httpx.Client) -> int:
    return len(list_all_runs(http))


def post_refused(
    http: httpx.Client, body: dict[str, Any], status: int, code: str
) -> httpx.Response:
    """POST /runs must answer `status`/`code` and create no run for the caller."""
    before = run_count(http)
    response = http.post("/runs", json=body)
    assert response.status_code == status, (response.status_code, response.text)
    envelope = response.json()
    assert envelope["error"] == code, envelope
    assert isinstance(envelope["message"], str)
    assert envelope["message"]
    assert run_count(http) == before, "a refused request created a run"
    return response


def eval_body(ref: str, agent: str = SCRIPTED_AGENT, **fields: Any) -> dict[str, Any]:
    return {"mode": "eval", "evalSuiteRef": ref, "agentId": agent, **fields}


# ── the store, written directly ──────────────────────────────────────


async def _delete_run_rows(url: str, run_id: str, tables: tuple[str, ...]) -> dict[str, int]:
    engine = create_engine(url)
    try:
        async with engine.begin() as connection:
            deleted = {}
            for name in tables:
                table = metadata.tables[name]
                result = await connection.execute(delete(table).where(table.c.run_id == run_id))
                deleted[name] = int(result.rowcount or 0)
            return deleted
    finally:
        await engine.dispose()


def delete_run_rows(url: str, run_id: str) -> dict[str, int]:
    """Remove every row of a run from `runs`, `events` and `tool_calls`; returns the counts."""
    return asyncio.run(_delete_run_rows(url, run_id, ("runs", "events", "tool_calls")))


async def _set_run_column(url: str, run_id: str, column: str, value: Any) -> int:
    engine = create_engine(url)
    try:
        async with engine.begin() as connection:
            runs = metadata.tables["runs"]
            result = await connection.execute(
                update(runs).where(runs.c.run_id == run_id).values({column: value})
            )
            return int(result.rowcount or 0)
    finally:
        await engine.dispose()


def set_completed_at(url: str, run_id: str, value: Any) -> None:
    assert asyncio.run(_set_run_column(url, run_id, "completed_at", value)) == 1


def set_status(url: str, run_id: str, status: str) -> None:
    """The run's status as stored, as a host that stopped mid-run would have left it."""
    assert asyncio.run(_set_run_column(url, run_id, "status", status)) == 1
