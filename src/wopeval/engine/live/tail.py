"""Shared tails: one reader per followed run, fanning each commit out to all its followers.

Every stream of a run needs each new event once. Reading the log once per commit
per follower makes a commit cost as many reads as the run has followers, and
200 followers of one eval run starve each other. Here each followed run has one
tail: a reader task that reads the new events once per commit notification and
keeps the newest of them in memory. Each follower reads that window through its
own cursor. A follower whose cursor is older than the window (it resumed from
an old `Last-Event-ID`) reads what it misses from the store itself, a small page
at a time, until it reaches the window: nothing is dropped, and a catching-up
follower holds nobody else back.

What a follower holds for its stream is bounded whatever its reader does: one
delivery of at most `DELIVERY_CHARS` of documents at a time (the server's flow
control pauses the stream while its connection has not taken the last one). A
follower that was within the window and fell out of it (its reader takes events
slower than the run writes them) is cut (`LeftBehind`): its stream ends and the
client resumes from the last event it received (`Last-Event-ID`), reading from
the store like any resumed stream (docs/decisions.md, "Slow followers"). When a
crowd of a run's followers has left, the memory it freed goes back to the system.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from operator import attrgetter

from wopeval.engine.live.free_memory import return_free_memory
from wopeval.engine.live.notifier import Notifier, wait_for_signal
from wopeval.store import EVENTS_PAGE_SIZE, OwnedRun, Store, StoredEvent
from wopeval.wire import events

WINDOW = 4 * EVENTS_PAGE_SIZE
"""Events a tail keeps in memory: room for followers that keep up, bounded per run."""
DELIVERY_CHARS = 64 * 1024
"""The most characters of event documents one delivery to a follower carries (one event
longer than this goes alone): a stream frames and sends one delivery at a time, so this
bounds what the host holds unsent for it, whatever its reader does."""
CROWD = 100
"""Followers of one run at once after whose leaving the host hands freed memory back to
the system (engine/live/free_memory.py): what a crowd of streams frees is worth a heap trim."""
TRIM_DELAY_SECONDS = 0.5
"""How long after a crowd's last follower leaves the heap is trimmed. Leaving is not done
when its stream's last line runs: the tail's reader ends, and the server drops each
connection's response and write buffers, on the event loop's next turns; trimmed at once,
the heap kept what they free (on PostgreSQL, 5 MB more after 1,000 followers left)."""
HISTORY_PAGE = 64
"""Events a follower behind the window reads from the store at once: a thousand followers
catching up hold a thousand small pages, not a thousand of `EVENTS_PAGE_SIZE`."""
RECHECK_SECONDS = 15.0
"""How long a reader trusts the notifier alone before it looks at the log anyway (a commit
this process is never told about, such as one written by another process, still shows)."""

log = logging.getLogger("wopeval.tail")
_sequence = attrgetter("sequence")


class TailBroken(Exception):
    """The run's shared reader stopped (a store failure, the host stopping) before the end."""


class LeftBehind(Exception):
    """The follower kept up with the window once and has fallen out of it since: its stream
    is cut, and the client resumes from the last event it received."""


def _delivery(read: list[StoredEvent], chars: int) -> list[StoredEvent]:
    """The longest start of `read` within `chars` of documents, at least one event."""
    size = 0
    for count, event in enumerate(read):
        size += len(event.doc)
        if size > chars and count:
            return read[:count]
    return read


