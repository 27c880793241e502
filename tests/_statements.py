"""What SQL a test's store runs: for tests that a path reads a table, or does not."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from psycopg.pq import Trace
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

SUITE_READ = re.compile(r"\s*SELECT\b.*\bFROM suites\b", re.DOTALL | re.IGNORECASE)
"""A read of the suites table."""


@contextmanager
def statements_matching(engine: AsyncEngine, pattern: re.Pattern[str]) -> Iterator[list[str]]:
    """The statements `engine` runs that `pattern` matches (from their start) while the
    block runs, in the order they ran; the list fills as they do."""
    seen: list[str] = []

    def note(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if pattern.match(statement):
            seen.append(statement)

    sync_engine = engine.sync_engine
    event.listen(sync_engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        event.remove(sync_engine, "before_cursor_execute", note)


_PARSED = re.compile(r'\s*"([^"]*)"\s+"(.*)"[\sN\d]*', re.DOTALL)
"""A traced Parse message: its statement's name, its text, and its parameters' types
(NNNN: the trace's regress mode hides type ids)."""
_BOUND = re.compile(r'\s*"[^"]*"\s+"([^"]*)"', re.DOTALL)
"""A traced Bind message: its portal's name, then its statement's."""

UNNAMED = "unnamed"
"""How a statement was sent (`Sent.how`): parsed for this execution alone, with its values;"""
PREPARES = "prepares"
"""parsed under a name (prepared) in the same exchange, then run by its name;"""
PREPARED = "prepared"
"""run by the name of a statement prepared before the exchange."""


@dataclass(frozen=True)
class Sent:
    """A statement a psycopg connection sent in an extended-protocol exchange."""

    text: str
    how: str


@contextmanager
def round_trips(driver: Any) -> Iterator[list[str]]:
    """What a psycopg connection (`driver`) sends the server while the block runs, one entry
    per wait for its answer: a simple query's whole text (its statements joined by `;`),
    or an extended-protocol exchange's (a pipeline's, up to its Sync) statements joined
    by `;` ("<sync>" if it ran none), a prepared statement's by its text (`exchanges`).
    The list is filled when the block ends."""
    seen: list[str] = []
    with exchanges(driver) as sent:
        yield seen
    seen += [
        exchange if isinstance(exchange, str) else ";".join(s.text for s in exchange) or "<sync>"
        for exchange in sent
    ]


@contextmanager
def exchanges(driver: Any) -> Iterator[list[str | list[Sent]]]:
    """What a psycopg connection (`driver`) sends while the block runs, one entry per wait
    for its answer: a simple query's text, or an extended-protocol exchange's statements
    (a pipeline's, up to its Sync), each as it was run (`Sent`). From libpq's own trace of
    the connection, so statements that bypass SQLAlchemy (the log writer's) are seen too;
    a statement prepared before the block is named by the server's own list of them. The
    list is filled when the block ends."""
    found = driver.pgconn.exec_(b"SELECT name, statement FROM pg_prepared_statements")
    names = {
        found.get_value(row, 0).decode(): found.get_value(row, 1).decode()
        for row in range(found.ntuples)
    }
    seen: list[str | list[Sent]] = []
    with tempfile.TemporaryFile("w+") as trace:
        driver.pgconn.trace(trace.fileno())
        driver.pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS | Trace.REGRESS_MODE)
        try:
            yield seen
        finally:
            driver.pgconn.untrace()
            trace.seek(0)
            lines = trace.read().splitlines()
    # A message is a line "F|B <tab> length <tab> type <tab> ...", a query's text running
    # on over the lines that start otherwise.
    messages: list[list[str]] = []
    for line in lines:
        if line.startswith(("F\t", "B\t")):
            messages.append([line])
        elif messages:
            messages[-1].append(line)
    exchange: list[Sent] = []
    unnamed = ""
    prepared_here: set[str] = set()
    for message in messages:
        direction, _length, kind, *text = "\n".join(message).split("\t", 3)
        if direction != "F":
            continue
        if kind == "Query":
            seen.append(text[0].strip().strip('"'))
        elif kind == "Parse":
            name, statement = _PARSED.fullmatch(text[0]).groups()  # type: ignore[union-attr]
            if name:
                names[name] = statement
                prepared_here.add(name)
            else:
                unnamed = statement
        elif kind == "Bind":
            name = _BOUND.match(text[0]).group(1)  # type: ignore[union-attr]
            if not name:
                exchange.append(Sent(unnamed, UNNAMED))
            else:
                how = PREPARES if name in prepared_here else PREPARED
                # A name the server dropped before the block: by the name.
                exchange.append(Sent(names.get(name, f"<{name}>"), how))
        elif kind == "Sync":
            seen.append(exchange)
            exchange = []
            prepared_here = set()
