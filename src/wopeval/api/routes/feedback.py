"""`POST` / `GET /runs/{runId}/annotations`: RFC 0056 run annotations (runs.md §Annotations).

Tenant-scoped exactly as `GET /runs/{runId}`: a foreign tenant segment is 403
`id_tenant_mismatch` whether or not such a run exists, an unknown run of the caller's own
404, so no answer depends on another tenant's runs. The operations are gated on the
`feedback` family (runs.md §Surface): switched off, both answer 404 `not_found` and
`/openapi.json` leaves them out.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response

from wopeval.api import idempotency
from wopeval.api.deps import HostDep, PrincipalDep, path_run_id
from wopeval.api.json_response import JSONResponse
from wopeval.api.served import ServedHost
from wopeval.wire import errors
from wopeval.wire.annotations import Annotation, CreateAnnotationRequest

router = APIRouter(tags=["runs"])


async def _served(host: HostDep) -> ServedHost:
    """runs.md §Surface: an unadvertised annotation operation answers `404 not_found`."""
    if not host.settings.feedback:
        raise errors.NotFound()
    return host


FeedbackHost = Annotated[ServedHost, Depends(_served)]


@router.post(
    "/runs/{runId}/annotations",
    operation_id="createAnnotation",
    status_code=201,
    responses={201: {"model": Annotation, "description": "annotation.schema.json"}},
)
async def create(
    runId: str,
    request: Request,
    principal: PrincipalDep,
    host: FeedbackHost,
    body: CreateAnnotationRequest,
) -> Response:
    """Record an annotation on the caller's run, ended or not; never an event of its log."""
    run_id = path_run_id(runId, principal)

    async def produce(claim: idempotency.Claim) -> Response:
        # The 201 is kept as the key's answer in the transaction that adds the annotation.
        settle = claim.settles_with(_created)
        return _created(await host.engine.annotate(principal, run_id, body, on_insert=settle))

    return await idempotency.guard(request, principal, "createAnnotation", produce)


@router.get("/runs/{runId}/annotations", operation_id="listAnnotations")
async def list_(runId: str, principal: PrincipalDep, host: FeedbackHost) -> JSONResponse:
    """`{annotations: [...]}`, oldest first."""
    found = await host.engine.annotations(principal, path_run_id(runId, principal))
    return JSONResponse({"annotations": [annotation.to_wire() for annotation in found]})


def _created(annotation: Annotation) -> Response:
    return JSONResponse(annotation.to_wire(), status_code=201)
