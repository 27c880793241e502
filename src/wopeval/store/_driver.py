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

import functools
import operator
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any, NoReturn, cast
from weakref import WeakKeyDictionary

from psycopg import OperationalError, adapt, errors, generators, pq
from psycopg.abc import Buffer, PQGen, Transformer
from psycopg.adapt import AdaptersMap, PyFormat
from psycopg.errors import InvalidTextRepresentation
from psycopg.pq.abc import PGconn, PGresult
from psycopg.types.numeric import Int8Dumper
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import ClauseElement, Insert
from sqlalchemy.sql.compiler import SQLCompiler

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

    def ordered(self, row: Row) -> tuple[Any, ...]:
        """The row's values in `names` order, each as the database takes it."""
        values = self.values(row)
        if not self.processed:
            return values
        listed = list(values)
        for index, process in self.processed:
            listed[index] = process(listed[index])
        return tuple(listed)

    def bind(self, row: Row) -> Sequence[Any] | dict[str, Any]:
        values = self.ordered(row)
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
    processors = (
        compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect) for name in names
    )
    processed = tuple(
        (index, process) for index, process in enumerate(processors) if process is not None
    )
    made = _Compiled(compiled.string, names, _getter(names), processed, sqlite)
    _compiled[key] = (statement, made)
    return made


def driver_connection(connection: AsyncConnection) -> Any:
    # The pool's connection of this transaction, and under SQLAlchemy's adapter the
    # driver's: our inline SQLite connection (store/_sqlite_inline.py) or psycopg's.
    return connection.sync_connection.connection.driver_connection  # type: ignore[union-attr]


async def insert_many(
    connection: AsyncConnection, statement: ClauseElement, rows: Sequence[Row]
) -> None:
    """INSERT `rows` (all with the same keys) through `statement`, an `insert(table)`.

    On PostgreSQL many rows go in one COPY (see `COPY_FROM_ROWS`)."""
    if not rows:
        return
    compiled = _compile(statement, connection.dialect, tuple(rows[0]))
    if compiled.sqlite:
        await _execute_many(connection, compiled, rows)
        return
    driver = driver_connection(connection)
    batch = _batches.get(id(driver))
    if batch is not None:
        # One INSERT of every row: the server parses and plans a batch's statements
        # anew each time (no prepared statements), so one a table, not one a row.
        batch.hold_rows(compiled.sql, [cast(dict[str, Any], compiled.bind(row)) for row in rows])
        return
    if len(rows) < COPY_FROM_ROWS:
        await _execute_many(connection, compiled, rows)
        return
    table = cast(Insert, statement).table
    preparer = connection.dialect.identifier_preparer
    columns = ", ".join(preparer.quote(name) for name in compiled.names)
    async with driver.cursor() as cursor:
        copy_sql = f"COPY {preparer.format_table(table)} ({columns}) FROM STDIN"
        async with cursor.copy(copy_sql) as copy:
            for row in rows:
                await copy.write_row(compiled.ordered(row))


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


@dataclass(frozen=True, slots=True)
class _Bound:
    """A statement as libpq's `PQsendQueryParams` takes it: numbered parameters ($1, …)
    and their values apart, dumped by psycopg's adapters."""

    sql: bytes
    values: Sequence[Buffer | None]
    types: Sequence[int]
    formats: Sequence[int]


_BEGIN = _Bound(b"BEGIN", (), (), ())
_COMMIT = _Bound(b"COMMIT", (), (), ())

_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%")


