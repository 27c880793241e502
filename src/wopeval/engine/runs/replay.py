"""Replay forks (runs.md §Fork, replay.md; RFC 0252 §E and Security).

A replay re-emits the recorded log as a new run: recorded facts are never
regenerated, no tool or agent runs, and a fixture source is never resolved
again. An eval run whose derived fixtures were erased cannot be replayed.
"""

from __future__ import annotations

from dataclasses import replace

from wopeval.engine.live.notifier import Notifier
from wopeval.engine.runlog.log_writer import OnInsert, insert_run
from wopeval.engine.runlog.steps import now
from wopeval.store import (
    EventRow,
    OwnedRun,
    RunRecord,
    Store,
    UnitOfWork,
    copy_derived,
    next_created_seq,
)
from wopeval.wire import errors, ids, json_text
from wopeval.wire.principal import Principal
from wopeval.wire.runs import ForkRunRequest


def fork_point(request: ForkRunRequest) -> int:
    """The `fromSeq` a replay fork names (0 when absent)."""
    return request.fromSeq or 0


def check_fork(request: ForkRunRequest, source: RunRecord) -> None:
    """The request rules of a replay fork."""
    if request.mode != "replay":
        raise errors.ValidationFailed("This host offers replay forks only (replay.modes).")
    if request.runOptionsOverlay:
        raise errors.ValidationFailed("A replay fork takes no runOptionsOverlay.")
    if not source.status.is_terminal:
        raise errors.RunStateConflict(
            "Only a finished run can be replayed.", details={"runStatus": source.status.value}
        )
    if fork_point(request) > source.last_sequence:
        raise errors.ForkPointInvalid(details={"lastSequence": source.last_sequence})


async def replay(uow: UnitOfWork, principal: Principal, source: OwnedRun) -> RunRecord:
    """Write the replay run, its re-emitted log and its copies in the caller's transaction.

    The source stays share-locked while it is copied (`RunsRepo.hold`): an erasure of it
    waits, then finds the replay among its children and erases the copy too."""
    await uow.runs.hold(principal.tenant, [source.run_id])
    copies = await uow.derived_fixtures.rows(source.handle)
    # RFC 0252 Security: a replay whose derived copy is gone is refused, never re-derived.
    if any(copy["erased_at"] is not None for copy in copies):
        raise errors.RecordedFixturesGone()
    run_id = ids.mint_run_id(principal.tenant)
    at = now()
    record = replace(
        source.as_record(),
        run_id=run_id,
        parent_run_id=source.run_id,
        created_at=at,
        started_at=at,
        completed_at=at,
        created_seq=next_created_seq(),
        plan=await uow.runs.plan(source.handle),
    )
    await insert_run(
        uow, record, [_reemit(doc, run_id) for doc in await uow.events.all_docs(source.handle)]
    )
    await uow.tool_calls.copy(source.handle, run_id)
    await uow.model_calls.copy(source.handle, run_id)
    await uow.invocations.copy(source.handle, run_id)
    await uow.trials.copy(source.handle, run_id)
    await uow.tool_listings.copy(source.handle, run_id)
    await copy_derived(uow.derived_fixtures, source.handle, run_id)
    return record


def _reemit(doc: str, run_id: str) -> EventRow:
    # The store's codec, as the log writer's: a recorded answer holding a lone surrogate is
    # stored escaped (no UTF-8 holds one raw), integers beyond 64 bits are kept.
    event = json_text.parse(doc)
    # Recorded facts keep their payloads and timestamps; only identity is new.
    event["runId"] = run_id
    event["eventId"] = ids.mint_local_id()
    return (
        run_id,
        event["sequence"],
        event["type"],
        json_text.compact(event),
    )


async def fork_run(
    store: Store,
    notifier: Notifier,
    principal: Principal,
    run_id: str,
    request: ForkRunRequest,
    on_insert: OnInsert | None,
) -> RunRecord:
    """Fork the caller's finished run as a replay, in one transaction with `on_insert`'s rows."""
    async with store.transaction() as uow:
        source = await uow.runs.get(principal.tenant, run_id)
        if source is None:
            raise errors.NotFound("No such run.")
        check_fork(request, source)
        record = await replay(uow, principal, source)
        if on_insert is not None:
            await on_insert(uow, record)
    notifier.notify(record.run_id)
    return record
