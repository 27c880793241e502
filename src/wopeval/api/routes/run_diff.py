"""`GET /runs/{runId}:diff?against=`: where two of the caller's runs differ (runs.md `diffRun`).

Both ids are held to the rules of `GET /runs/{runId}`, and both are checked
before either is looked up: a foreign tenant segment is 403
`id_tenant_mismatch` whether or not such a run exists, a bare id 400, an
unknown run of the caller's own 404, so no answer depends on another tenant's
runs. `against` takes the same `~2F` form as a path segment, or the plain
`<tenant>/<id>` a percent-encoded query decodes to. The operation is OPTIONAL
(runs.md §Surface): switched off (`run_diff`), it answers 404 and
`/openapi.json` leaves it out.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Response

from wopeval.api.deps import HostDep, PrincipalDep, path_run_id
from wopeval.api.served import ServedHost
from wopeval.engine.eval_runs.run_diff import diff_runs
from wopeval.wire import errors, ids, json_text
from wopeval.wire.run_diff import RunDiff

router = APIRouter(tags=["runs"])


async def _served(host: HostDep) -> ServedHost:
    """runs.md §Surface: "an absent `diffRun` answers `404`"."""
    if not host.settings.run_diff:
        raise errors.NotFound()
    return host


@router.get(
    "/runs/{runId}:diff",
    operation_id="diffRun",
    responses={200: {"model": RunDiff, "description": "run-diff-response.schema.json"}},
)
async def diff_run(
    runId: str,
    principal: PrincipalDep,
    host: Annotated[ServedHost, Depends(_served)],
    against: str,
) -> Response:
    """The diff of `{runId}`'s log (`a`) against `against`'s (`b`): RFC 0054."""
    run_id = path_run_id(runId, principal)
    other = ids.run_id_from_path(against, principal.tenant, field="against")
    a = await host.engine.get_run(principal, run_id)
    b = await host.engine.get_run(principal, other)
    async with host.store.reading() as uow:
        diff = await diff_runs(uow, a, b)
    # json_text, as the events it shows are written: a recorded answer may hold a lone
    # surrogate, which the standard library's UTF-8 text (JSONResponse's) cannot carry.
    return Response(json_text.compact(diff.to_wire()), media_type="application/json")
