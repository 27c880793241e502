"""Erasure and retention of recorded tool content (RFC 0252 Security; docs/design.md §3).

Erasing a run's tool content reaches every copy of it: the derived fixtures
taken from the run (and those it was served), the eval runs that were served
them (their own record of those calls), and replays of any of these. Every
erasure — the erase route, the retention purge, `wopeval purge` — comes here,
and one rule says what of each copy survives (the functions below, applied to
each table by the store):

- a tool call, in the record, an event or a trial's trace: its tool, status,
  duration and `argsHash`, and of an error its code; never its args, result or
  the error's words, which are the tool's own (an MCP tool's error text);
- a model exchange (their messages carry the tools' results): tokens, latency,
  cost and `requestHash`; never the request or the answer;
- what the run's agents said (their stderr), which may quote any of it: nothing;
- the MCP tool listings the runs were offered: a listing no run of the tenant
  holds any more is deleted;
- the runs' annotations (RFC 0056), whose notes and corrections may quote any of it:
  deleted (docs/decisions.md, "Annotations").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from wopeval import evals
from wopeval.engine.live.notifier import Notifier
from wopeval.engine.runlog.steps import now
from wopeval.store import RunHandle, Store, UnitOfWork
from wopeval.wire import errors, events
from wopeval.wire.principal import Principal

_TOOL_EVENTS = (events.ToolCalled.TYPE, events.ToolReturned.TYPE)
_CALL_CONTENT = ("inputs", "outcome", "error")
_EXCHANGE_CONTENT = ("request", "response", "error")
_MISS_SHAPE = ("callIndex", "tool", "closestIndex", "consumedForTool")
ERASED_MESSAGE = "The tool's error text was erased."
ACTIVE_COPY = "A run that copied this run's content has not ended yet; erase again once it has."


@dataclass(frozen=True)
class Erasure:
    runs: int
    calls: int
    copies: int


async def erase_run_tool_content(
    store: Store, notifier: Notifier, principal: Principal, run_id: str
) -> Erasure:
    """Erase the tool content of the caller's ended run and of every copy of it."""
    async with store.transaction() as uow:
        record = await uow.runs.get(principal.tenant, run_id)
        if record is None:
            raise errors.NotFound("No such run.")
        if not record.status.is_terminal:
            raise errors.RunStateConflict(
                "An active run's tool content cannot be erased yet.",
                details={"runStatus": record.status.value},
            )
        erased = await erase_tool_content(uow, principal.tenant, run_id)
    notifier.rewritten()
    return erased


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
        run = await uow.runs.for_host(current, lock=True)
        if run is None:
            continue
        if not run.status.is_terminal:
            # A running copier keeps what it was served in memory and would record it again
            # after the erasure: nothing is erased until every copier has ended.
            raise errors.RunStateConflict(ACTIVE_COPY, details={"runStatus": run.status.value})
        calls += await uow.tool_calls.erase(current, at, erased_error)
        await uow.model_calls.erase(current, at)
        await uow.invocations.erase_said(current)
        await uow.tool_listings.erase(tenant, current)
        await uow.annotations.erase(current)
        await _scrub_events(uow, run.handle)
        await _scrub_trials(uow, run.handle, at)
        pending.extend(await uow.derived_fixtures.takers(current))
        copies += await uow.derived_fixtures.erase_copies(current, at)
        pending.extend(await uow.runs.children(tenant, current))
    return Erasure(runs=len(seen), calls=calls, copies=copies)


async def _scrub_events(uow: UnitOfWork, run: RunHandle) -> None:
    docs = await uow.events.docs_of_types(run, _TOOL_EVENTS)
    await uow.events.rewrite(
        run.run_id, {sequence: erased_event(doc) for sequence, doc in docs.items()}
    )


async def _scrub_trials(uow: UnitOfWork, run: RunHandle, at: datetime) -> None:
    scrubbed = {
        (stored.task_id, stored.trial): erased_trial(stored.detail)
        for stored in await uow.trials.of_run(run)
        if not stored.erased
    }
    await uow.trials.rewrite(run.run_id, scrubbed, at)


