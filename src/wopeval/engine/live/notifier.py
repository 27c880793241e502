"""Wakes readers (poll, SSE) of a run when its log grows, in this process.

In queue mode the commits of other processes reach it through `wakeups.py`.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable

from wopeval.engine.live.read_cache import ReadCache


class Notifier:
    """Wakes readers (poll, SSE) of a run when its log grows.

    A reader takes `subscribe()` BEFORE it reads, so a commit that lands between
    its read and its wait still wakes it. Signals are held weakly: one that no
    reader holds any more (a finished run nobody waits on) simply goes away.

    Every change of a run is told here once it has committed, so the answers kept of
    its reads (`cache`, where this process is the one that makes every change) are
    dropped here too.
    """

    def __init__(self, cache: ReadCache | None = None) -> None:
        self._signals: weakref.WeakValueDictionary[str, asyncio.Event] = (
            weakref.WeakValueDictionary()
        )
        self.cache = cache
        self._announced: list[Callable[[str, str, str], None]] = []

    def subscribe(self, run_id: str) -> asyncio.Event:
        signal = self._signals.get(run_id)
        if signal is None:
            signal = self._signals[run_id] = asyncio.Event()
        return signal

    def __len__(self) -> int:
        """Runs some reader is still waiting on."""
        return len(self._signals)

    def notify(self, run_id: str) -> None:
        if self.cache is not None:
            self.cache.forget(run_id)
        signal = self._signals.pop(run_id, None)
        if signal is not None:
            signal.set()

    def on_announce(self, listener: Callable[[str, str, str], None]) -> None:
        """Have `listener(run_id, name, data)` told of every live notification."""
        self._announced.append(listener)

    def announce(self, run_id: str, name: str, data: str) -> None:
        """A live notification about a run that is no event of its log (`run.annotated`):
        handed to the run's followers in this process as it is, never stored, never
        replayed. Nothing of the run's log changed, so no answer kept of its reads goes."""
        for listener in self._announced:
            listener(run_id, name, data)

    def rewritten(self) -> None:
        """Stored events were rewritten without a step (an erasure): no answer kept of any
        run's reads is trusted any more. Readers are not woken: nothing new landed."""
        if self.cache is not None:
            self.cache.forget_all()

    def notify_all(self) -> None:
        """Wake every reader: each reads again (after a gap in what this process was told)."""
        if self.cache is not None:
            self.cache.forget_all()
        signals, self._signals = list(self._signals.values()), weakref.WeakValueDictionary()
        for signal in signals:
            signal.set()


async def wait_for_signal(signal: asyncio.Event, seconds: float) -> bool:
    try:
        await asyncio.wait_for(signal.wait(), seconds)
    except TimeoutError:
        return False
    return True
