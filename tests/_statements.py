"""What SQL a test's store runs: for tests that a path reads a table, or does not."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
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


_PARSED = re.compile(r'\s*"[^"]*"\s+"(.*)"[\sN\d]*', re.DOTALL)
"""A traced Parse message: its statement's name, its text, and its parameters' types
(NNNN: the trace's regress mode hides type ids)."""


@contextmanager
def round_trips(driver: Any) -> Iterator[list[str]]:
    """What a psycopg connection (`driver`) sends the server while the block runs, one entry
    per wait for its answer: a simple query's whole text (its statements joined by `;`),
    or an extended-protocol exchange's (a pipeline's, up to its Sync) statements joined
    by `;` ("<sync>" if it parsed none). From libpq's own trace of the
    connection, so statements that bypass SQLAlchemy (the log writer's) are seen too; the
    list is filled when the block ends."""
    seen: list[str] = []
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
    parsed: list[str] = []
    for message in messages:
        direction, _length, kind, *text = "\n".join(message).split("\t", 3)
        if direction == "F" and kind == "Query":
            seen.append(text[0].strip().strip('"'))
        elif direction == "F" and kind == "Parse":
            parsed.append(_PARSED.fullmatch(text[0]).group(1))  # type: ignore[union-attr]
        elif direction == "F" and kind == "Sync":
            seen.append(";".join(parsed) or "<sync>")
            parsed = []
