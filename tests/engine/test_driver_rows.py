"""The log writer's statements run on the driver's connection (store/_driver.py) and store
exactly what SQLAlchemy's own execution of the same statements stores, on both databases."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import Table, Text, cast, select
from sqlalchemy.ext.asyncio import AsyncConnection

from _backends import Backend, PostgresDatabases
from wopeval.store import (
    InvocationRow,
    ModelCallRow,
    StaleRun,
    Store,
    ToolCallOutcome,
    ToolCallRow,
    ToolCallsRepo,
    TrialRow,
    _driver,
    sqlite_url,
)
from wopeval.store.tables import events, invocations, model_calls, task_trials, tool_calls
from wopeval.wire import json_text

AT = datetime(2026, 12, 2, 1, 2, 3, 456789, tzinfo=UTC)

ROWS: dict[str, tuple[Table, dict[str, Any]]] = {
    "events": (events, {"sequence": 3, "type": "agent.tool-called", "doc": '{"a":1}'}),
    "tool_calls": (
        tool_calls,
        {
            "sequence": 3,
            "invocation_id": "inv",
            "agent_id": "agent",
            "is_delegate": True,
            "tool": "t:tool",
            "call_id": "c1",
            "status": "unknown",
            "served_by": "live",
            "duration_ms": None,
            "recorded": True,
            "inputs": {"q": "é", "n": [1, 2.5, None]},
            "result": None,
            "error": None,
        },
    ),
    "invocations": (
        invocations,
        {
            "invocation_id": "inv",
            "agent_id": "agent",
            "is_delegate": False,
            "node_id": None,
            "task_id": "t1",
            "trial": 0,
            "outcome": "completed",
            "error": {"type": "ValueError", "message": "no"},
            "started_at": AT,
            "completed_at": AT,
            "tools_digest": None,
            "stderr": "a line\n\ttabbed, é, \\ and a NUL-free end",
            "idle": ["no_tool_calls"],
        },
    ),
    "task_trials": (
        task_trials,
        {
            "task_id": "t1",
            "trial": 0,
            "passed": False,
            "wire_content": "full",
            "detail": {"calls": [], "decision": None},
            "latency_ms": 7,
            "fixture_misses": 0,
        },
    ),
    "model_calls": (
        model_calls,
        {
            "invocation_id": "inv",
            "ordinal": 0,
            "agent_id": "agent",
            "is_delegate": False,
            "via": "proxy",
            "served_by": "live",
            "status": "ok",
            "request_hash": "sha256:" + "0" * 64,
            "model": "m",
            "response_model": None,
            "stream": True,
            "attempts": 1,
            "latency_ms": 3,
            "prompt_tokens": 5,
            "completion_tokens": None,
            "cost_usd": 0.125,
            "at": AT,
            "recorded": True,
            "request": {"messages": []},
            "response": None,
            "error": None,
        },
    ),
}


async def _as_stored(connection: AsyncConnection, table: Table, run_id: str) -> list[Any]:
    """Each column as the database holds it (as text), and as SQLAlchemy reads it back."""
    columns = [column for column in table.c if column.name != "run_id"]
    result = await connection.execute(
        select(*(cast(column, Text) for column in columns), *columns).where(
            table.c.run_id == run_id
        )
    )
    return [list(row) for row in result]


async def _insert(connection: AsyncConnection, table: Table, rows: list[dict[str, Any]]) -> None:
    """`rows` through the driver, as their values in the table's column order."""
    columns = tuple(column.name for column in table.c if column.name in rows[0])
    await _driver.insert_many(
        connection, _INSERTS[table.name], columns, [tuple(map(row.get, columns)) for row in rows]
    )


_INSERTS = {table.name: table.insert() for table, _ in ROWS.values()}
"""One statement a table, as the repos keep theirs (the driver compiles each once)."""


