"""The run page: snapshot, inputs and outputs, the event timeline, the tool boundary, cancel.

The run is loaded by `Engine.get_run` (the wire's tenant rules), the
timeline is the run's stored events as the wire serves them, and the tool
table is the as-executed record shown through `engine/recording/content.py`: content
only where the call's own event carried it and the agent's `wireContent`
still allows it. The invocations, their idle flags and what each agent said
(stderr) are read as the invocation routes read them. Cancel is
`engine/runs/commands.py cancel_run`, the wire's own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse
from pydantic import JsonValue

from wopeval import evals
from wopeval.agents import WireContent
from wopeval.api.deps import HostDep
from wopeval.api.served import ServedHost
from wopeval.api.ui._render import Chrome, eval_path, render, run_path
from wopeval.api.ui._route import UiRoute, load_run
from wopeval.api.ui._security import require_csrf
from wopeval.api.ui.deps import SessionDep
from wopeval.api.ui.live import stream_url
from wopeval.engine.recording import content
from wopeval.engine.recording.invocation_views import invocations_said
from wopeval.store import RunRecord
from wopeval.wire import events, limits
from wopeval.wire.invocations import InvocationLine
from wopeval.wire.runs import RunKind

router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)

EVENTS_SHOWN = 200
CALLS_SHOWN = 200
INVOCATIONS_SHOWN = 100
CANCEL_REASON = "cancelled from the dashboard"


@dataclass(frozen=True)
class TimelineEvent:
    sequence: int
    type: str
    timestamp: str
    node_id: str | None
    payload: JsonValue


@dataclass(frozen=True)
class Window:
    """Where a paged list stands and the links around it."""

    earlier_href: str | None = None
    later_href: str | None = None


@dataclass(frozen=True)
class RunFacts:
    """The snapshot of a run as a page shows it."""

    run_id: str
    kind: str
    workflow_id: str
    status: str
    active: bool
    created_at: datetime
    started_at: datetime | None
    completed_at: datetime | None
    tags: tuple[str, ...]
    agents: tuple[str, ...]
    parent_run_id: str | None
    error: events.RunErrorInfo | None
    cancel_reason: str | None
    last_sequence: int
    idle: tuple[str, ...] = ()
    """One line per agent that recorded nothing a replay could test (evals/_idle.py)."""


@dataclass(frozen=True)
class RunView:
    run: RunFacts
    inputs: JsonValue
    outputs: JsonValue
    timeline: list[TimelineEvent]
    timeline_window: Window
    calls: list[content.BoundaryCall]
    calls_window: Window
    stream: str | None
    invocations: list[tuple[InvocationLine, str | None]]
    """The first invocations, each with what its agent said where it may be shown."""


def run_facts(record: RunRecord) -> RunFacts:
    agent = record.request.agentId
    agents = (agent,) if agent else tuple(record.agent_ids)
    return RunFacts(
        run_id=record.run_id,
        kind=record.kind.value,
        workflow_id=record.workflow_id,
        status=record.status.value,
        active=not record.status.is_terminal,
        created_at=record.created_at,
        started_at=record.started_at,
        completed_at=record.completed_at,
        tags=tuple(record.request.tags or ()),
        agents=agents,
        parent_run_id=record.parent_run_id,
        error=record.error,
        cancel_reason=record.cancel_reason,
        last_sequence=record.last_sequence,
        idle=tuple(
            f"{evals.describe_idle(idle.agentId, idle.reasons)} (node {idle.nodeId})"
            for idle in record.idle or ()
        ),
    )


@router.get("/runs/{runId}")
async def run_page(
    runId: str,
    session: SessionDep,
    host: HostDep,
    events_after: str | None = None,
    calls_after: str | None = None,
) -> Response:
    record = await load_run(host, session, runId)
    newest = max(-1, record.last_sequence - EVENTS_SHOWN)
    after = newest if events_after is None else limits.parse_sequence(events_after, "events_after")
    call_cursor = -1 if calls_after is None else limits.parse_sequence(calls_after, "calls_after")
    async with host.store.reading() as uow:
        stored = (await uow.events.read(record.handle, after=after))[:EVENTS_SHOWN]
        recorded = await uow.tool_calls.page(
            record.handle, after=call_cursor, limit=CALLS_SHOWN + 1
        )
        called = await uow.events.docs_at(record.handle, [c.sequence for c in recorded])
        invocations = await invocations_said(uow, record, host.catalog.agents, INVOCATIONS_SHOWN)
    timeline = [_timeline_event(json.loads(event.doc)) for event in stored]
    calls = [
        content.boundary_call(call, _payload(called.get(call.sequence)), _mode(host, call.agent_id))
        for call in recorded[:CALLS_SHOWN]
    ]
    base = run_path(record.run_id)
    view = RunView(
        run=run_facts(record),
        inputs=record.request.inputs,
        outputs=record.outputs,
        timeline=timeline,
        timeline_window=_timeline_window(base, timeline, record.last_sequence),
        calls=calls,
        calls_window=Window(
            earlier_href=f"{base}?calls_after=-1" if call_cursor >= 0 else None,
            later_href=(
                f"{base}?calls_after={calls[-1].sequence}" if len(recorded) > CALLS_SHOWN else None
            ),
        ),
        stream=stream_url([record]) if not record.status.is_terminal else None,
        invocations=invocations,
    )
    return render("run.html", Chrome(session, "runs", f"Run {record.run_id}"), view)


@router.post("/runs/{runId}/cancel")
async def cancel(runId: str, request: Request, session: SessionDep, host: HostDep) -> Response:
    fields = await require_csrf(request, session)
    record = await load_run(host, session, runId)
    await host.engine.cancel_run(session.principal, record.run_id, CANCEL_REASON)
    back = run_path(record.run_id)
    if fields.get("back") == "eval" and record.kind is RunKind.EVAL:
        back = eval_path(record.run_id)
    return RedirectResponse(back, status_code=303)


def _mode(host: ServedHost, agent_id: str) -> WireContent:
    """The agent's `wireContent` now; an agent the host no longer has is judged by its events."""
    spec = host.catalog.agents.get(agent_id)
    return "full" if spec is None else spec.wire_content


def _payload(doc: str | None) -> dict[str, Any] | None:
    if doc is None:
        return None
    event = json.loads(doc)
    if event.get("type") != events.ToolCalled.TYPE:
        return None
    payload: dict[str, Any] = event["payload"]
    return payload


def _timeline_event(doc: dict[str, Any]) -> TimelineEvent:
    return TimelineEvent(
        sequence=doc["sequence"],
        type=doc["type"],
        timestamp=doc["timestamp"],
        node_id=doc.get("nodeId"),
        payload=doc.get("payload"),
    )


def _timeline_window(base: str, shown: list[TimelineEvent], last: int) -> Window:
    if not shown:
        return Window()
    first = shown[0].sequence
    earlier = f"{base}?events_after={max(-1, first - 1 - EVENTS_SHOWN)}" if first > 0 else None
    later = f"{base}?events_after={shown[-1].sequence}" if shown[-1].sequence < last else None
    return Window(earlier_href=earlier, later_href=later)
