"""The run log writer's statements, run on the database driver's own connection.

Every step of every run lands through a handful of statements (its events, its tool
call records, its run row's move). Through SQLAlchemy's async execution each costs
about 30 µs of Python on a 2-core machine; the statement itself, on SQLite, 1–8 µs,
and a live tool call lands two steps. So these statements are compiled by SQLAlchemy
once per dialect (and per set of inserted columns), their values put through the
same bind processors SQLAlchemy would use (JSON by the store's codec, SQLite's
datetime format, booleans), and handed to the driver connection of the caller's
transaction: the same connection and the same transaction, only not SQLAlchemy's
per-execution work (docs/decisions.md, "The log writer's statements").

A driver error is raised as the driver's own exception (`sqlite3.Error`,
`psycopg.Error`): the log writer treats every failure of a group alike.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import JSON, Boolean
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import ClauseElement, Insert
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.types import TypeEngine

from wopeval.store._columns import NULL_MARK, VALUE_SEPARATOR, Unnest
from wopeval.store._stale import CHECK_FAILED, StaleRun
from wopeval.wire import json_text

if TYPE_CHECKING:
    from wopeval.store._pg_batch import Batch

Row = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    names: tuple[str, ...]
    values: Callable[[Row], tuple[Any, ...]]
    """A row's values in `names` order."""
    processed: tuple[tuple[int, Callable[[Any], Any]], ...]
    """The positions whose values go through a bind processor, with it."""
    sqlite: bool
    """SQLite's values go in order (qmark) to a plain `sqlite3` call on the loop
    (store/_sqlite_inline.py); psycopg's by name (pyformat) to an awaited one."""
    positional: str
    """On PostgreSQL, an INSERT's `sql` with its parameters in place (psycopg's `%s`, in
    `names` order), for rows given as their values in order (`insert_many`)."""
    inserts: tuple[tuple[int, str], ...] = ()
    """On SQLite, an INSERT's `sql` for many rows at once (`insert_many`): by rows, the
    most first, each half the one before, down to one row (`sql` itself)."""
    unnest: Unnest | None = None
    """On PostgreSQL, an INSERT's rows bound a column at a time (`insert_many` in a
    pipelined transaction, `BATCH_COLUMNS_FROM_ROWS`)."""
    takes_written: bool = False
    """Whether a row whose JSON columns hold their text already and whose booleans are bools
    binds as it is (`insert_many`'s `written`): every processed column is JSON written by the
    store's codec (`json_text.compact`) or a boolean, which both drivers bind as
    SQLAlchemy's processor would (`sqlite3` a bool as 1 or 0)."""

    def processing(self, values: Sequence[Any]) -> Sequence[Any]:
        """Values in `names` order, each as the database takes it."""
        if not self.processed:
            return values
        listed = list(values)
        for index, process in self.processed:
            listed[index] = process(listed[index])
        return listed

    def bind(self, row: Row) -> Sequence[Any] | dict[str, Any]:
        values = self.processing(self.values(row))
        return values if self.sqlite else dict(zip(self.names, values, strict=True))


def _getter(names: tuple[str, ...]) -> Callable[[Row], tuple[Any, ...]]:
    # itemgetter of one name returns the value itself, not a 1-tuple.
    if len(names) == 1:
        (name,) = names
        return lambda row: (row[name],)
    return operator.itemgetter(*names)


COPY_FROM_ROWS = 16
"""From this many rows, a PostgreSQL insert is one COPY. An INSERT a row, even pipelined,
cost psycopg more than the rest of the log writer's work on the eval bench (whose groups
carry thousands); a COPY takes a round trip more, so a live call's row or two still go
as INSERTs."""

BATCH_COLUMNS_FROM_ROWS = 64
"""From this many rows, an insert held in a pipelined transaction binds one parameter a
column (store/_pg_batch.py `Batch.hold_columns`, `_unnest`: each column's values joined in
one text, or as one array); fewer go as one INSERT of every row (a busy host's group of
live calls, a row or two from each run). Both go in the transaction's one pipeline. Many
rows as one INSERT of every row took the server longer than their COPY (bench/README.md,
"Branch `eval-fast`"); a column at a time, as long as the COPY ("Branch
`eval-pg-overlap`"), and with no round trip of their own."""