def test_the_driver_stores_what_sqlalchemy_stores(backend: Backend, tmp_path: Path) -> None:
    async def scenario() -> None:
        store = await Store.open(backend.new_database() or sqlite_url(tmp_path))
        try:
            async with store.transaction() as uow:
                for table, row in ROWS.values():
                    await uow.connection.execute(
                        table.insert(), [{**row, "run_id": "by-sqlalchemy"}]
                    )
                    await _insert(uow.connection, table, [{**row, "run_id": "by-driver"}])
                    # As many as a PostgreSQL insert takes a COPY for.
                    await _insert(
                        uow.connection,
                        table,
                        [
                            {**row, "run_id": f"by-copy-{index}"}
                            for index in range(_driver.COPY_FROM_ROWS)
                        ],
                    )
            async with store.reading() as uow:
                for name, (table, _) in ROWS.items():
                    alike = await _as_stored(uow.connection, table, "by-sqlalchemy")
                    for index in range(_driver.COPY_FROM_ROWS):
                        copied = await _as_stored(uow.connection, table, f"by-copy-{index}")
                        assert copied == alike, name
            outcome = ToolCallOutcome("ok", {"answer": [1, "二"]}, None, 12, True)
            async with store.transaction() as uow:
                await ToolCallsRepo(uow.connection).complete([("by-driver", 3, outcome)])
                await uow.connection.execute(
                    tool_calls.update()
                    .where(tool_calls.c.run_id == "by-sqlalchemy")
                    .values(status="ok", result={"answer": [1, "二"]}, error=None, duration_ms=12)
                )
            async with store.reading() as uow:
                for name, (table, _) in ROWS.items():
                    driven = await _as_stored(uow.connection, table, "by-driver")
                    assert driven, name
                    assert driven == await _as_stored(uow.connection, table, "by-sqlalchemy"), name
                completed = await uow.connection.execute(
                    select(
                        tool_calls.c.status, tool_calls.c.result, tool_calls.c.duration_ms
                    ).where(tool_calls.c.run_id == "by-driver")
                )
                assert list(completed) == [("ok", {"answer": [1, "二"]}, 12)]
            # The log writer's batched transaction (PostgreSQL: bound on the client, sent
            # together): the same rows, one at a time and many in one INSERT.
            async with store.log_transaction(pipelined=True) as uow:
                for table, row in ROWS.values():
                    await _insert(uow.connection, table, [{**row, "run_id": "by-batch"}])
                    await _insert(
                        uow.connection,
                        table,
                        [{**row, "run_id": f"by-batch-{index}"} for index in range(3)],
                    )
                    # As many as a batch binds as one array a column for.
                    await _insert(
                        uow.connection,
                        table,
                        [
                            {**row, "run_id": f"by-batch-copy-{index}"}
                            for index in range(_driver.BATCH_COLUMNS_FROM_ROWS)
                        ],
                    )
                await ToolCallsRepo(uow.connection).complete([("by-batch", 3, outcome)])
            async with store.reading() as uow:
                for name, (table, _) in ROWS.items():
                    alike = await _as_stored(uow.connection, table, "by-sqlalchemy")
                    assert await _as_stored(uow.connection, table, "by-batch") == alike, name
                    for index in range(3):
                        batched = await _as_stored(uow.connection, table, f"by-batch-{index}")
                        assert batched == await _as_stored(uow.connection, table, "by-copy-0")
                    for index in (0, _driver.BATCH_COLUMNS_FROM_ROWS - 1):
                        copied = await _as_stored(uow.connection, table, f"by-batch-copy-{index}")
                        assert copied == await _as_stored(uow.connection, table, "by-copy-0")
        finally:
            await store.close()

    asyncio.run(scenario())


