"""The run-log writer: whole steps, contiguous sequences, grouped commits, state that decides."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from pathlib import Path

import pytest
from sqlalchemy import select

from _handles import handle_of
from wopeval.engine.live.notifier import Notifier
from wopeval.engine.runlog.log_writer import LogWriter
from wopeval.engine.runlog.runlog import RunLog
from wopeval.engine.runlog.steps import (
    RUNNING,
    STOPPED_HOST,
    RunClosed,
    RunUpdate,
    Step,
    Transition,
    now,
)
from wopeval.store import Store, ToolCallOutcome, ToolCallRow, UnitOfWork
from wopeval.store.tables import runs, tool_calls
from wopeval.wire import events
from wopeval.wire.runs import RunStatus

from ._store import open_run, open_store, sequences, writer_for


def _node_step(node_id: str) -> Step:
    step = Step()
    step.emit(events.NodeStarted(nodeId=node_id, nodeType="core.noop"), node_id=node_id)
    step.emit(events.NodeCompleted(nodeId=node_id, outputs={}), node_id=node_id)
    return step


def _call_row(call_id: str, status: str = "ok") -> ToolCallRow:
    return ToolCallRow(
        invocation_id="inv",
        agent_id="agent",
        is_delegate=False,
        tool="t:tool",
        call_id=call_id,
        status=status,  # type: ignore[arg-type]
        served_by="live",
        duration_ms=1,
        recorded=True,
        inputs={"call": call_id},
        result={"answer": call_id} if status == "ok" else None,
        error=None,
    )


def _call_step(call_id: str) -> Step:
    step = Step()
    called = step.emit(
        events.ToolCalled(agentId="agent", toolName="t:tool", callId=call_id, inputs={})
    )
    step.emit(events.ToolReturned(agentId="agent", toolName="t:tool", callId=call_id, status="ok"))
    step.record_call(called, _call_row(call_id))
    return step


async def _status(store: Store, run_id: str) -> tuple[str, int, str | None]:
    async with store.reading() as uow:
        row = (
            await uow.connection.execute(
                select(runs.c.status, runs.c.last_sequence, runs.c.cancel_reason).where(
                    runs.c.run_id == run_id
                )
            )
        ).one()
    return row.status, row.last_sequence, row.cancel_reason


async def _calls(store: Store, run_id: str) -> dict[int, tuple[str, str, object]]:
    async with store.reading() as uow:
        rows = await uow.connection.execute(
            select(
                tool_calls.c.sequence,
                tool_calls.c.call_id,
                tool_calls.c.status,
                tool_calls.c.result,
            ).where(tool_calls.c.run_id == run_id)
        )
        return {row.sequence: (row.call_id, row.status, row.result) for row in rows}


async def test_concurrent_runs_land_whole_steps_with_contiguous_sequences(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        writer = writer_for(store)
        logs = [await open_run(writer) for _ in range(8)]

        async def drive(log: RunLog) -> None:
            for index in range(25):
                await log.commit(_node_step(f"n{index}"))

        await asyncio.gather(*(drive(log) for log in logs))
        for log in logs:
            stored = await sequences(store, log.run_id)
            assert [seq for seq, _ in stored] == list(range(51))
            assert [kind for _, kind in stored[1:]] == ["node.started", "node.completed"] * 25
            assert (await _status(store, log.run_id))[1] == 50


@contextmanager
def counted_transactions(store: Store) -> Iterator[Callable[[], int]]:
    """The store's transactions opened while the block runs: how many, asked after."""
    opened = 0
    original = store.transaction

    def counting() -> AbstractAsyncContextManager[UnitOfWork]:
        nonlocal opened
        opened += 1
        return original()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(store, "transaction", counting)
        yield lambda: opened


