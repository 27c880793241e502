"""A PostgreSQL transaction's statements held and sent together, in libpq's pipeline mode
(store/_driver.py `batched`; store/__init__.py `log_transaction`, pipelined).

A module of its own so that psycopg is imported only by a host on PostgreSQL: a SQLite
host's start-up does not pay for it (~0.2 s).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from collections import OrderedDict
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar
from weakref import WeakKeyDictionary

from psycopg import OperationalError, adapt, errors, generators, pq
from psycopg.abc import Buffer, PQGen, Transformer
from psycopg.adapt import AdaptersMap, PyFormat
from psycopg.pq.abc import PGconn, PGresult
from psycopg.types.numeric import Int8Dumper
from psycopg.waiting import READY_R

from wopeval.store._columns import NULL_MARK, VALUE_SEPARATOR, Unnest
from wopeval.store._stale import CHECK_FAILED, StaleRun
from wopeval.store.db import socket_readable


@dataclass(frozen=True, slots=True)
class _Bound:
    """A statement as libpq's `PQsendQueryParams` takes it: numbered parameters ($1, …)
    and their values apart, dumped by psycopg's adapters."""

    sql: bytes
    values: Sequence[Buffer | None]
    types: Sequence[int]
    formats: Sequence[int]


_T = TypeVar("_T")

log = logging.getLogger(__name__)

LOST_READER_CHECK_SECONDS = 1.0
"""How long a batch waits for its answers before it asks the socket itself whether the
loop's reader was taken off it (`_Readable._check`)."""

_BEGIN = _Bound(b"BEGIN", (), (), ())
_COMMIT = _Bound(b"COMMIT", (), (), ())
_ROLLBACK = _Bound(b"ROLLBACK", (), (), ())

