"""The ownership lease: one process at a time may run a host on a database.

A host fails the runs it finds active at start-up, because on its database
they cannot belong to anyone alive. That holds only while one process owns
the database, so the owner takes this lease before it touches the store and
holds it for its whole life; a second process is refused before it migrates,
recovers or writes anything.

- SQLite: an exclusive `flock` on `<database file>.lock`, beside the database.
  The kernel drops it when the process dies, however it dies. The lock file
  holds the owner's pid, so a refused process can name it.
- PostgreSQL: a session-level advisory lock, taken on a connection of its own
  that stays open as long as the lease. PostgreSQL drops it when that session
  ends. The session's `application_name` carries the owner's pid.

The lease is a separate, small object so that a deployment in which several
processes share one database (with another way to find dead runs) can start
a host without it: in queue mode, API processes and workers take the same
advisory lock *shared* instead (`take_lease(url, shared=True)`), so any number
of them coexist while an in-process owner, which needs it exclusively, is
refused beside them, and they beside it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Protocol

from sqlalchemy import Connection, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool

from wopeval.store.db import driver_url

ADVISORY_KEY = 0x776F_7065
"""The advisory lock id of the owner lease ("wope"); advisory locks are per database."""
_APPLICATION = "wopeval owner pid="


class Lease(Protocol):
    """Held from the moment it is taken until `release()`."""

    def release(self) -> None: ...

    def keep(self) -> bool:
        """Whether this process still holds the lease, taking it again if its hold was lost
        (a PostgreSQL session cut by a restart, a network drop or an administrator); False
        when another process holds it now. Blocking: call it from a thread."""
        ...

    def watched(self) -> int | None:
        """A descriptor that turns readable as soon as the hold may be lost, so that `keep()`
        runs then, not at its next check; None when nothing can say so (a flock lasts as
        long as its descriptor; a PostgreSQL session not open now)."""
        ...


class LeaseHeld(Exception):
    """Another live process holds the database's lease."""

    def __init__(self, database: str, pid: int | None) -> None:
        self.database = database
        """The database, named without its password."""
        self.pid = pid
        """The holder's pid, when it could be read."""
        holder = f"pid {pid}" if pid is not None else "another process"
        super().__init__(f"{database} is owned by {holder}")


class DatabaseUnreachable(Exception):
    """The database refused the connection, or could not be reached at all."""

    def __init__(self, database: str, reason: str) -> None:
        self.database = database
        """The database, named without its password."""
        self.reason = reason
        """The database driver's own message (PostgreSQL's, for a refusal it sent)."""
        super().__init__(f"cannot connect to the database {database}: {reason}")


def take_lease(database_url: str, *, shared: bool = False) -> Lease:
    """Take the exclusive lease of this database now (or, `shared`, one of the queue-mode
    leases, PostgreSQL only), or raise `LeaseHeld`; never waits."""
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        if shared:
            raise ValueError("queue mode needs PostgreSQL")
        if not url.database or url.database == ":memory:":
            raise ValueError("a host needs a SQLite database file, not an in-memory database")
        return _FileLease.take(Path(url.database), database_name(database_url))
    if url.get_backend_name() == "postgresql":
        return _AdvisoryLease.take(database_url, shared=shared)
    raise ValueError(f"unsupported database {url.get_backend_name()!r}")


def database_name(database_url: str) -> str:
    """How messages name a database: a SQLite file by its path, others by URL without password."""
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite" and url.database:
        return url.database
    return url.render_as_string(hide_password=True)


class _FileLease:
    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    @classmethod
    def take(cls, database: Path, name: str) -> _FileLease:
        path = database.with_name(database.name + ".lock")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _pid_in(os.read(fd, 32))
            os.close(fd)
            raise LeaseHeld(name, pid) from None
        except BaseException:
            os.close(fd)
            raise
        os.fchmod(fd, 0o600)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        return cls(fd)

    def keep(self) -> bool:
        # The kernel holds a flock for as long as its descriptor is open.
        return self._fd is not None

    def watched(self) -> None:
        return None

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        # The file stays: unlinking a lock file lets two processes lock two different files.
        os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


