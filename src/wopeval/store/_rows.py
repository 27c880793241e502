"""Row dicts from the store's row dataclasses, and rows kept once whoever writes them first."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from sqlalchemy import Table
from sqlalchemy.dialects import sqlite
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.dml import Insert

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


def shallow_fields(row: DataclassInstance) -> dict[str, Any]:
    """A dataclass's fields as a dict whose values are shared, not copied.

    `dataclasses.asdict` deep-copies every JSON value (a tool's result, a trial's
    whole detail) on the hot path of every step; the insert only reads them.
    """
    names, values = _reader(type(row))
    return dict(zip(names, values(row), strict=True))


@functools.cache
def _reader(kind: type[DataclassInstance]) -> tuple[tuple[str, ...], Callable[[Any], Any]]:
    # A row of every step goes through here: `fields()` and a getattr per field cost
    # more than the rest of building the row.
    names = tuple(field.name for field in fields(kind))
    return names, operator.attrgetter(*names)


def ignoring_duplicates(connection: AsyncConnection, table: Table) -> Insert:
    """An INSERT that leaves a row whose key is already there as it is."""
    if connection.dialect.name == "postgresql":
        # Imported here: an SQLite host never loads the PostgreSQL dialect (issue 28).
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(table).on_conflict_do_nothing()
    return sqlite.insert(table).on_conflict_do_nothing()