_compiled: dict[tuple[int, str, tuple[str, ...] | None], tuple[ClauseElement, _Compiled]] = {}
"""By statement, dialect name and inserted columns (every engine is made by db.py's
`create_engine`, with the same JSON codec). The statement is kept beside its compiled
form so that its id is never reused for another while the entry lives."""


def _compile(
    statement: ClauseElement, dialect: Dialect, columns: tuple[str, ...] | None
) -> _Compiled:
    key = (id(statement), dialect.name, columns)
    kept = _compiled.get(key)
    if kept is not None:
        return kept[1]
    compiled = cast(
        SQLCompiler,
        statement.compile(dialect=dialect, column_keys=None if columns is None else list(columns)),
    )
    sqlite = dialect.name == "sqlite"
    names = tuple(compiled.positiontup or ()) if sqlite else tuple(compiled.binds)
    positional = ""
    unnest = None
    if columns is not None:
        if names != columns:
            # Rows are given as their values in `columns` order, bound as they come.
            raise ValueError(f"rows of the columns {columns} for a statement of {names}")
        if not sqlite:
            positional = _positional(compiled.string, names)
            unnest = _unnest(statement, dialect, names)
    kinds = [compiled.binds[name].type for name in names]
    processors = (_processor(kind, dialect) for kind in kinds)
    processed = tuple(
        (index, process) for index, process in enumerate(processors) if process is not None
    )
    takes_written = all(
        process is json_text.compact or isinstance(kinds[index], Boolean)
        for index, process in processed
    )
    inserts = _sqlite_inserts(compiled.string, len(names)) if sqlite and columns else ()
    made = _Compiled(
        compiled.string,
        names,
        _getter(names),
        processed,
        sqlite,
        positional,
        inserts,
        unnest,
        takes_written,
    )
    _compiled[key] = (statement, made)
    return made


SQLITE_PARAMETERS = 999
"""Parameters one SQLite INSERT of many rows binds at most: the lowest limit a SQLite build
has had by default (`SQLITE_MAX_VARIABLE_NUMBER` before 3.32), so every build takes it."""


def _sqlite_inserts(sql: str, width: int) -> tuple[tuple[int, str], ...]:
    """`sql`, a one-row INSERT of `width` values, as INSERTs of 2**k rows for each k up to
    the most rows that `SQLITE_PARAMETERS` allows, the most first, and `sql` itself last. A
    few texts write any count of rows (its binary digits), each kept in `sqlite3`'s
    statement cache.

    An INSERT of many rows is `OR ROLLBACK`: one that conflicts ends its whole transaction
    there. Every transaction these rows go in fails whole at any error anyway (the log
    writer's, a replay's copy; none catches a conflict and goes on), and it spares SQLite
    the statement journal it keeps otherwise, to undo that one statement alone: the pages
    it changes copied first. Rows of many runs change pages all over the primary keys'
    indexes, and with that journal 40 events and 20 tool calls of 40 runs took longer as
    one statement each than through `executemany`."""
    values = "(" + ", ".join("?" * width) + ")"
    if not (sql.startswith("INSERT INTO ") and sql.endswith(" VALUES " + values)):
        raise ValueError(f"not an INSERT of one row of {width} values: {sql!r}")
    head = "INSERT OR ROLLBACK INTO " + sql[len("INSERT INTO ") : -len(values)]
    rows = 1
    while rows * 2 * width <= SQLITE_PARAMETERS:
        rows *= 2
    texts = []
    while rows > 1:
        texts.append((rows, head + ", ".join([values] * rows)))
        rows //= 2
    return (*texts, (1, sql))