def test_each_repos_rows_store_what_sqlalchemy_stores_from_their_fields(
    backend: Backend, tmp_path: Path
) -> None:
    """The rows the log writer builds (`to_row`: the run's id, then the row's fields, as the
    statement binds them) hold each field in its own column."""
    _, call = ROWS["tool_calls"]
    tool_call = ToolCallRow(**{name: call[name] for name in ToolCallRow._fields})
    invocation = InvocationRow(**ROWS["invocations"][1])
    trial = TrialRow(**ROWS["task_trials"][1])
    model_call = ModelCallRow(**{**ROWS["model_calls"][1], "api": "chat"})
    fields: dict[str, tuple[Table, dict[str, Any]]] = {
        "events": ROWS["events"],
        "tool_calls": ROWS["tool_calls"],
        "invocations": ROWS["invocations"],
        "task_trials": ROWS["task_trials"],
        "model_calls": (model_calls, {**ROWS["model_calls"][1], "api": "chat"}),
    }

    async def scenario() -> None:
        store = await Store.open(backend.new_database() or sqlite_url(tmp_path))
        try:
            for pipelined in (False, True):
                run_id = f"by-repo-{pipelined}"
                async with store.log_transaction(pipelined=pipelined) as uow:
                    event = ROWS["events"][1]
                    await uow.events.append(
                        [(run_id, event["sequence"], event["type"], event["doc"])]
                    )
                    await uow.tool_calls.append([tool_call.to_row(run_id, call["sequence"])])
                    await uow.invocations.append([invocation.to_row(run_id)])
                    await uow.trials.append([trial.to_row(run_id)])
                    await uow.model_calls.append([model_call.to_row(run_id)])
            async with store.transaction() as uow:
                for table, row in fields.values():
                    await uow.connection.execute(
                        table.insert(), [{**row, "run_id": "by-sqlalchemy"}]
                    )
            async with store.reading() as uow:
                for name, (table, _) in fields.items():
                    alike = await _as_stored(uow.connection, table, "by-sqlalchemy")
                    for pipelined in (False, True):
                        stored = await _as_stored(uow.connection, table, f"by-repo-{pipelined}")
                        assert stored == alike, (name, pipelined)
        finally:
            await store.close()

    asyncio.run(scenario())


def test_a_tool_call_row_of_written_texts_stores_what_its_values_store(
    backend: Backend, tmp_path: Path
) -> None:
    """A call's row carries its args and answer as the texts they were written to
    (`json_text.written`, bytes) and is bound as it is (`insert_many`'s `written`): stored
    byte for byte as the same row of values, through SQLAlchemy or the driver, with the
    error's and a content-less call's `null` as JSON `null`, not SQL NULL."""
    _, call = ROWS["tool_calls"]
    fields = {name: call[name] for name in ToolCallRow._fields}
    answer = {"value": ["二", 2**40, 0.5, True, None]}
    valued = {**fields, "status": "ok", "result": answer}
    texts = {
        **valued,
        "inputs": json_text.written(valued["inputs"]),
        "result": json_text.written(answer),
    }
    unrecorded = {**fields, "recorded": False, "inputs": None}

    async def scenario() -> None:
        store = await Store.open(backend.new_database() or sqlite_url(tmp_path))
        try:
            async with store.transaction() as uow:
                for run_id, row in (("values", valued), ("unrecorded", unrecorded)):
                    await uow.connection.execute(
                        tool_calls.insert(),
                        [{**row, "sequence": 3, "run_id": f"by-sqlalchemy-{run_id}"}],
                    )
            async with store.log_transaction() as uow:
                await uow.tool_calls.append(
                    [
                        ToolCallRow(**texts).to_row("texts", 3),
                        ToolCallRow(**valued).to_row("values", 3),
                        ToolCallRow(**unrecorded).to_row("unrecorded", 3),
                    ]
                )
            async with store.reading() as uow:
                alike = await _as_stored(uow.connection, tool_calls, "by-sqlalchemy-values")
                assert await _as_stored(uow.connection, tool_calls, "texts") == alike
                assert await _as_stored(uow.connection, tool_calls, "values") == alike
                assert await _as_stored(uow.connection, tool_calls, "unrecorded") == (
                    await _as_stored(uow.connection, tool_calls, "by-sqlalchemy-unrecorded")
                )
        finally:
            await store.close()

    asyncio.run(scenario())


