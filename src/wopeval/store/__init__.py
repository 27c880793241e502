"""Persistence: one repository per aggregate, grouped in a unit of work per transaction."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from wopeval.store._annotations import AnnotationRow, AnnotationsRepo, StoredLabel
from wopeval.store._calibrations import CalibrationRow, CalibrationsRepo
from wopeval.store._checkpoints import WalCheckpointer
from wopeval.store._details import (
    InvocationRow,
    InvocationSaid,
    InvocationsRepo,
    StoredInvocation,
    StoredTrial,
    TrialCounts,
    TrialRow,
    TrialsRepo,
)
from wopeval.store._driver import batched, driver_connection, in_a_batch
from wopeval.store._events import EVENTS_PAGE_SIZE, EventRow, EventsRepo, StoredEvent
from wopeval.store._idempotency import IDEMPOTENCY_RETENTION, IdempotencyRecord, IdempotencyRepo
from wopeval.store._model_calls import TOKEN_COUNT_MAX, ModelCallRow, ModelCallsRepo, ModelVia
from wopeval.store._plan import StoredPlan, StoredToolContract
from wopeval.store._runs import (
    RUN_CHANNEL,
    LockedRun,
    OwnedRun,
    OwnedStatus,
    RunFilter,
    RunHandle,
    RunMove,
    RunRecord,
    RunsRepo,
    decode_cursor,
    encode_cursor,
    idle_column,
    next_created_seq,
)
from wopeval.store._small_repos import (
    CountersRepo,
    DerivedFixturesRepo,
    KeysRepo,
    SuitesRepo,
    copy_derived,
    replace_keys,
)
from wopeval.store._stale import StaleRun
from wopeval.store._tool_calls import (
    DerivedSource,
    ToolCallOutcome,
    ToolCallRow,
    ToolCallsRepo,
)
from wopeval.store._tool_listings import ListingRow, ToolListingsRepo
from wopeval.store.db import (
    MIGRATION_LOCK_KEY,
    create_engine,
    may_be_lost,
    migrate,
    out_of_reach,
    sqlite_url,
)
from wopeval.store.lease import DatabaseUnreachable, Lease, LeaseHeld, database_name, take_lease


@dataclass(frozen=True)
class UnitOfWork:
    """The repositories of one transaction: what they write commits together or not at all."""

    connection: AsyncConnection
    pipelined: bool = False
    """Whether its statements are held and sent together (a pipelined log transaction on
    PostgreSQL, `Store.log_transaction`): only then may a PostgreSQL statement be checked
    by the server instead of read back (`RunsRepo.advance_known`)."""

    @property
    def checks_moves(self) -> bool:
        """Whether a run row's move may be checked instead of read back
        (`RunsRepo.advance_known`): by the server in a pipelined transaction, and on SQLite,
        whose statements run at once, by the count of rows it changed."""
        return self.pipelined or self.connection.dialect.name == "sqlite"

    @property
    def runs(self) -> RunsRepo:
        return RunsRepo(self.connection)

    @property
    def events(self) -> EventsRepo:
        return EventsRepo(self.connection)

    @property
    def tool_calls(self) -> ToolCallsRepo:
        return ToolCallsRepo(self.connection)

    @property
    def counters(self) -> CountersRepo:
        return CountersRepo(self.connection)

    @property
    def suites(self) -> SuitesRepo:
        return SuitesRepo(self.connection)

    @property
    def keys(self) -> KeysRepo:
        return KeysRepo(self.connection)

    @property
    def derived_fixtures(self) -> DerivedFixturesRepo:
        return DerivedFixturesRepo(self.connection)

    @property
    def invocations(self) -> InvocationsRepo:
        return InvocationsRepo(self.connection)

    @property
    def tool_listings(self) -> ToolListingsRepo:
        return ToolListingsRepo(self.connection)

    @property
    def trials(self) -> TrialsRepo:
        return TrialsRepo(self.connection)

    @property
    def model_calls(self) -> ModelCallsRepo:
        return ModelCallsRepo(self.connection)

    @property
    def annotations(self) -> AnnotationsRepo:
        return AnnotationsRepo(self.connection)

    @property
    def calibrations(self) -> CalibrationsRepo:
        return CalibrationsRepo(self.connection)

    @property
    def idempotency(self) -> IdempotencyRepo:
        return IdempotencyRepo(self.connection)

    async def serialise_startup(self) -> None:
        """On PostgreSQL, wait until no other process is in its start-up writes (migrations,
        stored keys): queue-mode processes start side by side on one database."""
        if self.connection.dialect.name == "postgresql":
            await self.connection.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY}
            )


@asynccontextmanager
async def _driver_transaction(writer: AsyncConnection, *, pipelined: bool) -> AsyncIterator[None]:
    """One transaction on a kept writer, ended by whoever ran its statements.

    The driver (`sqlite3`, psycopg) opens the transaction itself, before the first
    statement. The log writer's statements run on that driver connection directly
    (store/_driver.py), and a transaction of nothing else is committed there:
    SQLAlchemy's begin and commit, with their greenlet hand-offs, cost ~30 µs a
    transaction, a tenth of a live call's two on SQLite. Once a statement went through
    SQLAlchemy, it has begun a transaction of its own over the same connection, and
    SQLAlchemy ends it (committing the driver's with it).

    `pipelined` (PostgreSQL, driver statements only): the statements are held with their
    parameters, and go out together in libpq's pipeline mode (store/_pg_batch.py `Batch`)
    between a BEGIN and a COMMIT of our own: those before a statement whose rows are read
    go with it, the rest with the COMMIT. The block returns once the server has answered the
    COMMIT, so what it wrote is durable (synchronous_commit as the server has it). A
    step of a live call whose run the log writer knows is then one round trip and one
    send: BEGIN, the run row's move checked by the server (`RunsRepo.advance_known`),
    its rows and the COMMIT; one whose row must be read back, two.
    """
    # Taken now: once a statement of SQLAlchemy's met the connection lost, SQLAlchemy's
    # connection is invalidated and refuses to name the driver's (`PendingRollbackError`),
    # which the clean-up below still needs, and which would stand in the loss's place.
    driver = driver_connection(writer)
    try:
        if pipelined:
            # The BEGIN is ours, sent with the first statements on libpq's connection,
            # beneath psycopg's own transaction handling: its autocommit is left as it is.
            with batched(driver) as batch:
                yield
                await batch.commit()
        else:
            _unwatch(writer, driver)
            yield
            await _end(writer, driver, commit=True)
    except BaseException:
        # A failed commit too: the next transaction must not continue this one.
        try:
            if not (pipelined and await _rolled_back_beneath(driver)):
                if pipelined:
                    _unwatch(writer, driver)
                await _end(writer, driver, commit=False)
        except Exception:
            # The connection is lost: the next transaction takes a new one.
            _unwatch(writer, driver)
            await writer.invalidate()
        raise


async def _rolled_back_beneath(driver: Any) -> bool:
    """A pipelined transaction rolled back as it was begun, beneath psycopg, so that the
    statements its batches prepared stay (store/_pg_batch.py `Batch.rollback`)."""
    from wopeval.store._pg_batch import Batch  # psycopg: PostgreSQL's only

    return await Batch(driver).rollback()


def _unwatch(writer: AsyncConnection, driver: Any) -> None:
    """Before anything but a batch waits on the log writer's kept connection (`driver`, its
    driver's), and before it is closed: the loop's reader its batches left on its socket
    is removed (store/_pg_batch.py `_Readable`)."""
    if writer.dialect.name == "postgresql":
        from wopeval.store._pg_batch import unwatch  # psycopg: PostgreSQL's only

        unwatch(driver)


def _not_in_a_batch(connection: Any, *_: Any) -> None:
    """A SQLAlchemy statement would run at once, outside the pipelined transaction whose
    statements are held (its BEGIN among them): it is refused before it runs."""
    if in_a_batch(connection.connection.driver_connection):
        raise RuntimeError("a SQLAlchemy statement in a pipelined transaction")


async def _end(writer: AsyncConnection, driver: Any, *, commit: bool) -> None:
    if not commit and writer.dialect.name == "postgresql":
        # psycopg's rollback may deallocate every prepared statement (`forget_prepared`).
        from wopeval.store._pg_batch import forget_prepared  # psycopg: PostgreSQL's only

        forget_prepared(driver)
    if writer.in_transaction():
        await (writer.commit() if commit else writer.rollback())
        return
    if writer.dialect.name == "sqlite":
        (driver.sqlite.commit if commit else driver.sqlite.rollback)()
    else:
        await (driver.commit() if commit else driver.rollback())


LOG_WRITER_IDLE_SECONDS = 5.0
"""A PostgreSQL log writer's kept connection idle longer than this, or whose socket says
the server ended it (store/db.py `may_be_lost`: a poll, no round trip), is closed and
another is checked out of the pool (pinged there when it was idle or ended too): a busy
writer pays no ping a transaction, and a step is not handed a dead connection, to fail
its group (a server restarted, a backend ended, while a live call's tool ran)."""


class Store:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._one_writer = asyncio.Lock() if engine.dialect.name == "sqlite" else None
        """SQLite runs on the event loop (store/_sqlite_inline.py): a writer that waited for
        another inside SQLite would block the loop, so this process's writers take turns."""
        database = engine.url.database
        self._checkpoints = (
            WalCheckpointer(database)
            if engine.dialect.name == "sqlite" and database and database != ":memory:"
            else None
        )
        if engine.dialect.name == "postgresql":
            event.listen(engine.sync_engine, "before_cursor_execute", _not_in_a_batch)
        self._writer: AsyncConnection | None = None
        """SQLite's writers take turns, so one connection, kept open, serves them all: a
        transaction then pays no pool check-out and check-in. On PostgreSQL the same for
        the log writer's transactions alone (`log_transaction`)."""
        self._log_turn = asyncio.Lock()
        self._log_used = 0.0
        self._reader = engine.execution_options(isolation_level="AUTOCOMMIT")
        """The same pool, its connections lent without a transaction: under READ COMMITTED
        every statement reads its own snapshot anyway, and a PostgreSQL read is then one
        round trip, not a BEGIN, the read and a ROLLBACK."""

    @classmethod
    async def open(cls, url: str) -> Store:
        engine = create_engine(url)
        await migrate(engine)
        return cls(engine)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[UnitOfWork]:
        if self._one_writer is None:
            async with self.engine.begin() as connection:
                yield UnitOfWork(connection)
            return
        async with self._one_writer:
            writer = self._writer
            if writer is None or writer.closed or writer.invalidated:
                writer = self._writer = await self.engine.connect()
            async with _driver_transaction(writer, pipelined=False):
                yield UnitOfWork(writer)
            if self._checkpoints is not None:
                self._checkpoints.written()

    @property
    def pipelines(self) -> bool:
        """Whether `log_transaction(pipelined=True)` holds its statements to send them
        together: PostgreSQL's do; SQLite's run at once whatever is asked."""
        return self._one_writer is None

    @asynccontextmanager
    async def log_transaction(self, *, pipelined: bool = False) -> AsyncIterator[UnitOfWork]:
        """The run log writer's transaction (engine/runlog/log_writer.py), on a kept connection.

        The log writer commits its groups one after another, so on PostgreSQL one
        connection, kept open, serves them: no pool check-out, check-in or ping a
        transaction, and its driver statements committed on psycopg's connection, like
        SQLite's (`_driver_transaction`). With `pipelined`, only driver statements may
        run in it, batched (PostgreSQL: a live call's step is then one round trip, not six).
        """
        if self._one_writer is not None:
            async with self.transaction() as uow:
                yield uow
            return
        async with self._log_turn:
            writer = await self._log_writer()
            async with _driver_transaction(writer, pipelined=pipelined):
                yield UnitOfWork(writer, pipelined=pipelined)
            self._log_used = time.monotonic()

    async def _log_writer(self) -> AsyncConnection:
        writer = self._writer
        if writer is not None and not (writer.closed or writer.invalidated):
            if time.monotonic() - self._log_used < LOG_WRITER_IDLE_SECONDS and not may_be_lost(
                driver_connection(writer)
            ):
                return writer
            # Not back to the pool: just checked in, it would be lent again unpinged.
            _unwatch(writer, driver_connection(writer))
            await writer.invalidate()
        self._writer = await self.engine.connect()
        return self._writer

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[UnitOfWork]:
        if self._one_writer is None:
            async with self._reader.connect() as connection:
                yield UnitOfWork(connection)
            return
        async with self._sqlite() as connection:
            yield UnitOfWork(connection)

    @asynccontextmanager
    async def _sqlite(self) -> AsyncIterator[AsyncConnection]:
        """A SQLite connection, closed in place: SQLAlchemy's context manager closes one in a
        task of its own, so that a cancel cannot cut the close short, but SQLite's close
        never waits here (it runs on the loop): a task and a loop turn less per read and
        per transaction."""
        connection = await self.engine.connect()
        try:
            yield connection
        finally:
            await connection.close()

    async def close(self) -> None:
        if self._writer is not None:
            if not (self._writer.closed or self._writer.invalidated):
                _unwatch(self._writer, driver_connection(self._writer))
            await self._writer.close()
        await self.engine.dispose()
        if self._checkpoints is not None:
            await asyncio.to_thread(self._checkpoints.stop)


__all__ = [
    "EVENTS_PAGE_SIZE",
    "IDEMPOTENCY_RETENTION",
    "RUN_CHANNEL",
    "TOKEN_COUNT_MAX",
    "AnnotationRow",
    "AnnotationsRepo",
    "CalibrationRow",
    "CountersRepo",
    "DatabaseUnreachable",
    "DerivedFixturesRepo",
    "DerivedSource",
    "EventRow",
    "EventsRepo",
    "IdempotencyRecord",
    "IdempotencyRepo",
    "InvocationRow",
    "InvocationSaid",
    "InvocationsRepo",
    "KeysRepo",
    "Lease",
    "LeaseHeld",
    "ListingRow",
    "LockedRun",
    "ModelCallRow",
    "ModelCallsRepo",
    "ModelVia",
    "OwnedRun",
    "OwnedStatus",
    "RunFilter",
    "RunHandle",
    "RunMove",
    "RunRecord",
    "RunsRepo",
    "StaleRun",
    "Store",
    "StoredEvent",
    "StoredInvocation",
    "StoredLabel",
    "StoredPlan",
    "StoredToolContract",
    "StoredTrial",
    "SuitesRepo",
    "ToolCallOutcome",
    "ToolCallRow",
    "ToolCallsRepo",
    "ToolListingsRepo",
    "TrialCounts",
    "TrialRow",
    "TrialsRepo",
    "UnitOfWork",
    "copy_derived",
    "create_engine",
    "database_name",
    "decode_cursor",
    "encode_cursor",
    "idle_column",
    "migrate",
    "next_created_seq",
    "out_of_reach",
    "replace_keys",
    "sqlite_url",
    "take_lease",
]
