"""Reading two runs' logs for `diffRun` (runs.md §Diff and ancestry); the diff is `evals.diff_logs`.

Each log is read up to its run row's `last_sequence`, as a poll page is: the row
commits with its events, so the row's status describes exactly the events read.
At most `limits.RUN_DIFF_MAX_EVENTS` events are read per run; a longer log, like
an active one, is handed to the diff as a prefix, which makes it `truncated`.
"""

from __future__ import annotations

import json

from wopeval import evals
from wopeval.store import OwnedRun, UnitOfWork
from wopeval.wire import limits
from wopeval.wire.run_diff import RunDiff


async def diff_runs(uow: UnitOfWork, a: OwnedRun, b: OwnedRun) -> RunDiff:
    """The diff of `a`'s log against `b`'s; both already checked to be the caller's."""
    return evals.diff_logs(await _read(uow, a), await _read(uow, b))


async def _read(uow: UnitOfWork, record: OwnedRun) -> evals.LoggedRun:
    through = min(record.last_sequence, limits.RUN_DIFF_MAX_EVENTS - 1)
    docs: list[str] = []
    after = -1
    while after < through:
        page = await uow.events.read(record.handle, after=after, through=through)
        if not page:
            break
        docs.extend(event.doc for event in page)
        after = page[-1].sequence
    whole = record.status.is_terminal and record.last_sequence < limits.RUN_DIFF_MAX_EVENTS
    return evals.LoggedRun(record.run_id, [json.loads(doc) for doc in docs], complete=whole)