PREPARED_MAX = 128
"""How many statements a connection's batches keep track of, prepared or seen once
(`_Prepared`): past it the least recently sent is forgotten, and closed on the server if
it was prepared. A live call's steps send a handful; a busy host's groups, an INSERT of
each row count up to `BATCH_COLUMNS_FROM_ROWS` (store/_driver.py) a table at most."""

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

    A big group's rows go as one INSERT a table of one parameter a column (`hold_columns`),
    not as a COPY: a COPY cannot go in a pipeline (libpq waits for each one's start), so
    a group of COPYs cost three exchanges, and its workers waited through all of them
    (bench/README.md, "Branch `eval-pg-overlap`"). In the pipeline the whole transaction
    is one exchange, sent before its caller's first wait.

    Straight on psycopg's libpq connection, not through its cursors: a cursor's result and
    prepared-statement bookkeeping, and its client-side binding (`mogrify`), cost a live
    call's step more Python than the rest of its send."""

    def __init__(self, driver: Any) -> None:
        self._driver = driver
        self._kept = _kept(driver)
        self._binder = self._kept.binder
        self._held: list[_Bound] = [_BEGIN]

    def hold(self, sql: str, values: dict[str, Any]) -> None:
        """Hold `sql` (pyformat) with its values."""
        numbered, names = _numbered(sql, 1)
        self._hold_values(numbered, [values[name] for name in names])

    def hold_rows(self, sql: str, rows: list[Sequence[Any]]) -> None:
        """Hold `sql` (pyformat), an INSERT of one row, with `rows`, each its values in the
        order of `sql`'s parameters: more than one, as one INSERT of every row."""
        numbered, _ = _numbered(sql, len(rows))
        self._hold_values(numbered, [value for row in rows for value in row])

    def _hold_values(self, numbered: bytes, ordered: list[Any]) -> None:
        binder = self._binder
        values = binder.dump_sequence(ordered, [PyFormat.AUTO] * len(ordered))
        self._held.append(_Bound(numbered, values, binder.types or (), binder.formats or ()))

    def hold_columns(self, into: Unnest, rows: Sequence[Sequence[Any]]) -> None:
        """Hold `into`'s INSERT with `rows`, each its values in the columns' order: a
        column at a time, each as one text of its values joined (`Unnest.joined`) when
        every column joins, else each as one array, in binary (psycopg's text arrays quote
        every element, ~20x the Python)."""
        columns = [list(column) for column in zip(*rows, strict=True)]
        texts = _joined(columns)
        binder = self._binder
        if texts is not None:
            values = binder.dump_sequence(texts, [PyFormat.TEXT] * len(texts))
            sql = into.joined
        else:
            values = binder.dump_sequence(columns, [PyFormat.BINARY] * len(columns))
            sql = into.arrays
        self._held.append(_Bound(sql.encode(), values, binder.types or (), binder.formats or ()))

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

    async def rollback(self) -> bool:
        """Roll back the transaction the batch's BEGIN opened, on libpq's connection as it
        was begun: psycopg's rollback, when it has statements of its own prepared (its
        `prepare_threshold`), sends `DEALLOCATE ALL` after the ROLLBACK, and would drop
        the batches' too. False, sending nothing, when the connection is in no transaction
        or has answers unread (a send cut short): psycopg's rollback is then the one."""
        pgconn = self._driver.pgconn
        if pgconn.pipeline_status != pq.PipelineStatus.OFF or pgconn.transaction_status not in (
            pq.TransactionStatus.INTRANS,
            pq.TransactionStatus.INERROR,
        ):
            return False
        self._held = [_ROLLBACK]
        await self._send()
        return True

    async def _send(self) -> PGresult:
        """What is held, as one pipeline; the last statement's result."""
        held, self._held = self._held, []
        driver = self._driver
        async with driver.lock:
            results = await self._pipeline(held)
        for result in results:
            if result.status == pq.ExecStatus.FATAL_ERROR:
                _raise_failed(driver, result)
        return results[-1]

    async def _pipeline(self, held: list[_Bound]) -> list[PGresult]:
        """`held` as one pipeline and one round trip; every statement's results.

        The transaction's first pipeline (its BEGIN first) refused because a statement the
        connection prepared is gone from the server (a `DISCARD ALL` or `DEALLOCATE ALL`
        sent behind the store's back, a pooler that switched server connections) wrote
        nothing: it goes again once, rolled back first, every statement unprepared."""
        results = await self._pipelined(held)
        if any(map(_statement_gone, results)):
            # Any other pipeline fails its transaction, and the next prepares anew.
            self._kept.prepared.forget()
            if held[0] is _BEGIN:
                results = (await self._pipelined([_ROLLBACK, *held]))[1:]
        return results

    async def _pipelined(self, held: list[_Bound]) -> list[PGresult]:
        driver = self._driver
        pgconn = driver.pgconn
        if pgconn.pipeline_status != pq.PipelineStatus.OFF:
            # An exchange cut short (a rollback cancelled) left its answers unread: they
            # would be taken for these statements'. The transaction fails, and with it the
            # connection (psycopg's rollback fails in a pipeline).
            raise OperationalError("the connection was left in a pipeline, answers unread")
        prepared = self._kept.prepared if driver.prepare_threshold is not None else None
        pgconn.enter_pipeline_mode()
        try:
            sent = prepared.send(pgconn, held) if prepared else _send_unprepared(pgconn, held)
            pgconn.pipeline_sync()
            if pgconn.flush():
                # More than the socket takes at once: psycopg's wait sends the rest,
                # with a reader of its own on the socket in place of ours.
                self._kept.readable.remove()
                await driver.wait(generators.send(pgconn))
            answers = await self._kept.readable.drive(_answers(pgconn, sent.commands))
        finally:
            _leave_pipeline(pgconn)
        if prepared:
            prepared.answered(sent, answers)
        # The held statements' results, and a prepare's or a close's failure, in order.
        return [
            result
            for index, answer in enumerate(answers)
            if index in sent.statements or not _succeeded(answer)
            for result in answer
        ]


def _joined(columns: list[list[Any]]) -> list[str] | None:
    """Each column's values as one text, joined by `VALUE_SEPARATOR` (store/_driver.py
    `Unnest.joined`); None when a column holds a value of another type than text, integer
    or boolean, or a separator or the NULL mark within a value (counted: the join holds one
    separator fewer than values, and a mark for each NULL only)."""
    if not columns or len(columns[0]) < 2:
        return None  # the server splits an empty text into no value at all, not one ""
    texts: list[str] = []
    for column in columns:
        nulls = column.count(None)
        kinds = set(map(type, column)) - {type(None)}
        if kinds <= {str}:
            strings = column if not nulls else [NULL_MARK if v is None else v for v in column]
        elif kinds == {bool}:
            strings = [NULL_MARK if v is None else "t" if v else "f" for v in column]
        elif kinds == {int}:
            strings = [NULL_MARK if v is None else str(v) for v in column]
        else:
            return None
        text = VALUE_SEPARATOR.join(strings)
        if text.count(VALUE_SEPARATOR) != len(column) - 1 or text.count(NULL_MARK) != nulls:
            return None
        texts.append(text)
    return texts


def _answers(pgconn: PGconn, statements: int) -> PQGen[list[list[PGresult]]]:
    """psycopg's generator (run by `_Readable.drive`) that reads each statement's results
    of a flushed pipeline; a statement after a failed one answers PIPELINE_ABORTED."""
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


class _Readable:
    """The event loop's reader of a kept connection's socket, left registered between its
    batches: psycopg's `wait` adds and removes one around every wait, two `epoll_ctl` and
    their Python a round trip.

    It removes itself when the socket is ready twice with nobody waiting (else a socket left
    readable while idle, the server gone, would wake the loop at every turn; once is no
    sign: the loop may have seen the last answer ready before the reading of it ran), and
    `unwatch` removes it before anything else waits on the connection or closes it:
    psycopg's `wait` would replace it and then remove it, and asyncio keeps a reader by the
    fd's number, so a later socket given the same number would be taken as watched and
    never be."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._loop: asyncio.AbstractEventLoop | None = None
        """The loop it is registered on, while it is."""
        self._waiter: asyncio.Future[None] | None = None
        self._unasked = False
        """Whether the socket was ready since the last wait, with nobody waiting."""

    async def drive(self, reading: PQGen[_T]) -> _T:
        """Run psycopg's generator `reading`, which waits only to read, to its end."""
        try:
            next(reading)
            while True:
                await self._readable()
                reading.send(READY_R)
        except StopIteration as done:
            value: _T = done.value
            return value

    async def _readable(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            loop.add_reader(self._fd, self._ready)
            self._loop = loop
        self._unasked = False
        waiter = self._waiter = loop.create_future()
        check = loop.call_later(LOST_READER_CHECK_SECONDS, self._check, waiter)
        try:
            await waiter
        finally:
            check.cancel()
            self._waiter = None

    def _check(self, waiter: asyncio.Future[None]) -> None:
        """A wait unwoken for a while: if the socket has answers the reader did not report,
        something took the reader off without `unwatch` (a path waiting through psycopg that
        forgot it): put it back and read, rather than wait forever. Logged, since that path
        is a bug; a slow answer (the socket not ready) just goes on waiting."""
        if waiter.done():
            return
        loop = asyncio.get_running_loop()
        if not socket_readable(self._fd):
            loop.call_later(LOST_READER_CHECK_SECONDS, self._check, waiter)  # a no-op once done
            return
        log.warning("the log writer's connection lost its reader unannounced; put back")
        loop.add_reader(self._fd, self._ready)
        self._loop = loop
        waiter.set_result(None)

    def _ready(self) -> None:
        waiter = self._waiter
        if waiter is None:
            if self._unasked:
                self.remove()
            self._unasked = True
        elif not waiter.done():
            waiter.set_result(None)

    def remove(self) -> None:
        if self._loop is not None:
            self._loop.remove_reader(self._fd)
            self._loop = None


_Key = tuple[bytes, Sequence[int]]
"""A statement's text and its parameters' types."""


@dataclass(frozen=True, slots=True)
class _Sent:
    """What went in a pipeline, by the position of each command's answer."""

    commands: int
    statements: frozenset[int]
    """The held statements' answers; the rest are prepares' and closes'."""
    preparing: tuple[tuple[int, _Key, bytes], ...] = ()
    """Each statement prepared in the pipeline, with its name."""
    closing: tuple[tuple[int, bytes], ...] = ()


def _send_unprepared(pgconn: PGconn, held: list[_Bound]) -> _Sent:
    for bound in held:
        pgconn.send_query_params(bound.sql, bound.values, bound.types, bound.formats)
    return _Sent(len(held), frozenset(range(len(held))))


class _Prepared:
    """The statements a connection's batches prepared on the server, by their text and
    their parameters' types (a value's type, as psycopg dumps it, is part of a prepared
    statement: None goes untyped, a number as a bigint).

    The server parses and plans a statement sent with its values anew each time: for a
    live call's step, more than the rest of its round trip (bench/README.md, "Branch
    `pg-prepared`"). A statement is prepared the second time it is sent, in the same
    pipeline, just before its execution, so preparing costs no round trip, and one sent
    once (an INSERT of an unusual number of rows) is not kept on the server.

    A name is recorded only once the server answered its prepare: a pipeline refused
    before it (its prepare skipped) leaves the statement unprepared, and the next
    prepares it under a new name. Names are never reused, so a prepare cannot meet a name
    already taken, whatever a refused pipeline left on the server.

    Per connection object (`_kept`): a new connection starts with none."""

    def __init__(self) -> None:
        self._names: OrderedDict[_Key, bytes | None] = OrderedDict()
        """Each statement sent, least recently first: its name once prepared, None
        until then."""
        self._named = 0
        self._closing: list[bytes] = []
        """Names forgotten past `PREPARED_MAX`, closed on the server in the next pipeline."""

    def send(self, pgconn: PGconn, held: list[_Bound]) -> _Sent:
        """Send `held` in the pipeline, after the closes due: each statement seen before as
        its prepared statement, prepared first the second time."""
        closing, self._closing = self._closing, []
        for closed in closing:
            pgconn.send_close_prepared(closed)
        commands = len(closing)
        names = self._names
        statements: list[int] = []
        preparing: list[tuple[int, _Key, bytes]] = []
        # The statements prepared in this pipeline, recorded once answered (`answered`).
        pending: dict[_Key, bytes] = {}
        for bound in held:
            name: bytes | None = None
            if bound.values:  # not BEGIN, COMMIT: nothing to plan in those
                key = (bound.sql, bound.types)
                name = pending.get(key) or names.get(key, b"")
                if name is None:  # its second use
                    self._named += 1
                    name = pending[key] = b"wopeval_%d" % self._named
                    pgconn.send_prepare(name, bound.sql, bound.types)
                    preparing.append((commands, key, name))
                    commands += 1
                elif name:
                    names.move_to_end(key)
                else:  # its first
                    self._remember(key, None)
                    name = None
            if name is None:
                pgconn.send_query_params(bound.sql, bound.values, bound.types, bound.formats)
            else:
                pgconn.send_query_prepared(name, bound.values, bound.formats)
            statements.append(commands)
            commands += 1
        return _Sent(commands, frozenset(statements), tuple(preparing), tuple(enumerate(closing)))

    def answered(self, sent: _Sent, answers: list[list[PGresult]]) -> None:
        """Record what the server did of what `send` sent: a close refused or skipped goes
        again with the next pipeline; a statement is prepared once its prepare succeeded,
        whatever became of the rest (a prepared statement outlives a rolled back
        transaction)."""
        for index, name in sent.closing:
            if not _succeeded(answers[index]):
                self._closing.append(name)
        for index, key, name in sent.preparing:
            if _succeeded(answers[index]):
                self._remember(key, name)

    def forget(self) -> None:
        """The server may have dropped the connection's prepared statements: none are known
        any more, and each is closed with the next pipeline, in case it was not (closing a
        statement the server does not have is no error)."""
        self._closing += filter(None, self._names.values())
        self._names.clear()

    def _remember(self, key: _Key, name: bytes | None) -> None:
        names = self._names
        names[key] = name
        names.move_to_end(key)
        if len(names) > PREPARED_MAX:
            _, dropped = names.popitem(last=False)
            if dropped:
                self._closing.append(dropped)


@dataclass(frozen=True, slots=True)
class _Kept:
    """What a connection's batches share (they come one after another)."""

    binder: Transformer
    readable: _Readable
    prepared: _Prepared


def _kept(driver: Any) -> _Kept:
    """This connection's `_Kept`, made at its first batch."""
    kept = _kepts.get(driver)
    if kept is None:
        kept = _kepts[driver] = _Kept(_binder(driver), _Readable(driver.pgconn.socket), _Prepared())
    return kept


def forget_prepared(driver: Any) -> None:
    """After a rollback through psycopg: it sends `DEALLOCATE ALL` with one when it has
    statements of its own prepared (its `prepare_threshold`), which drops the batches' too."""
    kept = _kepts.get(driver)
    if kept is not None:
        kept.prepared.forget()


def unwatch(driver: Any) -> None:
    """Remove the loop's reader a batch left on this connection's socket (`_Readable`)."""
    kept = _kepts.get(driver)
    if kept is not None:
        kept.readable.remove()


def _binder(driver: Any) -> Transformer:
    """psycopg's adapters of this connection, with every int dumped as bigint: by default
    psycopg picks the smallest type that holds the value, and a sum of two smallints
    (`RunsRepo.advance_known`'s known sequence and count) would overflow past 32,767.

    Made once a connection: a transformer keeps the dumpers it looked up."""
    adapters = AdaptersMap(driver.adapters)
    adapters.register_dumper(int, Int8Dumper)
    return adapt.Transformer(_Context(adapters, driver))


_kepts: WeakKeyDictionary[Any, _Kept] = WeakKeyDictionary()


@dataclass(frozen=True, slots=True)
class _Context:
    """What psycopg's `Transformer` reads of its context (psycopg.abc.AdaptContext)."""

    adapters: Any
    connection: Any


def _succeeded(answer: list[PGresult]) -> bool:
    return all(result.status == pq.ExecStatus.COMMAND_OK for result in answer)


def _statement_gone(result: PGresult) -> bool:
    """Whether `result` is a refusal to run a prepared statement the server does not have."""
    return (
        result.status == pq.ExecStatus.FATAL_ERROR
        and result.error_field(pq.DiagnosticField.SQLSTATE) == b"26000"
    )


def _raise_failed(driver: Any, result: PGresult) -> NoReturn:
    """Raise a failed result as psycopg's exception for it (`StaleRun` for a checked
    statement's failing cast)."""
    failed = errors.error_from_result(result, encoding=driver.info.encoding)
    message = failed.diag.message_primary or ""
    if isinstance(failed, errors.InvalidTextRepresentation) and CHECK_FAILED in message:
        raise StaleRun(message) from failed
    raise failed
