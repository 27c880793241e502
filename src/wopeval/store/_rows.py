"""Rows from the store's row dataclasses (as dicts, or as an insert binds them), rows copied
from one run to another, and rows kept once whoever writes them first."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from sqlalchemy import Table, select
from sqlalchemy.dialects import sqlite
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.dml import Insert

import wopeval.store._driver as _driver

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


def shallow_fields(row: DataclassInstance) -> dict[str, Any]:
    """A dataclass's fields as a dict whose values are shared, not copied.

    `dataclasses.asdict` deep-copies every JSON value (a tool's result, a trial's
    whole detail) on the hot path of every step; the insert only reads them.
    """
    names, values = _reader(type(row))
    return dict(zip(names, values(row), strict=True))


def field_values(row: DataclassInstance) -> tuple[Any, ...]:
    """A dataclass's field values in order (shared, not copied, as `shallow_fields`'s)."""
    values: tuple[Any, ...] = _reader(type(row))[1](row)
    return values


@functools.cache
def row_columns(kind: type[DataclassInstance]) -> tuple[str, ...]:
    """The columns a row of `kind` is inserted with, in its `to_row` order: the run's id,
    then its fields."""
    return ("run_id", *_reader(kind)[0])


async def copy_rows(
    connection: AsyncConnection, table: Table, source_run_id: str, target_run_id: str
) -> None:
    """Every row of `table` of the source run again, whole, under `target_run_id` (a
    replay's record of the run it re-emits)."""
    columns = tuple(table.c.keys())
    result = await connection.execute(select(table).where(table.c.run_id == source_run_id))
    at = columns.index("run_id")
    rows = [(*row[:at], target_run_id, *row[at + 1 :]) for row in result]
    await _driver.insert_many(connection, _insert(table), columns, rows)


@functools.cache
def _insert(table: Table) -> Insert:
    # One statement a table: the driver keeps each statement's compiled form by its id.
    return table.insert()


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
