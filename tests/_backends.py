"""Database backends for tests: the embedded SQLite default and fresh PostgreSQL databases."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy.engine import make_url

DEFAULT_POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


@dataclass
class PostgresDatabases:
    """Creates fresh databases on one PostgreSQL server and drops them all at the end."""

    admin_url: str
    """SQLAlchemy URL of the maintenance database (`…/test`)."""
    prefix: str = field(default_factory=lambda: f"wopeval_test_{secrets.token_hex(4)}")
    created: list[str] = field(default_factory=list)

    def _libpq(self, database: str | None = None) -> str:
        url = make_url(self.admin_url).set(drivername="postgresql")
        if database is not None:
            url = url.set(database=database)
        return url.render_as_string(hide_password=False)

    def reachable(self) -> str | None:
        """None when the server answers, else why not."""
        try:
            with psycopg.connect(self._libpq(), connect_timeout=5):
                return None
        except psycopg.Error as exc:
            return f"{type(exc).__name__}: {exc}".strip()

    def create(self) -> str:
        """A new empty database; returns its SQLAlchemy URL (psycopg driver)."""
        name = f"{self.prefix}_{len(self.created)}"
        with psycopg.connect(self._libpq(), autocommit=True) as connection:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        self.created.append(name)
        url = make_url(self.admin_url).set(drivername="postgresql+psycopg", database=name)
        return url.render_as_string(hide_password=False)

    def drop_all(self) -> None:
        with psycopg.connect(self._libpq(), autocommit=True) as connection:
            for name in self.created:
                connection.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
                )
        self.created.clear()


@dataclass(frozen=True)
class Backend:
    """One database backend: `new_database()` gives a fresh, empty database URL."""

    name: str
    postgres: PostgresDatabases | None = None

    def new_database(self) -> str | None:
        """None means the embedded default: SQLite in the host's data directory."""
        if self.postgres is None:
            return None
        return self.postgres.create()


ENDED_DEADLINE_SECONDS = 30.0


def end_backends(database_url: str) -> int:
    """End every backend of `database_url`'s database (and no other's), as an administrator
    or a failover would, and wait until they are gone (their sockets closed); how many."""
    url = make_url(database_url)
    admin = url.set(drivername="postgresql", database="postgres")
    with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as admin_db:
        # Listed first, then ended: in one query the planner may end backends before it
        # filters them by database.
        found = admin_db.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (url.database,),
        )
        ended = [pid for (pid,) in found]
        terminate(admin_db, ended)
        deadline = time.monotonic() + ENDED_DEADLINE_SECONDS
        while admin_db.execute(
            "SELECT 1 FROM pg_stat_activity WHERE pid = ANY(%s)", (ended,)
        ).fetchone():
            assert time.monotonic() < deadline, "the ended backends never went"
            time.sleep(0.01)
    return len(ended)


def terminate(admin: psycopg.Connection[Any], pids: list[int]) -> None:
    """End the backends `pids` (listed by the caller first, in a statement of its own: in
    one query the planner may end backends before it filters them)."""
    admin.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) pid", (pids,))


def allow_connections(database_url: str, allowed: bool) -> None:
    """Let the database at `database_url` take new connections, or refuse them (a server
    down, as a client sees it, without stopping the server other tests share)."""
    url = make_url(database_url)
    admin = url.set(drivername="postgresql", database="postgres")
    with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as admin_db:
        admin_db.execute(
            sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS {}").format(
                sql.Identifier(url.database or ""), sql.SQL("true" if allowed else "false")
            )
        )
