"""`evals/_graders.py`: golden match strategies and trajectory orders."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import JsonValue

from wopeval import evals
from wopeval.wire.suite import Expected, Match


def match(strategy: str, value: JsonValue) -> Match:
    return Match.model_validate({"strategy": strategy, "value": value})


@pytest.mark.parametrize(
    ("strategy", "value", "decision", "passes"),
    [
        ("exact", "done", "done", True),
        ("exact", "done", "done ", False),
        ("exact", "done", "Done", False),
        ("exact", "42", 42, True),
        ("exact", 42, "42", True),
        ("exact", {"b": 1, "a": 2}, {"a": 2, "b": 1}, True),
        ("exact", '{"a":2}', {"a": 2}, True),
        ("exact", "true", True, True),
        ("exact", "null", None, True),
        ("exact", "done", None, False),
        ("contains", "refund", "issued a refund of $5", True),
        ("contains", "refund", "declined", False),
        ("contains", '"ok":true', {"ok": True, "id": 1}, True),
        ("contains", 5, "5 items", True),
        ("json-match", {"a": [1, 2]}, {"a": [1, 2]}, True),
        ("json-match", {"a": [1, 2]}, {"a": [2, 1]}, False),
        ("json-match", {"n": 1}, {"n": 1.0}, True),
        ("json-match", {"n": 1}, {"n": True}, False),
        ("json-match", "1", 1, False),
        ("json-match", None, None, True),
    ],
)
def test_grade_golden(strategy: str, value: JsonValue, decision: JsonValue, passes: bool) -> None:
    assert evals.grade_golden(match(strategy, value), decision).passed is passes


@pytest.mark.parametrize(
    ("value", "text"),
    [("done", "done"), (1, "1"), (1.5, "1.5"), ({"b": [1], "a": None}, '{"a":null,"b":[1]}')],
)
def test_stringify(value: JsonValue, text: str) -> None:
    assert evals.stringify(value) == text


def trajectory(order: str, *calls: dict[str, Any]) -> Expected:
    return Expected.model_validate({"kind": "trajectory", "order": order, "calls": list(calls)})


def call(tool: str, args: JsonValue = None, *, delegate: bool = False) -> evals.ExecutedCall:
    return evals.ExecutedCall(tool=tool, args=args, is_delegate=delegate)


INC: dict[str, Any] = {"tool": "c:counter", "args": {"op": "inc", "key": "k"}}
READ: dict[str, Any] = {"tool": "c:counter", "args": {"op": "read", "key": "k"}}
ANY_COUNTER: dict[str, Any] = {"tool": "c:counter"}


def made_inc() -> evals.ExecutedCall:
    return call("c:counter", {"key": "k", "op": "inc"})


def made_read() -> evals.ExecutedCall:
    return call("c:counter", {"op": "read", "key": "k"})


@pytest.mark.parametrize(
    ("expected", "made", "passes"),
    [
        # strict: the same sequence.
        (trajectory("strict", INC, READ), [made_inc(), made_read()], True),
        (trajectory("strict", INC, READ), [made_read(), made_inc()], False),
        (trajectory("strict", INC, READ), [made_inc()], False),
        (trajectory("strict", INC), [made_inc(), made_read()], False),
        (trajectory("strict"), [], True),
        # unordered: the same multiset.
        (trajectory("unordered", INC, READ), [made_read(), made_inc()], True),
        (trajectory("unordered", INC, INC), [made_inc(), made_read()], False),
        (trajectory("unordered", INC, READ), [made_inc(), made_read(), made_read()], False),
        # subset: every executed call is among the expected.
        (trajectory("subset", INC, READ), [made_read()], True),
        (trajectory("subset", INC, READ), [], True),
        (trajectory("subset", INC), [made_inc(), made_inc()], False),
        (trajectory("subset", INC), [made_read()], False),
        # superset: every expected call appears among the executed.
        (trajectory("superset", READ), [made_inc(), made_read()], True),
        (trajectory("superset", READ, READ), [made_inc(), made_read()], False),
        (trajectory("superset"), [made_inc()], True),
    ],
)
def test_grade_trajectory(expected: Expected, made: list[evals.ExecutedCall], passes: bool) -> None:
    assert evals.grade_trajectory(expected, made).passed is passes


def test_delegate_calls_are_not_graded() -> None:
    expected = trajectory("strict", INC)
    delegate_read = call("c:counter", {"op": "read", "key": "k"}, delegate=True)
    assert evals.grade_trajectory(expected, [delegate_read, made_inc()]).passed
    assert not evals.grade_trajectory(
        expected, [call("c:counter", INC["args"], delegate=True)]
    ).passed


def test_expected_args_use_fixture_args_match() -> None:
    expected = trajectory(
        "strict", {"tool": "c:counter", "args": {"op": "inc"}, "argsMatch": "subset"}
    )
    assert evals.grade_trajectory(expected, [made_inc()]).passed
    assert not evals.grade_trajectory(expected, [made_read()]).passed


def test_overlapping_patterns_pair_optimally() -> None:
    # A greedy pairing gives the only `inc` to the catch-all and fails the `inc` pattern.
    expected = trajectory("unordered", ANY_COUNTER, INC)
    assert evals.grade_trajectory(expected, [made_inc(), made_read()]).passed
    assert not evals.grade_trajectory(expected, [made_read(), made_read()]).passed


class TestGradeTask:
    """`grade_task` sends each kind to its grader with that kind's own inputs."""

    GOLDEN = Expected.model_validate(
        {"kind": "golden", "match": {"strategy": "exact", "value": "done"}}
    )
    TRAJECTORY = trajectory("strict", INC)

    def test_golden_grades_the_decision_and_ignores_the_calls(self) -> None:
        assert evals.grade_task(self.GOLDEN, "done", []).passed
        assert evals.grade_task(self.GOLDEN, "done", [made_read(), made_read()]).passed
        assert not evals.grade_task(self.GOLDEN, "not done", [made_inc()]).passed

    def test_trajectory_grades_the_calls_and_ignores_the_decision(self) -> None:
        assert evals.grade_task(self.TRAJECTORY, None, [made_inc()]).passed
        assert evals.grade_task(self.TRAJECTORY, "anything", [made_inc()]).passed
        assert not evals.grade_task(self.TRAJECTORY, "done", [made_read()]).passed
        assert not evals.grade_task(self.TRAJECTORY, "done", []).passed

    def test_the_kind_decides_even_beside_the_other_kinds_member(self) -> None:
        both = {"match": {"strategy": "exact", "value": "done"}, "calls": [INC]}
        as_trajectory = Expected.model_validate({"kind": "trajectory", **both})
        assert not evals.grade_task(as_trajectory, "done", [made_read()]).passed
        assert evals.grade_task(as_trajectory, "not done", [made_inc()]).passed
        as_golden = Expected.model_validate({"kind": "golden", **both})
        assert evals.grade_task(as_golden, "done", [made_read()]).passed

    def test_a_rubric_task_is_no_built_in_rule(self) -> None:
        # Its judge grades it (engine/eval_runs/judging.py); no built-in rule may pass it.
        rubric = Expected.model_validate(
            {"kind": "rubric", "rubric": [{"criterion": "polite", "weight": 1}]}
        )
        with pytest.raises(ValueError, match="judge"):
            evals.grade_task(rubric, "done", [made_inc()])


