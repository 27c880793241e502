"""Render stored runs as wire resources: RunSnapshot and the createRun response."""

from __future__ import annotations

from pydantic import JsonValue

from wopeval.engine.runlog.steps import timestamp
from wopeval.store import RunRecord, idle_column
from wopeval.wire import ids
from wopeval.wire.events import EVENT_LOG_SCHEMA_VERSION
from wopeval.wire.json_text import JsonObject


def run_links(run_id: str) -> dict[str, str]:
    projected = ids.project(run_id)
    return {"eventsUrl": f"/runs/{projected}/events", "statusUrl": f"/runs/{projected}"}


def snapshot(record: RunRecord) -> JsonObject:
    """The closed RunSnapshot (runs.md §Snapshot)."""
    body: JsonObject = {
        "runId": record.run_id,
        "workflowId": record.workflow_id,
        "status": record.status.value,
        "owner": record.owner.model_dump(mode="json"),
        "eventLogSchemaVersion": EVENT_LOG_SCHEMA_VERSION,
        "startedAt": timestamp(record.started_at or record.created_at),
    }
    if record.completed_at is not None:
        body["completedAt"] = timestamp(record.completed_at)
    if record.error is not None:
        body["error"] = record.error.to_wire()
    # The members of the createRun body the snapshot echoes, as they were sent.
    body |= record.request.model_dump(
        mode="json", exclude_none=True, include={"inputs", "tags", "metadata", "configurable"}
    )
    if record.parent_run_id:
        body["parentRunId"] = record.parent_run_id
    body["extensions"] = {RUN_EXTENSION: run_facts(record)}
    return body


RUN_EXTENSION = "wopeval.run"
"""The snapshot extension (runs.md: `extensions` keyed `<org>.<name>`) with what a listing
shows beside the snapshot: the run's kind and agents, a workflow run's outputs and idle
agents (`idle`: `[{agentId, nodeId, reasons}]`, docs/recordings.md), and an eval run's
suite, score and verdict (the whole summary stays at `/eval-summary`)."""


def run_facts(record: RunRecord) -> JsonObject:
    agents: list[JsonValue] = list(record.agent_ids)
    asked = record.request.agentId
    if asked is not None and asked not in agents:
        agents.insert(0, asked)
    facts: JsonObject = {"kind": record.kind.value, "agentIds": agents}
    if record.completed_at is not None and record.started_at is not None:
        facts["durationMs"] = int((record.completed_at - record.started_at).total_seconds() * 1000)
    summary = record.summary
    if summary is not None:
        regression = summary.regression
        verdict = None if regression is None else regression.verdict
        facts["eval"] = {
            "suiteId": summary.suiteId,
            "suiteVersion": summary.suiteVersion,
            "aggregateScore": summary.aggregateScore,
            "passed": summary.passed,
            "verdict": None if verdict is None else verdict.value,
            "baselineRunId": None if regression is None else regression.baselineRunId,
        }
    elif record.outputs is not None:
        facts["outputs"] = record.outputs
    if record.idle:
        facts["idle"] = idle_column(record.idle)
    return facts


def created(record: RunRecord) -> JsonObject:
    return {"runId": record.run_id, "status": record.status.value, **run_links(record.run_id)}
