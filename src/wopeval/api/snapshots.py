"""Render stored runs as wire resources: RunSnapshot and the createRun response."""

from __future__ import annotations

from typing import Any

from wopeval.engine.runlog.steps import timestamp
from wopeval.store import RunRecord
from wopeval.wire import ids
from wopeval.wire.events import EVENT_LOG_SCHEMA_VERSION


def run_links(run_id: str) -> dict[str, str]:
    projected = ids.project(run_id)
    return {"eventsUrl": f"/runs/{projected}/events", "statusUrl": f"/runs/{projected}"}


def snapshot(record: RunRecord) -> dict[str, Any]:
    """The closed RunSnapshot (runs.md §Snapshot)."""
    body: dict[str, Any] = {
        "runId": record.run_id,
        "workflowId": record.workflow_id,
        "status": record.status.value,
        "owner": record.owner,
        "eventLogSchemaVersion": EVENT_LOG_SCHEMA_VERSION,
        "startedAt": timestamp(record.started_at or record.created_at),
    }
    if record.completed_at is not None:
        body["completedAt"] = timestamp(record.completed_at)
    if record.error is not None:
        body["error"] = record.error
    for key in ("inputs", "tags", "metadata", "configurable"):
        if key in record.request:
            body[key] = record.request[key]
    if record.parent_run_id:
        body["parentRunId"] = record.parent_run_id
    body["extensions"] = {RUN_EXTENSION: run_facts(record)}
    return body


RUN_EXTENSION = "wopeval.run"
"""The snapshot extension (runs.md: `extensions` keyed `<org>.<name>`) with what a listing
shows beside the snapshot: the run's kind and agents, a workflow run's outputs and idle
agents (`idle`: `[{agentId, nodeId, reasons}]`, docs/recordings.md), and an eval run's
suite, score and verdict (the whole summary stays at `/eval-summary`)."""


def run_facts(record: RunRecord) -> dict[str, Any]:
    agents = list(record.agent_ids)
    asked = record.request.get("agentId")
    if isinstance(asked, str) and asked not in agents:
        agents.insert(0, asked)
    facts: dict[str, Any] = {"kind": record.kind.value, "agentIds": agents}
    if record.completed_at is not None and record.started_at is not None:
        facts["durationMs"] = int((record.completed_at - record.started_at).total_seconds() * 1000)
    summary = record.summary
    if summary is not None:
        regression = summary.get("regression") or {}
        facts["eval"] = {
            "suiteId": summary.get("suiteId"),
            "suiteVersion": summary.get("suiteVersion"),
            "aggregateScore": summary.get("aggregateScore"),
            "passed": summary.get("passed"),
            "verdict": regression.get("verdict"),
            "baselineRunId": regression.get("baselineRunId"),
        }
    elif record.outputs is not None:
        facts["outputs"] = record.outputs
    if record.idle:
        facts["idle"] = record.idle
    return facts


def created(record: RunRecord) -> dict[str, Any]:
    return {"runId": record.run_id, "status": record.status.value, **run_links(record.run_id)}
