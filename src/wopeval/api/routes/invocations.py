"""A run's agent invocations, what each agent said, and their model exchanges (host routes;
docs/agents.md).

Tenant-scoped exactly as `GET /runs/{runId}`: a foreign tenant segment is 403,
an unknown own run 404, and the answer never depends on another tenant's runs.
"""

from __future__ import annotations

from fastapi import APIRouter

from wopeval.api.deps import HostDep, PrincipalDep, path_run_id
from wopeval.engine.recording.invocation_views import (
    invocation_list,
    invocation_stderr,
    model_call_list,
)
from wopeval.wire.invocations import InvocationList, InvocationStderr, RunModelCalls

router = APIRouter(prefix="/host/wopeval", tags=["invocations"])


@router.get(
    "/runs/{runId}/invocations",
    operation_id="wopevalListInvocations",
    response_model_exclude_none=True,
)
async def list_invocations(runId: str, principal: PrincipalDep, host: HostDep) -> InvocationList:
    """Every invocation that ended: its agent, outcome, idle reasons, and whether it said
    something (stderr)."""
    record = await host.engine.get_run(principal, path_run_id(runId, principal))
    async with host.store.reading() as uow:
        return await invocation_list(uow, record, host.catalog.agents)


@router.get(
    "/runs/{runId}/invocations/{invocationId}/stderr",
    operation_id="wopevalGetInvocationStderr",
    response_model_exclude_none=True,
)
async def get_invocation_stderr(
    runId: str, invocationId: str, principal: PrincipalDep, host: HostDep
) -> InvocationStderr:
    """What the invocation's agent said: its last 16 KiB, credentials and tokens redacted."""
    record = await host.engine.get_run(principal, path_run_id(runId, principal))
    async with host.store.reading() as uow:
        return await invocation_stderr(uow, record, invocationId, host.catalog.agents)


@router.get(
    "/runs/{runId}/model-calls",
    operation_id="wopevalListModelCalls",
    response_model_exclude_none=True,
)
async def list_model_calls(runId: str, principal: PrincipalDep, host: HostDep) -> RunModelCalls:
    """Every model exchange of the run, as a task detail's `modelCalls` shows a trial's: a
    workflow run's too, so a client can tell a provider that did not answer from an agent
    that failed."""
    record = await host.engine.get_run(principal, path_run_id(runId, principal))
    async with host.store.reading() as uow:
        return await model_call_list(uow, record, host.catalog.agents)
