"""Answers to a run's reads, kept until the run next changes.

A run's watchers read it over and over (`GET /runs/{runId}`, a poll of its events from
where they are) while it changes a few times, or never again once it has ended; keeping
the rendered answer saves the store reads and the rendering at every repeat
(docs/decisions.md, "Kept reads"). Answers are kept by scope and view: a run's
(its snapshot, a poll from a given place), or a whole tenant's (a page of its run list,
`tenant_scope`), which any change of any of the tenant's runs drops.

That is sound only in a process that makes every change of the runs it keeps, the
database's one owner: each change lands through the run log writer (or a fork's
insert), which tells the `Notifier` once it has committed, before any caller learns
of it, and the notifier drops the run's answers here. An erasure rewrites stored events
without a step: it drops every answer kept (`forget_all`). In queue mode workers in other
processes change runs, so an API process keeps nothing (hosting/host.py gives it no cache).

A read that began before a change of its run and ended after it may hold the old rows:
`epoch` counts the drops, the latest drops are remembered, and `keep` refuses an answer
read while its run (or every run) was dropped, or from further back than is remembered.
"""

from __future__ import annotations

from collections import OrderedDict, deque

REMEMBERED_DROPS = 4096
"""Drops remembered, so that a busy host's changes of other runs do not refuse a keep."""
BUDGET_BYTES = 64 * 2**20
"""The answers kept weigh this much at most (a poll page may be a megabyte); the least
recently read go first."""


def tenant_scope(run_id_or_tenant: str) -> str:
    """The scope of a tenant's own answers (its run list), from a run id or the tenant: run
    ids are `<tenant>/<hex>` (wire/ids.py), so `<tenant>/` is no run's."""
    return run_id_or_tenant.partition("/")[0] + "/"


class ReadCache:
    def __init__(self, budget_bytes: int = BUDGET_BYTES) -> None:
        self._budget = budget_bytes
        self._kept: OrderedDict[tuple[str, str], tuple[str, bytes]] = OrderedDict()
        """(run id, view) → (tenant, answer), least recently read first."""
        self._views: dict[str, set[str]] = {}
        self._bytes = 0
        self.epoch = 0
        """Drops so far: read it before the store reads whose answer `keep` is given."""
        self._drops: deque[tuple[int, str | None]] = deque(maxlen=REMEMBERED_DROPS)
        """The latest drops as (epoch, run id), None for every run."""

    def get(self, tenant: str, scope: str, view: str) -> bytes | None:
        """What is kept of `view` of `scope` (a run id, or `tenant_scope`) for `tenant`."""
        kept = self._kept.get((scope, view))
        if kept is None or kept[0] != tenant:
            return None
        self._kept.move_to_end((scope, view))
        return kept[1]

    def keep(self, tenant: str, scope: str, view: str, answer: bytes, read_at: int) -> None:
        """Keep the answer read when `epoch` was `read_at`, unless its scope changed since."""
        if self._changed_since(read_at, scope) or len(answer) > self._budget:
            return
        self._drop((scope, view))
        self._kept[(scope, view)] = (tenant, answer)
        self._views.setdefault(scope, set()).add(view)
        self._bytes += len(answer)
        while self._bytes > self._budget:
            self._drop(next(iter(self._kept)))

    def forget(self, run_id: str) -> None:
        """The run changed: drop its answers and its tenant's."""
        self.epoch += 1
        self._drops.append((self.epoch, run_id))
        for scope in (run_id, tenant_scope(run_id)):
            for view in self._views.pop(scope, set()):
                self._drop((scope, view))

    def forget_all(self) -> None:
        self.epoch += 1
        self._drops.append((self.epoch, None))
        self._kept.clear()
        self._views.clear()
        self._bytes = 0

    def _changed_since(self, read_at: int, scope: str) -> bool:
        if read_at == self.epoch:
            return False
        if not self._drops or self._drops[0][0] > read_at + 1:
            return True  # some drop since is no longer remembered: it may have been this one
        for at, dropped in reversed(self._drops):
            if at <= read_at:
                return False
            if dropped is None or scope in (dropped, tenant_scope(dropped)):
                return True
        return False

    def _drop(self, key: tuple[str, str]) -> None:
        kept = self._kept.pop(key, None)
        if kept is None:
            return
        self._bytes -= len(kept[1])
        views = self._views.get(key[0])
        if views is not None:
            views.discard(key[1])
            if not views:
                del self._views[key[0]]
