"""What leaves the host of a trial: its reason line, first cause first, content per wireContent."""

from __future__ import annotations

from typing import Any

from wopeval.engine.content import reason_line


def _detail(**parts: Any) -> dict[str, Any]:
    return {"misses": [], "error": None, "grade": None, **parts}


MISS = {"callIndex": 0, "tool": "crm:refund", "reason": "no unconsumed fixture matches …"}


def test_a_miss_is_named_before_the_exception_it_caused() -> None:
    detail = _detail(misses=[MISS], error={"type": "ToolCallError", "message": "fixture_miss"})
    assert reason_line(detail, full=True) == "fixture miss: no unconsumed fixture matches …"
    assert (
        reason_line(detail, full=False) == "fixture miss: a call to crm:refund no recording serves"
    )


def test_more_misses_are_counted() -> None:
    detail = _detail(misses=[MISS, {**MISS, "callIndex": 1}])
    assert reason_line(detail, full=True).endswith("(and 1 more)")


def test_an_exception_then_the_grade() -> None:
    raised = _detail(error={"type": "KeyError", "message": "'city'"})
    assert reason_line(raised, full=True) == "the agent raised KeyError: 'city'"
    assert reason_line(raised, full=False) == "the agent raised KeyError"
    graded = _detail(
        grade={"passed": False, "score": 0.0, "reason": "exact: expected 'a', got 'b'"},
        expected={"kind": "golden", "match": {"strategy": "exact", "value": "a"}},
    )
    assert reason_line(graded, full=True) == "exact: expected 'a', got 'b'"
    assert reason_line(graded, full=False) == (
        "the decision did not match the expected value (exact)"
    )
    assert reason_line(_detail(grade={"passed": True, "score": 1.0, "reason": ""}), True) == (
        "passed"
    )