def test_a_call_reaches_a_custom_grader_as_the_documented_trace() -> None:
    """docs/graders.md: `{tool, args, status, result, error, served, durationMs}`."""
    error = {"code": "fixture_miss", "message": "m"}
    call = evals.ExecutedCall("t:a", {"x": 1}, status="error", error=error, served="miss")
    assert call.to_trace() == {
        "tool": "t:a",
        "args": {"x": 1},
        "status": "error",
        "result": None,
        "error": error,
        "served": "miss",
        "durationMs": None,
    }
    timed = evals.ExecutedCall("t:b", {}, result=[1], duration_ms=7).to_trace()
    assert (timed["status"], timed["result"], timed["served"], timed["durationMs"]) == (
        "ok",
        [1],
        "live",
        7,
    )


def test_a_grade_in_a_task_detail_carries_a_traceback_only_when_it_has_one() -> None:
    change = evals.PathChange("$.a", "changed", expected=1, actual=2)
    grade = evals.Grade(passed=False, score=0.0, reason="r", diff=(change,))
    assert grade.to_json() == {
        "passed": False,
        "score": 0.0,
        "reason": "r",
        "diff": [{"path": "$.a", "kind": "changed", "expected": 1, "actual": 2}],
    }
    raised = evals.Grade(passed=False, score=0.5, reason="r", traceback="Traceback ...")
    assert raised.to_json() == {
        "passed": False,
        "score": 0.5,
        "reason": "r",
        "diff": [],
        "traceback": "Traceback ...",
    }