# ── the rule: what of each copy survives erasure ─────────────────────


def erased_error(error: object) -> dict[str, Any] | None:
    """A tool error as erasure leaves it: its code and whether it may be retried. Its message
    and details are the tool's own words (an MCP tool's error text, a python tool's
    `ToolFailure`) and go; the message becomes `ERASED_MESSAGE`, as the wire needs one."""
    if not isinstance(error, dict):
        return None
    kept: dict[str, Any] = {"code": error.get("code", "tool_error"), "message": ERASED_MESSAGE}
    if error.get("retryable"):
        kept["retryable"] = True
    return kept


def erased_call(call: dict[str, Any]) -> dict[str, Any]:
    """A tool call as erasure leaves it, in an event's payload or a trial's trace alike:
    tool, status, duration and `argsHash` stay (the hash keeps a scrubbed call comparable
    without keeping what it said); args, result and the error's words go."""
    kept = {key: value for key, value in call.items() if key not in _CALL_CONTENT}
    if "inputs" in call:
        kept.setdefault("argsHash", evals.args_hash(call["inputs"]))
    error = erased_error(call.get("error"))
    if error is not None:
        kept["error"] = error
    return kept


def erased_event(doc: str) -> str:
    """A stored `agent.tool-called` or `agent.tool-returned` event with its call erased."""
    event = json.loads(doc)
    event["payload"] = erased_call(event["payload"])
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False)


def erased_exchange(exchange: dict[str, Any]) -> dict[str, Any]:
    """A model exchange in a trial's detail as erasure leaves it: its shape (tokens, latency,
    cost, `requestHash`), never the request or the answer. A replay miss's diff keeps its
    paths, not the values on either side."""
    kept = {key: value for key, value in exchange.items() if key not in _EXCHANGE_CONTENT}
    error = exchange.get("error")
    if isinstance(error, dict):
        kept["error"] = dict(error)
        if "diff" in error:
            kept["error"]["diff"] = [
                {"path": change["path"], "kind": change["kind"]} for change in error["diff"]
            ]
    return kept


def erased_trial(detail: dict[str, Any]) -> dict[str, Any]:
    """A trial's detail as erasure leaves it: each call and model exchange erased, a fixture
    miss's reason gone (it quotes the args), and what the agent said (stderr) gone."""
    kept = {key: value for key, value in detail.items() if key != "stderr"}
    kept["calls"] = [erased_call(call) for call in detail["calls"]]
    kept["modelCalls"] = [erased_exchange(exchange) for exchange in detail.get("modelCalls", [])]
    kept["misses"] = [
        {key: miss[key] for key in _MISS_SHAPE if key in miss} for miss in detail["misses"]
    ]
    return kept


@dataclass(frozen=True)
class Purged:
    erased: Erasure
    deferred: int
    """Expired runs left for a later purge: a run that copied them had not ended."""


async def purge_expired(store: Store, retention_days: int) -> Purged:
    """Erase the tool content of every run that finished more than `retention_days` ago."""
    cutoff: datetime = now() - timedelta(days=retention_days)
    async with store.reading() as uow:
        expired = sorted(
            set(await uow.tool_calls.run_ids_older_than(cutoff))
            | set(await uow.model_calls.run_ids_older_than(cutoff))
            | set(await uow.tool_listings.run_ids_older_than(cutoff))
        )
    total, deferred = Erasure(0, 0, 0), 0
    for run_id in expired:
        try:
            async with store.transaction() as uow:
                done = await erase_tool_content(uow, run_id.partition("/")[0], run_id)
        except errors.RunStateConflict:
            deferred += 1  # a copy of it is still running: a later purge erases both
            continue
        total = Erasure(
            total.runs + done.runs, total.calls + done.calls, total.copies + done.copies
        )
    return Purged(total, deferred)