@functools.lru_cache(maxsize=1024)
def _numbered(sql: str, rows: int) -> tuple[bytes, tuple[str, ...]]:
    """`sql` (pyformat, as compiled for psycopg) with its parameters numbered, and the name
    of each number in order; for an INSERT of more than one row, its VALUES tuple once
    a row, numbered on (the names are then a row's, taken row after row)."""
    if rows > 1:
        head, _, values = sql.partition(" VALUES ")
        sql = f"{head} VALUES {', '.join([values] * rows)}"
    names: list[str] = []

    def number(found: re.Match[str]) -> str:
        name = found.group(1)
        if name is None:
            return "%"
        names.append(name)
        return f"${len(names)}"

    numbered = _PLACEHOLDER.sub(number, sql)
    return numbered.encode(), tuple(names[: len(names) // rows])


class Batch:
    """A PostgreSQL transaction's statements sent together (store/__init__.py
    `log_transaction`, pipelined): each is held, its values bound as the protocol's
    parameters, until a statement whose rows are read, or the COMMIT, and then they go
    in libpq's pipeline mode: one `send` and one round trip, the transaction's BEGIN first.

    Straight on psycopg's libpq connection, not through its cursors: a cursor's result and
    prepared-statement bookkeeping, and its client-side binding (`mogrify`), cost a live
    call's step more Python than the rest of its send."""

    def __init__(self, driver: Any) -> None:
        self._driver = driver
        self._binder = _binder(driver)
        self._held = [_BEGIN]

    def hold(self, sql: str, values: dict[str, Any]) -> None:
        """Hold `sql` (pyformat) with its values."""
        self.hold_rows(sql, [values])

    def hold_rows(self, sql: str, rows: list[dict[str, Any]]) -> None:
        """Hold `sql` (pyformat) with the values of `rows`: with more than one, `sql` is an
        INSERT of one row, held as one INSERT of every row."""
        numbered, names = _numbered(sql, len(rows))
        ordered = [row[name] for row in rows for name in names]
        binder = self._binder
        values = binder.dump_sequence(ordered, [PyFormat.AUTO] * len(ordered))
        self._held.append(_Bound(numbered, values, binder.types or (), binder.formats or ()))

    async def fetch(self, sql: str, values: dict[str, Any]) -> list[tuple[Any, ...]]:
        """Run what is held and `sql` with its values; `sql`'s rows.

        Raises `StaleRun` when a checked statement among them (`hold_checked`) changed
        fewer rows than it had to."""
        self.hold(sql, values)
        result = await self._send()
        binder = self._binder
        binder.set_pgresult(result)
        rows: list[tuple[Any, ...]] = binder.load_rows(0, result.ntuples, tuple)
        binder.set_pgresult(None)
        return rows

    async def commit(self) -> None:
        """Send what is held with the COMMIT; returns once the server answered it."""
        self._held.append(_COMMIT)
        committed = await self._send()
        if committed.command_status != b"COMMIT":
            raise RuntimeError(f"the transaction ended {committed.command_status!r}")

    async def _send(self) -> PGresult:
        """What is held, as one pipeline and one round trip; the last statement's result."""
        held, self._held = self._held, []
        driver = self._driver
        pgconn = driver.pgconn
        async with driver.lock:
            pgconn.enter_pipeline_mode()
            try:
                for bound in held:
                    pgconn.send_query_params(bound.sql, bound.values, bound.types, bound.formats)
                pgconn.pipeline_sync()
                answers = await driver.wait(_answers(pgconn, len(held)))
            finally:
                _leave_pipeline(pgconn)
        for answer in answers:
            for result in answer:
                if result.status == pq.ExecStatus.FATAL_ERROR:
                    _raise_failed(driver, result)
        last: PGresult = answers[-1][-1]
        return last


def _answers(pgconn: PGconn, statements: int) -> PQGen[list[list[PGresult]]]:
    """psycopg's generator (run by its connection's `wait`) that flushes a pipeline and
    reads each statement's results; a statement after a failed one answers PIPELINE_ABORTED."""
    yield from generators.send(pgconn)
    answers: list[list[PGresult]] = []
    for _ in range(statements):
        answers.append((yield from generators.fetch_many(pgconn)))
    yield from generators.fetch_many(pgconn)  # the pipeline's sync
    return answers


def _leave_pipeline(pgconn: Any) -> None:
    """Out of pipeline mode, if every result was read; otherwise (the wait was cut short)
    the connection is left in it, and its transaction's rollback fails and discards it."""
    with suppress(OperationalError):
        pgconn.exit_pipeline_mode()


def _binder(driver: Any) -> Transformer:
    """psycopg's adapters of this connection, with every int dumped as bigint: by default
    psycopg picks the smallest type that holds the value, and a sum of two smallints
    (`RunsRepo.advance_known`'s known sequence and count) would overflow past 32,767.

    Made once a connection (its batches come one after another): a transformer keeps the
    dumpers it looked up."""
    binder = _binders.get(driver)
    if binder is None:
        adapters = AdaptersMap(driver.adapters)
        adapters.register_dumper(int, Int8Dumper)
        binder = _binders[driver] = adapt.Transformer(_Context(adapters, driver))
    return binder


_binders: WeakKeyDictionary[Any, Transformer] = WeakKeyDictionary()


@dataclass(frozen=True, slots=True)
class _Context:
    """What psycopg's `Transformer` reads of its context (psycopg.abc.AdaptContext)."""

    adapters: Any
    connection: Any


class StaleRun(Exception):
    """A checked statement of a pipelined transaction (`hold_checked`), or of SQLite's
    (`run_checked`), changed fewer rows than it had to: nothing of the transaction is
    written (the server stopped at it and its COMMIT never ran; SQLite's is rolled back),
    and the caller goes the way that reads what it had assumed."""


_CHECK_FAILED = "wopeval: checked statement changed rows: "
"""What the failing cast of a checked statement reads, so that its error is told apart."""


def _raise_if_stale(failed: InvalidTextRepresentation) -> None:
    """`StaleRun` from `failed` if it is a checked statement's failing cast."""
    message = failed.diag.message_primary or ""
    if _CHECK_FAILED in message:
        raise StaleRun(message) from failed


def _raise_failed(driver: Any, result: PGresult) -> NoReturn:
    """Raise a failed result as psycopg's exception for it (`StaleRun` for a failed check)."""
    failed = errors.error_from_result(result, encoding=driver.info.encoding)
    if isinstance(failed, errors.InvalidTextRepresentation):
        _raise_if_stale(failed)
    raise failed


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
        f" ELSE CAST('{_CHECK_FAILED}' || count(*) AS integer) END FROM changed",
        values,
    )


def run_checked(connection: AsyncConnection, sql: str, values: Row, rows: int) -> None:
    """Run `sql`, a SQLite UPDATE (named parameters) that must change exactly `rows` rows;
    `StaleRun` when it changes fewer (the caller's transaction then ends without writing
    anything, as a PostgreSQL batch's does at a failed check, `hold_checked`)."""
    changed = driver_connection(connection).sqlite.execute(sql, values).rowcount
    if changed != rows:
        raise StaleRun(f"{_CHECK_FAILED}{changed}, not {rows}")


_batches: dict[int, Batch] = {}
"""The batch of each driver connection in one (by the connection's id, while it lasts)."""


def in_a_batch(driver: Any) -> bool:
    return id(driver) in _batches


@contextmanager
def batched(driver: Any) -> Iterator[Batch]:
    """Hold this connection's statements in a batch for the block (see `Batch`)."""
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
    values = [compiled.bind(row) for row in rows]
    driver = driver_connection(connection)
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
