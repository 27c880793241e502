"""SSE frames of a run's stream (events.md §SSE frames): stream modes, batches, keep-alives.

Stored event documents go out byte for byte; only the frame around them is
built here. The events a follower receives together leave in one chunk, so a
busy stream costs one write per delivery rather than one per event; a delivery is
bounded (engine/live/tail.py), and so is a batch, so a chunk never holds a whole backlog.
A follower cut for falling behind (`LeftBehind`) ends its stream after the frames it
has, for the client to resume from the last one.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import AsyncIterator, Iterable

from wopeval.api.snapshots import snapshot
from wopeval.engine.live.tail import DELIVERY_CHARS, Follower, LeftBehind
from wopeval.store import RunRecord, StoredEvent
from wopeval.wire import events

STREAM_MODES = ("updates", "debug", "values", "messages")
MODE_GRAMMAR = re.compile(r"^(values|(updates|messages|debug)(,(updates|messages|debug))*)$")
KEEPALIVE_SECONDS = 15.0
KEEPALIVE = ": keep-alive\n\n"
# The `updates` mode: run transitions, terminal node transitions and eval facts.
_UPDATES = re.compile(r"^run\.|^eval\.|^node\.(completed|failed|suspended|dispatched)$")
# events.md: a batch MUST flush on a terminal event and on `node.suspended` (and on close).
_ENDS_A_BATCH = events.TERMINAL_TYPES | {"node.suspended"}
LIVE_MODES = {"updates", "debug"}
"""RFC 0056 §B: the modes a live notification (`run.annotated`) goes out on. It has no `id:`
line: it is no event of the log, and a resumed stream does not get it again."""


def wanted(event_type: str, modes: set[str]) -> bool:
    """Whether a stream in `modes` carries the event; the terminal event is in every mode."""
    if event_type in events.TERMINAL_TYPES or "debug" in modes:
        return True
    return "updates" in modes and bool(_UPDATES.match(event_type))


def snapshot_frame(record: RunRecord) -> str:
    # The frame's data is the RunSnapshot itself; a terminal status ends the client's stream.
    data = json.dumps(snapshot(record), separators=(",", ":"))
    return f"id: {record.last_sequence}\nevent: state.snapshot\ndata: {data}\n\n"


class _Frames:
    """One frame per event: `id:` its sequence, `event:` its type."""

    due = math.inf

    def add(self, delivered: Iterable[StoredEvent], now: float) -> str:
        return "".join(f"id: {e.sequence}\nevent: {e.type}\ndata: {e.doc}\n\n" for e in delivered)

    def flush(self) -> str:
        return ""


class _Batches:
    """`bufferMs`: events collect into one `event: batch` frame whose `id:` is the highest
    sequence in it, sent when the buffer time since its first event is up, after a terminal
    event or `node.suspended`, when the stream closes, and when it holds `DELIVERY_CHARS`
    of documents (a stream catching up reads faster than any buffer time: its batch would
    otherwise hold its whole backlog)."""

    def __init__(self, buffer_ms: int) -> None:
        self._seconds = buffer_ms / 1000
        self._pending: list[StoredEvent] = []
        self._pending_chars = 0
        self.due = math.inf

    def add(self, delivered: Iterable[StoredEvent], now: float) -> str:
        frames = []
        for event in delivered:
            if not self._pending:
                self.due = now + self._seconds
            self._pending.append(event)
            self._pending_chars += len(event.doc)
            if event.type in _ENDS_A_BATCH or self._pending_chars >= DELIVERY_CHARS:
                frames.append(self.flush())
        if now >= self.due:
            frames.append(self.flush())
        return "".join(frames)

    def flush(self) -> str:
        if not self._pending:
            return ""
        batch, self._pending, self.due = self._pending, [], math.inf
        self._pending_chars = 0
        data = ",".join(event.doc for event in batch)
        return f"id: {batch[-1].sequence}\nevent: batch\ndata: [{data}]\n\n"


async def follow(follower: Follower, modes: set[str], buffer_ms: int | None) -> AsyncIterator[str]:
    """The chunks of a stream up to and including its terminal event, with a keep-alive
    comment whenever nothing was sent for `KEEPALIVE_SECONDS`; or, for a follower cut for
    falling behind, up to the last event it was given."""
    framer = _Frames() if buffer_ms is None else _Batches(buffer_ms)
    loop = asyncio.get_running_loop()
    quiet_until = loop.time() + KEEPALIVE_SECONDS
    while not follower.ended:
        try:
            delivered = await follower.next(until=min(framer.due, quiet_until))
        except LeftBehind:
            if rest := framer.flush():
                yield rest
            return
        now = loop.time()
        chunk = "".join(
            f"event: {name}\ndata: {data}\n\n"
            for name, data in follower.take_live()
            if modes & LIVE_MODES
        )
        chunk += framer.add((e for e in delivered if wanted(e.type, modes)), now)
        if follower.ended:
            chunk += framer.flush()
        if not chunk and now >= quiet_until:
            chunk = KEEPALIVE
        if chunk:
            yield chunk
            quiet_until = now + KEEPALIVE_SECONDS
