"""Structural JSON diffs: which paths of two JSON values differ, and how.

Used by the golden graders (`json-match`, `json-subset`, `json-path`) to say
why a decision failed, and by fixture-miss analysis to say how a call's args
differ from a recorded entry's. Leaves compare as RFC 8785 canonical JSON, the
host's one notion of "the same value" (`_canonical.json_equal`), so `1` and
`1.0` never differ and `true` and `1` always do. Arrays compare by index: an
element inserted at the front shows as every later index changed and one added.
Paths use the grammar of `wire.jsonpath`, so each one can be pasted into a
`json-path` match.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import JsonValue

from wopeval.evals._canonical import json_equal
from wopeval.wire.jsonpath import Segment, format_json_path

ChangeKind = Literal["added", "removed", "changed"]
"""`added`: only the actual value has the path; `removed`: only the expected one; `changed`: both,
with different values."""


@dataclass(frozen=True, slots=True)
class PathChange:
    """One path where two JSON values differ."""

    path: str
    """The JSONPath of the difference, e.g. `$.customer.tier` or `$.items[2]`."""
    kind: ChangeKind
    expected: JsonValue = None
    """The value at `path` on the expected (or recorded) side; `None` when `added`."""
    actual: JsonValue = None
    """The value at `path` on the actual side (the decision, the call's args); `None` when
    `removed`."""

    def to_json(self) -> dict[str, Any]:
        """`{path, kind, expected?, actual?}`: a side that lacks the path has no key, so a
        JSON `null` value stays apart from an absent one."""
        document: dict[str, Any] = {"path": self.path, "kind": self.kind}
        if self.kind != "added":
            document["expected"] = self.expected
        if self.kind != "removed":
            document["actual"] = self.actual
        return document


def json_diff(
    expected: JsonValue, actual: JsonValue, *, at: tuple[Segment, ...] = ()
) -> list[PathChange]:
    """Every path where `actual` differs from `expected`; empty exactly when they are equal.

    Objects are compared key by key (the expected value's keys in its order,
    then the keys only `actual` has), arrays index by index, anything else as
    one canonical-JSON leaf. `at` prefixes every path: the two values sit there
    in some larger document.
    """
    changes: list[PathChange] = []
    _diff(expected, actual, at, changes)
    return changes


def subset_diff(expected: JsonValue, actual: JsonValue) -> list[PathChange]:
    """The paths that keep `expected` from being a recursive subset of `actual`.

    The subset rule is `_matcher.is_json_subset` (fixture `argsMatch: subset`):
    every key of an expected object must be in the actual object with a subset
    value; anything else, arrays included, must be equal. So keys only `actual`
    has are no difference, except inside arrays, which compare whole. Empty
    exactly when `is_json_subset(expected, actual)`.
    """
    changes: list[PathChange] = []
    _subset(expected, actual, (), changes)
    return changes


def _diff(
    expected: JsonValue, actual: JsonValue, path: tuple[Segment, ...], out: list[PathChange]
) -> None:
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key, value in expected.items():
            if key in actual:
                _diff(value, actual[key], (*path, key), out)
            else:
                out.append(PathChange(format_json_path((*path, key)), "removed", expected=value))
        for key, value in actual.items():
            if key not in expected:
                out.append(PathChange(format_json_path((*path, key)), "added", actual=value))
        return
    if isinstance(expected, list) and isinstance(actual, list):
        for index, value in enumerate(expected):
            if index < len(actual):
                _diff(value, actual[index], (*path, index), out)
            else:
                out.append(PathChange(format_json_path((*path, index)), "removed", expected=value))
        for index in range(len(expected), len(actual)):
            out.append(PathChange(format_json_path((*path, index)), "added", actual=actual[index]))
        return
    if not json_equal(expected, actual):
        out.append(PathChange(format_json_path(path), "changed", expected, actual))


def _subset(
    expected: JsonValue, actual: JsonValue, path: tuple[Segment, ...], out: list[PathChange]
) -> None:
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key, value in expected.items():
            if key in actual:
                _subset(value, actual[key], (*path, key), out)
            else:
                out.append(PathChange(format_json_path((*path, key)), "removed", expected=value))
        return
    _diff(expected, actual, path, out)


@dataclass(frozen=True, slots=True)
class Found:
    """The value a path names in a document."""

    value: JsonValue
    segments: tuple[Segment, ...]
    """The path that led there, negative indexes made positive."""


def value_at(document: JsonValue, segments: tuple[Segment, ...]) -> Found | None:
    """RFC 9535 singular query: the one value `segments` name in `document`, or None.

    A name selects an object member; an index selects an array element, a
    negative one counting from the end (RFC 9535 §2.3.3.2). Anything else
    selects nothing.
    """
    current = document
    taken: list[Segment] = []
    for segment in segments:
        if isinstance(segment, str) and isinstance(current, dict) and segment in current:
            current = current[segment]
            taken.append(segment)
        elif isinstance(segment, int) and isinstance(current, list):
            index = segment + len(current) if segment < 0 else segment
            if not 0 <= index < len(current):
                return None
            current = current[index]
            taken.append(index)
        else:
            return None
    return Found(current, tuple(taken))
