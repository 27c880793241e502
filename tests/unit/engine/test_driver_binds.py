"""store/_driver.py `_processor`: the JSON columns of the log writer's rows (and on SQLite its
booleans) are bound by plain functions, only where they give what SQLAlchemy's processors give.
(tests/engine/test_driver_rows.py holds the stored rows to SQLAlchemy's on both databases.)"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import JSON, Boolean, Column, DateTime, Integer, MetaData, Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect

from wopeval.store import _driver
from wopeval.wire import json_text


def _table(name: str, last: Column[Any]) -> Table:
    """A table of a key, the store's JSON, a boolean and `last`."""
    return Table(
        name,
        MetaData(),
        Column("id", Integer, primary_key=True),
        Column("doc", JSON),
        Column("flag", Boolean),
        last,
    )


_ROWS = _table("rows", Column("nullable_doc", JSON(none_as_null=True)))


def _store_sqlite() -> Dialect:
    return sqlite.dialect(json_serializer=json_text.compact)


def _bound(dialect: Dialect, row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(
        _driver._compile(_ROWS.insert(), dialect, tuple(row)).processing(tuple(row.values()))
    )


def _sqlalchemy(dialect: Dialect, column: str, value: Any) -> Any:
    kind = _ROWS.c[column].type.dialect_impl(dialect)
    process = kind.bind_processor(dialect)
    return value if process is None else process(value)


@pytest.mark.parametrize(
    "doc", [None, {"q": "é", "n": [1, 2.5, None]}, [True, 2**70], "text", 0, {"": {}}]
)
@pytest.mark.parametrize("flag", [True, False, None, 1, 0])
def test_sqlite_binds_as_sqlalchemy_does(doc: Any, flag: Any) -> None:
    dialect = _store_sqlite()
    bound = _bound(dialect, {"doc": doc, "flag": flag, "nullable_doc": doc})
    assert bound == (
        _sqlalchemy(dialect, "doc", doc),
        _sqlalchemy(dialect, "flag", flag),
        _sqlalchemy(dialect, "nullable_doc", doc),
    )
    assert type(bound[1]) is type(_sqlalchemy(dialect, "flag", flag))


def test_the_plain_functions_are_taken_only_where_they_are_sqlalchemy_s() -> None:
    def processors(dialect: Dialect) -> dict[str, Any]:
        columns = ("doc", "flag", "nullable_doc")
        compiled = _driver._compile(_ROWS.insert(), dialect, columns)
        return {compiled.names[index]: process for index, process in compiled.processed}

    store = processors(_store_sqlite())
    assert store["doc"] is json_text.compact
    assert store["flag"] == _driver._SQLITE_BOOLEANS.__getitem__
    # None is SQL NULL here, not `null`: SQLAlchemy's own processor stays.
    assert store["nullable_doc"] is not json_text.compact
    assert _bound(_store_sqlite(), {"doc": None, "flag": None, "nullable_doc": None}) == (
        "null",
        None,
        None,
    )
    # Another codec than the store's: SQLAlchemy's processor, with that codec.
    other = processors(sqlite.dialect(json_serializer=lambda value: "x"))
    assert other["doc"] is not json_text.compact
    assert _bound(sqlite.dialect(json_serializer=lambda value: "x"), {"doc": {}}) == ("x",)
    # PostgreSQL's JSON is the store's codec's text too (the statement casts it); its
    # booleans are SQLAlchemy's own processor's.
    psycopg = postgresql.psycopg.dialect(json_serializer=json_text.compact)  # type: ignore[no-untyped-call]
    pg = processors(psycopg)
    assert pg["doc"] is json_text.compact
    assert pg["nullable_doc"] is not json_text.compact
    assert pg["flag"] != _driver._SQLITE_BOOLEANS.__getitem__
    assert "%(doc)s::JSON" in _driver._compile(_ROWS.insert(), psycopg, ("doc",)).sql


def test_a_value_no_boolean_is_refused_as_sqlalchemy_refuses_it() -> None:
    with pytest.raises(TypeError):
        _sqlalchemy(_store_sqlite(), "flag", "yes")
    with pytest.raises(KeyError):
        _bound(_store_sqlite(), {"flag": "yes"})


def test_rows_are_refused_in_another_order_than_the_statement_s() -> None:
    """A row is bound as its values come: columns named out of the statement's order (the
    table's) would store each value in another's column, so they are refused."""
    statement = _ROWS.insert()
    for dialect in (_store_sqlite(), postgresql.psycopg.dialect()):  # type: ignore[no-untyped-call]
        assert _driver._compile(statement, dialect, ("doc", "flag")).names == ("doc", "flag")
        with pytest.raises(ValueError, match="columns"):
            _driver._compile(statement, dialect, ("flag", "doc"))


def test_postgresql_rows_are_bound_in_place_of_their_names_in_order() -> None:
    assert _driver._positional("VALUES (%(a)s::JSON, %(b)s, '%%')", ("a", "b")) == (
        "VALUES (%s::JSON, %s, '%%')"
    )
    with pytest.raises(ValueError, match="in order"):
        _driver._positional("VALUES (%(b)s, %(a)s)", ("a", "b"))


_STAMPED = _table("stamped", Column("at", DateTime(timezone=True)))


def test_rows_bound_as_written_only_where_json_and_booleans_are_the_processed_columns() -> None:
    """`insert_many(written=True)` binds a row as it is: right only where every processed
    column is the store codec's JSON (written already) or a boolean (a bool both drivers
    bind as SQLAlchemy's processor does); a date, or another codec's JSON, refuses it."""
    psycopg = postgresql.psycopg.dialect(json_serializer=json_text.compact)  # type: ignore[no-untyped-call]
    for dialect in (_store_sqlite(), psycopg):
        assert _driver._compile(_ROWS.insert(), dialect, ("doc", "flag")).takes_written
        stamped = _driver._compile(_STAMPED.insert(), dialect, ("doc", "flag", "at"))
        assert stamped.takes_written is (dialect.name != "sqlite")  # PostgreSQL binds dates
    other = sqlite.dialect(json_serializer=lambda value: "x")
    assert not _driver._compile(_ROWS.insert(), other, ("doc",)).takes_written
    # None as SQL NULL is SQLAlchemy's own processor, not the codec: refused too.
    assert not _driver._compile(_ROWS.insert(), _store_sqlite(), ("nullable_doc",)).takes_written


def test_rows_that_cannot_be_bound_as_written_are_refused_before_anything_is_sent() -> None:
    class _Connection:
        dialect = _store_sqlite()

    rows = [("{}", True, datetime.now(UTC))]
    with pytest.raises(ValueError, match="cannot be bound as written"):
        asyncio.run(
            _driver.insert_many(
                _Connection(),  # type: ignore[arg-type]
                _STAMPED.insert(),
                ("doc", "flag", "at"),
                rows,
                written=True,
            )
        )
