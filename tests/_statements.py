"""What SQL a test's store runs: for tests that a path reads a table, or does not."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

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
