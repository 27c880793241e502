"""A store transaction lands whole or not at all, whichever way its statements ran: on the
driver's connection (the log writer's, store/_driver.py), through SQLAlchemy, or both. A
transaction of driver statements alone is committed on the driver's connection (store/__init__.py
`_driver_transaction`: SQLite's writer, and the log writer's kept connection on PostgreSQL),
so each of these cases is its own path; on PostgreSQL the log writer's may also be pipelined."""

from __future__ import annotations

import asyncio
import logging
import select as io_select
import socket
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import insert, select, text

import wopeval.store
import wopeval.store._pg_batch
import wopeval.store.db
from _backends import Backend, PostgresDatabases
from wopeval.store import EventRow, Store, UnitOfWork, _driver, sqlite_url
from wopeval.store._driver import driver_connection, fetch
from wopeval.store._events import EVENT_COLUMNS
from wopeval.store.db import out_of_reach
from wopeval.store.tables import events

Opened = Callable[[Store], AbstractAsyncContextManager[UnitOfWork]]
OPENINGS: dict[str, Opened] = {
    "transaction": lambda store: store.transaction(),
    "log-transaction": lambda store: store.log_transaction(),
}


class _Abandoned(Exception):
    """What a test raises inside a transaction to abandon it."""


def _row(run_id: str, sequence: int) -> EventRow:
    return (run_id, sequence, "t", f'{{"n":{sequence}}}')


async def _by_driver(uow: UnitOfWork, run_id: str, sequence: int) -> None:
    await uow.events.append([_row(run_id, sequence)])


async def _by_sqlalchemy(uow: UnitOfWork, run_id: str, sequence: int) -> None:
    await uow.connection.execute(
        insert(events).values(dict(zip(EVENT_COLUMNS, _row(run_id, sequence), strict=True)))
    )


async def _stored(store: Store, run_id: str) -> list[int]:
    async with store.reading() as uow:
        rows = await uow.connection.execute(
            select(events.c.sequence).where(events.c.run_id == run_id).order_by(events.c.sequence)
        )
        return [row.sequence for row in rows]


WAYS = {
    "driver": (_by_driver, _by_driver),
    "sqlalchemy": (_by_sqlalchemy, _by_sqlalchemy),
    "driver-then-sqlalchemy": (_by_driver, _by_sqlalchemy),
    "sqlalchemy-then-driver": (_by_sqlalchemy, _by_driver),
}


@pytest.mark.parametrize("opening", OPENINGS)
@pytest.mark.parametrize("way", WAYS)
def test_a_transaction_lands_whole_or_not_at_all(
    backend: Backend, tmp_path: Path, way: str, opening: str
) -> None:
    first, second = WAYS[way]
    opened = OPENINGS[opening]

    async def scenario() -> None:
        store = await Store.open(backend.new_database() or sqlite_url(tmp_path))
        try:

            async def abandon() -> None:
                async with opened(store) as uow:
                    await first(uow, "abandoned", 0)
                    await second(uow, "abandoned", 1)
                    raise _Abandoned

            with pytest.raises(_Abandoned):
                await abandon()
            # The next transaction is a new one: it does not carry the abandoned rows.
            async with opened(store) as uow:
                await first(uow, "landed", 0)
                await second(uow, "landed", 1)
            async with opened(store) as uow:
                await first(uow, "landed", 2)
            assert await _stored(store, "abandoned") == []
            assert await _stored(store, "landed") == [0, 1, 2]
        finally:
            await store.close()

    asyncio.run(scenario())


def test_a_refused_statement_abandons_its_whole_transaction(
    backend: Backend, tmp_path: Path
) -> None:
    async def scenario() -> None:
        store = await Store.open(backend.new_database() or sqlite_url(tmp_path))
        try:
            async with store.transaction() as uow:
                await _by_driver(uow, "run", 0)

            async def take_a_taken_key() -> None:
                async with store.transaction() as uow:
                    await _by_driver(uow, "run", 1)
                    await _by_driver(uow, "run", 0)

            with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
                await take_a_taken_key()
            async with store.transaction() as uow:
                await _by_driver(uow, "run", 2)
            assert await _stored(store, "run") == [0, 2]
        finally:
            await store.close()

    asyncio.run(scenario())


# ── PostgreSQL: the log writer's kept connection, pipelined ──────────


