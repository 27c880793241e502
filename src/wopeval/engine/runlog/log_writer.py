"""The one writer of every run log (G7): steps from all runs, committed in groups.

While one transaction is being written, the steps that arrive queue up and go
out together in the next one, whichever runs they belong to: a busy host pays
one commit for many steps. Each step still lands whole or not at all, in
arrival order, and its caller resumes only once it is durable. A step whose
run is not in a state it allows lands nothing, and its caller is told.

Sequences are taken from the run row inside the transaction (see
`RunsRepo.advance`), which also locks the row: the sequences of a run stay
contiguous and in commit order even with another process writing to it. A
run's steps that only add to its log (`_PlainSteps`: an eval's trials, a
workflow's nodes) move its row once per transaction, however many there are.

On PostgreSQL, where a transaction of such steps is pipelined, and on SQLite, the row
is not read back: the writer numbers the events from the last sequence its own commits
left the run at, and the row's move is checked against it (`RunsRepo.advance_known`: by
the server, so a live call's step is one round trip; on SQLite by the count of rows
changed, with no RETURNING). A run that is not where the writer left it (another writer
moved it, or its state changed) fails that transaction whole (`StaleRun`), and its steps
go again the way that reads the row.

A step may carry a `Fence` (fence.py). Its run's row is then locked once for the
transaction (every fenced run of a group in run-id order, so two writers never
wait on each other in a cycle), the fence is asked with the run as the steps
before it left it, and the row is moved once, at the transaction's end, by all
of the run's fenced steps together. A writer that
`broadcast`s announces each landed run with a NOTIFY in the same transaction,
for the readers in other processes (queue mode).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from wopeval.engine.live.notifier import Notifier
from wopeval.engine.runlog.fence import Fence, Locked
from wopeval.engine.runlog.steps import (
    WHILE_ACTIVE,
    RunUpdate,
    Staged,
    Step,
    StepNotLanded,
    Transition,
)
from wopeval.store import (
    EventRow,
    ListingRow,
    LockedRun,
    RunMove,
    RunRecord,
    StaleRun,
    Store,
    ToolCallOutcome,
    UnitOfWork,
    out_of_reach,
)
from wopeval.wire import events, json_text
from wopeval.wire.json_text import JsonObject
from wopeval.wire.runs import RunStatus

log = logging.getLogger("wopeval.engine")

OnInsert = Callable[[UnitOfWork, RunRecord], Awaitable[None]]
"""Adds the caller's own rows to the transaction that inserts a new run (derived
fixtures, the idempotency record that names it), so they land together or not at all."""

ANY_STATE = frozenset(RunStatus)

MAX_GROUP = 512
"""Steps per transaction at most, so one commit never holds the store for long."""

KNOWN_RUNS = 4096
"""Runs whose last sequence a writer remembers at most, the least recently written
forgotten first: a forgotten run's next step reads its row, as a first step does."""


@dataclass
class _Queued:
    run_id: str
    tenant: str
    step: Step
    transition: Transition
    values: JsonObject
    """The run-row columns the step sets (its `RunUpdate.values()`), worked out once: the
    writer asks them of every step two or three times."""
    done: asyncio.Future[bool]
    fence: Fence | None = None
    taken: asyncio.Future[None] | None = None
    """A handed step's (`LogWriter.hand`): set once the flusher took it into a transaction."""


@dataclass(frozen=True, slots=True)
class Handed:
    """A step handed to the writer (`LogWriter.hand`), which lands it whatever becomes of
    its caller."""

    taken: asyncio.Future[None]
    """Set once the writer took the step into a transaction: on PostgreSQL that
    transaction went to the server before the flusher's first wait, so whatever its
    caller runs from here overlaps the server's time (bench/README.md, "Branch
    `eval-pg-overlap`"). Set too when the step is failed unsent."""
    done: asyncio.Future[bool]
    """As `submit` returns: True once durable, False when refused; `StepNotLanded` when lost."""