def _processor(kind: TypeEngine[Any], dialect: Dialect) -> Callable[[Any], Any] | None:
    """The bind processor SQLAlchemy would use for a value of `kind`; for the log writer's
    JSON columns, and on SQLite its booleans, a function that gives what it gives without
    its checks of its own sentinels (which the host's rows never hold): every tool call's
    row binds three JSON columns and two booleans, and SQLAlchemy's processors cost more
    than the writing itself."""
    impl = kind.dialect_impl(dialect)
    process = impl.bind_processor(dialect)
    if process is None:
        return process
    # JSON's processor is the codec alone (a subclass of `JSON` is adapted to one) unless
    # None is SQL NULL. SQLite's writes the text as is. PostgreSQL's wraps the value for
    # psycopg's JSON dumper, which writes the same codec's text (the driver's JSON dumps are
    # the store's codec, db.py): the text itself goes instead, as its parameter (which the
    # statement casts, `::JSON`: SQLAlchemy's bind casts on psycopg) or in COPY's data.
    written: Callable[[Any], str] = json_text.compact
    if isinstance(impl, JSON) and dialect._json_serializer is written and not impl.none_as_null:
        # As JSON's processor: None too is written (`null`), not bound as SQL NULL.
        return written
    if dialect.name == "sqlite" and type(impl) is Boolean:
        # As Boolean's processor on SQLite: True, False and None only (1 and 0 equal them),
        # as 1, 0 and NULL; anything else raises (a KeyError where SQLAlchemy's TypeError).
        return _SQLITE_BOOLEANS.__getitem__
    return process


_SQLITE_BOOLEANS: dict[bool | None, int | None] = {None: None, True: 1, False: 0}


def driver_connection(connection: AsyncConnection) -> Any:
    # The pool's connection of this transaction, and under SQLAlchemy's adapter the
    # driver's: our inline SQLite connection (store/_sqlite_inline.py) or psycopg's.
    return connection.sync_connection.connection.driver_connection  # type: ignore[union-attr]


async def insert_many(
    connection: AsyncConnection,
    statement: ClauseElement,
    columns: tuple[str, ...],
    rows: Sequence[Sequence[Any]],
    *,
    written: bool = False,
) -> None:
    """INSERT `rows` through `statement`, an `insert(table)`, each row its values of
    `columns`, which are the statement's in its order (the table's): the rows are built as
    the statement binds them, not as dicts to be taken apart again a row at a time.

    `written`: each row's JSON columns hold the text the store's codec writes of their
    values (`json_text.compact`'s) and its booleans are bools, so the rows are bound as
    they are, without a bind processor's call for each of those values (a tool call's row
    has five); a statement whose columns need another processor refuses them.

    On PostgreSQL, in a pipelined transaction (the log writer's) the rows go in its pipeline
    (`BATCH_COLUMNS_FROM_ROWS`); outside one, many rows go in one COPY (`COPY_FROM_ROWS`)."""
    if not rows:
        return
    compiled = _compile(statement, connection.dialect, columns)
    if written and not compiled.takes_written:
        raise ValueError(f"rows of {columns} cannot be bound as written: {compiled.sql!r}")
    driver = driver_connection(connection)
    # A statement without processed columns (an event's row) binds the rows as they are.
    if written or not compiled.processed:
        processed = list(rows)
    else:
        processed = list(map(compiled.processing, rows))
    if compiled.sqlite:
        _sqlite_insert(driver.sqlite, compiled.inserts, processed)
        return
    batch = _batches.get(id(driver))
    if batch is not None and compiled.unnest is not None and len(rows) >= BATCH_COLUMNS_FROM_ROWS:
        batch.hold_columns(compiled.unnest, processed)
        return
    if batch is not None:
        # One INSERT of every row: the server parses and plans a batch's statements
        # anew each time (no prepared statements), so one a table, not one a row.
        batch.hold_rows(compiled.sql, processed)
        return
    if len(rows) < COPY_FROM_ROWS:
        async with driver.cursor() as cursor:
            await cursor.executemany(compiled.positional, processed)
        return
    async with (
        driver.cursor() as cursor,
        cursor.copy(_copy_sql(connection, statement, compiled)) as copy,
    ):
        for values in processed:
            await copy.write_row(values)