@pytest.fixture
async def postgres_store(postgres_databases: PostgresDatabases) -> AsyncIterator[Store]:
    store = await Store.open(postgres_databases.create())
    try:
        yield store
    finally:
        await store.close()


async def _kept_backend(store: Store) -> int:
    """The server process of the log writer's kept connection."""
    async with store.log_transaction() as uow:
        found = await uow.connection.execute(text("SELECT pg_backend_pid()"))
        pid: int = found.scalar_one()
    return pid


async def _terminate(store: Store, pid: int) -> None:
    """End that server process from a connection of its own (a restart, as its clients see
    it), and wait until it is gone: its socket closed, as a connection idle in the host
    then finds it."""
    dsn = store.engine.url.set(drivername="postgresql").render_as_string(False)
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as admin:
        await admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        for _ in range(3000):
            found = await admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,))
            if await found.fetchone() is None:
                return
            await asyncio.sleep(0.01)
    raise AssertionError(f"backend {pid} never went")


def _unseen_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store does not see that the server ended a connection (it ended it between the
    store's look at the socket and the statement, or the peer went without a word, a
    network cut): what guards then is the ping of an idle connection, or the failure of
    one transaction."""
    monkeypatch.setattr(wopeval.store, "may_be_lost", lambda _driver: False)
    monkeypatch.setattr(wopeval.store.db, "may_be_lost", lambda _driver: False)


@pytest.mark.postgres
async def test_a_pipelined_transaction_lands_whole_or_not_at_all(postgres_store: Store) -> None:
    store = postgres_store

    async def abandon() -> None:
        async with store.log_transaction(pipelined=True) as uow:
            await _by_driver(uow, "abandoned", 0)
            await _by_driver(uow, "abandoned", 1)
            # Past `COPY_FROM_ROWS`: these too must wait for the transaction.
            await uow.events.append([_row("abandoned", sequence) for sequence in range(2, 22)])
            raise _Abandoned

    with pytest.raises(_Abandoned):
        await abandon()

    async def take_a_taken_key() -> None:
        async with store.log_transaction(pipelined=True) as uow:
            await _by_driver(uow, "refused", 0)
            await _by_driver(uow, "refused", 0)

    # The refusal comes back with the pipeline's answers, after the block: nothing lands.
    with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
        await take_a_taken_key()
    # Rows past `COPY_FROM_ROWS` go as pipelined INSERTs (a pipeline has no COPY).
    async with store.log_transaction(pipelined=True) as uow:
        await uow.events.append([_row("many", sequence) for sequence in range(20)])
    assert await _stored(store, "many") == list(range(20))
    # A batch's rows bound a column at a time too: held until the COMMIT, and sent with it.
    copied = range(_driver.BATCH_COLUMNS_FROM_ROWS)

    async def abandon_copied() -> None:
        async with store.log_transaction(pipelined=True) as uow:
            await uow.events.append([_row("abandoned", sequence) for sequence in copied])
            raise _Abandoned

    with pytest.raises(_Abandoned):
        await abandon_copied()

    async def copy_a_taken_key() -> None:
        async with store.log_transaction(pipelined=True) as uow:
            await uow.events.append([_row("refused", sequence) for sequence in copied])
            await uow.events.append([_row("refused", sequence) for sequence in copied])

    # The second insert fails in the pipeline that carries the COMMIT: the first does not land.
    with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
        await copy_a_taken_key()
    async with store.log_transaction(pipelined=True) as uow:
        await _by_driver(uow, "copied", 0)
        await uow.events.append([_row("copied", sequence + 1) for sequence in copied])
        await _by_driver(uow, "copied", len(copied) + 1)
    assert await _stored(store, "copied") == list(range(len(copied) + 2))
    # Each pipelined transaction is committed, and read by another connection at once.
    for sequence in range(3):
        async with store.log_transaction(pipelined=True) as uow:
            await _by_driver(uow, "landed", sequence)
        assert await _stored(store, "landed") == list(range(sequence + 1))
    assert await _stored(store, "abandoned") == []
    assert await _stored(store, "refused") == []


@pytest.mark.postgres
async def test_a_pipelined_transaction_refused_at_its_commit_raises(postgres_store: Store) -> None:
    """A refusal that only the commit raises (a deferred constraint here) fails the block,
    not returns as if the rows were durable: it comes with the COMMIT's answer."""
    store = postgres_store
    async with store.transaction() as uow:
        for statement in (
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'refused at commit'; END $$",
            "CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT ON events "
            "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
            "WHEN (NEW.run_id = 'refused') EXECUTE FUNCTION refuse()",
        ):
            await uow.connection.execute(text(statement))

    async def refused() -> None:
        async with store.log_transaction(pipelined=True) as uow:
            await _by_driver(uow, "refused", 0)

    with pytest.raises(psycopg.Error, match="refused at commit"):
        await refused()
    assert await _stored(store, "refused") == []
    async with store.log_transaction(pipelined=True) as uow:
        await _by_driver(uow, "after", 0)
    assert await _stored(store, "after") == [0]