@dataclass
class _Group:
    """The rows of one transaction, gathered from its steps and written in bulk: each row
    built as its insert binds it, its values in the statement's order (the repos' `append`)."""

    events: list[EventRow] = field(default_factory=list)
    calls: list[tuple[Any, ...]] = field(default_factory=list)
    outcomes: list[tuple[str, int, ToolCallOutcome]] = field(default_factory=list)
    model_calls: list[tuple[Any, ...]] = field(default_factory=list)
    invocations: list[tuple[Any, ...]] = field(default_factory=list)
    trials: list[tuple[Any, ...]] = field(default_factory=list)
    listings: list[tuple[str, ListingRow]] = field(default_factory=list)
    unfenced_runs: set[str] = field(default_factory=set)
    """Runs with unfenced steps among these rows (numbered, not yet written)."""
    lasts: dict[str, int] = field(default_factory=dict)
    """Each run's last sequence numbered in this transaction, where its row now is: the
    row is locked until the commit. Kept across `write`."""

    async def write(self, uow: UnitOfWork) -> None:
        """Write the rows gathered so far; the group is empty again after."""
        await uow.events.append(self.events)
        await uow.tool_calls.append(self.calls)
        await uow.tool_calls.complete(self.outcomes)
        await uow.model_calls.append(self.model_calls)
        await uow.invocations.append(self.invocations)
        await uow.trials.append(self.trials)
        await uow.tool_listings.keep(self.listings)
        for rows in (
            self.events,
            self.calls,
            self.outcomes,
            self.model_calls,
            self.invocations,
            self.trials,
            self.listings,
        ):
            rows.clear()
        self.unfenced_runs.clear()


