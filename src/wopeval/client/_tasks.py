"""Why an eval run's tasks failed, read from the host's task routes (`/host/wopeval/runs/…/tasks`).

The routes are this host's; another OpenWOP host may not serve them, and then
`fetch_why` answers None and the caller shows what the summary alone says.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from wopeval.client._wire import ClientError, WireClient
from wopeval.reports import RunWhy
from wopeval.wire.suite import error_pointer
from wopeval.wire.task_detail import TaskDetail, TaskList

Shape = TypeVar("Shape", bound=BaseModel)


def fetch_why(host: WireClient, run_id: str, detail_of: Iterable[str] = ()) -> RunWhy | None:
    """The run's task list, and the details of the tasks named in `detail_of`."""
    body = host.task_list(run_id)
    if body is None:
        return None
    return with_details(host, RunWhy(_read(TaskList, body)), detail_of)


def with_details(host: WireClient, why: RunWhy, task_ids: Iterable[str]) -> RunWhy:
    """`why` with the details of `task_ids` added (ids the listing lacks are skipped)."""
    details = dict(why.details)
    for task_id in dict.fromkeys(task_ids):
        if task_id not in details and why.line(task_id) is not None:
            body = host.task_detail(why.listing.runId, task_id)
            details[task_id] = _read(TaskDetail, body)
    return replace(why, details=details)


def _read(shape: type[Shape], body: dict[str, Any]) -> Shape:
    try:
        return shape.model_validate(body)
    except ValidationError as exc:
        problems = "; ".join(f"{error_pointer(e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ClientError(
            f"the host's task details are not a shape this client reads: {problems}"
        ) from None
