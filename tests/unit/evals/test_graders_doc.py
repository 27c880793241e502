"""docs/graders.md: every example table gives, row by row, what the graders give.

A table follows the ```json block of the `expected` it grades; each row is a
decision (or, for a trajectory, the calls made), `pass` or `fail`, and the reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from wopeval import evals
from wopeval.wire.suite import Expected

DOC = Path(__file__).parents[3] / "docs" / "graders.md"
ROW = re.compile(r"^\| `(.+?)` \| (pass|fail) \| `(.+)` \|$")


@dataclass(frozen=True)
class Example:
    expected: dict[str, Any]
    made: Any
    passed: bool
    reason: str

    @property
    def label(self) -> str:
        match = self.expected.get("match") or {}
        return match.get("strategy") or f"trajectory-{self.expected['order']}"


def _examples() -> list[Example]:
    examples: list[Example] = []
    expected: dict[str, Any] | None = None
    block: list[str] | None = None
    is_json = False
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("```") and block is None:
            # Any code block ends the tables of the example before it.
            block, is_json, expected = [], line == "```json", None
        elif line.startswith("```") and block is not None:
            document = json.loads("\n".join(block)) if is_json else {}
            strategy = (document.get("match") or {}).get("strategy")
            if "kind" in document and strategy != "custom":
                expected = document
            block = None
        elif block is not None:
            block.append(line)
        elif expected is not None and (row := ROW.match(line)) is not None:
            made, result, reason = row.groups()
            examples.append(Example(expected, json.loads(made), result == "pass", reason))
    return examples


EXAMPLES = _examples()


def test_the_doc_shows_each_strategy_and_order_passing_and_failing() -> None:
    shown = {(e.label, e.passed) for e in EXAMPLES}
    labels = ["exact", "contains", "json-match", "json-subset", "json-path", "regex"]
    labels += [f"trajectory-{o}" for o in ("strict", "unordered", "subset", "superset")]
    assert shown == {(label, passed) for label in labels for passed in (True, False)}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: f"{e.label}-{e.reason[:40]}")
def test_a_documented_reason_is_the_graders_reason(example: Example) -> None:
    expected = Expected.model_validate(example.expected)
    if expected.kind == "trajectory":
        calls = [evals.ExecutedCall(call["tool"], call["args"]) for call in example.made]
        grade = evals.grade_task(expected, None, calls)
    else:
        grade = evals.grade_task(expected, example.made, [])
    assert (grade.passed, grade.reason) == (example.passed, example.reason)