class LogWriter:
    def __init__(self, store: Store, notifier: Notifier, *, broadcast: bool = False) -> None:
        self.store = store
        self._notifier = notifier
        self._broadcast = broadcast
        self._queue: list[_Queued] = []
        self._flusher: asyncio.Task[None] | None = None
        self._known: dict[str, int] = {}
        """Per run, the last sequence this writer's commits left its row at, the most
        recently written last (at most `KNOWN_RUNS`)."""

    async def read(self, tenant: str, run_id: str) -> RunRecord | None:
        async with self.store.reading() as uow:
            return await uow.runs.get(tenant, run_id)

    async def insert(self, record: RunRecord, step: Step, extra: OnInsert | None) -> RunRecord:
        """Insert a new run with its first events (numbered from 0) and the caller's rows."""
        group = _Group()
        _number(record.run_id, step, 0, group)
        stored = replace(record, last_sequence=len(step.staged) - 1)
        async with self.store.transaction() as uow:
            await uow.runs.insert(stored)
            await group.write(uow)
            if extra is not None:
                await extra(uow, stored)
            if self._broadcast:
                await uow.runs.notify([record.run_id])
        self._remember(group.lasts)
        self._notifier.notify(record.run_id)
        return stored

    async def submit(
        self,
        run_id: str,
        tenant: str,
        step: Step,
        transition: Transition,
        update: RunUpdate,
        fence: Fence | None = None,
    ) -> bool:
        """Queue a step and wait until it is durable; False when its run's state (or its
        fence) refused it."""
        queued = _Queued(
            run_id,
            tenant,
            step,
            transition,
            update.values(),
            asyncio.get_running_loop().create_future(),
            fence,
        )
        self._enqueue(queued)
        # The flusher owns the write: a caller cancelled while waiting still gets its
        # step written, in order, before anything queued after it. Its cancel cancels only
        # this future, which the flusher then leaves as it is (`_settle`); a shield around
        # it would cost a future and a callback more a commit for the same.
        return await queued.done

    def hand(self, run_id: str, tenant: str, step: Step, fence: Fence | None = None) -> Handed:
        """Queue a step that only adds to its active run's log, as `submit` does, without
        waiting for it: the caller waits for `Handed.taken`, then may work on while the
        step lands, and waits for `Handed.done` before anything of its run depends on it."""
        loop = asyncio.get_running_loop()
        taken: asyncio.Future[None] = loop.create_future()
        done: asyncio.Future[bool] = loop.create_future()
        self._enqueue(_Queued(run_id, tenant, step, WHILE_ACTIVE, {}, done, fence, taken))
        return Handed(taken, done)

    def _enqueue(self, queued: _Queued) -> None:
        self._queue.append(queued)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush(), name="log-writer")

    async def _flush(self) -> None:
        # Turns of the loop before the first group is taken, while each brings more steps:
        # runs out of step with each other (started one by one, as `POST /runs` starts
        # them) join one group, then resume together and stay together, rather than each
        # paying a transaction of its own. Every step still waits for its commit.
        waiting = len(self._queue)
        await asyncio.sleep(0)
        while len(self._queue) > waiting and len(self._queue) < MAX_GROUP:
            waiting = len(self._queue)
            await asyncio.sleep(0)
        while self._queue:
            batch, self._queue = self._queue[:MAX_GROUP], self._queue[MAX_GROUP:]
            # Their callers resume after this task's first wait: on PostgreSQL, once the
            # transaction is on its way (it is built and sent without one).
            for queued in batch:
                _take(queued)
            try:
                landed = await self._write(batch)
            except asyncio.CancelledError as cancelled:
                self._unsure(batch)
                # Nothing else will flush once this task is cancelled: fail what is queued too.
                for queued in batch + self._queue:
                    _settle(queued, cancelled)
                self._queue = []
                raise
            except Exception:
                self._unsure(batch)
                log.warning("a group commit failed; writing its steps one by one", exc_info=True)
                for queued in batch:
                    try:
                        if await self._landed_unanswered(queued):
                            self._finish([queued], [True])
                            continue
                        single = await self._write([queued])
                    except Exception as failure:
                        _settle(queued, _not_landed(queued.run_id, failure))
                    else:
                        self._finish([queued], single)
                continue
            self._finish(batch, landed)

    async def _write(self, batch: list[_Queued]) -> list[bool]:
        try:
            return await self._write_once(batch)
        except StaleRun:
            # Nothing landed: again, with these runs' rows read (and their states checked).
            for queued in batch:
                self._known.pop(queued.run_id, None)
            return await self._write_once(batch)

    async def _write_once(self, batch: list[_Queued]) -> list[bool]:
        group = _Group()
        landed = [False] * len(batch)
        pipelined = self.store.pipelines and not self._broadcast and _only_driver_statements(batch)
        async with self.store.log_transaction(pipelined=pipelined) as uow:
            fenced = _FencedRuns(uow, batch)
            plain = _PlainSteps(uow, group, landed, self._known)
            await fenced.lock_all()
            for index, queued in enumerate(batch):
                # Each kind of step moves the run row after the earlier steps of its run.
                if queued.fence is not None:
                    await plain.advance(queued.run_id)
                    if queued.run_id in group.unfenced_runs:
                        # What the fence reads of this run must include the earlier steps.
                        await group.write(uow)
                    landed[index] = await fenced.land(queued, queued.fence, group)
                    continue
                await fenced.settle(queued.run_id)
                if await plain.takes(index, queued):
                    continue
                await plain.advance(queued.run_id)
                step = queued.step
                last = await uow.runs.advance(
                    queued.tenant,
                    queued.run_id,
                    count=len(step.staged),
                    allowed_from=queued.transition.allowed_from,
                    status=queued.transition.to,
                    values=queued.values,
                    trials=len(step.trials),
                )
                if last is not None:
                    landed[index] = True
                    group.unfenced_runs.add(queued.run_id)
                    _number(queued.run_id, step, last - len(step.staged) + 1, group)
            await plain.advance_all()
            await fenced.settle_all()
            await group.write(uow)
            if self._broadcast:
                await uow.runs.notify(
                    {queued.run_id for queued, ok in zip(batch, landed, strict=True) if ok}
                )
        self._remember(group.lasts)
        return landed

    async def _landed_unanswered(self, queued: _Queued) -> bool:
        """Whether `queued`'s step landed with a group whose commit failed: the connection
        lost after the server committed and before its answer reached the host. Written
        again, it would land twice (its events under new sequences, its tool call's row
        again) or fail on a key (its trial's, its invocation's). A step numbered in that
        group landed if its first event is at its sequence in the log: event ids are
        minted once, so nothing else can be there. A step with no event (a cancel's row
        values alone) is written again, which sets the same values."""
        first = next((staged for staged in queued.step.staged if staged.sequence is not None), None)
        if first is None or first.sequence is None:
            return False
        async with self.store.reading() as uow:
            run = await uow.runs.get(queued.tenant, queued.run_id)
            docs = {} if run is None else await uow.events.docs_at(run.handle, [first.sequence])
        found = docs.get(first.sequence)
        return found is not None and json.loads(found)["eventId"] == first.event_id

    def _remember(self, lasts: dict[str, int]) -> None:
        """Where a commit left its runs' rows (only a commit that returned: one that failed
        may or may not have landed, and a run's row left unknown is read again)."""
        known = self._known
        for run_id, last in lasts.items():
            known.pop(run_id, None)
            known[run_id] = last
        while len(known) > KNOWN_RUNS:
            del known[next(iter(known))]

    def _unsure(self, batch: list[_Queued]) -> None:
        """A commit that failed may still have landed (its connection lost at COMMIT):
        the readers of its runs, and the answers kept of them, read the store again."""
        for run_id in {queued.run_id for queued in batch}:
            self._notifier.notify(run_id)

    def _finish(self, batch: list[_Queued], landed: list[bool]) -> None:
        for queued, ok in zip(batch, landed, strict=True):
            _settle(queued, ok)
        for run_id in {queued.run_id for queued, ok in zip(batch, landed, strict=True) if ok}:
            self._notifier.notify(run_id)

    async def stop(self) -> None:
        """Wait for what is queued to land (the engine stops its runs first)."""
        while self._flusher is not None and not self._flusher.done():
            await asyncio.gather(self._flusher, return_exceptions=True)


