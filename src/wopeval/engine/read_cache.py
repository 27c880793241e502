"""Answers to a run's reads, kept until the run next changes.

A run's watchers read it over and over (`GET /runs/{runId}`) while it changes a few
times, or never again once it has ended; keeping the rendered answer saves the store
read and the rendering at every repeat (docs/decisions.md, "Kept reads").

That is sound only in a process that makes every change of the runs it keeps, the
database's one owner: each change lands through the run log writer (or a fork's
insert), which tells the `Notifier` once it has committed, before any caller learns
of it, and the notifier drops the run's answer here. In queue mode workers in other
processes change runs, so an API process keeps nothing (api/host.py gives it no cache).

A read that began before a change and ended after it may hold the old row: `epoch`
counts the drops, and `keep` refuses an answer read while that count moved.
"""

from __future__ import annotations

from collections import OrderedDict

CAPACITY = 4096
"""Answers kept at most (each a rendered snapshot, about a kilobyte); the least recently
read goes first."""


class ReadCache:
    def __init__(self, capacity: int = CAPACITY) -> None:
        self._capacity = capacity
        self._kept: OrderedDict[str, tuple[str, bytes]] = OrderedDict()
        self.epoch = 0
        """Drops so far: read it before the store read whose answer `keep` is given."""

    def get(self, tenant: str, run_id: str) -> bytes | None:
        kept = self._kept.get(run_id)
        if kept is None or kept[0] != tenant:
            return None
        self._kept.move_to_end(run_id)
        return kept[1]

    def keep(self, tenant: str, run_id: str, answer: bytes, read_at: int) -> None:
        """Keep the answer read when `epoch` was `read_at`, unless something changed since."""
        if read_at != self.epoch:
            return
        self._kept[run_id] = (tenant, answer)
        self._kept.move_to_end(run_id)
        if len(self._kept) > self._capacity:
            self._kept.popitem(last=False)

    def forget(self, run_id: str) -> None:
        self.epoch += 1
        self._kept.pop(run_id, None)

    def forget_all(self) -> None:
        self.epoch += 1
        self._kept.clear()
