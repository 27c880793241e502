"""An eval run's tasks and why each passed or failed (host routes; docs/why.md).

Tenant-scoped exactly as `GET /runs/{runId}`: a foreign tenant segment is 403,
an unknown own run 404, and the answer never depends on another tenant's runs.
"""

from __future__ import annotations

from fastapi import APIRouter, Response
from pydantic_core import PydanticSerializationError

from wopeval.api.deps import HostDep, PrincipalDep, path_run_id
from wopeval.engine.eval_runs.task_details import task_detail, task_list
from wopeval.wire import json_text
from wopeval.wire.task_detail import TaskDetail, TaskList

router = APIRouter(prefix="/host/wopeval", tags=["tasks"])


@router.get(
    "/runs/{runId}/tasks", operation_id="wopevalListTasks", response_model_exclude_none=True
)
async def list_tasks(runId: str, principal: PrincipalDep, host: HostDep) -> TaskList:
    """Per task: its figures, its verdict against the baseline, and one reason line."""
    record = await host.engine.get_run(principal, path_run_id(runId, principal))
    async with host.store.reading() as uow:
        return await task_list(uow, record, alpha=host.settings.eval.alpha)


@router.get(
    "/runs/{runId}/tasks/{taskId}",
    operation_id="wopevalGetTask",
    response_model=TaskDetail,
    response_model_exclude_none=True,
)
async def get_task(runId: str, taskId: str, principal: PrincipalDep, host: HostDep) -> Response:
    """Every trial of one task: decision, expected value, grade, trace and misses."""
    record = await host.engine.get_run(principal, path_run_id(runId, principal))
    async with host.store.reading() as uow:
        detail = await task_detail(uow, record, taskId, alpha=host.settings.eval.alpha)
    try:
        text = detail.model_dump_json(exclude_none=True)
    except PydanticSerializationError:
        # A tool's answer pydantic cannot write: a lone surrogate (no UTF-8 holds one) or
        # a value nested past its 255 levels. json_text writes both, as the events carry
        # them (escaped; by the standard library); only a detail pydantic refused pays.
        text = json_text.compact(detail.model_dump(exclude_none=True))
    return Response(text, media_type="application/json")
