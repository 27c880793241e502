"""Host-proprietary routes under `/host/wopeval/` (versioning.md §5); always tenant-scoped."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from wopeval.api.deps import HostDep, PrincipalDep

router = APIRouter(prefix="/host/wopeval", tags=["host"])


@router.get("/conformance/counter/{key}", operation_id="wopevalReadCounter")
async def read_counter(key: str, principal: PrincipalDep, host: HostDep) -> JSONResponse:
    """Read the caller's `conformance.eval:counter` value without changing it."""
    async with host.store.reading() as uow:
        count = await uow.counters.read(principal.tenant, key)
    return JSONResponse({"key": key, "count": count})
