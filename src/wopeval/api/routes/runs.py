"""Runs: create, read, list, cancel (runs.md)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Query, Request, Response

from wopeval import evals
from wopeval.api import idempotency, routing
from wopeval.api.deps import EngineDep, HostDep, PrincipalDep, path_run_id
from wopeval.api.json_response import JSONResponse
from wopeval.api.snapshots import created, run_links, snapshot
from wopeval.engine.host import Engine
from wopeval.engine.live.read_cache import tenant_scope
from wopeval.engine.runlog.steps import timestamp
from wopeval.engine.runs.replay import fork_point
from wopeval.store import RunFilter, RunRecord, decode_cursor, encode_cursor
from wopeval.wire import date_time, errors, limits
from wopeval.wire.principal import Principal
from wopeval.wire.runs import (
    BulkCancelRequest,
    CancelRunRequest,
    CreateRunRequest,
    ForkRunRequest,
    PauseRunRequest,
    ResumeRunRequest,
    RunKind,
    RunStatus,
)

router = APIRouter(tags=["runs"])


@router.post("/runs", operation_id="createRun", status_code=201)
async def create_run(
    request: Request, principal: PrincipalDep, engine: EngineDep, body: CreateRunRequest
) -> Response:
    async def produce(claim: idempotency.Claim) -> Response:
        _check_common(body, principal.tenant)
        evals.check_eval_only_fields(
            body.mode == "eval", body.evalModes, body.baselineRunId, body.fixtureRuns
        )
        # The 201 is kept as the key's answer in the transaction that inserts the run.
        settle = claim.settles_with(_created_response)
        if body.mode == "eval":
            record = await engine.create_eval_run(principal, body, on_insert=settle)
        else:
            for name in ("evalSuiteRef", "agentId"):
                if getattr(body, name) is not None:
                    raise errors.ValidationFailed(f'{name} is only valid with mode "eval"')
            if body.workflowId is None:
                raise errors.ValidationFailed("'workflowId' is required unless mode is 'eval'.")
            record = await engine.create_workflow_run(principal, body, on_insert=settle)
        return _created_response(record)

    return await idempotency.guard(request, principal, "createRun", produce)


def _created_response(record: RunRecord) -> Response:
    return JSONResponse(created(record), status_code=201)


def _check_common(body: CreateRunRequest, tenant: str) -> None:
    if body.tenantId is not None and body.tenantId != tenant:
        raise errors.ValidationFailed("'tenantId' must be the caller's own tenant.")
    for tag in body.tags or []:
        if len(tag) > 256:
            raise errors.ValidationFailed("each tag must be at most 256 characters.")


@router.get(f"/runs/{{runId:{routing.RUN_SEGMENT}}}", operation_id="getRun")
async def get_run(runId: str, principal: PrincipalDep, engine: EngineDep) -> Response:
    # A successful read is answered before the router (api/hot_reads.py); a refusal here.
    return await run_answer(engine, principal, runId)


SNAPSHOT_VIEW = "snapshot"
"""The run's snapshot among the answers kept of its reads (engine/live/read_cache.py)."""


async def run_answer(engine: Engine, principal: Principal, segment: str) -> Response:
    """The RunSnapshot of the caller's run named by a `{runId}` path segment: as kept
    since the run last changed, where this host keeps answers (engine/live/read_cache.py)."""
    run_id = path_run_id(segment, principal)
    cache = engine.notifier.cache
    if cache is None:
        return JSONResponse(snapshot(await engine.get_run(principal, run_id)))
    kept = cache.get(principal.tenant, run_id, SNAPSHOT_VIEW)
    if kept is not None:
        return Response(kept, media_type="application/json")
    read_at = cache.epoch
    answer = JSONResponse(snapshot(await engine.get_run(principal, run_id)))
    cache.keep(principal.tenant, run_id, SNAPSHOT_VIEW, bytes(answer.body), read_at)
    return answer


def list_view(query_string: bytes) -> str:
    """A page of the run list among the answers kept of the tenant's reads
    (engine/live/read_cache.py): the same query, until one of its runs changes, gets the same
    page."""
    return "list?" + query_string.decode("latin-1")


@router.get("/runs", operation_id="listRuns")
async def list_runs(
    request: Request,
    principal: PrincipalDep,
    host: HostDep,
    limit: Annotated[
        int, Query(ge=1, le=limits.RUN_LIST_MAX_PAGE_SIZE)
    ] = limits.RUN_LIST_DEFAULT_PAGE_SIZE,
    cursor: str | None = None,
    workflowId: str | None = None,
    status: RunStatus | None = None,
    tag: Annotated[str | None, Query(max_length=256)] = None,
    agentId: str | None = None,
    createdAfter: date_time.DateTime | None = None,
) -> JSONResponse:
    """runs.md §List. `tag` is advertised in `runList.filters`; `agentId` (the eval run's
    agent, or an agent the run invoked) and `createdAfter` are this host's own filters."""
    if not host.settings.run_list:
        raise errors.NotFound()
    # A page asked before and kept since is answered below the router (api/hot_reads.py).
    cache = host.engine.notifier.cache
    read_at = 0 if cache is None else cache.epoch
    before = decode_cursor(cursor) if cursor is not None else None
    where = RunFilter(
        workflow_id=workflowId,
        status=status.value if status else None,
        tag=tag,
        agent_id=agentId,
        created_from=createdAfter,
    )
    async with host.store.reading() as uow:
        page = await uow.runs.page(
            principal.tenant, limit=limit + 1, before_seq=before, where=where
        )
    body: dict[str, object] = {"runs": [snapshot(record) for record in page[:limit]]}
    if len(page) > limit:
        body["nextCursor"] = encode_cursor(page[limit - 1].created_seq)
    answer = JSONResponse(body)
    if cache is not None:
        view = list_view(request.scope["query_string"])
        kept = bytes(answer.body)
        cache.keep(principal.tenant, tenant_scope(principal.tenant), view, kept, read_at)
    return answer