async def insert_run(uow: UnitOfWork, record: RunRecord, rows: list[EventRow]) -> None:
    """A new run's row and its first event rows: a run is never visible without its log."""
    await uow.runs.insert(record)
    await uow.events.append(rows)


class _PlainSteps:
    """Steps that only add to their run's log (no fence, no new state, no row values): a
    run's consecutive ones of a transaction take their sequences with one row update, and
    land or are refused together (they allow the same states of the same locked row).

    In a transaction that checks moves (pipelined, or SQLite's) a run whose row is known
    (`known`, the writer's; or moved earlier in this transaction) is numbered from there
    and its row's move is checked, not read back."""

    def __init__(
        self, uow: UnitOfWork, group: _Group, landed: list[bool], known: dict[str, int]
    ) -> None:
        self._uow = uow
        self._group = group
        self._landed = landed
        self._known = known
        self._waiting: dict[str, list[tuple[int, _Queued]]] = {}

    async def takes(self, index: int, queued: _Queued) -> bool:
        """Hold `queued` for its run's update, if it is a plain step; False otherwise."""
        if queued.transition.to is not None or queued.values:
            return False
        waiting = self._waiting.get(queued.run_id)
        if waiting and waiting[0][1].transition.allowed_from != queued.transition.allowed_from:
            await self.advance(queued.run_id)
        self._waiting.setdefault(queued.run_id, []).append((index, queued))
        return True

    async def advance(self, run_id: str) -> None:
        """Move the run's row by its held steps and number them, in their order."""
        await self._advance([run_id])

    async def advance_all(self) -> None:
        """Every run's held steps: runs whose steps allow the same states move together, in
        one statement (a busy host's batch is mostly one live call's step per run)."""
        by_states: dict[frozenset[RunStatus], list[str]] = {}
        for run_id, waiting in self._waiting.items():
            by_states.setdefault(waiting[0][1].transition.allowed_from, []).append(run_id)
        for run_ids in by_states.values():
            await self._advance(run_ids)

    async def _advance(self, run_ids: list[str]) -> None:
        held = {run_id: self._waiting.pop(run_id) for run_id in run_ids if run_id in self._waiting}
        if not held:
            return
        moves = [
            RunMove(
                waiting[0][1].tenant,
                run_id,
                sum(len(queued.step.staged) for _, queued in waiting),
                sum(len(queued.step.trials) for _, queued in waiting),
            )
            for run_id, waiting in held.items()
        ]
        allowed_from = next(iter(held.values()))[0][1].transition.allowed_from
        known = self._known_lasts(moves)
        checked = [move for move in moves if move.run_id in known]
        if checked:
            self._uow.runs.advance_known(checked, known, allowed_from)
        # A checked move lands as numbered here, or the transaction fails whole.
        lasts = {move.run_id: known[move.run_id] + move.events for move in checked}
        unknown = [move for move in moves if move.run_id not in known]
        if unknown:
            lasts |= await self._uow.runs.advance_each(unknown, allowed_from)
        for move in moves:
            last = lasts.get(move.run_id)
            if last is None:  # no longer in a state these steps allow: all refused
                continue
            self._group.unfenced_runs.add(move.run_id)
            sequence = last - move.events + 1
            for index, queued in held[move.run_id]:
                self._landed[index] = True
                _number(move.run_id, queued.step, sequence, self._group)
                sequence += len(queued.step.staged)

    def _known_lasts(self, moves: list[RunMove]) -> dict[str, int]:
        """The last sequence of each of these runs whose row is known, in a transaction
        that checks moves (elsewhere none: the move is read back)."""
        if not self._uow.checks_moves:
            return {}
        moved, known = self._group.lasts, self._known
        found: dict[str, int] = {}
        for move in moves:
            last = moved.get(move.run_id, known.get(move.run_id))
            if last is not None:
                found[move.run_id] = last
        return found


