"""How a pipelined transaction's big inserts bind their rows a column at a time
(store/_driver.py `_unnest`, store/_pg_batch.py `Batch.hold_columns`): apart, so both may
import it."""

from __future__ import annotations

from dataclasses import dataclass

VALUE_SEPARATOR = "\x1f"
NULL_MARK = "\x1e"
"""A column's values joined in one text parameter (`Unnest.joined`) are separated by
`VALUE_SEPARATOR`, a NULL written as `NULL_MARK`: control characters, which no JSON text
holds unescaped, nor an id; a column whose values hold either goes as an array instead."""


@dataclass(frozen=True, slots=True)
class Unnest:
    """An INSERT of rows bound a column at a time (store/_pg_batch.py `Batch.hold_columns`),
    each column's values cast to the column's type and zipped back into rows by `unnest`."""

    joined: str
    """Each column one text parameter, its values joined (`VALUE_SEPARATOR`), split by the
    server: a string's join is one C call, where psycopg dumps an array's every element in
    Python's time (an eval group's events and tool calls, 1.0 against 0.6 ms)."""
    arrays: str
    """Each column one array parameter (values that do not join: a timestamp, a
    separator among them)."""
