"""`GET /host/wopeval/health`: liveness and readiness of an API process or a worker.

Unauthenticated, like any probe: it shows the process's own state (role,
executor, database, queue, listener) and nothing of any tenant.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request

from wopeval.api.json_response import JSONResponse
from wopeval.engine.health import HealthSource
from wopeval.wire import errors

router = APIRouter(prefix="/host/wopeval", tags=["host"])


@router.get("/health", operation_id="wopevalHealth")
async def health(
    request: Request, probe: Literal["liveness", "readiness"] = "readiness"
) -> JSONResponse:
    """`probe=liveness`: 200 while the process answers. `readiness` (the default): 200 with
    the checks when it can serve, else 503 `wopeval.not_ready` with them in `details`."""
    if probe == "liveness":
        return JSONResponse({"live": True})
    source: HealthSource = request.app.state.health
    report = await source()
    if not report.ready:
        raise errors.NotReady(details=report.document)
    return JSONResponse(report.document)