class _Tail:
    """The newest events of one run's log, read once per commit.

    The window holds the events after `start` up to `last`, the highest
    sequence read; `finished` says the terminal event is at `last`.
    """

    def __init__(
        self, store: Store, notifier: Notifier, record: OwnedRun, size: int, delivery_chars: int
    ) -> None:
        self._store = store
        self._notifier = notifier
        self._size = size
        self._delivery_chars = delivery_chars
        self.run_id = record.run_id
        self._handle = record.handle
        self.window: list[StoredEvent] = []
        # The run row's last_sequence and status commit with the events, so a run
        # read as terminal has its terminal event at last_sequence.
        self.start = self.last = record.last_sequence
        self.finished = record.status.is_terminal
        self.error: BaseException | None = None
        self.followers = 0
        self.most_followers = 0
        self.listening: set[Follower] = set()
        """The followers live notifications (`Notifier.announce`) are handed to."""
        self.changed = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None
        if not self.finished:
            self._reader = asyncio.create_task(self._read(), name=f"tail:{self.run_id}")

    def since(self, cursor: int) -> list[StoredEvent]:
        """The window's events after `cursor`, one delivery; `cursor` >= `start`."""
        index = bisect.bisect_right(self.window, cursor, key=_sequence)
        return _delivery(self.window[index : index + EVENTS_PAGE_SIZE], self._delivery_chars)

    async def history(self, cursor: int) -> list[StoredEvent]:
        """The events after `cursor` from the store, one delivery: for a cursor older than the
        window."""
        async with self._store.reading() as uow:
            read = await uow.events.read(self._handle, after=cursor, limit=HISTORY_PAGE)
        return _delivery(read, self._delivery_chars)

    async def _read(self) -> None:
        try:
            while not self.finished:
                # Subscribed before the read, so a commit landing after the read still wakes us.
                signal = self._notifier.subscribe(self.run_id)
                async with self._store.reading() as uow:
                    read = await uow.events.read(self._handle, after=self.last)
                if read:
                    self._publish(read)
                if len(read) < EVENTS_PAGE_SIZE and not self.finished:
                    await wait_for_signal(signal, RECHECK_SECONDS)
        except Exception as exc:
            log.exception("the shared reader of run %s failed", self.run_id)
            self.fail(exc)

    def _publish(self, read: list[StoredEvent]) -> None:
        self.window.extend(read)
        self.last = read[-1].sequence
        self.finished = read[-1].type in events.TERMINAL_TYPES
        excess = len(self.window) - self._size
        if excess > 0:
            self.start = self.window[excess - 1].sequence
            del self.window[:excess]
        self._wake()

    def _wake(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    def announce(self, name: str, data: str) -> None:
        """Hand a live notification to every follower, and wake them."""
        for follower in self.listening:
            follower.live.append((name, data))
        self._wake()

    def fail(self, error: BaseException) -> None:
        self.error = error
        self._wake()

    def stop(self) -> asyncio.Task[None] | None:
        """Cancel the reader; returns it, for a caller that waits for it to end."""
        if self._reader is not None:
            self._reader.cancel()
        return self._reader


class Follower:
    """One stream's cursor over its run's shared tail."""

    def __init__(self, tail: _Tail, after: int) -> None:
        self._tail = tail
        self.cursor = after
        self.live: list[tuple[str, str]] = []
        """Live notifications `(name, data)` not yet taken: no events of the log, so they
        carry no sequence and are handed over as they come, ahead of any event."""
        self._terminal_seen = False
        self._kept_up = False
        """Whether the cursor has been within the window (a follower that has not yet, a
        resumed one, reads from the store until it is)."""

    @property
    def ended(self) -> bool:
        """The terminal event was delivered, or the log ended at or before the cursor."""
        tail = self._tail
        return self._terminal_seen or (tail.finished and self.cursor >= tail.last)

    async def next(self, until: float) -> list[StoredEvent]:
        """The events after the cursor that are at hand, in order; [] when none came before
        `until` (the loop's clock) or the stream has ended. Raises `TailBroken` if the reader
        stopped, `LeftBehind` if the follower fell out of the window."""
        loop = asyncio.get_running_loop()
        while not self.ended and not self.live:
            tail = self._tail
            if tail.error is not None:
                raise TailBroken(f"the log of run {tail.run_id} can no longer be followed")
            if self.cursor >= tail.start:
                self._kept_up = True
                delivered = tail.since(self.cursor)
            elif self._kept_up:
                raise LeftBehind(f"a follower of run {tail.run_id} fell out of its window")
            else:
                delivered = await tail.history(self.cursor)
            if delivered:
                self.cursor = delivered[-1].sequence
                self._terminal_seen = delivered[-1].type in events.TERMINAL_TYPES
                return delivered
            if not await wait_for_signal(tail.changed, until - loop.time()):
                break
        return []

    def take_live(self) -> list[tuple[str, str]]:
        """The live notifications handed over since the last take."""
        taken, self.live = self.live, []
        return taken


class Tails:
    """The shared tails of the runs being followed, at most one per run, in this process."""

    def __init__(
        self,
        store: Store,
        notifier: Notifier,
        *,
        window: int = WINDOW,
        delivery_chars: int = DELIVERY_CHARS,
        trim_delay: float = TRIM_DELAY_SECONDS,
    ) -> None:
        self._store = store
        self._notifier = notifier
        self._window = window
        self._delivery_chars = delivery_chars
        self._trim_delay = trim_delay
        self._tails: dict[str, _Tail] = {}
        notifier.on_announce(self._announce)
        self.memory_returns = 0
        """Times a crowd's leaving handed freed memory back to the system."""

    def __len__(self) -> int:
        """Runs that have a tail now."""
        return len(self._tails)

    @contextmanager
    def follow(self, record: OwnedRun, after: int) -> Iterator[Follower]:
        """Follow `record`'s log from the event after `after`; the caller owns the run.

        A tail starts with its first follower and stops with its last one; a
        broken tail is replaced for the followers that come after it.
        """
        tail = self._tails.get(record.run_id)
        if tail is None or tail.error is not None:
            tail = self._tails[record.run_id] = _Tail(
                self._store, self._notifier, record, self._window, self._delivery_chars
            )
        tail.followers += 1
        tail.most_followers = max(tail.most_followers, tail.followers)
        follower = Follower(tail, after)
        tail.listening.add(follower)
        try:
            yield follower
        finally:
            tail.listening.discard(follower)
            tail.followers -= 1
            if tail.followers == 0:
                tail.stop()
                if self._tails.get(record.run_id) is tail:
                    del self._tails[record.run_id]
                if tail.most_followers >= CROWD:
                    asyncio.get_running_loop().call_later(self._trim_delay, self._trim)

    def _announce(self, run_id: str, name: str, data: str) -> None:
        tail = self._tails.get(run_id)
        if tail is None:
            return
        tail.announce(name, data)

    def _trim(self) -> None:
        if return_free_memory():
            self.memory_returns += 1

    async def close(self) -> None:
        """Stop every reader; streams still following end (their clients may resume)."""
        tails, self._tails = list(self._tails.values()), {}
        readers = [reader for tail in tails if (reader := tail.stop()) is not None]
        await asyncio.gather(*readers, return_exceptions=True)
        for tail in tails:
            tail.fail(TailBroken("the host is stopping"))
