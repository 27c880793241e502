"""Why an eval run's tasks failed, read from the host's task routes (`/host/wopeval/runs/…/tasks`).

The routes are this host's; another OpenWOP host may not serve them, and then
`fetch_why` answers None and the caller shows what the summary alone says.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from wopeval.client._wire import WireClient
from wopeval.reports import RunWhy


def fetch_why(host: WireClient, run_id: str, detail_of: Iterable[str] = ()) -> RunWhy | None:
    """The run's task list, and the details of the tasks named in `detail_of`."""
    body = host.task_list(run_id)
    if body is None:
        return None
    return with_details(host, RunWhy(body), detail_of)


def with_details(host: WireClient, why: RunWhy, task_ids: Iterable[str]) -> RunWhy:
    """`why` with the details of `task_ids` added (ids the listing lacks are skipped)."""
    details = dict(why.details)
    for task_id in dict.fromkeys(task_ids):
        if task_id not in details and why.line(task_id) is not None:
            details[task_id] = host.task_detail(why.listing.runId, task_id)
    return replace(why, details=details)