@router.post("/runs/{runId}/cancel", operation_id="cancelRun")
async def cancel_run(
    runId: str,
    request: Request,
    principal: PrincipalDep,
    engine: EngineDep,
    body: Annotated[CancelRunRequest | None, Body()] = None,
) -> Response:
    """runs.md §Cancel: `cancelling` or `cancelled`; 409 `run_terminal` once it has ended."""
    run_id = path_run_id(runId, principal)
    reason = body.reason if body is not None else None

    async def produce(_: idempotency.Claim) -> Response:
        record = await engine.cancel_run(principal, run_id, reason)
        return JSONResponse({"runId": record.run_id, "status": record.status.value})

    return await idempotency.guard(request, principal, "cancelRun", produce)


@router.post("/runs:bulk-cancel", operation_id="bulkCancelRuns")
async def bulk_cancel_runs(
    request: Request, principal: PrincipalDep, engine: EngineDep, body: BulkCancelRequest
) -> Response:
    """runs.md §Bulk cancel: every id on its own, the results in request order."""

    async def produce(_: idempotency.Claim) -> Response:
        results = await engine.bulk_cancel(principal, body.runIds, body.reason)
        return JSONResponse({"results": results})

    return await idempotency.guard(request, principal, "bulkCancelRuns", produce)


@router.post("/runs/{runId}:pause", operation_id="pauseRun", status_code=202)
async def pause_run(
    runId: str,
    request: Request,
    principal: PrincipalDep,
    engine: EngineDep,
    body: Annotated[PauseRunRequest | None, Body()] = None,
) -> Response:
    """runs.md §Pause and resume: the run starts no new node or trial until resumed."""
    run_id = path_run_id(runId, principal)
    policy = body.drainPolicy if body is not None else "drain-current-node"

    async def produce(_: idempotency.Claim) -> Response:
        paused = await engine.pause_run(principal, run_id, policy)
        answer = {"runId": paused.run_id, "status": paused.status.value}
        return JSONResponse({**answer, "pausedAt": timestamp(paused.at)}, status_code=202)

    return await idempotency.guard(request, principal, "pauseRun", produce)


@router.post("/runs/{runId}:resume", operation_id="resumeRun", status_code=202)
async def resume_run(
    runId: str,
    request: Request,
    principal: PrincipalDep,
    engine: EngineDep,
    body: Annotated[ResumeRunRequest | None, Body()] = None,
) -> Response:
    run_id = path_run_id(runId, principal)

    async def produce(_: idempotency.Claim) -> Response:
        resumed = await engine.resume_run(principal, run_id)
        answer = {"runId": resumed.run_id, "status": resumed.status.value}
        return JSONResponse({**answer, "resumedAt": timestamp(resumed.at)}, status_code=202)

    return await idempotency.guard(request, principal, "resumeRun", produce)


@router.get("/runs/{runId}/eval-summary", operation_id="getEvalSummary")
async def get_eval_summary(runId: str, principal: PrincipalDep, host: HostDep) -> JSONResponse:
    """RFC 0081 §C: 200 when terminal, 409 while active, 404 for a run that is not an eval run."""
    if not host.settings.eval.enabled:
        raise errors.NotFound()
    record = await host.engine.get_run(principal, path_run_id(runId, principal))
    if record.kind is not RunKind.EVAL:
        raise errors.NotFound("This run is not an eval run.")
    if not record.status.is_terminal:
        raise errors.RunStateConflict(
            "The eval run is still active.", details={"runStatus": record.status.value}
        )
    if record.summary is None:
        raise errors.NotFound("This eval run ended without a summary.")
    return JSONResponse(record.summary.to_wire())


@router.post("/runs/{runId}:fork", operation_id="forkRun", status_code=201)
async def fork_run(
    runId: str, request: Request, principal: PrincipalDep, host: HostDep, body: ForkRunRequest
) -> Response:
    """A replay fork: re-emits the recorded log; never re-runs a tool or re-resolves a source."""
    if not host.settings.replay:
        raise errors.NotFound()
    run_id = path_run_id(runId, principal)

    def forked(record: RunRecord) -> Response:
        answer = {
            "runId": record.run_id,
            "sourceRunId": run_id,
            "fromSeq": fork_point(body),
            "mode": body.mode,
            "status": record.status.value,
            "eventsUrl": run_links(record.run_id)["eventsUrl"],
        }
        return JSONResponse(answer, status_code=201)

    async def produce(claim: idempotency.Claim) -> Response:
        settle = claim.settles_with(forked)
        record = await host.engine.fork_run(principal, run_id, body, on_insert=settle)
        return forked(record)

    return await idempotency.guard(request, principal, "forkRun", produce)
