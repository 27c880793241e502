"""A run's events: long-poll and SSE (events.md §Poll, §SSE frames; RFC 0247)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.responses import StreamingResponse

from wopeval.api.deps import HostDep, PrincipalDep, path_run_id
from wopeval.api.host import Host
from wopeval.api.snapshots import snapshot
from wopeval.engine.notifier import wait_for_signal
from wopeval.store import RunRecord
from wopeval.wire import errors, limits
from wopeval.wire.principal import Principal

router = APIRouter(tags=["events"])

STREAM_MODES = ("updates", "debug", "values", "messages")
_MODE_GRAMMAR = re.compile(r"^(values|(updates|messages|debug)(,(updates|messages|debug))*)$")
KEEPALIVE_SECONDS = 15.0
_TERMINAL = ("run.completed", "run.failed", "run.cancelled")
# The `updates` mode: run transitions, terminal node transitions and eval facts.
_UPDATES = re.compile(r"^run\.|^eval\.|^node\.(completed|failed|suspended|dispatched)$")


@router.get("/runs/{runId}/events/poll", operation_id="pollRunEvents")
async def poll_events(
    runId: str,
    principal: PrincipalDep,
    host: HostDep,
    afterSequence: Annotated[int, Query(ge=-1, le=limits.SEQUENCE_MAX)] = -1,
    wait_seconds: Annotated[int, Query(alias="timeout", ge=1, le=60)] = 30,
) -> Response:
    record = await host.engine.get_run(principal, path_run_id(runId, principal))
    signal = host.engine.notifier.subscribe(record.run_id)
    docs = await _read(host, record.run_id, afterSequence)
    if not docs and not record.status.is_terminal:
        await wait_for_signal(signal, wait_seconds)
        docs = await _read(host, record.run_id, afterSequence)
    current = await host.engine.get_run(principal, record.run_id)
    # Stored docs are served byte for byte; only the frame around them is built here.
    body = (
        '{"runId":'
        + json.dumps(current.run_id)
        + ',"events":['
        + ",".join(docs)
        + "]"
        + ',"lastSequence":'
        + str(current.last_sequence)
        + ',"status":'
        + json.dumps(current.status.value)
        + ',"isTerminal":'
        + ("true" if current.status.is_terminal else "false")
        + "}"
    )
    return Response(body, media_type="application/json")


async def _read(host: Host, run_id: str, after: int) -> list[str]:
    async with host.store.reading() as uow:
        return await uow.events.read(run_id, after=after)


@router.get(
    "/runs/{runId}/events",
    operation_id="streamRunEvents",
    response_class=StreamingResponse,
    responses={200: {"description": "SSE frames", "content": {"text/event-stream": {}}}},
)
async def stream_events(
    runId: str,
    request: Request,
    principal: PrincipalDep,
    host: HostDep,
    streamMode: str = "updates",
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> StreamingResponse:
    if not _MODE_GRAMMAR.match(streamMode):
        raise errors.UnsupportedStreamMode(details={"supported": list(STREAM_MODES)})
    record = await host.engine.get_run(principal, path_run_id(runId, principal))
    after = -1 if last_event_id is None else limits.parse_sequence(last_event_id, "Last-Event-ID")
    modes = set(streamMode.split(","))
    frames = _frames(host, principal, record, after, modes)
    return StreamingResponse(
        frames,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


def _wanted(event_type: str, modes: set[str]) -> bool:
    if event_type in _TERMINAL or "debug" in modes:
        return True
    return "updates" in modes and bool(_UPDATES.match(event_type))


async def _frames(
    host: Host, principal: Principal, record: RunRecord, after: int, modes: set[str]
) -> AsyncIterator[str]:
    run_id = record.run_id
    if after >= 0 and record.status.is_terminal and after >= record.last_sequence:
        return  # a resumed stream of a finished run closes at once, without a frame
    if "values" in modes:
        yield _snapshot_frame(record)
    while True:
        signal = host.engine.notifier.subscribe(run_id)
        docs = await _read(host, run_id, after)
        for doc in docs:
            parsed = json.loads(doc)
            after = parsed["sequence"]
            if _wanted(parsed["type"], modes):
                yield f"id: {after}\nevent: {parsed['type']}\ndata: {doc}\n\n"
            if parsed["type"] in _TERMINAL:
                if "values" in modes:
                    yield _snapshot_frame(await host.engine.get_run(principal, run_id))
                return
        if not docs and not await wait_for_signal(signal, KEEPALIVE_SECONDS):
            yield ": keep-alive\n\n"


def _snapshot_frame(record: RunRecord) -> str:
    # The frame's data is the RunSnapshot itself; a terminal status ends the client's stream.
    data = json.dumps(snapshot(record), separators=(",", ":"))
    return f"id: {record.last_sequence}\nevent: state.snapshot\ndata: {data}\n\n"
