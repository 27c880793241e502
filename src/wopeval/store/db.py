"""Engine creation and schema migration: SQLite (WAL) by default, PostgreSQL by URL."""

from __future__ import annotations

import contextlib
import os
import select
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, event, text
from sqlalchemy.dialects import registry
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError, DisconnectionError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

import wopeval.store._sqlite_inline as _sqlite_inline
from wopeval.store.tables import declare_postgresql_conditions
from wopeval.wire import json_text

if TYPE_CHECKING:
    from alembic.config import Config

_MIGRATIONS = Path(__file__).with_name("migrations")
MIGRATION_LOCK_KEY = 0x776F_7066
"""The advisory lock that serialises migrations of one PostgreSQL database ("wopf")."""
HEAD_REVISION = "0014_lz4_copies"
"""The newest migration's revision (tests/migration holds it to Alembic's own head): a
database stamped with it is not handed to Alembic at all (`migrate`)."""


registry.register(f"sqlite.{_sqlite_inline.DRIVER}", _sqlite_inline.__name__, "InlineSQLiteDialect")


def sqlite_url(data_dir: Path) -> str:
    return f"sqlite:///{data_dir / 'wopeval.db'}"


def create_engine(url: str) -> AsyncEngine:
    if url.startswith("sqlite"):
        _private_sqlite_files(url)
        engine = create_async_engine(
            # Whatever driver the URL names (`sqlite://`, `sqlite+aiosqlite://`), the store
            # runs SQLite on the event loop (store/_sqlite_inline.py).
            make_url(url).set(drivername=f"sqlite+{_sqlite_inline.DRIVER}"),
            connect_args={"timeout": 30},
            # SQLAlchemy returns a connection to the pool from a task of its own, so a burst
            # of short reads holds more connections than it uses; beyond the pool's size each
            # would be opened anew (its pragmas set, the schema read again) and closed.
            pool_size=32,
            max_overflow=32,
            # JSON columns written and read by the hot path's codec (wire/json_text.py).
            json_serializer=json_text.compact,
            json_deserializer=json_text.parse,
        )
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        return engine
    declare_postgresql_conditions()
    parsed, connect_args = _prepare_threshold(make_url(url))
    engine = create_async_engine(
        parsed,
        connect_args=connect_args,
        # As many at most as before (30 a process), all of them kept once opened: a
        # connection beyond the pool's size is closed when it is returned, and a new one is a
        # new server process, so a burst of reads would open and close them by the dozen.
        pool_size=30,
        max_overflow=0,
        json_serializer=json_text.compact,
        json_deserializer=json_text.parse,
    )
    dialect = engine.dialect

    def ping_if_idle(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        checked_in = record.info.get("checked_in")
        if checked_in is None:  # a new connection
            return
        if time.monotonic() - checked_in < POOL_IDLE_PING_SECONDS and not may_be_lost(
            dbapi_connection.driver_connection
        ):
            return
        try:
            # Under the async engine this runs in SQLAlchemy's greenlet, as its pre-ping does.
            dialect.do_ping(dbapi_connection)
        except Exception as lost:
            # The pool drops this connection and lends another (or a new one).
            raise DisconnectionError(str(lost)) from lost

    event.listen(engine.sync_engine, "checkin", _checked_in)
    event.listen(engine.sync_engine, "checkout", ping_if_idle)
    return engine


PREPARE_THRESHOLD = "prepare_threshold"
"""The PostgreSQL URL's query parameter that sets when statements are prepared on the
server: psycopg's own `prepare_threshold` (executions of a statement before psycopg
prepares it, 5 unless given), and with `none` neither psycopg nor the log writer's
pipelined transactions (store/_pg_batch.py `_Prepared`) prepare any, for a server
reached through a pooler that cannot keep them (PgBouncer before 1.21 in transaction
mode: docs/deploy.md)."""


def _prepare_threshold(url: URL) -> tuple[URL, dict[str, Any]]:
    """`url` as the driver takes it (`driver_url`), and psycopg's connect argument for
    `PREPARE_THRESHOLD`: the URL's parameters reach psycopg as text."""
    given = url.query.get(PREPARE_THRESHOLD)
    if given is None:
        return url, {}
    if not isinstance(given, str):
        raise ValueError(f"{PREPARE_THRESHOLD} given more than once")
    if given.lower() == "none":
        return driver_url(url), {PREPARE_THRESHOLD: None}
    if not given.isdigit():
        raise ValueError(f"{PREPARE_THRESHOLD} is a whole number or 'none', not {given!r}")
    return driver_url(url), {PREPARE_THRESHOLD: int(given)}


def driver_url(url: str | URL) -> URL:
    """The database URL without the host's own `PREPARE_THRESHOLD`, for every connection
    made from it (the store's, the lease's, the wakeups' LISTEN, the queue's): libpq
    refuses a parameter it does not know."""
    return make_url(url).difference_update_query([PREPARE_THRESHOLD])


POOL_IDLE_PING_SECONDS = 2.0
"""A PostgreSQL connection back in the pool longer than this is pinged before it is lent
(a round trip): one used a moment ago is lent as it is, so a busy pool pays no ping a
check-out, unless its socket says the server ended it (`may_be_lost`: a poll, no round
trip). A ping that fails makes the pool replace that connection with a new one before
lending it, so a backend ended meanwhile (a restart, a failover, `pg_terminate_backend`)
fails no caller's request (tests/e2e/test_lost_connections.py)."""


def may_be_lost(driver: Any) -> bool:
    """Whether psycopg's connection `driver`, idle (no statement of its own under way), may
    have been ended by the server: its socket has something to read, which for an idle
    connection (it LISTENs to nothing) is the server's goodbye and end of stream (a backend
    ended by `pg_terminate_backend`, a restart, a failover, a pooler's or an idle timeout),
    or a rare message of its own accord (a setting's new value), for which a ping is just
    one round trip. A poll of the socket, no round trip: a busy pool's checkouts and the
    log writer's transactions pay it, and ping only a connection that has something to
    say. A peer gone without a word (a network cut) shows nothing here; that is what the
    pings of idle connections are for (`POOL_IDLE_PING_SECONDS`)."""
    return bool(driver.closed) or socket_readable(driver.pgconn.socket)


def out_of_reach(error: BaseException) -> bool:
    """Whether `error` says the database was out of reach, not that a statement was wrong:
    a connection lost or refused (a restart, a failover, a backend ended), or another of
    the errors the server raises for what is outside the statement's control (a deadlock,
    a cancelled query), each of which a later try may not meet. Through SQLAlchemy, its
    `OperationalError`; from the log writer's driver statements (store/_driver.py), the
    driver's own: psycopg's (loaded only by a PostgreSQL store)."""
    if isinstance(error, DBAPIError):
        return error.connection_invalidated or isinstance(error, OperationalError)
    psycopg = sys.modules.get("psycopg")
    return psycopg is not None and isinstance(error, psycopg.OperationalError)


def socket_readable(fd: int) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


def _checked_in(_dbapi_connection: Any, record: Any) -> None:
    record.info["checked_in"] = time.monotonic()


def _private_sqlite_files(url: str) -> None:
    """The database file and its -wal / -shm are the owner's alone (0600), whatever the umask.

    The file is created here, before SQLite would create it with the umask's mode;
    SQLite gives the -wal and -shm files the mode of the database file.
    """
    database = make_url(url).database
    if not database or database == ":memory:":
        return
    path = Path(database)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    for suffix in ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.chmod(path.with_name(path.name + suffix), 0o600)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    # WAL with NORMAL stays consistent across a crash; only the last commits may be lost.
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    # The store's own thread checkpoints the log, not a commit on the loop (_checkpoints.py).
    cursor.execute("PRAGMA wal_autocheckpoint=0")
    cursor.close()


def alembic_config() -> Config:
    # Alembic costs ~0.4 s to import; a CLI command that talks to a served host never
    # migrates, so it is imported by the processes that open a store.
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    return config


def _upgrade(connection: Connection) -> None:
    from alembic import command

    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, "head")


async def migrate(engine: AsyncEngine) -> None:
    """Bring the schema to the newest revision; runs at every start.

    A schema already at the newest revision, the usual case, is found so by one read
    of its version row, without Alembic: importing it and loading its scripts cost
    ~0.5 s of every CLI command's embedded host (docs/decisions.md, "Fast commands").
    Processes that share a PostgreSQL database (API processes and workers in queue
    mode) start in any order: each migrates under one transaction-scoped advisory
    lock, so the first brings the schema up and the others find it at head.
    """
    if await _at_head(engine):
        return
    async with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            await connection.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY}
            )
        await connection.run_sync(_upgrade)


async def _at_head(engine: AsyncEngine) -> bool:
    """Whether Alembic's version row names `HEAD_REVISION` (and no other revision)."""
    async with engine.connect() as connection:
        try:
            found = await connection.execute(text("SELECT version_num FROM alembic_version"))
        except DBAPIError:  # no version table: a new database, which Alembic builds
            return False
        return found.scalars().all() == [HEAD_REVISION]
