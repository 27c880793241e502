"""A grader's outcome for one trial, and the text helpers its reasons share.

Every reason starts with the strategy that gave it (`exact: ...`, `trajectory
(strict): ...`, `custom refund-check: ...`), so a line read out of context
still says which rule decided. Values are shown as compact JSON and cut to
`SHOWN_CHARS` characters around the place that matters; a cut value says which
characters are shown (docs/graders.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from wopeval.evals._canonical import compact_json
from wopeval.evals._jsondiff import PathChange
from wopeval.evals._judge_part import JudgePart

SHOWN_CHARS = 100
"""The most characters of one value a reason shows."""
SHOWN_CHANGES = 5
"""The most differing paths a reason names; the rest are counted (all are in `Grade.diff`)."""


@dataclass(frozen=True, slots=True)
class Grade:
    """How one trial's decision (or calls) compared with its task's `expected`."""

    passed: bool
    score: float
    """0..1; the built-in strategies give 1.0 or 0.0, a custom grader its own answer."""
    reason: str
    """One human-readable line saying why."""
    diff: tuple[PathChange, ...] = ()
    """The structural differences behind a JSON strategy's verdict (empty otherwise)."""
    traceback: str | None = None
    """The formatted exception when a custom grader raised."""
    judge: JudgePart | None = None
    """A rubric trial's judge and its per-criterion grades (evals/_rubric.py)."""

    @property
    def unjudged(self) -> bool:
        """A rubric trial its judge did not grade: its task's verdict is inconclusive."""
        return self.judge is not None and self.judge.unjudged is not None

    @classmethod
    def passing(cls, reason: str) -> Grade:
        return cls(passed=True, score=1.0, reason=reason)

    @classmethod
    def failing(cls, reason: str, diff: Sequence[PathChange] = ()) -> Grade:
        return cls(passed=False, score=0.0, reason=reason, diff=tuple(diff))

    def to_json(self) -> dict[str, Any]:
        """`{passed, score, reason, diff, traceback?, judge?}` for a task detail."""
        document: dict[str, Any] = {
            "passed": self.passed,
            "score": self.score,
            "reason": self.reason,
            "diff": [change.to_json() for change in self.diff],
        }
        if self.traceback is not None:
            document["traceback"] = self.traceback
        if self.judge is not None:
            document["judge"] = self.judge.to_json()
        return document


def shorten(text: str, *, around: int = 0) -> str:
    """`text` itself, or the `SHOWN_CHARS` characters near `around`, saying which they are."""
    if len(text) <= SHOWN_CHARS:
        return text
    start = max(0, min(around - SHOWN_CHARS // 4, len(text) - SHOWN_CHARS))
    end = start + SHOWN_CHARS
    head = "…" if start else ""
    tail = "…" if end < len(text) else ""
    return f"{head}{text[start:end]}{tail} (characters {start + 1}-{end} of {len(text)})"


def shown(value: JsonValue) -> str:
    """A JSON value as a reason shows it: compact JSON, shortened from its start."""
    return shorten(compact_json(value))


def first_difference(left: str, right: str) -> int:
    """The index of the first character where two texts differ (the shorter length if none)."""
    for index, (a, b) in enumerate(zip(left, right, strict=False)):
        if a != b:
            return index
    return min(len(left), len(right))


def describe_changes(
    changes: Sequence[PathChange], *, expected: str = "expected", actual: str = "got"
) -> str:
    """`N path(s) differ: $.a: expected 1, got 2; $.b: expected (absent), got 3; ...`."""
    noun = "path differs" if len(changes) == 1 else "paths differ"
    parts = [describe_change(c, expected=expected, actual=actual) for c in changes]
    text = f"{len(changes)} {noun}: " + "; ".join(parts[:SHOWN_CHANGES])
    if len(parts) > SHOWN_CHANGES:
        text += f"; and {len(parts) - SHOWN_CHANGES} more"
    return text


def describe_change(change: PathChange, *, expected: str, actual: str) -> str:
    """`$.tier: expected "gold", got "silver"`; a side without the path shows `(absent)`."""
    left = "(absent)" if change.kind == "added" else shown(change.expected)
    right = "(absent)" if change.kind == "removed" else shown(change.actual)
    return f"{change.path}: {expected} {left}, {actual} {right}"