@dataclass
class _FencedRun:
    locked: Locked
    first: LockedRun
    """The row as read under the lock, before this transaction moved it."""
    values: JsonObject = field(default_factory=dict)


class _FencedRuns:
    """The runs of one transaction's fenced steps: each locked once and moved once."""

    def __init__(self, uow: UnitOfWork, batch: list[_Queued]) -> None:
        self._uow = uow
        self._tasks: dict[str, set[str]] = {}
        self._tenants: dict[str, str] = {}
        for queued in batch:
            if queued.fence is not None:
                tasks = self._tasks.setdefault(queued.run_id, set())
                tasks.update(row.task_id for row in queued.step.trials)
                self._tenants[queued.run_id] = queued.tenant
        self._runs: dict[str, _FencedRun | None] = {}

    async def lock_all(self) -> None:
        for run_id in sorted(self._tenants):
            await self._lock(run_id)

    async def _lock(self, run_id: str) -> None:
        row = await self._uow.runs.lock(self._tenants[run_id], run_id, ANY_STATE)
        self._runs[run_id] = (
            None if row is None else _FencedRun(Locked(row, self._tasks[run_id]), row)
        )

    async def land(self, queued: _Queued, fence: Fence, group: _Group) -> bool:
        """Ask the fence, then number the step and what the fence adds to it; its rows go
        into `group` and the run's row moves at `settle`."""
        if queued.run_id not in self._runs:
            await self._lock(queued.run_id)
        run = self._runs[queued.run_id]
        if run is None or run.locked.run.status not in queued.transition.allowed_from:
            return False
        landing = await fence.admit(self._uow, run.locked, queued.step)
        if landing is None:
            return False
        if landing.noop:
            return True
        step = Step()
        step.extend(queued.step)
        step.extend(landing.extra)
        _number(queued.run_id, step, run.locked.run.last_sequence + 1, group)
        run.locked.moved(
            events=len(step.staged),
            status=landing.to or queued.transition.to,
            trials=[row.counts() for row in step.trials],
        )
        run.locked.invoked |= step.agent_ids()
        run.values.update({**queued.values, **landing.update.values()})
        return True

    async def settle(self, run_id: str) -> None:
        """Move the run's row by its fenced steps so far; later ones lock it afresh."""
        run = self._runs.pop(run_id, None)
        if run is None:
            return
        now, first = run.locked.run, run.first
        if now == first and not run.values:
            return
        last = await self._uow.runs.advance(
            first.tenant,
            first.run_id,
            count=now.last_sequence - first.last_sequence,
            allowed_from=[first.status],
            status=None if now.status is first.status else now.status,
            values=run.values,
            trials=now.landed_trials - first.landed_trials,
        )
        if last is None:  # the row is locked: its state cannot have changed since
            raise RuntimeError(f"run {run_id} left its state under this transaction's lock")

    async def settle_all(self) -> None:
        for run_id in list(self._runs):
            await self.settle(run_id)


