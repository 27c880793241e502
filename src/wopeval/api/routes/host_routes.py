"""Host-proprietary routes under `/host/wopeval/` (versioning.md §5); always tenant-scoped."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body

from wopeval.api.deps import HostDep, PrincipalDep, path_run_id
from wopeval.api.json_response import JSONResponse
from wopeval.engine.eval_runs.eval_plan import find_suite
from wopeval.wire import errors
from wopeval.wire.calibration import CalibrateRequest, CalibrationReport

router = APIRouter(prefix="/host/wopeval", tags=["host"])


@router.get("/principal", operation_id="wopevalPrincipal")
async def read_principal(principal: PrincipalDep) -> JSONResponse:
    """Whose key this is: the tenant the caller's runs live under (the CLI maps a fixture-runs
    file made under another tenant onto it)."""
    return JSONResponse({"tenant": principal.tenant})


@router.get("/conformance/counter/{key}", operation_id="wopevalReadCounter")
async def read_counter(key: str, principal: PrincipalDep, host: HostDep) -> JSONResponse:
    """Read the caller's `conformance.eval:counter` value without changing it."""
    async with host.store.reading() as uow:
        count = await uow.counters.read(principal.tenant, key)
    return JSONResponse({"key": key, "count": count})


@router.put(
    "/suites",
    operation_id="wopevalPutSuite",
    responses={201: {"description": "Published", "content": {"application/json": {}}}},
)
async def put_suite(
    principal: PrincipalDep, host: HostDep, document: Annotated[dict[str, Any], Body()]
) -> JSONResponse:
    """Publish a suite version for the caller's tenant; versions are immutable once published."""
    stored, created = await host.engine.publish_suite(principal, document)
    return JSONResponse(_listing(stored, "tenant"), status_code=201 if created else 200)


@router.get("/suites", operation_id="wopevalListSuites")
async def list_suites(principal: PrincipalDep, host: HostDep) -> JSONResponse:
    """The caller's own suites, then the host's (seeded and project) suites."""
    async with host.store.reading() as uow:
        own = await uow.suites.list(principal.tenant)
    shared = [_listing(s.document, "host", fixture_id=s.fixture_id) for s in host.catalog.suites]
    return JSONResponse({"suites": [_listing(d, "tenant") for d in own] + shared})


@router.get("/suites/{ref}", operation_id="wopevalGetSuite")
async def get_suite(ref: str, principal: PrincipalDep, host: HostDep) -> JSONResponse:
    """One suite document by fixture id or `<suiteId>@<version>`."""
    async with host.store.reading() as uow:
        document = await find_suite(ref, principal.tenant, host.catalog, uow)
    if document is None:
        raise errors.NotFound("No such suite.")
    return JSONResponse(document)


@router.post(
    "/judges/{judgeId}/calibrations",
    operation_id="wopevalCalibrateJudge",
    status_code=201,
    responses={201: {"model": CalibrationReport, "description": "The calibration, recorded"}},
)
async def calibrate_judge(
    judgeId: str,
    principal: PrincipalDep,
    host: HostDep,
    body: Annotated[CalibrateRequest | None, Body()] = None,
) -> JSONResponse:
    """Calibrate a project judge against the caller's pass/fail labels on its eval runs' tasks,
    record it (tied to the judge's digest) and answer it (docs/graders.md, "Calibration")."""
    since = None if body is None else body.since
    report = await host.engine.calibrate_judge(principal, judgeId, since)
    return JSONResponse(report.to_wire(), status_code=201)


@router.get("/runs/{runId}/live-calls", operation_id="wopevalCountLiveCalls")
async def count_live_calls(runId: str, principal: PrincipalDep, host: HostDep) -> JSONResponse:
    """How many of the run's tool calls reached a live tool (a replay should show 0), and how
    many model exchanges reached an upstream model (0 under model replay)."""
    record = await host.engine.get_run(principal, path_run_id(runId, principal))
    async with host.store.reading() as uow:
        live = await uow.tool_calls.count_live(record.handle)
        models = await uow.model_calls.count_live(record.handle)
    return JSONResponse({"runId": record.run_id, "liveCalls": live, "liveModelCalls": models})


def _listing(
    document: dict[str, Any], scope: str, *, fixture_id: str | None = None
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "suiteId": document["suiteId"],
        "version": document["version"],
        "scope": scope,
        "taskCount": len(document.get("tasks", [])),
    }
    if fixture_id:
        entry["fixtureId"] = fixture_id
    return entry


seams_router = APIRouter(tags=["replay"])


@seams_router.get("/host/effect-seams", operation_id="getEffectSeamManifest")
async def effect_seams(_principal: PrincipalDep, host: HostDep) -> JSONResponse:
    """Where this host's runs reach the outside world, and what guards each seam on replay."""
    if not host.settings.replay:
        raise errors.NotFound()
    guard = "replay re-emits the recorded log; no tool, agent or HTTP call runs"
    return JSONResponse(
        {
            "manifestVersion": "1",
            "host": {"name": "wopeval"},
            "seams": [
                {
                    "seam": "tools.http",
                    "kind": "http",
                    "guarded": True,
                    "guardedBy": guard,
                    "note": "HTTP tools; credentials are injected at egress only",
                },
                {
                    "seam": "tools.storage",
                    "kind": "storage",
                    "guarded": True,
                    "guardedBy": guard,
                    "note": "builtin and python tools, e.g. conformance.eval:counter",
                },
            ],
        }
    )


@router.post("/runs/{runId}:erase-tool-content", operation_id="wopevalEraseToolContent")
async def erase_tool_content(runId: str, principal: PrincipalDep, host: HostDep) -> JSONResponse:
    """Erase the run's recorded tool content and every copy derived from it (RFC 0252 Security)."""
    run_id = path_run_id(runId, principal)
    erased = await host.engine.erase_tool_content(principal, run_id)
    return JSONResponse(
        {
            "runId": run_id,
            "erasedRuns": erased.runs,
            "erasedCalls": erased.calls,
            "erasedCopies": erased.copies,
        }
    )
