"""What a landed step leaves behind: event documents, the rows a journal gathers, the run row."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Table, func, select

from _handles import handle_of
from wopeval.engine.runlog.runlog import Journal
from wopeval.engine.runlog.steps import (
    STOPPED_HOST,
    RunClosed,
    RunUpdate,
    Step,
    Transition,
    now,
    timestamp,
)
from wopeval.store import InvocationRow, ModelCallRow, Store, TrialRow
from wopeval.store.tables import invocations, model_calls, task_trials
from wopeval.wire import events
from wopeval.wire.runs import RunStatus
from wopeval.wire.summary import EvalSummary

from ._store import TENANT, open_run, open_store, writer_for

_WIRE_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


async def _docs(store: Store, run_id: str) -> list[dict[str, object]]:
    async with store.reading() as uow:
        return [json.loads(doc) for doc in await uow.events.all_docs(await handle_of(uow, run_id))]


async def _count(store: Store, table: Table, run_id: str) -> int:
    async with store.reading() as uow:
        query = select(func.count()).select_from(table).where(table.c.run_id == run_id)
        return int((await uow.connection.execute(query)).scalar_one())


def test_a_timestamp_is_utc_to_the_millisecond_with_a_z() -> None:
    at = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    assert timestamp(at) == "2026-01-02T03:04:05.678Z"


async def test_events_land_stamped_in_utc_and_scoped_to_their_node(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))
        journal = Journal(log)
        journal.emit(events.NodeStarted(nodeId="n1", nodeType="core.noop"), node_id="n1")
        journal.emit(events.ToolCalled(agentId="a", toolName="t:t", callId="c", inputs={}))
        await journal.flush()
        docs = await _docs(store, log.run_id)
        assert [doc.get("nodeId") for doc in docs[1:]] == ["n1", None]
        for doc in docs:
            assert _WIRE_TIMESTAMP.match(str(doc["timestamp"])), doc["timestamp"]


def _invocation_row() -> InvocationRow:
    at = now()
    return InvocationRow(
        invocation_id="inv",
        agent_id="agent",
        is_delegate=False,
        node_id="n1",
        task_id=None,
        trial=None,
        outcome="completed",
        error=None,
        started_at=at,
        completed_at=at,
    )


def _model_call_row() -> ModelCallRow:
    return ModelCallRow(
        invocation_id="inv",
        ordinal=0,
        agent_id="agent",
        is_delegate=False,
        api="chat",
        via="lane",
        served_by="live",
        status="ok",
        request_hash="sha256:" + "0" * 64,
        model="m",
        response_model="m",
        stream=False,
        attempts=1,
        latency_ms=3,
        prompt_tokens=1,
        completion_tokens=1,
        cost_usd=None,
        at=now(),
        recorded=True,
        request={"q": 1},
        response={"a": 1},
        error=None,
    )


async def test_a_journal_lands_its_model_calls_invocations_and_trials(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))
        journal = Journal(log)
        journal.record_model_call(_model_call_row())
        journal.record_invocation(_invocation_row())
        journal.record_trial(TrialRow("task", 0, True, "full", {"score": 1.0}))
        await journal.flush()
        counts = [await _count(store, t, log.run_id) for t in (model_calls, invocations)]
        assert [*counts, await _count(store, task_trials, log.run_id)] == [1, 1, 1]


async def test_what_a_journal_hands_over_lands_with_the_callers_step_only(
    tmp_path: Path,
) -> None:
    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))
        journal = Journal(log)
        journal.emit(events.NodeStarted(nodeId="n1", nodeType="core.noop"), node_id="n1")
        taken = journal.take()
        await journal.flush()
        assert [doc["type"] for doc in await _docs(store, log.run_id)] == ["run.started"]
        ending = Step()
        ending.extend(taken)
        ending.emit(events.RunCompleted(outputs={}))
        assert await log.close(RunStatus.COMPLETED, ending, RunUpdate()) is RunStatus.COMPLETED
        assert [doc["type"] for doc in await _docs(store, log.run_id)] == [
            "run.started",
            "node.started",
            "run.completed",
        ]


async def test_an_ending_sets_the_run_rows_columns(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        writer = writer_for(store)
        completed, failed = await open_run(writer), await open_run(writer)
        await completed.commit(Step(), RunUpdate(agent_ids=["a1"]))
        record = await writer.read(TENANT, completed.run_id)
        assert record is not None
        assert record.agent_ids == ["a1"]
        at = now()
        ending = Step()
        ending.emit(events.RunCompleted(outputs={"x": 1}))
        summary = EvalSummary(
            suiteId="unit.evals.runlog",
            suiteVersion="1.0.0",
            aggregateScore=1.0,
            passed=True,
            taskCount=0,
            passedCount=0,
            tasks=[],
        )
        update = RunUpdate(completed_at=at, outputs={"x": 1}, summary=summary)
        assert await completed.close(RunStatus.COMPLETED, ending, update)
        record = await writer.read(TENANT, completed.run_id)
        assert record is not None
        assert (record.status, record.completed_at, record.outputs, record.summary) == (
            RunStatus.COMPLETED,
            at,
            {"x": 1},
            summary,
        )
        error = events.RunErrorInfo(code="boom", message="m")
        ending = Step()
        ending.emit(events.RunFailed(error=error))
        assert await failed.close(RunStatus.FAILED, ending, RunUpdate(completed_at=at, error=error))
        record = await writer.read(TENANT, failed.run_id)
        assert record is not None
        assert (record.status, record.error) == (RunStatus.FAILED, error)


async def test_a_cancelled_ending_keeps_the_callers_end_time_and_agents(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        writer = writer_for(store)
        log = await open_run(writer)
        assert await log.transition(
            Transition(STOPPED_HOST, RunStatus.CANCELLING), update=RunUpdate(cancel_reason="why")
        )
        at = now()
        ending = Step()
        ending.emit(events.RunCompleted(outputs={}))
        update = RunUpdate(completed_at=at, agent_ids=["a1", "a2"])
        assert await log.close(RunStatus.COMPLETED, ending, update) is RunStatus.CANCELLED
        record = await writer.read(TENANT, log.run_id)
        assert record is not None
        assert (record.completed_at, record.agent_ids, record.cancel_reason) == (
            at,
            ["a1", "a2"],
            "why",
        )


@pytest.mark.parametrize("cancel_first", [False, True])
async def test_a_body_that_ends_cancelled_lands_the_runs_cancel(
    tmp_path: Path, cancel_first: bool
) -> None:
    """Whether or not a cancel was accepted first, the run ends with one run.cancelled."""
    async with open_store(tmp_path) as store:
        writer = writer_for(store)
        log = await open_run(writer)
        if cancel_first:
            assert await log.transition(
                Transition(STOPPED_HOST, RunStatus.CANCELLING),
                update=RunUpdate(cancel_reason="asked"),
            )
        ended = await log.close(RunStatus.CANCELLED, Step(), RunUpdate(completed_at=now()))
        assert ended is RunStatus.CANCELLED
        docs = await _docs(store, log.run_id)
        assert [doc["type"] for doc in docs] == ["run.started", "run.cancelled"]
        assert docs[1]["payload"] == ({"reason": "asked"} if cancel_first else {})


async def test_ending_a_run_that_has_ended_is_refused(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))
        ending = Step()
        ending.emit(events.RunCompleted(outputs={}))
        assert await log.close(RunStatus.COMPLETED, ending, RunUpdate()) is RunStatus.COMPLETED
        again = Step()
        again.emit(events.RunCompleted(outputs={}))
        with pytest.raises(RunClosed, match=f"run {re.escape(log.run_id)} has ended"):
            await log.close(RunStatus.COMPLETED, again, RunUpdate())
        with pytest.raises(RunClosed, match=f"run {re.escape(log.run_id)} has ended"):
            await log.commit(Step())
        assert [doc["type"] for doc in await _docs(store, log.run_id)] == [
            "run.started",
            "run.completed",
        ]
