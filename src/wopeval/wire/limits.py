"""The ranges every number, page and body on the wire is held to (docs/decisions.md, Input).

Each bound is the smallest one that both stores hold exactly: a value past it
would overflow a column or a bound parameter on SQLite or PostgreSQL, so it is
refused at the edge with `400 validation_error` instead.
"""

from __future__ import annotations

from wopeval.wire import errors

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
INT64_MAX_DIGITS = len(str(INT64_MIN))
"""Digits and sign of the longest signed 64-bit integer; a longer literal is refused unread."""

SEQUENCE_MAX = 2**31 - 1
"""Event sequences live in 32-bit INTEGER columns (PostgreSQL binds them as int4)."""

JSON_MAX_DEPTH = 64
"""Arrays and objects nested deeper than this are refused, whatever route reads the body."""

DEFAULT_MAX_BODY_BYTES = 1 << 20
"""`--max-body-bytes` default: 1 MiB."""

RUN_LIST_MAX_PAGE_SIZE = 200
"""`runList.maxPageSize`: the largest `limit` `GET /runs` accepts."""

RUN_LIST_DEFAULT_PAGE_SIZE = 50

RUN_DIFF_MAX_EVENTS = 5_000
"""`diffRun` reads at most this many events of each log (five poll pages); past them the
answer is `truncated`, so a large log gives a partial answer rather than a slow one."""

RUN_DIFF_MAX_EVENT_DIFFS = 500
"""`diffRun` lists at most this many differing sequences; a further one makes it `truncated`."""


def parse_sequence(text: str, field: str) -> int:
    """An event sequence written as a decimal (`-1` means before the first event).

    `int()` would also take `+5`, `1_0`, whitespace and non-ASCII digits;
    none of those is a sequence this host ever sent.
    """
    digits = text.removeprefix("-")
    if not (digits.isascii() and digits.isdigit()) or len(digits) > INT64_MAX_DIGITS:
        raise errors.ValidationFailed(f"'{field}' must be an event sequence.", details=_at(field))
    value = int(text)
    if not -1 <= value <= SEQUENCE_MAX:
        raise errors.ValidationFailed(
            f"'{field}' must be between -1 and {SEQUENCE_MAX}.", details=_at(field)
        )
    return value


def _at(field: str) -> dict[str, object]:
    return {"field": field}