async def test_steps_queued_during_a_commit_share_the_next_transaction(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        writer = writer_for(store)
        logs = [await open_run(writer) for _ in range(20)]
        with counted_transactions(store) as opened:
            first = asyncio.ensure_future(logs[0].commit(_node_step("n")))
            await asyncio.sleep(0.001)  # the first commit is on its way alone
            await asyncio.gather(first, *(log.commit(_node_step("n")) for log in logs[1:]))
        # The 19 steps queued behind the first, from 19 runs, share one transaction.
        assert opened() == 2
        for log in logs:
            assert [seq for seq, _ in await sequences(store, log.run_id)] == [0, 1, 2]


async def test_steps_of_runs_that_resume_turns_apart_share_one_transaction(
    tmp_path: Path,
) -> None:
    """Runs out of step with each other (started by requests that came in one by one) still
    land together: the writer waits while each turn of the loop brings it more steps."""
    async with open_store(tmp_path) as store:
        writer = writer_for(store)
        logs = [await open_run(writer) for _ in range(4)]

        async def after_turns(log: RunLog, turns: int) -> None:
            for _ in range(turns):
                await asyncio.sleep(0)
            await log.commit(_node_step("n"))

        with counted_transactions(store) as opened:
            await asyncio.gather(*(after_turns(log, turns) for turns, log in enumerate(logs)))
        assert opened() == 1
        for log in logs:
            assert [seq for seq, _ in await sequences(store, log.run_id)] == [0, 1, 2]


async def test_plain_steps_in_one_transaction_move_their_rows_in_one_update(
    tmp_path: Path,
) -> None:
    """Steps that only add events, several per run, take their sequences with one UPDATE
    for all their runs, each numbered in its arrival order."""
    async with open_store(tmp_path) as store:
        writer = writer_for(store)
        first, second = await open_run(writer), await open_run(writer)
        updates: list[str] = []

        def count(statement: str) -> None:
            if statement.startswith("UPDATE runs"):
                updates.append(statement)

        # What SQLite itself runs: the log writer's statements bypass SQLAlchemy's execution
        # (store/_driver.py), and every SQLite transaction of a store is on one connection.
        async with store.transaction() as uow:
            sqlite = await uow.connection.get_raw_connection()
        sqlite.driver_connection.sqlite.set_trace_callback(count)  # type: ignore[union-attr]
        try:
            await asyncio.gather(
                *(
                    log.commit(_node_step(f"n{index}"))
                    for index in range(3)
                    for log in (first, second)
                )
            )
        finally:
            sqlite.driver_connection.sqlite.set_trace_callback(None)  # type: ignore[union-attr]
        assert len(updates) == 1
        for log in (first, second):
            stored = await sequences(store, log.run_id)
            assert [seq for seq, _ in stored] == list(range(7))
        async with store.reading() as uow:
            docs = await uow.events.all_docs(await handle_of(uow, first.run_id))
        assert [json.loads(doc).get("nodeId") for doc in docs[1:]] == [
            "n0",
            "n0",
            "n1",
            "n1",
            "n2",
            "n2",
        ]


async def test_a_group_refuses_the_step_of_an_ended_run_and_lands_the_others(
    tmp_path: Path,
) -> None:
    async with open_store(tmp_path) as store:
        writer = writer_for(store)
        logs = [await open_run(writer) for _ in range(4)]
        ending = Step()
        ending.emit(events.RunCompleted(outputs={}))
        assert await logs[2].close(RunStatus.COMPLETED, ending, RunUpdate(completed_at=now()))
        first = asyncio.ensure_future(logs[0].commit(_node_step("n")))
        await asyncio.sleep(0.001)  # the first commit is on its way alone
        # One plain step per run queued behind it: they land together, in one statement.
        landed = await asyncio.gather(
            *(log.commit(_node_step("m")) for log in logs[1:]), return_exceptions=True
        )
        await first
        assert isinstance(landed[1], RunClosed)
        assert [outcome for index, outcome in enumerate(landed) if index != 1] == [None, None]
        for log in (logs[0], logs[1], logs[3]):
            assert [seq for seq, _ in await sequences(store, log.run_id)] == [0, 1, 2]
            assert (await _status(store, log.run_id))[:2] == ("running", 2)
        assert [kind for _, kind in await sequences(store, logs[2].run_id)] == [
            "run.started",
            "run.completed",
        ]
        assert (await _status(store, logs[2].run_id))[:2] == ("completed", 1)


async def test_every_step_of_a_group_keeps_its_tool_records_keyed_to_its_own_call(
    tmp_path: Path,
) -> None:
    async with open_store(tmp_path) as store:
        writer = writer_for(store)
        log = await open_run(writer)
        await asyncio.gather(*(log.commit(_call_step(f"c{index}")) for index in range(10)))
        stored = dict(await sequences(store, log.run_id))
        calls = await _calls(store, log.run_id)
        assert len(calls) == 10
        for sequence, (call_id, status, result) in calls.items():
            assert stored[sequence] == "agent.tool-called"
            assert (status, result) == ("ok", {"answer": call_id})
        async with store.reading() as uow:
            docs = await uow.events.all_docs(await handle_of(uow, log.run_id))
        for sequence, (call_id, _, _) in calls.items():
            assert f'"callId":"{call_id}"' in docs[sequence]


async def test_a_live_call_is_recorded_unknown_then_completed(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))
        before = Step()
        called = before.emit(
            events.ToolCalled(agentId="agent", toolName="t:tool", callId="c", inputs={})
        )
        before.record_call(called, _call_row("c", status="unknown"))
        await log.commit(before)
        assert called.sequence == 1
        assert (await _calls(store, log.run_id))[1] == ("c", "unknown", None)
        after = Step()
        after.emit(events.ToolReturned(agentId="agent", toolName="t:tool", callId="c", status="ok"))
        after.complete_call(
            called, ToolCallOutcome("ok", {"answer": 1}, None, duration_ms=2, recorded=True)
        )
        await log.commit(after)
        assert (await _calls(store, log.run_id))[1] == ("c", "ok", {"answer": 1})


