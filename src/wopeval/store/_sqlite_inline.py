"""SQLite for the async engine without a driver thread: statements run on the event loop.

SQLAlchemy's aiosqlite dialect hands every statement to aiosqlite's thread three or four
times (cursor, execute, fetch, close), each hand-off a thread wake-up and a wake-up of the
event loop; a live tool call's two small transactions spent most of their time there. A
statement on a local WAL-mode SQLite file takes microseconds, so this driver runs it where
it is asked for: the same `sqlite3` connection and the same SQL, no hand-off. SQLAlchemy's
async adaptation (cursor and connection adapters, pool, dialect) is reused as is; only the
driver under it is ours — coroutines that do their `sqlite3` call and return.

What that asks of the store (docs/decisions.md, "SQLite on the event loop"): a statement
that waits blocks the loop, so nothing may make one wait. Readers never wait in WAL mode; a
writer waits only for another writer, and the host is the database's one process (its
lease, store/lease.py), so `Store.transaction` lets one of its transactions write at a time
(an `asyncio.Lock`): a second writer waits on the lock, not inside SQLite.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_dbapi,
    SQLiteDialect_aiosqlite,
)

DRIVER = "wopeval"
"""The driver name in a URL (`sqlite+wopeval://`); store/db.py gives it to every SQLite URL."""


class _Cursor:
    """A `sqlite3.Cursor` with the awaitable methods SQLAlchemy's cursor adapter calls."""

    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self._cursor = cursor

    async def __aenter__(self) -> _Cursor:
        return self

    @property
    def description(self) -> Any:
        return self._cursor.description

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def lastrowid(self) -> int | None:
        return self._cursor.lastrowid

    @property
    def arraysize(self) -> int:
        return self._cursor.arraysize

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._cursor.arraysize = value

    async def execute(self, operation: str, parameters: Sequence[Any] = ()) -> _Cursor:
        self._cursor.execute(operation, parameters)
        return self

    async def executemany(self, operation: str, parameters: Iterable[Sequence[Any]]) -> _Cursor:
        self._cursor.executemany(operation, parameters)
        return self

    async def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()

    async def fetchone(self) -> Any:
        return self._cursor.fetchone()

    async def fetchmany(self, size: int | None = None) -> list[Any]:
        return self._cursor.fetchmany(self._cursor.arraysize if size is None else size)

    async def close(self) -> None:
        self._cursor.close()


class _Connection:
    """A `sqlite3.Connection` shaped as the aiosqlite connection SQLAlchemy adapts."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.sqlite = connection
        self._connection: sqlite3.Connection | None = connection
        """What SQLAlchemy's adapter checks before it commits or rolls back: None once closed."""

    def cursor(self) -> _Cursor:
        return _Cursor(self.sqlite.cursor())

    @property
    def isolation_level(self) -> str | None:
        return self.sqlite.isolation_level

    async def commit(self) -> None:
        self.sqlite.commit()

    async def rollback(self) -> None:
        self.sqlite.rollback()

    async def create_function(self, *args: Any, **kwargs: Any) -> None:
        self.sqlite.create_function(*args, **kwargs)

    async def close(self) -> None:
        self.stop()

    def stop(self) -> None:
        if self._connection is not None:
            self._connection = None
            self.sqlite.close()


class _Driver:
    """The driver module SQLAlchemy's adapter is built over: `sqlite3`'s names, our connection."""

    Connection = _Connection

    def __getattr__(self, name: str) -> Any:
        return getattr(sqlite3, name)


class _AdaptedConnection(AsyncAdapt_aiosqlite_connection):
    __slots__ = ()

    @property
    def isolation_level(self) -> str | None:
        return self._connection.isolation_level  # type: ignore[no-any-return]

    @isolation_level.setter
    def isolation_level(self, value: str | None) -> None:
        # aiosqlite's adapter queues this onto its thread; here there is no thread.
        self._connection.sqlite.isolation_level = value


class _DBAPI(AsyncAdapt_aiosqlite_dbapi):
    def connect(self, *args: Any, **kwargs: Any) -> _AdaptedConnection:
        kwargs.pop("async_creator_fn", None)
        # The pool may close a connection from another thread (engine disposal at exit).
        kwargs["check_same_thread"] = False
        connection = _Connection(sqlite3.connect(*args, **kwargs))
        # The adapter's protocol is aiosqlite's whole connection; it calls only what
        # _Connection has.
        return _AdaptedConnection(self, connection)  # type: ignore[arg-type]


class InlineSQLiteDialect(SQLiteDialect_aiosqlite):
    driver = DRIVER
    supports_statement_cache = True

    @classmethod
    def import_dbapi(cls) -> _DBAPI:
        # The adapter takes a driver module; `_Driver` stands in for one.
        return _DBAPI(_Driver(), sqlite3)  # type: ignore[arg-type]
