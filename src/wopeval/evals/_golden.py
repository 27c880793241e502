"""Golden match strategies: the agent's decision against `expected.match` (RFC 0081 §A).

`exact`, `contains` and `json-match` are RFC 0081's; `json-subset`,
`json-path` and `regex` are this host's (docs/graders.md). `custom` is not
graded here: it calls the project's code, which the engine does
(`engine/eval_runs/grading.py`).
"""

from __future__ import annotations

from typing import Literal

import regex
from pydantic import JsonValue

from wopeval.evals._canonical import compact_json
from wopeval.evals._grade import (
    SHOWN_CHARS,
    Grade,
    describe_changes,
    first_difference,
    shorten,
    shown,
)
from wopeval.evals._jsondiff import PathChange, json_diff, subset_diff, value_at
from wopeval.wire.jsonpath import format_json_path, parse_json_path
from wopeval.wire.suite import Match

REGEX_TIMEOUT_SECONDS = 1.0
"""How long one `regex` search may take; a suite's pattern must not stall the host."""


def stringify(value: JsonValue) -> str:
    """RFC 0081 "stringified output": a string as itself, anything else as compact JSON."""
    return value if isinstance(value, str) else compact_json(value)


def strategy_for_decision(decision: JsonValue) -> Literal["json-match", "exact"]:
    """The strategy that expects `decision` itself: `json-match` for an object or array,
    whose failures name each differing path (`$.priority: expected "urgent", got
    "normal"`), `exact` for a string, number, boolean or null, where a path names nothing
    (docs/recordings.md, `suites from-runs`)."""
    return "json-match" if isinstance(decision, dict | list) else "exact"


def grade_golden(match: Match, decision: JsonValue) -> Grade:
    """RFC 0081 §A match strategies, and this host's, on the agent's decision."""
    strategy = match.strategy
    if strategy == "exact":
        return _exact(match.value, decision)
    if strategy == "contains":
        return _contains(match.value, decision)
    if strategy == "json-match":
        # "`json-match` means deep equality" (as RFC 8785 canonical JSON).
        return _from_changes(
            "json-match", json_diff(match.value, decision), "the decision equals the expected value"
        )
    if strategy == "json-subset":
        # docs/graders.md: the expected value is a recursive subset of the decision.
        return _from_changes(
            "json-subset",
            subset_diff(match.value, decision),
            "the decision holds the expected value",
        )
    if strategy == "json-path":
        return _json_path(match, decision)
    if strategy == "regex":
        return _regex(match.value, decision)
    raise ValueError(f"strategy {strategy!r} is not a built-in one; the engine grades it")


def _exact(value: JsonValue, decision: JsonValue) -> Grade:
    # RFC 0081 §A: "`exact` means the stringified output equals `value`".
    if stringify(decision) == stringify(value):
        return Grade.passing(f"exact: the decision equals the expected value {shown(value)}")
    got, wanted = compact_json(decision), compact_json(value)
    at = first_difference(got, wanted)
    reason = (
        f"exact: the decision {shorten(got, around=at)} differs from the expected value "
        f"{shorten(wanted, around=at)}"
    )
    if max(len(got), len(wanted)) > SHOWN_CHARS:
        reason += f"; they first differ at character {at + 1}"
    return Grade.failing(reason)


def _contains(value: JsonValue, decision: JsonValue) -> Grade:
    # RFC 0081 §A `contains`: the stringified value occurs in the stringified output.
    if stringify(value) in stringify(decision):
        return Grade.passing(f"contains: the decision contains {shown(value)}")
    return Grade.failing(
        f"contains: the decision {shown(decision)} does not contain {shown(value)}"
    )


def _from_changes(strategy: str, changes: list[PathChange], equal: str) -> Grade:
    if not changes:
        return Grade.passing(f"{strategy}: {equal}")
    return Grade.failing(f"{strategy}: {describe_changes(changes)}", changes)


def _json_path(match: Match, decision: JsonValue) -> Grade:
    """docs/graders.md `json-path`: each named path holds its value; a path that names nothing
    in the decision differs as `removed`."""
    checks = match.paths or []
    changes: list[PathChange] = []
    for check in checks:
        segments = parse_json_path(check.path)
        found = value_at(decision, segments)
        if found is None:
            changes.append(PathChange(format_json_path(segments), "removed", expected=check.value))
        else:
            changes.extend(json_diff(check.value, found.value, at=found.segments))
    count = "the path holds" if len(checks) == 1 else f"all {len(checks)} paths hold"
    return _from_changes("json-path", changes, f"{count} the expected value")


def _regex(pattern: JsonValue, decision: JsonValue) -> Grade:
    """docs/graders.md `regex`: a search (anywhere, unless the pattern anchors itself) in the
    stringified decision; the pattern is checked to be a string that compiles at validation."""
    text = stringify(decision)
    shown_pattern = shorten(str(pattern))
    try:
        found = regex.search(str(pattern), text, timeout=REGEX_TIMEOUT_SECONDS)
    except TimeoutError:
        return Grade.failing(
            f"regex: /{shown_pattern}/ took longer than {REGEX_TIMEOUT_SECONDS:g} s on the "
            "decision and was stopped"
        )
    if found is None:
        return Grade.failing(f"regex: /{shown_pattern}/ does not match the decision {shown(text)}")
    start, end = found.span()
    if start == end:
        return Grade.passing(
            f"regex: /{shown_pattern}/ matches the decision (empty) at character {start + 1}"
        )
    return Grade.passing(
        f"regex: /{shown_pattern}/ matches the decision at characters {start + 1}-{end}: "
        f"{shown(found.group())}"
    )
