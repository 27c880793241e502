"""The log writer numbers a run's events from where its own last commit left the run's row,
and on PostgreSQL has the server check that row in the same query: a step is one round trip
(engine/runlog/log_writer.py, store/_runs.py `advance_known`); on SQLite the row's move is
checked by the rows it changed, not read back by a RETURNING. A run found elsewhere
(another writer moved it, or its state changed) is refused by that check, nothing of the
transaction lands, and its steps land the way that reads the row, in order and contiguous."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

import wopeval.engine.runlog.log_writer as log_writer
import wopeval.store
from _backends import Backend, PostgresDatabases
from _handles import handle_of
from _statements import round_trips
from unit.engine._store import open_run, opened, writer_for
from wopeval.engine.runlog.runlog import RunLog
from wopeval.engine.runlog.steps import RUNNING, RunClosed, Step, Transition
from wopeval.store import RunMove, StaleRun, Store, _driver, sqlite_url
from wopeval.store._driver import driver_connection
from wopeval.store._tool_calls import ToolCallOutcome, ToolCallRow
from wopeval.store.tables import runs
from wopeval.wire import events
from wopeval.wire.runs import RunStatus

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
import pg_floor  # bench/pg_floor.py: the record bench's PostgreSQL floors


@pytest.fixture
async def postgres_store(
    postgres_databases: PostgresDatabases, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Store]:
    # The traced connection must stay the log writer's however slowly the test runs.
    monkeypatch.setattr(wopeval.store, "LOG_WRITER_IDLE_SECONDS", 3600.0)
    async with opened(postgres_databases.create()) as store:
        yield store


def _step(node: str) -> Step:
    step = Step()
    step.emit(events.NodeStarted(nodeId=node, nodeType="core.noop"), node_id=node)
    return step


async def _log(store: Store, run_id: str) -> list[tuple[int, str | None]]:
    """`(sequence, nodeId)` of each stored event of the run, in order."""
    async with store.reading() as uow:
        docs = await uow.events.all_docs(await handle_of(uow, run_id))
    return [(doc["sequence"], doc.get("nodeId")) for doc in map(json.loads, docs)]


async def _row(store: Store, run_id: str) -> tuple[str, int]:
    async with store.reading() as uow:
        found = await uow.connection.execute(
            select(runs.c.status, runs.c.last_sequence).where(runs.c.run_id == run_id)
        )
        status, last = found.one()
    return status, last


async def _kept_driver(store: Store) -> Any:
    """The driver's connection under the log writer's kept one (store/__init__.py): psycopg's,
    or our inline SQLite's (store/_sqlite_inline.py)."""
    async with store.log_transaction() as uow:
        return driver_connection(uow.connection)


