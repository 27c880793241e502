"""What a caller asks of an executing run between its units: pause, resume, cut.

A run executes in units (a workflow node, an eval trial). A paused run starts
no new unit until it is resumed; the units already executing either finish
(`drain-current-node`) or are cut (`immediate`) and start afresh, from their
first event, after the resume (runs.md §Pause and resume). The run row holds
the state (`paused`); this holder only wakes and stops this process's units.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class RunControl:
    def __init__(self) -> None:
        self._running = asyncio.Event()
        self._running.set()
        self._stopped = asyncio.Event()
        self._units: set[asyncio.Task[Any]] = set()
        self._cut: set[asyncio.Task[Any]] = set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    async def unit(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run one unit once the run is not paused; a unit cut by an immediate pause runs
        again from its start after the resume.

        The unit runs in the caller's task, not one of its own (a task more cost every
        unit its creation and a turn of the loop each way): a cut cancels the caller's
        task, and its cancel is taken back here once the unit has stopped."""
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a run's unit runs in a task")
        while True:
            await self._running.wait()
            self._units.add(task)
            try:
                return await work()
            except asyncio.CancelledError:
                # Another's cancel (the run's, the host's) besides the cut's stays pending.
                if task not in self._cut or task.uncancel() > 0:
                    raise
            finally:
                self._units.discard(task)
                self._cut.discard(task)

    def landing(self) -> None:
        """The calling unit hands its last step to the log now (an eval trial's row with
        its events, a node's `node.completed`): from here it finishes even under an
        immediate pause. The log writer lands a step it was handed whatever becomes of its
        caller, so a unit cut while that step is on its way would land once and then run
        again from its start (a trial's second landing failed the run on its key; a node
        completed twice). A cut asked before this call has already reached the unit at its
        last `await`: nothing was handed over then."""
        task = asyncio.current_task()
        if task is not None:
            self._units.discard(task)

    def pause(self, *, immediate: bool) -> None:
        self._running.clear()
        if immediate:
            for task in self._units - self._cut:
                # Once: each cancel of a task is one the unit must take back.
                self._cut.add(task)
                task.cancel()

    def resume(self) -> None:
        self._running.set()

    def stop(self) -> None:
        """The run is being cancelled: nothing waits for a resume any more."""
        self._stopped.set()

    async def settled(self) -> None:
        """Wait until the run is not paused, or is being cancelled (a run ends only then)."""
        if self._running.is_set() or self._stopped.is_set():
            return
        running = asyncio.ensure_future(self._running.wait())
        stopped = asyncio.ensure_future(self._stopped.wait())
        try:
            await asyncio.wait({running, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            running.cancel()
            stopped.cancel()