def _sqlite_insert(
    sqlite: Any, inserts: tuple[tuple[int, str], ...], rows: Sequence[Sequence[Any]]
) -> None:
    """`rows` through `inserts` (`_sqlite_inserts`), as many at once as each takes.

    Not `executemany`, which steps and resets the statement once a row, releasing the
    GIL and taking it back around each step: for an event's row that costs about as much
    as SQLite's insert of it. An eval group's 768 events and 320 tool calls, replayed, take
    1.0 ms this way against 1.8 ms through `executemany`, and 40 events and 20 tool calls
    of 40 runs 79 against 101 µs (bench/README.md, "Branch `sqlite-offload`"); one row (a
    live call's) is the one-row statement, as before."""
    count = len(rows)
    if count == 1:
        sqlite.execute(inserts[-1][1], rows[0])
        return
    start = 0
    for size, sql in inserts:
        while count - start >= size:
            if size == 1:
                sqlite.execute(sql, rows[start])
            else:
                sqlite.execute(sql, list(chain.from_iterable(rows[start : start + size])))
            start += size


_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def _positional(sql: str, names: tuple[str, ...]) -> str:
    """`sql` (pyformat) with psycopg's positional `%s` for its named parameters, which must
    come in `names` order, each once."""
    if tuple(_PLACEHOLDER.findall(sql)) != names:
        raise ValueError(f"the parameters of {sql!r} are not {names} in order")
    return _PLACEHOLDER.sub("%s", sql)


def _copy_sql(connection: AsyncConnection, statement: ClauseElement, compiled: _Compiled) -> str:
    """The COPY FROM STDIN of `statement`'s table and `compiled`'s columns, in its order."""
    preparer = connection.dialect.identifier_preparer
    columns = ", ".join(preparer.quote(name) for name in compiled.names)
    return f"COPY {preparer.format_table(cast(Insert, statement).table)} ({columns}) FROM STDIN"


def _unnest(statement: ClauseElement, dialect: Dialect, names: tuple[str, ...]) -> Unnest:
    """`statement`'s INSERT of the columns `names` from one parameter a column."""
    table = cast(Insert, statement).table
    preparer = dialect.identifier_preparer
    head = (
        f"INSERT INTO {preparer.format_table(table)}"
        f" ({', '.join(preparer.quote(name) for name in names)}) SELECT * FROM unnest"
    )
    types = [f"{table.c[name].type.compile(dialect)}[]" for name in names]
    split = f"E'\\x{ord(VALUE_SEPARATOR):02x}', E'\\x{ord(NULL_MARK):02x}'"
    joined = ", ".join(
        f"string_to_array(${index}::text, {split})::{kind}" for index, kind in enumerate(types, 1)
    )
    arrays = ", ".join(f"${index}::{kind}" for index, kind in enumerate(types, 1))
    return Unnest(f"{head}({joined})", f"{head}({arrays})")


async def execute_many(
    connection: AsyncConnection, statement: ClauseElement, rows: Sequence[Row]
) -> None:
    """Run `statement` once per row of bind values."""
    if not rows:
        return
    await _execute_many(connection, _compile(statement, connection.dialect, None), rows)


async def fetch(
    connection: AsyncConnection, statement: ClauseElement, values: Row
) -> list[tuple[Any, ...]]:
    """Run `statement` once and return its rows (its RETURNING clause's, for a DML)."""
    compiled = _compile(statement, connection.dialect, None)
    driver = driver_connection(connection)
    if compiled.sqlite:
        rows: list[tuple[Any, ...]] = driver.sqlite.execute(
            compiled.sql, compiled.bind(values)
        ).fetchall()
        return rows
    batch = _batches.get(id(driver))
    if batch is not None:
        return await batch.fetch(compiled.sql, cast(dict[str, Any], compiled.bind(values)))
    cursor = await driver.execute(compiled.sql, compiled.bind(values))
    return await cursor.fetchall() if cursor.description is not None else []


