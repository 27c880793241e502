"""A commit whose answer never reached the host: the server committed, then the connection
was lost before its answer came back (a failover, a backend ended at that moment). The
log writer's transaction fails, and the writer writes its steps again one by one; a step
that had landed must not land twice (engine/runlog/log_writer.py `_landed_unanswered`)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.exc import OperationalError

from _backends import Backend
from _handles import handle_of
from unit.engine._store import new_record, open_run, opened, writer_for
from wopeval.engine.runlog.steps import Step
from wopeval.engine.runs.execution import Execution, Executor
from wopeval.engine.runs.outcome import Terminal
from wopeval.store import Store, ToolCallRow, sqlite_url
from wopeval.store.tables import tool_calls
from wopeval.wire import events
from wopeval.wire.runs import RunStatus


def _cut() -> OperationalError:
    """What the store raises for a connection lost under a statement (store `out_of_reach`)."""
    return OperationalError("COMMIT", None, ConnectionError("server closed the connection"))


def _lose_next_commit_answer(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The log writer's next transaction commits, then fails as a connection lost before
    the COMMIT's answer does; the list holds True once it has."""
    real = store.log_transaction
    lost: list[bool] = []

    @asynccontextmanager
    async def answer_lost(*, pipelined: bool = False) -> AsyncIterator[Any]:
        async with real(pipelined=pipelined) as uow:
            yield uow
        if not lost:
            lost.append(True)
            raise _cut()

    monkeypatch.setattr(store, "log_transaction", answer_lost)
    return lost


def _cut_next_transaction(
    store: Store, monkeypatch: pytest.MonkeyPatch, *, committed: bool
) -> list[bool]:
    """The store's next own transaction (a run's insert) fails as a lost connection does:
    after its commit (its answer lost) or before it (nothing landed)."""
    real = store.transaction
    cut: list[bool] = []

    @asynccontextmanager
    async def cut_once() -> AsyncIterator[Any]:
        if cut:
            async with real() as uow:
                yield uow
            return
        cut.append(True)
        async with real() as uow:
            yield uow
            if not committed:
                raise _cut()
        raise _cut()

    monkeypatch.setattr(store, "transaction", cut_once)
    return cut


def _live_call(node: str) -> Step:
    """A live call's first step: its `agent.tool-called`-like event and its record."""
    step = Step()
    called = step.emit(events.NodeStarted(nodeId=node, nodeType="core.noop"), node_id=node)
    step.record_call(
        called,
        ToolCallRow(
            invocation_id="invocation",
            agent_id="agent",
            is_delegate=False,
            tool="lost:answer",
            call_id=node,
            status="unknown",
            served_by="live",
            duration_ms=None,
            recorded=True,
            inputs={"node": node},
            result=None,
            error=None,
        ),
    )
    return step


async def test_a_step_whose_commit_answer_was_lost_lands_once(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step landed unanswered: its caller is told it landed (not `StepNotLanded`, and
    not written again), and the run's next step lands right after it."""
    async with opened(backend.new_database() or sqlite_url(tmp_path)) as store:
        log = await open_run(writer_for(store))
        lost = _lose_next_commit_answer(store, monkeypatch)
        await log.commit(_live_call("first"))
        assert lost == [True]
        await log.commit(_live_call("second"))
        async with store.reading() as uow:
            docs = await uow.events.all_docs(await handle_of(uow, log.run_id))
            rows = await uow.connection.execute(
                select(tool_calls.c.sequence, tool_calls.c.call_id)
                .where(tool_calls.c.run_id == log.run_id)
                .order_by(tool_calls.c.sequence)
            )
            recorded = [tuple(row) for row in rows]
        logged = [(doc["sequence"], doc.get("nodeId")) for doc in map(json.loads, docs)]
        assert logged == [(0, None), (1, "first"), (2, "second")]
        assert recorded == [(1, "first"), (2, "second")]


async def test_an_end_that_landed_unanswered_is_the_runs_one_end(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's end landed unanswered and the writer could not look (the database out of
    reach a moment longer): the end is tried again (`Executor.end`), refused since the run
    has ended, and that refusal is taken as the end it is, not raised from the run's task."""
    async with opened(backend.new_database() or sqlite_url(tmp_path)) as store:
        writer = writer_for(store)
        log = await open_run(writer)
        lost = _lose_next_commit_answer(store, monkeypatch)
        real_reading = store.reading
        looked: list[bool] = []

        @asynccontextmanager
        async def out_of_reach_once() -> AsyncIterator[Any]:
            if not looked:
                looked.append(True)
                raise _cut()
            async with real_reading() as uow:
                yield uow

        monkeypatch.setattr(store, "reading", out_of_reach_once)
        await Executor(store, writer, None).end(log, Terminal(RunStatus.COMPLETED), set(), None)
        assert (lost, looked) == ([True], [True])
        async with real_reading() as uow:
            docs = await uow.events.all_docs(await handle_of(uow, log.run_id))
        assert [json.loads(doc)["type"] for doc in docs] == ["run.started", "run.completed"]


async def _never_run(_execution: Execution) -> Terminal:
    raise AssertionError("a run whose insert failed is not executed")


@pytest.mark.parametrize("committed", [True, False], ids=["landed", "not-landed"])
async def test_a_run_whose_insert_answer_was_lost_does_not_stay_running(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, committed: bool
) -> None:
    """A create whose insert failed as a lost connection does is answered so (the API's
    503), and its body never runs; a run whose insert had landed unanswered ends failed
    `store_unreachable`, not `running` with no one executing it, and one that had not
    landed is not written at all."""
    async with opened(backend.new_database() or sqlite_url(tmp_path)) as store:
        executor = Executor(store, writer_for(store), None)
        record = new_record()
        cut = _cut_next_transaction(store, monkeypatch, committed=committed)
        with pytest.raises(OperationalError):
            await executor.launch(record, Step(), _never_run)
        assert cut == [True]
        await executor.wait_idle()
        async with store.reading() as uow:
            stored = await uow.runs.get(record.tenant, record.run_id)
            docs = [] if stored is None else await uow.events.all_docs(stored.handle)
        if not committed:
            assert stored is None
            return
        assert stored is not None
        assert stored.status is RunStatus.FAILED
        ending = json.loads(docs[-1])
        assert ending["type"] == "run.failed"
        assert ending["payload"]["error"]["code"] == "store_unreachable"
