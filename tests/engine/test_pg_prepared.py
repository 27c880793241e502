"""The log writer's pipelined PostgreSQL transactions run their statements prepared on the
server from their second use (store/_pg_batch.py `_Prepared`), with no round trip more, and
never by a name the server does not have: a refused pipeline, a `DISCARD ALL`, psycopg's
`DEALLOCATE ALL` at a rollback, a new connection. What is prepared stays bounded, and a URL
that says `prepare_threshold=none` (a pooler that cannot keep them) prepares nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
from sqlalchemy import select, text

import wopeval.store
import wopeval.store._pg_batch
from _backends import PostgresDatabases
from _statements import PREPARED, PREPARES, UNNAMED, Sent, exchanges
from wopeval.engine.live.wakeups import libpq_dsn
from wopeval.store import EventRow, Store
from wopeval.store._driver import driver_connection
from wopeval.store.db import create_engine
from wopeval.store.lease import take_lease
from wopeval.store.tables import events

pytestmark = pytest.mark.postgres


@pytest.fixture
async def postgres_store(
    postgres_databases: PostgresDatabases, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Store]:
    # The traced connection must stay the log writer's however slowly the test runs.
    monkeypatch.setattr(wopeval.store, "LOG_WRITER_IDLE_SECONDS", 3600.0)
    store = await Store.open(postgres_databases.create())
    try:
        yield store
    finally:
        await store.close()


class _Abandoned(Exception):
    """What a test raises inside a transaction to abandon it."""


def _row(run_id: str, sequence: int) -> EventRow:
    return (run_id, sequence, "t", f'{{"n":{sequence}}}')


async def _append(store: Store, run_id: str, *sequences: int) -> None:
    """One pipelined transaction: an INSERT of a row a sequence (one statement)."""
    async with store.log_transaction(pipelined=True) as uow:
        await uow.events.append([_row(run_id, sequence) for sequence in sequences])


async def _stored(store: Store, run_id: str) -> list[int]:
    async with store.reading() as uow:
        rows = await uow.connection.execute(
            select(events.c.sequence).where(events.c.run_id == run_id).order_by(events.c.sequence)
        )
        return [row.sequence for row in rows]


async def _writer(store: Store) -> Any:
    """psycopg's connection under the log writer's kept one."""
    async with store.log_transaction() as uow:
        return driver_connection(uow.connection)


def _inserts(sent: list[str | list[Sent]]) -> list[list[str]]:
    """How each exchange ran its INSERTs (`Sent.how`); BEGIN and COMMIT go unnamed."""
    hows: list[list[str]] = []
    for exchange in sent:
        assert isinstance(exchange, list), exchange
        assert exchange[0] == Sent("BEGIN", UNNAMED)
        assert exchange[-1] == Sent("COMMIT", UNNAMED)
        hows.append([one.how for one in exchange[1:-1]])
    return hows


def _server_prepared(driver: Any) -> set[str]:
    """The batches' statements the server holds for this connection (its session's own)."""
    found = driver.pgconn.exec_(
        b"SELECT name FROM pg_prepared_statements WHERE name LIKE 'wopeval\\_%'"
    )
    return {found.get_value(row, 0).decode() for row in range(found.ntuples)}


async def test_a_statement_is_prepared_at_its_second_use_in_the_same_round_trip(
    postgres_store: Store,
) -> None:
    store = postgres_store
    driver = await _writer(store)
    with exchanges(driver) as sent:
        for sequence in range(3):
            await _append(store, "run", sequence)
    # Sent with its values once, prepared with its second execution, then run by name.
    assert _inserts(sent) == [[UNNAMED], [PREPARES], [PREPARED]]
    assert await _stored(store, "run") == [0, 1, 2]


async def test_a_prepare_skipped_by_a_refused_pipeline_is_not_taken_as_made(
    postgres_store: Store,
) -> None:
    """A statement refused before a prepare aborts the pipeline: the prepare is skipped, and
    the next transaction prepares the statement anew, not runs a name the server lacks. The
    refused transaction is rolled back beneath psycopg, so what was prepared stays."""
    store = postgres_store
    await _append(store, "seen", 0)
    await _append(store, "seen", 1, 2)
    await _append(store, "seen", 3, 4)
    driver = await _writer(store)

    async def refused() -> None:
        async with store.log_transaction(pipelined=True) as uow:
            # A statement prepared before (two rows), refused: its key twice.
            await uow.events.append([_row("dup", 0), _row("dup", 0)])
            await uow.events.append([_row("skipped", 0)])

    with exchanges(driver) as sent:
        with pytest.raises(psycopg.errors.UniqueViolation):
            await refused()
        await _append(store, "after", 0)
        await _append(store, "after", 1, 2)
    refusal, rollback, *after = sent
    assert rollback == [Sent("ROLLBACK", UNNAMED)]
    assert _inserts([refusal, *after]) == [[PREPARED, PREPARES], [PREPARES], [PREPARED]]
    assert await _stored(store, "dup") == []
    assert await _stored(store, "skipped") == []
    assert await _stored(store, "after") == [0, 1, 2]


async def test_a_transaction_whose_statements_were_discarded_lands_whole(
    postgres_store: Store,
) -> None:
    """`DISCARD ALL` behind the store's back: the first pipeline is refused at the statement
    gone, rolled back and sent again unprepared; nothing lands twice, and the statements are
    prepared again from then on."""
    store = postgres_store
    await _append(store, "run", 0)
    await _append(store, "run", 1)
    driver = await _writer(store)
    assert _server_prepared(driver)
    driver.pgconn.exec_(b"DISCARD ALL")
    with exchanges(driver) as sent:
        await _append(store, "run", 2)
        await _append(store, "run", 3)
        await _append(store, "run", 4)
    refused, again, *after = sent
    assert isinstance(refused, list)
    assert refused[1].how == PREPARED
    assert isinstance(again, list)
    assert [one.text for one in again[:2]] == ["ROLLBACK", "BEGIN"]
    assert _inserts(after) == [[PREPARES], [PREPARED]]
    assert await _stored(store, "run") == [0, 1, 2, 3, 4]


async def test_a_rollback_that_deallocates_all_leaves_no_name_taken_for_prepared(
    postgres_store: Store,
) -> None:
    """psycopg's rollback (a log writer's transaction of SQLAlchemy statements) sends
    `DEALLOCATE ALL` when it has statements of its own prepared (its `prepare_threshold`, 5):
    the batches' go with them, and none is run by name after."""
    store = postgres_store
    await _append(store, "run", 0)
    await _append(store, "run", 1)
    driver = await _writer(store)
    for _ in range(6):
        async with store.log_transaction() as uow:
            await uow.connection.execute(text("SELECT count(*) FROM events"))
    found = driver.pgconn.exec_(b"SELECT count(*) FROM pg_prepared_statements WHERE name ~ '^_pg'")
    assert found.get_value(0, 0) != b"0", "psycopg prepared nothing: this test would show nothing"

    async def abandoned() -> None:
        async with store.log_transaction() as uow:
            await uow.connection.execute(text("SELECT count(*) FROM events"))
            raise _Abandoned

    with pytest.raises(_Abandoned):
        await abandoned()
    assert not _server_prepared(driver)
    with exchanges(driver) as sent:
        await _append(store, "run", 2)
    # One round trip: the INSERT sent with its values, not run by a name gone.
    assert _inserts(sent) == [[UNNAMED]]
    assert await _stored(store, "run") == [0, 1, 2]


