"""Render stored runs as wire resources: RunSnapshot and the createRun response."""

from __future__ import annotations

from typing import Any

from wopeval.engine.runlog import timestamp
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
    return body


def created(record: RunRecord) -> dict[str, Any]:
    return {"runId": record.run_id, "status": record.status.value, **run_links(record.run_id)}
