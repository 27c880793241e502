"""JSONPath paths as suites write them and diffs name them: RFC 9535 singular queries.

A singular query names at most one value (RFC 9535 §2.3.5.1): `$` followed by
name segments (`.tier`, `["key with space"]`, `['single quoted']`) and index
segments (`[0]`, `[-1]` from the end). Wildcards, slices, filters and
descendants are refused: a grader compares one value per path, and a path that
could name several would need a rule for which one counts.

The same grammar names the paths of a structural diff (`evals.json_diff`), so
every path the host prints can be pasted into a `json-path` match.
"""

from __future__ import annotations

import json
import re

Segment = str | int
"""A member name (`str`) or an array index (`int`, negative counts from the end)."""

# RFC 9535 §2.5.1.1 member-name-shorthand: name-first = ALPHA / "_" / non-ASCII;
# name-char = name-first / DIGIT. Spelled as the ASCII each excludes: a class spanning
# every non-ASCII code point costs ~10 ms to compile, on every command's start.
_SHORTHAND = re.compile(
    r"[^\x00-\x40\x5b-\x5e\x60\x7b-\x7f][^\x00-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]*"
)
# RFC 9535 §2.3.3.1 index-selector: int = "0" / (["-"] DIGIT1 *DIGIT).
_INDEX = re.compile(r"0|-?[1-9][0-9]*")
# RFC 9535 §2.1: integers are limited to the I-JSON range.
_MAX_INDEX = 2**53 - 1


class JsonPathError(ValueError):
    """The text is not a singular JSONPath query; the message says where and why."""


def parse_json_path(text: str) -> tuple[Segment, ...]:
    """The segments of `text`, e.g. `$.items[2]["unit price"]` → `("items", 2, "unit price")`."""
    # RFC 9535 §2.2: a query starts with the root identifier `$`.
    if not text.startswith("$"):
        raise JsonPathError("must start with $")
    segments: list[Segment] = []
    position = 1
    while position < len(text):
        char = text[position]
        if char == ".":
            found = _SHORTHAND.match(text, position + 1)
            if found is None:
                raise JsonPathError(f"a member name must follow '.' at character {position + 1}")
            segments.append(found.group())
            position = found.end()
        elif char == "[":
            segment, position = _bracketed(text, position + 1)
            segments.append(segment)
        else:
            raise JsonPathError(f"expected '.' or '[' at character {position + 1}")
    return tuple(segments)


def format_json_path(segments: tuple[Segment, ...]) -> str:
    """The canonical text of a path: shorthand names where RFC 9535 allows them, else `["…"]`."""
    text = "$"
    for segment in segments:
        if isinstance(segment, int):
            text += f"[{segment}]"
        elif _SHORTHAND.fullmatch(segment):
            text += f".{segment}"
        else:
            text += f"[{json.dumps(segment, ensure_ascii=False)}]"
    return text


def _bracketed(text: str, position: int) -> tuple[Segment, int]:
    """One `[...]` selector starting after its `[`; returns it and the position after `]`."""
    if position < len(text) and text[position] in "\"'":
        name, position = _string_literal(text, position)
        segment: Segment = name
    else:
        found = _INDEX.match(text, position)
        if found is None:
            raise JsonPathError(
                f"expected an index or a quoted name at character {position + 1} "
                "(wildcards, slices and filters name several values)"
            )
        segment = int(found.group())
        if abs(segment) > _MAX_INDEX:
            raise JsonPathError(f"the index at character {position + 1} is out of range")
        position = found.end()
    if position >= len(text) or text[position] != "]":
        raise JsonPathError(f"expected ']' at character {position + 1}")
    return segment, position + 1


def _string_literal(text: str, start: int) -> tuple[str, int]:
    """RFC 9535 §2.3.1.1 string literal in either quote; returns the name and the position after.

    The escapes are JSON's, plus `\\'` inside single quotes; the literal is
    rewritten as a JSON string and decoded by `json.loads`.
    """
    quote = text[start]
    as_json = '"'
    position = start + 1
    while position < len(text):
        char = text[position]
        if char == quote:
            try:
                return json.loads(as_json + '"'), position + 1
            except json.JSONDecodeError:
                raise JsonPathError(f"bad escape in the name at character {start + 1}") from None
        if char == "\\" and position + 1 < len(text):
            escaped = text[position + 1]
            as_json += "'" if escaped == "'" and quote == "'" else char + escaped
            position += 2
            continue
        as_json += '\\"' if char == '"' else char
        position += 1
    raise JsonPathError(f"the name at character {start + 1} is not closed")