def _only_driver_statements(batch: list[_Queued]) -> bool:
    """Whether the batch is written by the driver's statements alone, to be sent together
    (store/__init__.py `log_transaction`, pipelined; a big group's rows bound a column at a
    time in the same pipeline, store/_pg_batch.py): plain steps (`_PlainSteps`). A fence, a state
    change, row values or an MCP tool listing (a run's first of each server) go through
    SQLAlchemy."""
    if any(queued.fence is not None or queued.transition.to is not None for queued in batch):
        return False
    return not any(queued.values or queued.step.listings for queued in batch)


def _not_landed(run_id: str, failure: Exception) -> Exception:
    """What a step's caller is told of a write that failed: the database out of reach is
    `StepNotLanded` (its run ends failed saying so), anything else as it was raised."""
    if not out_of_reach(failure):
        return failure
    log.error(
        "a step of run %s did not land: the database was out of reach", run_id, exc_info=failure
    )
    return StepNotLanded("the host's database was out of reach; this step was not recorded")


def _take(queued: _Queued) -> None:
    taken = queued.taken
    if taken is not None and not taken.done():  # its waiter may have been cancelled
        taken.set_result(None)


def _settle(queued: _Queued, outcome: bool | BaseException) -> None:
    _take(queued)
    if queued.done.done():
        return
    if isinstance(outcome, BaseException):
        queued.done.set_exception(outcome)
    else:
        queued.done.set_result(outcome)


def _number(run_id: str, step: Step, first: int, group: _Group) -> None:
    """Give the step's events their sequences from `first` and gather its rows."""
    group.lasts[run_id] = first + len(step.staged) - 1
    rows = group.events
    for sequence, staged in enumerate(step.staged, first):
        staged.sequence = sequence
        rows.append((run_id, sequence, staged.type, render(run_id, staged)))
    for called, row in step.calls:
        if called.sequence is None:
            raise ValueError("a tool record must be keyed to an event of its own step")
        group.calls.append(row.to_row(run_id, called.sequence))
    for called, outcome in step.outcomes:
        if called.sequence is None:
            raise ValueError("an outcome must complete a call that has landed")
        group.outcomes.append((run_id, called.sequence, outcome))
    group.model_calls.extend(row.to_row(run_id) for row in step.model_calls)
    group.invocations.extend(row.to_row(run_id) for row in step.invocations)
    group.trials.extend(row.to_row(run_id) for row in step.trials)
    group.listings.extend((run_id, row) for row in step.listings)


def render(run_id: str, staged: Staged) -> str:
    """The stored RunEventDoc, served byte for byte by poll, SSE and replays."""
    doc: JsonObject = {
        "eventId": staged.event_id,
        "runId": run_id,
        "type": staged.type,
        "payload": staged.payload,
        "timestamp": staged.timestamp,
        "sequence": staged.sequence,
        "schemaVersion": events.SCHEMA_VERSION,
    }
    if staged.node_id is not None:
        doc["nodeId"] = staged.node_id
    return json_text.compact(doc)