def hold_checked(connection: AsyncConnection, sql: str, values: dict[str, Any], rows: int) -> None:
    """Hold `sql`, an UPDATE (pyformat, no RETURNING) that must change exactly `rows` rows,
    in the connection's batch; the batch's send raises `StaleRun` when it changes fewer.

    Nothing is read back, so the statement costs no round trip of its own. The check is
    the server's: a count other than `rows` casts a text that is no integer, an error
    that ends the query there, before the statements held after it (the COMMIT among
    them). The text is not a constant, or the planner could fold the cast, and fail it,
    before any row is changed."""
    batch = _batches.get(id(driver_connection(connection)))
    if batch is None:
        raise RuntimeError("a checked statement outside a pipelined transaction")
    batch.hold(
        f"WITH changed AS ({sql} RETURNING 1) SELECT CASE count(*) WHEN {rows} THEN 0"
        f" ELSE CAST('{CHECK_FAILED}' || count(*) AS integer) END FROM changed",
        values,
    )


def run_checked(connection: AsyncConnection, sql: str, values: Row, rows: int) -> None:
    """Run `sql`, a SQLite UPDATE (named parameters) that must change exactly `rows` rows;
    `StaleRun` when it changes fewer (the caller's transaction then ends without writing
    anything, as a PostgreSQL batch's does at a failed check, `hold_checked`)."""
    changed = driver_connection(connection).sqlite.execute(sql, values).rowcount
    if changed != rows:
        raise StaleRun(f"{CHECK_FAILED}{changed}, not {rows}")


_batches: dict[int, Batch] = {}
"""The batch of each driver connection in one (by the connection's id, while it lasts)."""


def in_a_batch(driver: Any) -> bool:
    return id(driver) in _batches


@contextmanager
def batched(driver: Any) -> Iterator[Batch]:
    """Hold this connection's statements in a batch for the block (see `Batch`)."""
    from wopeval.store._pg_batch import Batch  # a PostgreSQL store's only (psycopg)

    batch = _batches[id(driver)] = Batch(driver)
    try:
        yield batch
    finally:
        del _batches[id(driver)]


async def select_rows(
    connection: AsyncConnection, statement: ClauseElement
) -> list[tuple[Any, ...]]:
    """The rows of a SELECT as the driver returns them, without SQLAlchemy's result rows.

    For a read of thousands of rows (a fixture source's calls), where building and
    processing a result row per row cost a create several ms. The statement is compiled
    for this call (its IN lists expanded), so it need not be built once. Its bound values
    go to the driver as they are and its columns come back as the driver decodes them: it
    binds and selects only what needs no processor of SQLAlchemy's (text, numbers).
    """
    compiled = cast(
        SQLCompiler,
        statement.compile(dialect=connection.dialect, compile_kwargs={"render_postcompile": True}),
    )
    params = compiled.params
    driver = driver_connection(connection)
    if connection.dialect.name == "sqlite":
        ordered = [params[name] for name in compiled.positiontup or ()]
        rows: list[tuple[Any, ...]] = driver.sqlite.execute(compiled.string, ordered).fetchall()
        return rows
    cursor = await driver.execute(compiled.string, params)
    return cast(list[tuple[Any, ...]], await cursor.fetchall())


async def _execute_many(
    connection: AsyncConnection, compiled: _Compiled, rows: Sequence[Row]
) -> None:
    driver = driver_connection(connection)
    values = [compiled.bind(row) for row in rows]
    if compiled.sqlite:
        driver.sqlite.executemany(compiled.sql, values)
        return
    batch = _batches.get(id(driver))
    if batch is not None:
        for bound in values:
            batch.hold(compiled.sql, cast(dict[str, Any], bound))
        return
    async with driver.cursor() as cursor:
        await cursor.executemany(compiled.sql, values)