class _AdvisoryLease:
    def __init__(self, connection: Connection, database_url: str, shared: bool) -> None:
        self._connection: Connection | None = connection
        self._database_url = database_url
        self._shared = shared
        self._suffix = "_shared" if shared else ""
        self._released = False

    def keep(self) -> bool:
        if self._released:
            return False
        connection = self._connection
        if connection is not None:
            try:
                connection.execute(text("SELECT 1")).scalar_one()
                connection.commit()
                return True
            except DBAPIError:
                # The session is gone, and the lock with it: take it again on a new one.
                self._connection = None
                with contextlib.suppress(Exception):
                    connection.close()
        try:
            again = _AdvisoryLease.take(self._database_url, shared=self._shared)
        except LeaseHeld:
            return False
        except DatabaseUnreachable:
            # Not known to be lost: nothing this process writes can land either until the
            # database is back, and then the lease is taken again, or found held.
            return True
        self._connection, again._connection = again._connection, None
        return True

    def watched(self) -> int | None:
        # The session's socket: an idle session (it LISTENs to nothing) reads something only
        # when the server ends it (its goodbye, then end of stream: a restart, a failover,
        # `pg_terminate_backend`, an idle timeout), or, rarely, a setting's new value, for
        # which `keep()` is one ping. The server drops the lock the moment it ends the
        # session, and a host that took it again only at its next check left the lock free
        # that long: another process could take it, fail this one's live runs as a dead
        # owner's and serve beside it (tests/cli/test_one_owner.py).
        connection = self._connection
        if connection is None or connection.closed:
            return None
        driver = connection.connection.driver_connection
        if driver is None or driver.closed:
            return None
        return int(driver.pgconn.socket)

    @classmethod
    def take(cls, database_url: str, *, shared: bool = False) -> _AdvisoryLease:
        # A session of its own, outside the store's pool: the lock lives exactly as long as it.
        url = driver_url(database_url).set(drivername="postgresql+psycopg")
        engine = create_engine(
            url,
            poolclass=NullPool,
            connect_args={"application_name": f"{_APPLICATION}{os.getpid()}"},
        )
        try:
            connection = engine.connect()
        except DBAPIError as exc:
            # The driver's message is the useful part; SQLAlchemy's wrapper adds only a link.
            reason = str(exc.orig).strip() if exc.orig is not None else str(exc)
            raise DatabaseUnreachable(database_name(database_url), reason) from None
        try:
            suffix = "_shared" if shared else ""
            taken = connection.execute(
                text(f"SELECT pg_try_advisory_lock{suffix}(:key)"), {"key": ADVISORY_KEY}
            ).scalar_one()
            if not taken:
                pid = _pid_in(_holder_application(connection))
                raise LeaseHeld(database_name(database_url), pid)
            connection.commit()
        except BaseException:
            connection.close()
            raise
        return cls(connection, database_url, shared)

    def release(self) -> None:
        self._released = True
        connection, self._connection = self._connection, None
        if connection is None:
            return
        with contextlib.suppress(Exception):  # a dead session has released the lock already
            connection.execute(
                text(f"SELECT pg_advisory_unlock{self._suffix}(:key)"), {"key": ADVISORY_KEY}
            )
            connection.commit()
        connection.close()


def _holder_application(connection: Connection) -> bytes:
    """The `application_name` of a session holding the lease (b"" if not visible); of
    several queue-mode holders, the one with the lowest pid."""
    name = connection.execute(
        text(
            "SELECT a.application_name FROM pg_locks l"
            " JOIN pg_stat_activity a ON a.pid = l.pid"
            " WHERE l.locktype = 'advisory' AND l.granted AND l.objid = :key"
            " AND l.classid = 0 AND l.objsubid = 1"
            " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " ORDER BY l.pid LIMIT 1"
        ),
        {"key": ADVISORY_KEY},
    ).scalar_one_or_none()
    return (name or "").encode()


def _pid_in(recorded: bytes) -> int | None:
    digits = recorded.decode(errors="replace").removeprefix(_APPLICATION).strip()
    return int(digits) if digits.isdigit() else None
