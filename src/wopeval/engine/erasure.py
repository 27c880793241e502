"""Erasure and retention of recorded tool content (RFC 0252 Security; docs/design.md §3).

Erasing a run's tool content reaches every copy of it: the derived fixtures
taken from the run, the eval runs that were served them (their own record of
those calls), and replays of any of these. What is left is the shape of each
call — tool, status, duration, `argsHash` — never its content. The model
exchanges go with it (their messages carry the tools' results): tokens,
latency, cost and `requestHash` stay; requests and answers do not. So does what
the run's agents said (their stderr), which may quote any of it, and so do the
MCP tool listings the runs were offered: a listing no run of the tenant holds
any more is deleted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from wopeval import evals
from wopeval.engine.runlog import now
from wopeval.store import RunHandle, Store, UnitOfWork
from wopeval.wire import events

_TOOL_EVENTS = (events.ToolCalled.TYPE, events.ToolReturned.TYPE)


@dataclass(frozen=True)
class Erasure:
    runs: int
    calls: int
    copies: int


async def erase_tool_content(uow: UnitOfWork, tenant: str, run_id: str) -> Erasure:
    at = now()
    pending, seen = [run_id], set[str]()
    calls = copies = 0
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        # HOST SCOPE: the caller checked the first run is the tenant's (or it is retention);
        # the cascade follows its content into every run that copied it.
        run = await uow.runs.for_host(current)
        if run is None:
            continue
        calls += await uow.tool_calls.erase(current, at)
        await uow.model_calls.erase(current, at)
        await uow.invocations.erase_said(current)
        await uow.tool_listings.erase(tenant, current)
        await _scrub_events(uow, run.handle)
        await _scrub_trials(uow, run.handle, at)
        pending.extend(await uow.derived_fixtures.takers(current))
        copies += await uow.derived_fixtures.erase_from_source(current, at)
        pending.extend(await uow.runs.children(tenant, current))
    return Erasure(runs=len(seen), calls=calls, copies=copies)


async def _scrub_events(uow: UnitOfWork, run: RunHandle) -> None:
    docs = await uow.events.docs_of_types(run, _TOOL_EVENTS)
    rewritten = {}
    for sequence, doc in docs.items():
        event = json.loads(doc)
        payload = event["payload"]
        if "inputs" in payload:
            # The hash keeps a scrubbed call comparable without keeping what it said.
            payload["argsHash"] = evals.args_hash(payload.pop("inputs"))
        payload.pop("outcome", None)
        if isinstance(payload.get("error"), dict):
            payload["error"].pop("details", None)
        rewritten[sequence] = json.dumps(event, separators=(",", ":"), ensure_ascii=False)
    await uow.events.rewrite(run.run_id, rewritten)


async def _scrub_trials(uow: UnitOfWork, run: RunHandle, at: datetime) -> None:
    """Trial details keep each call's tool, status and `argsHash`, never what it said."""
    scrubbed = {}
    for stored in await uow.trials.of_run(run):
        if stored.erased:
            continue
        detail = dict(stored.detail)
        detail.pop("stderr", None)
        detail["calls"] = [_scrub_call(call) for call in detail["calls"]]
        detail["modelCalls"] = [
            {key: value for key, value in exchange.items() if key not in ("request", "response")}
            for exchange in detail.get("modelCalls", [])
        ]
        detail["misses"] = [
            {key: miss[key] for key in ("callIndex", "tool", "closestIndex", "consumedForTool")}
            for miss in detail["misses"]
        ]
        scrubbed[(stored.task_id, stored.trial)] = detail
    await uow.trials.rewrite(run.run_id, scrubbed, at)


def _scrub_call(call: dict[str, Any]) -> dict[str, Any]:
    kept = {key: value for key, value in call.items() if key not in ("inputs", "outcome", "error")}
    error = call.get("error")
    if isinstance(error, dict):
        kept["error"] = {key: error[key] for key in ("code", "message") if key in error}
    return kept


async def purge_expired(store: Store, retention_days: int) -> Erasure:
    """Erase the tool content of every run that finished more than `retention_days` ago."""
    cutoff: datetime = now() - timedelta(days=retention_days)
    async with store.reading() as uow:
        expired = sorted(
            set(await uow.tool_calls.run_ids_older_than(cutoff))
            | set(await uow.model_calls.run_ids_older_than(cutoff))
            | set(await uow.tool_listings.run_ids_older_than(cutoff))
        )
    total = Erasure(0, 0, 0)
    for run_id in expired:
        async with store.transaction() as uow:
            done = await erase_tool_content(uow, run_id.partition("/")[0], run_id)
        total = Erasure(
            total.runs + done.runs, total.calls + done.calls, total.copies + done.copies
        )
    return total