@pytest.mark.postgres
async def test_a_pipelined_transaction_refuses_a_sqlalchemy_statement(
    postgres_store: Store,
) -> None:
    """SQLAlchemy reads a statement's rows before a pipeline has them: nothing may land."""

    async def mixed() -> None:
        async with postgres_store.log_transaction(pipelined=True) as uow:
            await _by_driver(uow, "mixed", 0)
            await _by_sqlalchemy(uow, "mixed", 1)

    with pytest.raises(RuntimeError, match="SQLAlchemy statement in a pipelined"):
        await mixed()
    assert await _stored(postgres_store, "mixed") == []
    async with postgres_store.log_transaction(pipelined=True) as uow:
        await _by_driver(uow, "after", 0)
    assert await _stored(postgres_store, "after") == [0]


@pytest.mark.postgres
async def test_a_pipelined_commit_is_flushed_to_the_wal_before_it_returns(
    postgres_store: Store,
) -> None:
    """Durable, not only visible: the server's WAL is flushed past the transaction's
    writes when the block returns (an asynchronous commit would leave it behind)."""
    for sequence in range(5):
        async with postgres_store.log_transaction(pipelined=True) as uow:
            await _by_driver(uow, "durable", sequence)
            # Read in the transaction, after its writes (they go with this read).
            ((lsn, _),) = await fetch(
                uow.connection,
                text("SELECT CAST(pg_current_wal_insert_lsn() AS text), CAST(:n AS integer)"),
                {"n": sequence},
            )
        async with postgres_store.reading() as uow:
            behind = await uow.connection.execute(
                text("SELECT pg_wal_lsn_diff(pg_current_wal_flush_lsn(), CAST(:lsn AS pg_lsn))"),
                {"lsn": lsn},
            )
            assert behind.scalar_one() >= 0