async def test_an_outcome_cannot_complete_a_call_that_has_not_landed() -> None:
    step = Step()
    called = step.emit(events.ToolCalled(agentId="a", toolName="t:t", callId="c", inputs={}))
    with pytest.raises(ValueError, match=r"^the call.s agent\.tool-called has not landed yet$"):
        step.complete_call(called, ToolCallOutcome("ok", None, None, None, True))


async def test_every_run_of_a_group_wakes_its_readers(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        notifier = Notifier()
        writer = writer_for(store, notifier)
        first, second = await open_run(writer), await open_run(writer)
        signals = [notifier.subscribe(first.run_id), notifier.subscribe(second.run_id)]
        await asyncio.gather(first.commit(_node_step("a")), second.commit(_node_step("b")))
        assert all(signal.is_set() for signal in signals)


async def test_a_failing_step_fails_alone_and_leaves_no_gap(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        writer = writer_for(store)
        log = await open_run(writer)
        other = await open_run(writer)
        broken = _call_step("dup")
        broken.record_call(broken.staged[0], _call_row("dup"))  # the same key twice
        results = await asyncio.gather(
            log.commit(_node_step("before")),
            log.commit(broken),
            other.commit(_node_step("x")),
            log.commit(_node_step("after")),
            return_exceptions=True,
        )
        assert [results[0], results[2], results[3]] == [None, None, None]
        assert isinstance(results[1], Exception)
        stored = await sequences(store, log.run_id)
        assert [seq for seq, _ in stored] == [0, 1, 2, 3, 4]
        assert await _calls(store, log.run_id) == {}
        assert (await _status(store, log.run_id))[1] == 4


async def test_a_caller_cancelled_while_waiting_still_lands_its_step(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        writer = writer_for(store)
        log = await open_run(writer)
        waiting = asyncio.ensure_future(log.commit(_node_step("n")))
        await asyncio.sleep(0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await writer.stop()
        assert [seq for seq, _ in await sequences(store, log.run_id)] == [0, 1, 2]


async def test_a_caller_cancelled_while_waiting_leaves_the_rest_of_its_group_answered(
    tmp_path: Path,
) -> None:
    """The cancel reaches the step's own future (no shield): the flusher leaves that one as
    it is and answers the steps of the same group after it."""
    async with open_store(tmp_path) as store:
        writer = writer_for(store)
        log = await open_run(writer)
        cancelled = asyncio.ensure_future(log.commit(_node_step("n")))
        answered = asyncio.ensure_future(log.commit(_node_step("m")))
        await asyncio.sleep(0)
        cancelled.cancel()
        await asyncio.wait_for(answered, timeout=10)
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        await writer.stop()
        assert [seq for seq, _ in await sequences(store, log.run_id)] == [0, 1, 2, 3, 4]


async def test_a_step_for_an_ended_run_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))
        ending = Step()
        ending.emit(events.RunCompleted(outputs={}))
        assert await log.close(RunStatus.COMPLETED, ending, RunUpdate(completed_at=now()))
        with pytest.raises(RunClosed):
            await log.commit(_node_step("late"))
        assert [kind for _, kind in await sequences(store, log.run_id)] == [
            "run.started",
            "run.completed",
        ]


async def test_a_cancel_accepted_first_turns_the_ending_into_cancelled(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))
        assert await log.transition(
            Transition(STOPPED_HOST, RunStatus.CANCELLING), update=RunUpdate(cancel_reason="why")
        )
        ending = Step()
        ending.emit(
            events.EvalCompleted(aggregateScore=1.0, passed=True, taskCount=0, passedCount=0)
        )
        ending.emit(events.RunCompleted(outputs={}))
        ended = await log.close(RunStatus.COMPLETED, ending, RunUpdate(completed_at=now()))
        assert ended is RunStatus.CANCELLED
        assert [kind for _, kind in await sequences(store, log.run_id)] == [
            "run.started",
            "run.cancelled",
        ]
        async with store.reading() as uow:
            docs = await uow.events.all_docs(await handle_of(uow, log.run_id))
        assert '"reason":"why"' in docs[1]
        assert (await _status(store, log.run_id))[0] == "cancelled"


async def test_a_paused_run_does_not_end_until_resumed(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))
        assert await log.transition(Transition(RUNNING, RunStatus.PAUSED))
        assert not await log.transition(Transition(RUNNING, RunStatus.PAUSED))
        ending = Step()
        ending.emit(events.RunCompleted(outputs={}))
        assert await log.close(RunStatus.COMPLETED, ending, RunUpdate()) is None
        assert await log.transition(Transition(frozenset({RunStatus.PAUSED}), RunStatus.RUNNING))
        assert await log.close(RunStatus.COMPLETED, ending, RunUpdate()) is RunStatus.COMPLETED
        assert (await _status(store, log.run_id))[:2] == ("completed", 1)


async def test_a_stopping_host_ends_a_paused_run(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store), status=RunStatus.PAUSED)
        ending = Step()
        ending.emit(events.RunFailed(error=events.RunErrorInfo(code="host_stopped", message="m")))
        ended = await log.close(RunStatus.FAILED, ending, RunUpdate(), allowed_from=STOPPED_HOST)
        assert ended is RunStatus.FAILED


async def test_two_writers_of_one_run_never_take_the_same_sequence(tmp_path: Path) -> None:
    """Sequences come from the run row inside the transaction, not from writer memory."""
    async with open_store(tmp_path) as store:
        first = await open_run(writer_for(store))
        second = RunLog(LogWriter(store, Notifier()), first.run_id, first.tenant)
        await asyncio.gather(
            *(writer.commit(_node_step(f"n{i}")) for i in range(10) for writer in (first, second))
        )
        assert [seq for seq, _ in await sequences(store, first.run_id)] == list(range(41))
