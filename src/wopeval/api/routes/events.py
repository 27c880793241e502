"""A run's events: long-poll and SSE (events.md §Poll, §SSE frames; RFC 0247)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.responses import StreamingResponse

from wopeval.api import _sse
from wopeval.api.deps import HostDep, PrincipalDep, path_run_id
from wopeval.api.served import ServedHost
from wopeval.engine.live.notifier import wait_for_signal
from wopeval.store import OwnedRun, StoredEvent
from wopeval.wire import errors, limits
from wopeval.wire.principal import Principal
from wopeval.wire.runs import RunStatus

router = APIRouter(tags=["events"])


@dataclass(frozen=True)
class _PollPage:
    """One poll answer: `events` are exactly the log's events in (afterSequence, last_sequence],
    and `status` is the run's status as of `last_sequence`."""

    events: list[StoredEvent]
    last_sequence: int
    status: RunStatus

    @property
    def is_terminal(self) -> bool:
        return self.status.is_terminal


async def _poll_page(host: ServedHost, principal: Principal, run_id: str, after: int) -> _PollPage:
    # The run row first, then the log up to the row's last_sequence: the row commits with
    # its events, so whatever lands in between is left for the next poll, never skipped.
    record = await host.engine.get_run(principal, run_id)
    async with host.store.reading() as uow:
        page = await uow.events.read(record.handle, after=after, through=record.last_sequence)
    last = page[-1].sequence if page else record.last_sequence
    if last == record.last_sequence or not record.status.is_terminal:
        return _PollPage(page, last, record.status)
    # A page cut short by the cap ends before the terminal event: the run was still running.
    return _PollPage(page, last, RunStatus.RUNNING)


def poll_view(query_string: bytes) -> str:
    """A poll's answer among those kept of its run's reads (engine/live/read_cache.py): the same
    query asks the same question, and until the run changes gets the same answer."""
    return "poll?" + query_string.decode("latin-1")


@router.get("/runs/{runId}/events/poll", operation_id="pollRunEvents")
async def poll_events(
    request: Request,
    runId: str,
    principal: PrincipalDep,
    host: HostDep,
    afterSequence: Annotated[int, Query(ge=-1, le=limits.SEQUENCE_MAX)] = -1,
    wait_seconds: Annotated[int, Query(alias="timeout", ge=1, le=60)] = 30,
) -> Response:
    # A repeat kept since its run last changed is answered below the router
    # (api/hot_reads.py); the first ask of a question, and any refusal, here.
    run_id = path_run_id(runId, principal)
    cache = host.engine.notifier.cache
    # Subscribed before the first read, so a commit landing after it still ends the wait.
    signal = host.engine.notifier.subscribe(run_id)
    read_at = 0 if cache is None else cache.epoch
    page = await _poll_page(host, principal, run_id, afterSequence)
    if not page.events and not page.is_terminal:
        await wait_for_signal(signal, wait_seconds)
        read_at = 0 if cache is None else cache.epoch
        page = await _poll_page(host, principal, run_id, afterSequence)
    # Stored docs are served byte for byte; only the frame around them is built here.
    body = (
        '{"runId":'
        + json.dumps(run_id)
        + ',"events":['
        + ",".join(event.doc for event in page.events)
        + "]"
        + ',"lastSequence":'
        + str(page.last_sequence)
        + ',"status":'
        + json.dumps(page.status.value)
        + ',"isTerminal":'
        + ("true" if page.is_terminal else "false")
        + "}"
    )
    answer = Response(body, media_type="application/json")
    # An empty page of an active run is an answer only after its wait: never kept.
    if cache is not None and (page.events or page.is_terminal):
        view = poll_view(request.scope["query_string"])
        cache.keep(principal.tenant, run_id, view, bytes(answer.body), read_at)
    return answer


@router.get(
    "/runs/{runId}/events",
    operation_id="streamRunEvents",
    response_class=StreamingResponse,
    responses={200: {"description": "SSE frames", "content": {"text/event-stream": {}}}},
)
async def stream_events(
    runId: str,
    principal: PrincipalDep,
    host: HostDep,
    streamMode: str = "updates",
    bufferMs: Annotated[int | None, Query(ge=0, le=5000)] = None,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> StreamingResponse:
    if not _sse.MODE_GRAMMAR.match(streamMode):
        raise errors.UnsupportedStreamMode(details={"supported": list(_sse.STREAM_MODES)})
    record = await host.engine.get_run(principal, path_run_id(runId, principal))
    after = -1 if last_event_id is None else limits.parse_sequence(last_event_id, "Last-Event-ID")
    modes = set(streamMode.split(","))
    frames = _stream(host, principal, record, after, modes, bufferMs)
    return StreamingResponse(
        frames,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def _stream(
    host: ServedHost,
    principal: Principal,
    record: OwnedRun,
    after: int,
    modes: set[str],
    buffer_ms: int | None,
) -> AsyncIterator[str]:
    if after >= 0 and record.status.is_terminal and after >= record.last_sequence:
        return  # a resumed stream of a finished run closes at once, without a frame
    if "values" in modes:
        yield _sse.snapshot_frame(record)
    with host.tails.follow(record, after) as follower:
        async for chunk in _sse.follow(follower, modes, buffer_ms):
            yield chunk
    if "values" in modes:
        yield _sse.snapshot_frame(await host.engine.get_run(principal, record.run_id))
