"""What the host can run: workflows and agents."""

from __future__ import annotations

from collections.abc import Mapping

from fastapi import APIRouter

from wopeval.api.deps import HostDep, PrincipalDep
from wopeval.api.json_response import JSONResponse
from wopeval.wire import errors

router = APIRouter(tags=["catalog"])


@router.get("/workflows/{workflowId}", operation_id="getWorkflow")
async def get_workflow(workflowId: str, _principal: PrincipalDep, host: HostDep) -> JSONResponse:
    workflow = host.catalog.workflows.get(workflowId)
    if workflow is None:
        raise errors.NotFound("No such workflow.")
    return JSONResponse(workflow.model_dump(mode="json", by_alias=True, exclude_none=True))


@router.get("/agents", operation_id="listAgents")
async def list_agents(_principal: PrincipalDep, host: HostDep) -> JSONResponse:
    return JSONResponse(
        {"agents": [_entry(spec.inventory()) for spec in host.catalog.agents.all()]}
    )


@router.get("/agents/{agentId}", operation_id="getAgent")
async def get_agent(agentId: str, _principal: PrincipalDep, host: HostDep) -> JSONResponse:
    spec = host.catalog.agents.get(agentId)
    if spec is None:
        raise errors.NotFound("No such agent.")
    return JSONResponse(_entry(spec.inventory()))


def _entry(entry: Mapping[str, object]) -> dict[str, object]:
    return {key: value for key, value in entry.items() if value is not None}
