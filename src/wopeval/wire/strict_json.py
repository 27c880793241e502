"""What every JSON request body must be before any route reads it (RFC 8259 §6, §8; I-JSON).

The standard library's parser is lenient where storing a value later fails:
it takes `NaN` and `Infinity` (which no JSON encoder may write back), turns
`1e400` into infinity, builds integers of any length, and keeps NUL characters
and lone surrogates in strings (PostgreSQL refuses both in a text column, and
no UTF-8 encoder can write a surrogate). Each of those is refused here with
`400 validation_error` naming where it sits (`details.field`), so no such value
reaches a route, a column or an event.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from wopeval.wire import errors, limits

_PLAIN_KEY = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$-]*$")


@dataclass(frozen=True)
class _Refused:
    """Left in the parsed tree by a parse hook, so the walk can say where it was."""

    why: str


def parse_body(raw: bytes) -> Any:
    """`raw`'s one strict JSON value within the host's limits (the value `json.loads` gives
    it); else `ValidationFailed`.

    A body that cannot hold a refused value is parsed once, with no walk of its tree (the
    model proxy's exchanges, issue 29): no `\\u` escape of a NUL or a surrogate (only an
    escape can put one in a string: a raw NUL is not JSON, a raw surrogate not UTF-8), no
    number or constant out of range (the parse hooks raise at the first), and at most
    `JSON_MAX_DEPTH` brackets (or, past that, a walk of its containers alone). Any other
    body, and any refusal, takes the full check, which names the first refused value."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _refuse("body", f"is not valid UTF-8 (byte {exc.start})") from exc
    if not text.startswith("\ufeff") and _SUSPECT_ESCAPE.search(raw) is None:
        try:
            value = _UNREFUSED.decode(text)
        except (ValueError, RecursionError):
            pass  # a refused value, or not JSON at all: the full check says which
        else:
            if raw.count(b"[") + raw.count(b"{") <= limits.JSON_MAX_DEPTH or _shallow(value):
                return value
    return _checked(text)


def _checked(text: str) -> Any:
    """The full check: the value with every refused one marked, then a walk naming the first."""
    try:
        value = json.loads(text, parse_constant=_constant, parse_int=_integer, parse_float=_number)
    except RecursionError as exc:
        raise _refuse("body", f"nests deeper than {limits.JSON_MAX_DEPTH} levels") from exc
    except json.JSONDecodeError as exc:
        raise errors.ValidationFailed(
            f"The request body is not valid JSON ({exc.msg} at line {exc.lineno} "
            f"column {exc.colno}).",
            details={"field": "body"},
        ) from exc
    for path, problem in _problems(value):
        raise _refuse(_render(path), problem)
    return value


_SUSPECT_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")
"""An escape that may write a NUL or a surrogate (or an escaped backslash before `u0000`:
a false alarm, which the full check clears)."""


def _shallow(root: Any) -> bool:
    """No container nested past `JSON_MAX_DEPTH`: the full check's depth rule, on a value
    with no refused scalar, walked a level at a time over its containers alone (a parsed
    value's containers are exactly `dict` and `list`)."""
    level = [root] if type(root) in _CONTAINERS else []
    depth = 0
    while level:
        if depth >= limits.JSON_MAX_DEPTH:
            return False
        deeper = []
        for value in level:
            for item in value.values() if type(value) is dict else value:
                if type(item) in _CONTAINERS:
                    deeper.append(item)
        level = deeper
        depth += 1
    return True


_CONTAINERS = (dict, list)


class _Unstorable(ValueError):
    """Raised by the one-pass parse's hooks at a value the full check refuses."""


def _unstorable_constant(name: str) -> float:
    raise _Unstorable(name)


def _storable_integer(literal: str) -> int:
    value = _integer(literal)
    if isinstance(value, _Refused):
        raise _Unstorable(literal)
    return value


def _storable_number(literal: str) -> float:
    value = _number(literal)
    if isinstance(value, _Refused):
        raise _Unstorable(literal)
    return value


_UNREFUSED = json.JSONDecoder(
    parse_constant=_unstorable_constant,
    parse_int=_storable_integer,
    parse_float=_storable_number,
)
"""The one-pass parse: `json.loads` with the full check's hooks, which raise instead of
marking (one decoder for every body: `json.loads` with hooks builds one per call)."""


def _constant(name: str) -> _Refused:
    return _Refused(f"is {name}, which is not a JSON number")


def _integer(literal: str) -> int | _Refused:
    # Checked on the literal first: converting thousands of digits is itself the cost.
    if len(literal) > limits.INT64_MAX_DIGITS:
        return _Refused("is an integer beyond 64 bits")
    value = int(literal)
    if not limits.INT64_MIN <= value <= limits.INT64_MAX:
        return _Refused("is an integer beyond 64 bits")
    return value


def _number(literal: str) -> float | _Refused:
    value = float(literal)
    if not math.isfinite(value):
        return _Refused("is a number too large for a 64-bit float")
    return value


def _problems(root: Any) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """Every refused value, depth-first; iterative, so depth costs no stack."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(root, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, _Refused):
            yield path, value.why
        elif isinstance(value, str):
            if (problem := _string_problem(value)) is not None:
                yield path, problem
        elif isinstance(value, dict | list):
            if len(path) >= limits.JSON_MAX_DEPTH:
                yield path, f"nests deeper than {limits.JSON_MAX_DEPTH} levels"
                continue
            if isinstance(value, list):
                stack.extend((value[i], (*path, i)) for i in range(len(value) - 1, -1, -1))
                continue
            for key in reversed(list(value)):
                if (problem := _string_problem(key)) is not None:
                    yield path, f"has a key that {problem}"
                stack.append((value[key], (*path, key)))


def _string_problem(text: str) -> str | None:
    if "\x00" in text:
        return "contains a NUL character"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "contains a lone surrogate, which is not Unicode text"
    return None


def _render(path: tuple[str | int, ...]) -> str:
    """`inputs.calls[0].args`; a key that is not a plain name is quoted, `tags["a b"]`."""
    if not path:
        return "body"
    parts: list[str] = []
    for step in path:
        if isinstance(step, int):
            parts.append(f"[{step}]")
        elif _PLAIN_KEY.match(step):
            parts.append(f".{step}" if parts else step)
        else:
            parts.append(f"[{json.dumps(step)}]")
    return "".join(parts)


def _refuse(field: str, problem: str) -> errors.ValidationFailed:
    return errors.ValidationFailed(f"'{field}' {problem}.", details={"field": field})