async def test_a_new_connection_knows_no_prepared_statement(
    postgres_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = postgres_store
    await _append(store, "run", 0)
    await _append(store, "run", 1)
    first = await _writer(store)
    # Idle past the bound: the log writer takes another connection.
    monkeypatch.setattr(wopeval.store, "LOG_WRITER_IDLE_SECONDS", 0.0)
    driver = await _writer(store)
    monkeypatch.setattr(wopeval.store, "LOG_WRITER_IDLE_SECONDS", 3600.0)
    assert driver is not first
    with exchanges(driver) as sent:
        await _append(store, "run", 2)
    assert _inserts(sent) == [[UNNAMED]]
    assert await _stored(store, "run") == [0, 1, 2]


async def test_the_statements_kept_prepared_are_bounded(
    postgres_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past `PREPARED_MAX` statements, the least recently sent is closed on the server."""
    monkeypatch.setattr(wopeval.store._pg_batch, "PREPARED_MAX", 2)
    store = postgres_store
    driver = await _writer(store)
    sequence = 0
    for rows in (1, 2, 3, 1):  # an INSERT of each row count is a statement of its own
        for _ in range(2):
            await _append(store, "run", *range(sequence, sequence + rows))
            sequence += rows
    # The closes go with the next pipeline.
    await _append(store, "run", sequence)
    assert len(_server_prepared(driver)) <= 2
    assert await _stored(store, "run") == list(range(sequence + 1))


async def test_a_url_may_turn_prepared_statements_off(
    postgres_databases: PostgresDatabases,
) -> None:
    """A pooler that cannot keep prepared statements (PgBouncer in transaction mode before
    1.21): `prepare_threshold=none`, psycopg's own setting, off for the batches too."""
    store = await Store.open(f"{postgres_databases.create()}?prepare_threshold=none")
    try:
        driver = await _writer(store)
        assert driver.prepare_threshold is None
        with exchanges(driver) as sent:
            for sequence in range(3):
                await _append(store, "run", sequence)
        assert _inserts(sent) == [[UNNAMED]] * 3
        assert await _stored(store, "run") == [0, 1, 2]
    finally:
        await store.close()


def test_every_connection_made_from_the_url_leaves_the_setting_to_the_store(
    postgres_databases: PostgresDatabases,
) -> None:
    """libpq refuses a parameter it does not know: the lease's session and the LISTEN and
    queue connections (`libpq_dsn`) are made from the URL without it; a value that is not
    a number or `none` is refused by name."""
    url = f"{postgres_databases.create()}?prepare_threshold=none"
    lease = take_lease(url)
    lease.release()
    dsn = libpq_dsn(url)
    assert "prepare_threshold" not in dsn
    with psycopg.connect(dsn) as connection:
        assert connection.execute("SELECT 1").fetchone() == (1,)
    with pytest.raises(ValueError, match="prepare_threshold is a whole number or 'none'"):
        create_engine(url.replace("=none", "=often"))


async def test_a_connection_left_with_answers_unread_is_not_used_again(
    postgres_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pipeline cut short (its rollback cancelled) leaves the kept connection with answers
    unread: the next transaction fails before it sends anything, rather than take them for
    its own, and the one after lands on a new connection."""
    store = postgres_store
    # The answers not yet on the socket when the store looks at it (once they are, it
    # takes another connection at once: store/db.py `may_be_lost`).
    monkeypatch.setattr(wopeval.store, "may_be_lost", lambda _driver: False)
    driver = await _writer(store)
    pgconn = driver.pgconn
    pgconn.enter_pipeline_mode()
    pgconn.send_query_params(b"SELECT 1", None)
    pgconn.pipeline_sync()
    pgconn.flush()
    with pytest.raises(psycopg.OperationalError):
        await _append(store, "run", 0)
    await _append(store, "run", 1)
    assert await _writer(store) is not driver
    assert await _stored(store, "run") == [1]