@pytest.mark.postgres
async def test_a_lost_kept_connection_fails_one_transaction_and_the_next_lands(
    postgres_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = postgres_store
    pid = await _kept_backend(store)
    await _terminate(store, pid)
    _unseen_ends(monkeypatch)

    async def on_the_lost_one() -> None:
        async with store.log_transaction(pipelined=True) as uow:
            await _by_driver(uow, "lost", 0)

    with pytest.raises(Exception, match=r"(?i)terminat|closed|connection"):
        await on_the_lost_one()
    async with store.log_transaction(pipelined=True) as uow:
        await _by_driver(uow, "after", 0)
    assert await _stored(store, "after") == [0]
    assert await _kept_backend(store) != pid


@pytest.mark.postgres
async def test_a_kept_connection_idle_too_long_is_checked_before_use(
    postgres_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a quiet spell (a server restarted meanwhile) no transaction meets a dead one."""
    store = postgres_store
    pid = await _kept_backend(store)
    await _terminate(store, pid)
    _unseen_ends(monkeypatch)
    monkeypatch.setattr(wopeval.store, "LOG_WRITER_IDLE_SECONDS", 0.0)
    async with store.log_transaction(pipelined=True) as uow:
        await _by_driver(uow, "after", 0)
    assert await _stored(store, "after") == [0]


@pytest.mark.postgres
async def test_a_pooled_connection_idle_too_long_is_pinged_before_it_is_lent(
    postgres_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A busy pool lends its connections unpinged; one that sat idle is pinged first."""
    store = postgres_store
    async with store.reading() as uow:
        found = await uow.connection.execute(text("SELECT pg_backend_pid()"))
        pid = found.scalar_one()
    await _terminate(store, pid)
    _unseen_ends(monkeypatch)
    monkeypatch.setattr(wopeval.store.db, "POOL_IDLE_PING_SECONDS", 0.0)
    async with store.reading() as uow:
        found = await uow.connection.execute(text("SELECT pg_backend_pid()"))
        assert found.scalar_one() != pid


@pytest.mark.postgres
async def test_a_kept_connection_the_server_ended_is_replaced_before_use(
    postgres_store: Store,
) -> None:
    """The log writer's connection, used a moment ago (no idle check due), ended by the
    server (a restart, a failover, `pg_terminate_backend`): its socket says so, and the
    next transaction takes another connection instead of failing on it."""
    store = postgres_store
    pid = await _kept_backend(store)
    await _terminate(store, pid)
    async with store.log_transaction(pipelined=True) as uow:
        await _by_driver(uow, "after", 0)
    assert await _stored(store, "after") == [0]
    assert await _kept_backend(store) != pid


@pytest.mark.postgres
async def test_a_pooled_connection_the_server_ended_is_replaced_before_it_is_lent(
    postgres_store: Store,
) -> None:
    """A busy pool lends a connection used a moment ago unpinged, unless its socket says
    the server ended it: then it is pinged, found dead, and replaced; the read succeeds."""
    store = postgres_store
    async with store.reading() as uow:
        found = await uow.connection.execute(text("SELECT pg_backend_pid()"))
        pid = found.scalar_one()
    await _terminate(store, pid)
    async with store.reading() as uow:
        found = await uow.connection.execute(text("SELECT pg_backend_pid()"))
        assert found.scalar_one() != pid


@pytest.mark.postgres
async def test_a_pipeline_bigger_than_the_socket_takes_is_sent_whole(
    postgres_store: Store,
) -> None:
    """What the socket does not take at once is sent as it drains, before the answers are
    read (else the server would wait for the rest, and the batch for its answers)."""
    big = "x" * 16_000_000
    async with postgres_store.log_transaction(pipelined=True) as uow:
        ((length,),) = await asyncio.wait_for(
            fetch(uow.connection, text("SELECT length(CAST(:v AS text))"), {"v": big}), 30
        )
    assert length == len(big)


async def _kept_socket(store: Store) -> int:
    """The socket's number of the log writer's kept connection, after a pipelined transaction
    (which leaves the loop's reader on it: store/_pg_batch.py `_Readable`)."""
    async with store.log_transaction(pipelined=True) as uow:
        await _by_driver(uow, f"on-{uuid.uuid4().hex}", 0)
        number: int = driver_connection(uow.connection).pgconn.socket
    return number


async def _watched_anew(number: int) -> None:
    """A new socket given `number` (the lowest free) is watched by the loop: its reader is
    woken when the socket is ready."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        assert number == ours.fileno(), "the number went elsewhere: this test would show nothing"
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        loop.add_reader(number, ready.set_result, None)
        try:
            theirs.send(b"!")
            await asyncio.wait_for(ready, 10)
        finally:
            loop.remove_reader(number)


def _readers_lost(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """The batches that found their reader taken off unannounced (`_Readable._check`, the net
    under a path that forgot `unwatch`)."""
    return [r for r in caplog.records if "lost its reader" in r.getMessage()]


@pytest.fixture
def reader_checked(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lost reader is noticed at once, and logged where the test can see it."""
    monkeypatch.setattr(wopeval.store._pg_batch, "LOST_READER_CHECK_SECONDS", 0.05)
    caplog.set_level(logging.WARNING, logger=wopeval.store._pg_batch.__name__)


@pytest.mark.postgres
@pytest.mark.usefixtures("reader_checked")
async def test_a_kept_connections_reader_taken_off_unannounced_is_put_back(
    postgres_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """Something that takes the loop's reader off without `unwatch` (a future path waiting
    through psycopg that forgot it) costs the next batch a check's delay and a warning, not a
    wait forever."""
    number = await _kept_socket(store := postgres_store)
    assert asyncio.get_running_loop().remove_reader(number)
    await asyncio.wait_for(_kept_socket(store), 10)
    assert _readers_lost(caplog)
    await asyncio.wait_for(_kept_socket(store), 10)  # put back: the next one is woken


@pytest.mark.postgres
@pytest.mark.usefixtures("reader_checked")
async def test_a_kept_connections_reader_leaves_before_psycopg_waits_on_it(
    postgres_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """A transaction not pipelined waits through psycopg, whose reader replaces the batch's
    and is then removed: the batch's must leave first, or the next batch would take it as
    still there and wait unwoken."""
    store = postgres_store
    for _ in range(2):
        await asyncio.wait_for(_kept_socket(store), 10)
        await _kept_backend(store)
    assert not _readers_lost(caplog)  # it removed the reader itself


@pytest.mark.postgres
@pytest.mark.usefixtures("reader_checked")
async def test_a_kept_connections_reader_leaves_before_an_abandoned_batch_rolls_back(
    postgres_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """The rollback waits through psycopg too (above): a batch's reader, left by the
    transaction before, must leave first."""
    store = postgres_store

    async def abandon() -> None:
        async with store.log_transaction(pipelined=True) as uow:
            await fetch(uow.connection, text("SELECT CAST(:n AS integer)"), {"n": 1})
            raise _Abandoned

    for _ in range(2):
        await asyncio.wait_for(_kept_socket(store), 10)
        with pytest.raises(_Abandoned):
            await asyncio.wait_for(abandon(), 10)
    await asyncio.wait_for(_kept_socket(store), 10)
    assert not _readers_lost(caplog)  # it removed the reader itself


@pytest.mark.postgres
async def test_a_kept_connections_reader_leaves_before_the_connection_is_replaced(
    postgres_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop's reader a batch left on the kept connection is removed before the connection
    is replaced (or closed, below): asyncio keeps a reader by the socket's number, and a later
    socket given that number would never be watched (its first wait never woken)."""
    store = postgres_store
    replaced = await _kept_socket(store)
    monkeypatch.setattr(wopeval.store, "LOG_WRITER_IDLE_SECONDS", 0.0)
    # A new connection, given the number the replaced one freed.
    assert await asyncio.wait_for(_kept_socket(store), 10) == replaced


@pytest.mark.postgres
async def test_a_kept_connections_reader_leaves_before_the_store_closes(
    postgres_databases: PostgresDatabases,
) -> None:
    store = await Store.open(postgres_databases.create())
    closed = await _kept_socket(store)
    await store.close()
    await _watched_anew(closed)


@pytest.mark.postgres
async def test_a_kept_connections_reader_leaves_when_its_socket_is_ready_unasked(
    postgres_store: Store,
) -> None:
    """A socket ready while nobody waits (its server gone) would wake the loop at every turn:
    the reader removes itself at the first such readiness."""
    store = postgres_store
    pid = await _kept_backend(store)
    number = await _kept_socket(store)
    await _terminate(store, pid)
    io_select.select([number], [], [], 10)
    for _ in range(4):  # turns of the loop, each of which sees it ready
        await asyncio.sleep(0)
    assert not asyncio.get_running_loop().remove_reader(number)


@pytest.mark.postgres
async def test_a_kept_connections_reader_stays_between_its_batches(postgres_store: Store) -> None:
    """Its last answer read, the socket is no longer ready: the reader stays for the next."""
    number = await _kept_socket(store := postgres_store)
    for _ in range(4):
        await asyncio.sleep(0)
    await _kept_socket(store)
    for _ in range(4):
        await asyncio.sleep(0)
    assert asyncio.get_running_loop().remove_reader(number)


@pytest.mark.postgres
async def test_a_kept_connection_ended_within_a_transaction_fails_it_as_out_of_reach(
    postgres_store: Store,
) -> None:
    """The server ends the log writer's connection between two statements of one of its
    transactions (a failover, `pg_terminate_backend`): the transaction fails with the
    driver's loss, which the engine tells from a wrong statement (`out_of_reach`: the run
    ends `store_unreachable`, not blamed on its agent), and the next one lands. Before, its
    clean-up asked SQLAlchemy's invalidated connection for the driver's, and raised
    `PendingRollbackError` in the loss's place."""
    store = postgres_store

    async def cut_within() -> None:
        async with store.log_transaction() as uow:
            found = await uow.connection.execute(text("SELECT pg_backend_pid()"))
            await _terminate(store, found.scalar_one())
            await uow.connection.execute(text("SELECT 1"))

    with pytest.raises(Exception, match=r"(?i)terminat|closed|connection") as raised:
        await cut_within()
    assert out_of_reach(raised.value), repr(raised.value)
    async with store.log_transaction(pipelined=True) as uow:
        await _by_driver(uow, "after", 0)
    assert await _stored(store, "after") == [0]