def test_rows_of_any_count_land_whole_and_in_order(backend: Backend, tmp_path: Path) -> None:
    """A SQLite insert goes as statements of many rows each (`_driver._sqlite_inserts`):
    whatever the count, every row lands once, in order, with its own values, even where
    SQLite binds no more parameters a statement than its lowest default limit allows."""
    counts = (1, 2, 3, 63, 64, 65, 127, 128, 129, 1000)
    _, call = ROWS["tool_calls"]

    def calls(run_id: str, count: int) -> list[tuple[Any, ...]]:
        fields = {name: call[name] for name in ToolCallRow._fields}
        return [
            ToolCallRow(**{**fields, "call_id": f"c{n}", "inputs": {"n": n}}).to_row(run_id, n)
            for n in range(count)
        ]

    async def scenario() -> None:
        store = await Store.open(backend.new_database() or sqlite_url(tmp_path))
        try:
            async with store.log_transaction() as uow:
                if uow.connection.dialect.name == "sqlite":
                    sqlite = _driver.driver_connection(uow.connection).sqlite
                    sqlite.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, _driver.SQLITE_PARAMETERS)
                for count in counts:
                    run_id = f"rows-{count}"
                    await uow.events.append(
                        [
                            (run_id, sequence, "t", f'{{"n":{sequence}}}')
                            for sequence in range(count)
                        ]
                    )
                    await uow.tool_calls.append(calls(run_id, count))
            async with store.reading() as uow:
                for count in counts:
                    run_id = f"rows-{count}"
                    stored = await uow.connection.execute(
                        select(events.c.sequence, events.c.doc)
                        .where(events.c.run_id == run_id)
                        .order_by(events.c.sequence)
                    )
                    assert list(stored) == [(n, f'{{"n":{n}}}') for n in range(count)], count
                    stored = await uow.connection.execute(
                        select(tool_calls.c.sequence, tool_calls.c.call_id, tool_calls.c.inputs)
                        .where(tool_calls.c.run_id == run_id)
                        .order_by(tool_calls.c.sequence)
                    )
                    assert list(stored) == [(n, f"c{n}", {"n": n}) for n in range(count)], count
        finally:
            await store.close()

    asyncio.run(scenario())


def test_a_conflict_among_many_rows_lands_nothing_of_its_transaction(
    backend: Backend, tmp_path: Path
) -> None:
    """An insert of many rows that conflicts fails its whole transaction (on SQLite the
    statement ends it there, `OR ROLLBACK`): nothing written before it in the transaction
    lands, through the driver or through SQLAlchemy, and the next transaction works."""

    def rows(run_id: str, count: int) -> list[tuple[Any, ...]]:
        return [(run_id, sequence, "t", "{}") for sequence in range(count)]

    async def conflicting(store: Store, through_sqlalchemy: bool) -> None:
        async with store.log_transaction() as uow:
            if through_sqlalchemy:
                await uow.connection.execute(
                    events.insert(), [{"run_id": "lost", "sequence": 9, "type": "t", "doc": "{}"}]
                )
            await uow.events.append(rows("lost", 3))
            await uow.events.append(rows("kept", 5))  # ("kept", 0) is there

    async def scenario() -> None:
        store = await Store.open(backend.new_database() or sqlite_url(tmp_path))
        try:
            async with store.log_transaction() as uow:
                await uow.events.append(rows("kept", 1))
            for through_sqlalchemy in (False, True):
                with pytest.raises((sqlite3.IntegrityError, psycopg.IntegrityError)):
                    await conflicting(store, through_sqlalchemy)
                async with store.log_transaction() as uow:
                    await uow.events.append(rows(f"after-{through_sqlalchemy}", 2))
            async with store.reading() as uow:
                stored = await uow.connection.execute(
                    select(events.c.run_id, events.c.sequence).order_by(
                        events.c.run_id, events.c.sequence
                    )
                )
                assert list(stored) == [
                    ("after-False", 0),
                    ("after-False", 1),
                    ("after-True", 0),
                    ("after-True", 1),
                    ("kept", 0),
                ]
        finally:
            await store.close()

    asyncio.run(scenario())


