"""Live pages: one SSE stream that says when any of the runs a page shows has changed.

A browser's `EventSource` cannot send an `Authorization` header, and an API
key never goes into a URL, so the dashboard does not use the wire's
`/runs/{runId}/events` directly. Its pages follow `/ui/live`, authenticated
by the session cookie, which reads each run's log through the same shared
tails (`engine/live/tail.py`) as the wire's SSE route and with the same tenant
rules (`Engine.get_run`). It carries no content, only which run moved and to
which sequence: the page then fetches itself again and swaps in the fresh,
server-rendered part, so the page shows exactly what a reload would.

Each followed run is named `<runId segment>:<sequence>`, the last sequence
the page was rendered from, so nothing that landed in between goes unnoticed.
When every followed run has ended, the stream sends `ended` and closes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import ExitStack
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from wopeval.api._sse import KEEPALIVE, KEEPALIVE_SECONDS
from wopeval.api.deps import HostDep
from wopeval.api.served import ServedHost
from wopeval.api.ui._route import UiRoute, load_run
from wopeval.api.ui.deps import SessionDep
from wopeval.engine.live.tail import Follower, LeftBehind, TailBroken
from wopeval.store import OwnedRun, RunRecord, StoredEvent
from wopeval.wire import errors, ids, limits

router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)

MAX_FOLLOWED = 50
"""Runs one page follows at most (the runs page lists more only across pages)."""
ENDED = "event: ended\ndata: {}\n\n"


def stream_url(records: Sequence[RunRecord]) -> str | None:
    """The live stream of `records` from where they are now; None when there is none."""
    if not records:
        return None
    followed = [("run", f"{ids.project(r.run_id)}:{r.last_sequence}") for r in records]
    return "/ui/live?" + urlencode(followed[:MAX_FOLLOWED])


@router.get("/live")
async def live(
    session: SessionDep, host: HostDep, run: Annotated[list[str] | None, Query()] = None
) -> StreamingResponse:
    named = run or []
    if not named or len(named) > MAX_FOLLOWED:
        raise errors.ValidationFailed(f"Follow 1 to {MAX_FOLLOWED} runs.")
    followed: list[tuple[OwnedRun, int]] = []
    for token in named:
        segment, _, after = token.rpartition(":")
        record = await load_run(host, session, segment)
        followed.append((record, limits.parse_sequence(after, "run")))
    return StreamingResponse(
        changes(host, followed),
        media_type="text/event-stream",
        headers={"X-Accel-Buffering": "no"},
    )


async def changes(host: ServedHost, followed: list[tuple[OwnedRun, int]]) -> AsyncIterator[str]:
    loop = asyncio.get_running_loop()
    with ExitStack() as stack:
        followers = {
            stack.enter_context(host.tails.follow(record, after)): record.run_id
            for record, after in followed
        }
        waiting: dict[asyncio.Task[list[StoredEvent]], Follower] = {}
        try:
            while True:
                armed = set(waiting.values())
                for follower in followers:
                    if not follower.ended and follower not in armed:
                        until = loop.time() + KEEPALIVE_SECONDS
                        waiting[asyncio.ensure_future(follower.next(until))] = follower
                if not waiting:
                    break
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                frames = []
                for task in done:
                    follower = waiting.pop(task)
                    delivered = task.result()
                    if delivered:
                        frames.append(_changed(followers[follower], delivered[-1].sequence))
                yield "".join(frames) or KEEPALIVE
            yield ENDED
        except (TailBroken, LeftBehind):
            # The host is stopping, or the page reads slower than a run writes: the browser
            # reconnects (to whichever host is next) and is told of what it missed.
            return
        finally:
            for task in waiting:
                task.cancel()
            await asyncio.gather(*waiting, return_exceptions=True)


def _changed(run_id: str, sequence: int) -> str:
    data = json.dumps({"runId": run_id, "sequence": sequence}, separators=(",", ":"))
    return f"event: changed\ndata: {data}\n\n"