async def test_a_stale_writer_lands_its_steps_after_the_writer_that_moved_the_run(
    backend: Backend, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with opened(backend.new_database() or sqlite_url(tmp_path)) as store:
        stale = await open_run(writer_for(store))  # its writer knows the run at 0
        other = RunLog(writer_for(store), stale.run_id, stale.tenant)
        await other.commit(_step("other-1"))
        await other.commit(_step("other-2"))
        with caplog.at_level(logging.WARNING, logger="wopeval.engine"):
            await stale.commit(_step("stale-1"))
            await stale.commit(_step("stale-2"))
        assert await _log(store, stale.run_id) == [
            (0, None),
            (1, "other-1"),
            (2, "other-2"),
            (3, "stale-1"),
            (4, "stale-2"),
        ]
        assert await _row(store, stale.run_id) == ("running", 4)
        # Refused by the row check and written again, not failed and retried one by one.
        assert caplog.records == []


async def test_the_state_check_refuses_a_step_of_a_known_run_in_another_state(
    backend: Backend, tmp_path: Path
) -> None:
    async with opened(backend.new_database() or sqlite_url(tmp_path)) as store:
        log = await open_run(writer_for(store))
        await log.commit(_step("before"))
        # Ended behind the writer's back, its row left at the sequence the writer knows.
        async with store.transaction() as uow:
            await uow.connection.execute(
                update(runs).where(runs.c.run_id == log.run_id).values(status="completed")
            )
        with pytest.raises(RunClosed):
            await log.commit(_step("after"))
        assert await _log(store, log.run_id) == [(0, None), (1, "before")]
        assert await _row(store, log.run_id) == ("completed", 1)


async def test_two_writers_of_one_run_stay_contiguous(backend: Backend, tmp_path: Path) -> None:
    async with opened(backend.new_database() or sqlite_url(tmp_path)) as store:
        first = await open_run(writer_for(store))
        second = RunLog(writer_for(store), first.run_id, first.tenant)

        async def drive(name: str, log: RunLog) -> None:
            # A step a transaction, each writer's interleaved with the other's.
            for index in range(10):
                await log.commit(_step(f"{name}{index}"))

        await asyncio.gather(drive("a", first), drive("b", second))
        stored = await _log(store, first.run_id)
        assert [sequence for sequence, _ in stored] == list(range(21))
        nodes = [node for _, node in stored[1:]]
        # Each step once, and each writer's in the order it was given them.
        assert [node for node in nodes if node and node[0] == "a"] == [f"a{i}" for i in range(10)]
        assert [node for node in nodes if node and node[0] == "b"] == [f"b{i}" for i in range(10)]
        assert await _row(store, first.run_id) == ("running", 20)


@pytest.mark.postgres
async def test_a_step_of_a_run_its_writer_knows_is_one_round_trip(postgres_store: Store) -> None:
    store = postgres_store
    log = await open_run(writer_for(store))
    stranger = RunLog(writer_for(store), log.run_id, log.tenant)
    driver = await _kept_driver(store)
    with round_trips(driver) as known:
        await log.commit(_step("known"))
    # Its move checked in the same query as its rows and the COMMIT.
    assert len(known) == 1
    assert known[0].startswith("BEGIN;")
    assert known[0].endswith("COMMIT")
    # A writer that never wrote the run reads its row once (the move, then the rows) …
    with round_trips(driver) as first:
        await stranger.commit(_step("stranger-1"))
    assert len(first) == 2
    # … and from then on knows it.
    with round_trips(driver) as then:
        await stranger.commit(_step("stranger-2"))
    assert len(then) == 1
    assert await _log(store, log.run_id) == [
        (0, None),
        (1, "known"),
        (2, "stranger-1"),
        (3, "stranger-2"),
    ]


@pytest.mark.postgres
async def test_the_record_benchs_floor_sends_what_a_live_call_sends(postgres_store: Store) -> None:
    """bench/pg_floor.py times a live call's two steps as the host's own statements with no
    wopeval code, so it holds them as text: they must stay what the log writer sends."""
    store = postgres_store
    log = await open_run(writer_for(store))
    driver = await _kept_driver(store)
    call = Step()
    called = call.emit(events.NodeStarted(nodeId="called", nodeType="core.noop"))
    row = ToolCallRow(
        invocation_id="invocation",
        agent_id="agent",
        is_delegate=False,
        tool="bench:noop",
        call_id="call-1",
        status="unknown",
        served_by="live",
        duration_ms=None,
        recorded=True,
        inputs={"index": 0},
        result=None,
        error=None,
    )
    call.record_call(called, row)
    back = Step()
    back.emit(events.NodeStarted(nodeId="returned", nodeType="core.noop"))
    with round_trips(driver) as sent_call:
        await log.commit(call)
    back.complete_call(called, ToolCallOutcome("ok", "ok", None, 0, True))
    with round_trips(driver) as sent_back:
        await log.commit(back)
    floor_call, floor_back = pg_floor.call_steps(log.run_id, "invocation", 0)
    assert sent_call == [_pipelined(floor_call)]
    assert sent_back == [_pipelined(floor_back)]


def _pipelined(step: pg_floor.Step) -> str:
    """A floor's step as `round_trips` reads the host's: its statements in one pipeline."""
    return ";".join(["BEGIN", *(sql.decode() for sql, _ in step), "COMMIT"])


@pytest.mark.postgres
async def test_a_big_step_of_a_known_run_is_one_round_trip(
    postgres_store: Store,
) -> None:
    """An eval's group (hundreds of events): the BEGIN, the run row's checked move, its rows
    as one array a column and the COMMIT in one pipeline, so the whole transaction is on
    the server in one exchange (a COPY cannot go in a pipeline)."""
    store = postgres_store
    log = await open_run(writer_for(store))
    step = Step()
    for index in range(_driver.BATCH_COLUMNS_FROM_ROWS):
        step.emit(events.NodeStarted(nodeId=f"n{index}", nodeType="core.noop"), node_id=f"n{index}")
    driver = await _kept_driver(store)
    with round_trips(driver) as sent:
        await log.commit(step)
    assert len(sent) == 1
    assert sent[0].startswith("BEGIN;")
    assert "UPDATE runs" in sent[0]
    assert "INSERT INTO events (run_id, sequence, type, doc) SELECT * FROM unnest(" in sent[0]
    assert sent[0].endswith("COMMIT")
    stored = await _log(store, log.run_id)
    assert stored == [(0, None)] + [
        (index + 1, f"n{index}") for index in range(_driver.BATCH_COLUMNS_FROM_ROWS)
    ]


@pytest.mark.postgres
async def test_the_known_runs_of_one_transaction_move_in_one_statement(
    postgres_store: Store,
) -> None:
    store = postgres_store
    writer = writer_for(store)
    logs = [await open_run(writer) for _ in range(3)]
    driver = await _kept_driver(store)
    with round_trips(driver) as sent:
        # Queued together, before the writer's flush runs: one transaction.
        await asyncio.gather(*(log.commit(_step("step")) for log in logs))
    assert len(sent) == 1
    assert sent[0].count("UPDATE runs") == 1
    for log in logs:
        assert await _log(store, log.run_id) == [(0, None), (1, "step")]


@pytest.mark.postgres
async def test_a_writer_forgets_the_least_recently_written_runs_past_its_bound(
    postgres_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = postgres_store
    monkeypatch.setattr(log_writer, "KNOWN_RUNS", 1)
    writer = writer_for(store)
    older, newer = await open_run(writer), await open_run(writer)
    driver = await _kept_driver(store)
    with round_trips(driver) as remembered:
        await newer.commit(_step("newer"))
    with round_trips(driver) as forgotten:
        await older.commit(_step("older"))
    assert (len(remembered), len(forgotten)) == (1, 2)
    assert await _log(store, older.run_id) == [(0, None), (1, "older")]


@pytest.mark.postgres
async def test_a_run_moved_twice_in_one_transaction_is_checked_from_its_first_move(
    postgres_store: Store,
) -> None:
    """Steps of one run that allow different states move its row one after the other: the
    second move starts where the first left the row, not where the last commit did."""
    store = postgres_store
    log = await open_run(writer_for(store))
    driver = await _kept_driver(store)
    with round_trips(driver) as sent:
        await asyncio.gather(
            log.commit(_step("active")),
            log.transition(Transition(RUNNING), _step("running")),
        )
    assert len(sent) == 1
    assert sent[0].count("UPDATE runs") == 2
    assert await _log(store, log.run_id) == [(0, None), (1, "active"), (2, "running")]


@pytest.mark.postgres
async def test_a_checked_move_past_the_smallint_range_lands(postgres_store: Store) -> None:
    """The batch's values go as the protocol's parameters: a known sequence and a count that
    psycopg would each send as a smallint must not be summed as one (store/_driver.py
    `_binder`)."""
    store = postgres_store
    log = await open_run(writer_for(store))
    async with store.transaction() as uow:
        await uow.connection.execute(
            update(runs).where(runs.c.run_id == log.run_id).values(last_sequence=32_765)
        )
    move = RunMove(log.tenant, log.run_id, events=5, trials=0)
    async with store.log_transaction(pipelined=True) as uow:
        uow.runs.advance_known([move], {log.run_id: 32_765}, frozenset({RunStatus.RUNNING}))
    assert await _row(store, log.run_id) == ("running", 32_770)


@pytest.mark.postgres
async def test_a_checked_move_is_refused_outside_a_pipelined_transaction(
    postgres_store: Store,
) -> None:
    """Held and checked by the server only where statements are held: elsewhere it would
    be neither run nor checked."""
    move = RunMove("acme", "acme/run", events=1, trials=0)
    with pytest.raises(RuntimeError, match="outside a pipelined transaction"):
        async with postgres_store.log_transaction() as uow:
            uow.runs.advance_known([move], {"acme/run": 0}, frozenset({RunStatus.RUNNING}))


async def test_on_sqlite_a_known_runs_move_is_checked_not_read_back(tmp_path: Path) -> None:
    async with opened(sqlite_url(tmp_path)) as store:
        log = await open_run(writer_for(store))
        stranger = RunLog(writer_for(store), log.run_id, log.tenant)
        moves: list[str] = []
        driver = await _kept_driver(store)
        driver.sqlite.set_trace_callback(
            lambda sql: moves.append(sql) if sql.startswith("UPDATE runs") else None
        )
        await log.commit(_step("known"))
        await stranger.commit(_step("stranger-1"))
        await stranger.commit(_step("stranger-2"))
        driver.sqlite.set_trace_callback(None)
        # Only the writer that never wrote the run reads its row back, once.
        assert ["RETURNING" in sql for sql in moves] == [False, True, False]
        assert await _log(store, log.run_id) == [
            (0, None),
            (1, "known"),
            (2, "stranger-1"),
            (3, "stranger-2"),
        ]


async def test_on_sqlite_a_move_found_elsewhere_fails_its_transaction_whole(
    tmp_path: Path,
) -> None:
    async with opened(sqlite_url(tmp_path)) as store:
        log = await open_run(writer_for(store))
        running = frozenset({RunStatus.RUNNING})
        known = RunMove(log.tenant, log.run_id, events=1, trials=0)
        missing = RunMove("acme", "acme/run", events=1, trials=0)
        with pytest.raises(StaleRun):
            async with store.log_transaction() as uow:
                uow.runs.advance_known([known, missing], {log.run_id: 0, "acme/run": 0}, running)
        # The move of the run that was where it was known is not kept either.
        assert await _row(store, log.run_id) == ("running", 0)
