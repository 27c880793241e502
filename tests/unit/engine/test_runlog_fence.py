"""A run log held with a fence: every step it lands is admitted by the fence first."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from sqlalchemy import select

from wopeval.engine.runlog.fence import Landing, Locked
from wopeval.engine.runlog.runlog import RunLog
from wopeval.engine.runlog.steps import STOPPED_HOST, RunClosed, RunUpdate, Step, Transition, now
from wopeval.store import Store, ToolCallOutcome, TrialRow, UnitOfWork
from wopeval.store.tables import task_trials, tool_calls
from wopeval.wire import events
from wopeval.wire.runs import RunStatus

from ._store import TENANT, open_run, open_store, sequences, writer_for
from .test_runlog import _call_row


class _Gate:
    """Refuses the first `refusals` steps it is asked about, then admits each with `extra`."""

    def __init__(self, refusals: int = 0, extra: Step | None = None) -> None:
        self.refusals = refusals
        self.extra = extra
        self.asked: list[RunStatus] = []

    async def admit(self, uow: UnitOfWork, locked: Locked, step: Step) -> Landing | None:
        self.asked.append(locked.run.status)
        if len(self.asked) <= self.refusals:
            return None
        extra, self.extra = self.extra, None
        return Landing(extra=extra or Step())


async def _fenced(store: Store, gate: _Gate, status: RunStatus = RunStatus.RUNNING) -> RunLog:
    plain = await open_run(writer_for(store), status=status)
    return RunLog(writer_for(store), plain.run_id, plain.tenant, gate)


async def test_a_fenced_step_lands_whole_with_what_the_fence_adds(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        extra = Step()
        extra.emit(events.NodeCompleted(nodeId="n", outputs={}), node_id="n")
        log = await _fenced(store, _Gate(extra=extra))
        step = Step()
        called = step.emit(events.ToolCalled(agentId="a", toolName="t:t", callId="c", inputs={}))
        step.record_call(called, _call_row("c", status="unknown"))
        step.trials.append(TrialRow("task", 0, True, "full", {}))
        await log.commit(step)
        assert await sequences(store, log.run_id) == [
            (0, "run.started"),
            (1, "agent.tool-called"),
            (2, "node.completed"),
        ]
        after = Step()
        after.complete_call(called, ToolCallOutcome("ok", {"n": 1}, None, 2, True))
        await log.commit(after)
        async with store.reading() as uow:
            call = (await uow.connection.execute(select(tool_calls.c.status))).scalar_one()
            trials = (await uow.connection.execute(select(task_trials.c.task_id))).all()
        assert (call, len(trials)) == ("ok", 1)


async def test_a_step_its_fence_refuses_writes_nothing(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        gate = _Gate(refusals=1)
        log = await _fenced(store, gate)
        with pytest.raises(RunClosed, match=f"run {re.escape(log.run_id)} has ended"):
            await log.commit(Step())
        assert gate.asked == [RunStatus.RUNNING]
        assert await sequences(store, log.run_id) == [(0, "run.started")]


async def test_an_ending_its_fence_refuses_is_not_the_callers(tmp_path: Path) -> None:
    """A worker that no longer owns its job cannot end the run: the run stays as it was."""
    async with open_store(tmp_path) as store:
        log = await _fenced(store, _Gate(refusals=1))
        ending = Step()
        ending.emit(events.RunCompleted(outputs={}))
        with pytest.raises(RunClosed, match="no longer this caller's to end"):
            await log.close(RunStatus.COMPLETED, ending, RunUpdate(completed_at=now()))
        record = await writer_for(store).read(TENANT, log.run_id)
        assert record is not None
        assert record.status is RunStatus.RUNNING


async def test_a_fenced_ending_of_a_paused_run_waits_for_its_resume(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        gate = _Gate()
        log = await _fenced(store, gate, status=RunStatus.PAUSED)
        ending = Step()
        ending.emit(events.RunCompleted(outputs={}))
        assert await log.close(RunStatus.COMPLETED, ending, RunUpdate()) is None
        assert gate.asked == []
        assert await sequences(store, log.run_id) == [(0, "run.started")]


async def test_a_cancel_ending_refused_once_is_tried_again(tmp_path: Path) -> None:
    """The run was cancelling; the fence refused the first run.cancelled: the retry lands it."""
    async with open_store(tmp_path) as store:
        gate = _Gate(refusals=1)
        log = await _fenced(store, gate)
        plain = RunLog(writer_for(store), log.run_id, log.tenant)
        assert await plain.transition(
            Transition(STOPPED_HOST, RunStatus.CANCELLING), update=RunUpdate(cancel_reason="why")
        )
        at = now()
        ending = Step()
        ending.emit(events.RunCompleted(outputs={}))
        ended = await log.close(RunStatus.COMPLETED, ending, RunUpdate(completed_at=at))
        assert ended is RunStatus.CANCELLED
        assert gate.asked == [RunStatus.CANCELLING, RunStatus.CANCELLING]
        assert await sequences(store, log.run_id) == [(0, "run.started"), (1, "run.cancelled")]
        record = await writer_for(store).read(TENANT, log.run_id)
        assert record is not None
        assert record.completed_at == at


async def test_a_cancelled_ending_refused_once_is_tried_again(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        gate = _Gate(refusals=1)
        log = await _fenced(store, gate, status=RunStatus.PAUSED)
        ended = await log.close(RunStatus.CANCELLED, Step(), RunUpdate(), allowed_from=STOPPED_HOST)
        assert ended is RunStatus.CANCELLED
        assert gate.asked == [RunStatus.PAUSED, RunStatus.PAUSED]
        assert await sequences(store, log.run_id) == [(0, "run.started"), (1, "run.cancelled")]


class _Witness:
    """Admits every step and notes how the run looked to it."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int, int, list[str]]] = []

    async def admit(self, uow: UnitOfWork, locked: Locked, step: Step) -> Landing | None:
        pending = [counted.task_id for counted in locked.trials]
        self.seen.append((id(locked), locked.run.last_sequence, locked.run.landed_trials, pending))
        return Landing()


async def test_fenced_steps_of_one_run_that_arrive_together_share_one_lock(
    tmp_path: Path,
) -> None:
    """A worker's trials that finish together: the run is locked once, each fence sees the
    run as the steps before it left it, and the row moves once by all of them."""
    async with open_store(tmp_path) as store:
        writer = writer_for(store)
        plain = await open_run(writer)
        witness = _Witness()
        log = RunLog(writer, plain.run_id, plain.tenant, witness)
        steps = []
        for task in ("a", "b", "c"):
            step = Step()
            step.emit(events.NodeCompleted(nodeId=task, outputs={}), node_id=task)
            step.trials.append(TrialRow(task, 0, True, "full", {}))
            steps.append(step)
        await asyncio.gather(*(log.commit(step) for step in steps))
        assert witness.seen == [
            (witness.seen[0][0], 0, 0, []),
            (witness.seen[0][0], 1, 1, ["a"]),
            (witness.seen[0][0], 2, 2, ["a", "b"]),
        ]
        assert await sequences(store, log.run_id) == [
            (0, "run.started"),
            (1, "node.completed"),
            (2, "node.completed"),
            (3, "node.completed"),
        ]
        async with store.reading() as uow:
            locked = await uow.runs.lock(TENANT, log.run_id, frozenset(RunStatus))
        assert locked is not None
        assert (locked.last_sequence, locked.landed_trials) == (3, 3)
