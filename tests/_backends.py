"""Database backends for tests: the embedded SQLite default and fresh PostgreSQL databases."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

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