@pytest.mark.postgres
def test_a_big_pipelined_insert_stores_values_holding_its_separators(
    postgres_databases: PostgresDatabases,
) -> None:
    """A column's values go joined in one text (`_driver.Unnest.joined`) unless one holds the
    separator or the NULL mark: then the column's values go as arrays, stored as given."""
    odd = ["a\x1fb", "\x1e", "", "x\x1e\x1fy"]

    def rows(run_id: str, docs: list[str]) -> list[tuple[Any, ...]]:
        count = _driver.BATCH_COLUMNS_FROM_ROWS
        return [(run_id, sequence, "t", docs[sequence % len(docs)]) for sequence in range(count)]

    async def scenario() -> None:
        store = await Store.open(postgres_databases.create())
        try:
            async with store.log_transaction(pipelined=True) as uow:
                await uow.events.append(rows("odd", odd))
                await uow.events.append(rows("plain", ["{}", ""]))
            async with store.reading() as uow:
                for run_id, docs in (("odd", odd), ("plain", ["{}", ""])):
                    stored = await uow.connection.execute(
                        select(events.c.sequence, events.c.doc)
                        .where(events.c.run_id == run_id)
                        .order_by(events.c.sequence)
                    )
                    assert [tuple(row) for row in stored] == [
                        (sequence, doc) for _, sequence, _, doc in rows(run_id, docs)
                    ]
        finally:
            await store.close()

    asyncio.run(scenario())


@pytest.mark.postgres
def test_a_big_pipelined_transaction_refused_lands_nothing(
    postgres_databases: PostgresDatabases,
) -> None:
    """A pipelined transaction of many rows (one exchange) that meets a key conflict or a
    failed check (`hold_checked`, `StaleRun`) ends whole: nothing of it lands, and the next
    transaction works."""
    count = _driver.BATCH_COLUMNS_FROM_ROWS

    def rows(run_id: str) -> list[tuple[Any, ...]]:
        return [(run_id, sequence, "t", "{}") for sequence in range(count)]

    async def by_key(store: Store) -> None:
        async with store.log_transaction(pipelined=True) as uow:
            await uow.events.append(rows("lost-by-key"))
            await uow.events.append(rows("kept"))

    async def by_check(store: Store) -> None:
        async with store.log_transaction(pipelined=True) as uow:
            await uow.events.append(rows("lost-by-check"))
            _driver.hold_checked(
                uow.connection,
                "UPDATE runs SET last_sequence = 0 WHERE run_id = %(run)s",
                {"run": "nowhere"},
                1,
            )

    async def scenario() -> None:
        store = await Store.open(postgres_databases.create())
        try:
            async with store.log_transaction(pipelined=True) as uow:
                await uow.events.append(rows("kept"))
            with pytest.raises(psycopg.IntegrityError):
                await by_key(store)
            with pytest.raises(StaleRun):
                await by_check(store)
            async with store.log_transaction(pipelined=True) as uow:
                await uow.events.append(rows("after"))
            async with store.reading() as uow:
                stored = await uow.connection.execute(
                    select(events.c.run_id).group_by(events.c.run_id).order_by(events.c.run_id)
                )
                assert list(stored.scalars()) == ["after", "kept"]
        finally:
            await store.close()

    asyncio.run(scenario())


@pytest.mark.postgres
def test_one_row_bound_a_column_at_a_time_keeps_an_empty_text(
    postgres_databases: PostgresDatabases, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A column of one empty text joins to "", which the server splits into no value at all:
    one row goes as arrays."""
    monkeypatch.setattr(_driver, "BATCH_COLUMNS_FROM_ROWS", 1)

    async def scenario() -> None:
        store = await Store.open(postgres_databases.create())
        try:
            async with store.log_transaction(pipelined=True) as uow:
                await uow.events.append([("one", 0, "t", "")])
            async with store.reading() as uow:
                stored = await uow.connection.execute(
                    select(events.c.doc).where(events.c.run_id == "one")
                )
                assert list(stored.scalars()) == [""]
        finally:
            await store.close()

    asyncio.run(scenario())
