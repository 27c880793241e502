"""Compact JSON text for what the host stores and serves: event documents, JSON columns.

orjson writes the same compact, unescaped UTF-8 text as `json.dumps(value,
separators=(",", ":"), ensure_ascii=False)` several times faster; that is the
hot path of every event and every recorded call. orjson refuses integers
beyond 64 bits (an agent may return one), which the standard library writes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson
from pydantic import JsonValue

JsonObject = dict[str, JsonValue]
"""A JSON object whose members are any JSON: content the host keeps as it was sent."""


def compact(value: Any) -> str:
    try:
        return orjson.dumps(value).decode("utf-8")
    except orjson.JSONEncodeError:
        return dumped(value, separators=(",", ":"))


def dumped(
    value: Any, *, indent: int | None = None, separators: tuple[str, str] | None = None
) -> str:
    """The standard library's JSON text of `value` (`json.dumps`' layout options), its
    characters as they are, unless it holds a lone surrogate (legal JSON text, `"\ud800"`,
    which a tool may answer): no UTF-8 holds one, so neither store, wire nor page could take
    that text, and it is written escaped, the same value in ASCII."""
    text = json.dumps(
        value, ensure_ascii=False, indent=indent, separators=separators, default=_embedded_value
    )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, indent=indent, separators=separators, default=_embedded_value)
    return text


def _embedded_value(value: Any) -> Any:
    """An `embedded` text's value, for the standard library's writer: a document holding both
    text orjson wrote and a value only the standard library writes (an integer beyond 64
    bits, a lone surrogate: a derived copy's entries beside a model answer holding one) is
    written whole, not refused. orjson hands a fragment's text back when it writes it
    alone; nothing else reads it."""
    if type(value) is not orjson.Fragment:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
    return parse(orjson.dumps(value))


embedded: Callable[[str | bytes], Any] = orjson.Fragment
"""JSON text that `compact` writes as it is, in place of a value: content the host only
copies (a derived copy's entries), or wrote already (a call's args and answer, written
once for its events and its record), is never parsed and written again. orjson's own type,
not a function around it: every fixture-served call makes two."""


def written(value: Any) -> bytes | None:
    """`compact`'s text of `value` (UTF-8) when orjson writes it (None: only the standard
    library can): text that `embedded` may put in place of the value in a document orjson
    writes, byte for byte what writing the value there would give."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return None


def kept(text: bytes | None) -> bytes | None:
    """`text` (orjson's, `written`'s) copied to bytes of its own length, for text held long:
    the bytes orjson returns keep the ~4 KiB buffer it wrote them in, however short the
    text (orjson 3.13; 30,000 short texts held ~120 MB), which a text used once and let go
    does not mind and a text kept for as long as a suite version is kept does."""
    return None if text is None else bytes(memoryview(text))


def parse(text: str | bytes) -> Any:
    """The value of JSON text the host stored or was sent, integers of any size kept.

    orjson reads an integer beyond 64 bits as a float; the standard library reads it
    whole, at several times orjson's cost. Such an integer has 20 digits at least, or a
    minus and 19 (2**64 has 20 digits, -2**63 - 1 a minus and 19), so only a text with a
    run of those (in a string too: a false alarm costs only the slower parse) is read by
    the standard library. The check is one translation of the text's bytes and two
    substring searches, C loops over bytes: a tenth or so of orjson's parse of the same
    text (a regular expression took twice orjson's time)."""
    raw = text.encode("utf-8") if isinstance(text, str) else text
    marked = raw.translate(_NUMBER_MARKS)
    if _DIGIT_RUN in marked or _NEGATIVE_RUN in marked:
        return json.loads(raw)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        # orjson refuses a lone surrogate's escape (`"\ud800"`), legal JSON text that
        # `compact` writes for one; the standard library reads it, and raises as orjson
        # did (json.JSONDecodeError) for text that is not JSON.
        return json.loads(raw)


_NUMBER_MARKS = bytes(
    0 if 0x30 <= byte <= 0x39 else 2 if byte == 0x2D else 1 for byte in range(256)
)
"""A byte translation table: each ASCII digit to NUL, `-` to 2, every other byte to 1
(JSON text holds no NUL byte of its own: RFC 8259 §7 has it escaped)."""

_DIGIT_RUN = bytes(20)
"""Twenty digits in a row, once translated: orjson reads every integer of fewer digits
whole when it is not negative (10**19 - 1 at most, below 2**64)."""

_NEGATIVE_RUN = b"\x02" + bytes(19)
"""A minus and 19 digits, once translated: orjson reads every negative integer of fewer
digits whole (-(10**18 - 1) at least, above -2**63)."""


parse_written: Callable[[bytes], Any] = orjson.loads
"""`parse` of a text `written` gave: orjson wrote it, so it holds no integer orjson
cannot read back whole (it writes none beyond 64 bits), and no check is needed — a
live call's args and answer, handed to the tool and the agent, on every call. orjson's
own function, as `embedded` is its own type: no call around it on every call."""


def copy(value: JsonValue) -> JsonValue:
    """A copy of `value` that shares nothing with it, as JSON text would carry it: what the
    host keeps of an agent's args, or hands an agent, can then not be changed by the other
    side. (orjson reads an integer beyond 64 bits back as a float; the standard library
    keeps it.)"""
    return copy_with_text(value)[0]


def copy_with_text(value: JsonValue) -> tuple[JsonValue, bytes | None]:
    """`copy(value)` and the text it was copied through, `written(value)`'s (None when the
    standard library wrote it): a value the host both keeps and stores is written once.
    The text is the copy's as well (orjson reads back what it wrote, and writes it so)."""
    text = written(value)
    if text is None:
        copied: JsonValue = json.loads(json.dumps(value))
        return copied, None
    return orjson.loads(text), text
