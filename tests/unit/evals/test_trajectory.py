"""`evals/_trajectory.py`: each order passes and fails with the reason that names the calls.

The pass/fail table itself is in test_graders.py; this file pins the reasons: which expected
calls were not made, which calls were not expected, where a strict order broke.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import JsonValue

from wopeval import evals
from wopeval.wire.suite import Expected

INC: dict[str, Any] = {"tool": "c:counter", "args": {"op": "inc", "key": "k"}}
READ: dict[str, Any] = {"tool": "c:counter", "args": {"op": "read", "key": "k"}}
INC_SUBSET: dict[str, Any] = {"tool": "c:counter", "args": {"op": "inc"}, "argsMatch": "subset"}
ANY_LOG: dict[str, Any] = {"tool": "c:log"}


def trajectory(order: str, *calls: dict[str, Any]) -> Expected:
    return Expected.model_validate({"kind": "trajectory", "order": order, "calls": list(calls)})


def made(tool: str, args: JsonValue, *, delegate: bool = False) -> evals.ExecutedCall:
    return evals.ExecutedCall(tool=tool, args=args, is_delegate=delegate)


inc = made("c:counter", {"op": "inc", "key": "k"})
read = made("c:counter", {"op": "read", "key": "k"})
log = made("c:log", {"m": 1})


@pytest.mark.parametrize(
    ("expected", "calls", "passed", "reason"),
    [
        (
            trajectory("strict", INC, READ),
            [inc, read],
            True,
            "trajectory (strict): the calls made are the 2 calls expected, in order",
        ),
        (
            trajectory("strict"),
            [],
            True,
            "trajectory (strict): the calls made are the 0 calls expected, in order",
        ),
        (
            trajectory("strict", INC, READ),
            [read, inc],
            False,
            "trajectory (strict): the expected calls were made in another order; the order breaks "
            'at made[0] c:counter {"key":"k","op":"read"}, expected.calls[0] is c:counter '
            '{"key":"k","op":"inc"}; args: 1 path differs: $.op: expected "inc", got "read"',
        ),
        (
            trajectory("strict", INC, READ),
            [inc, made("c:counter", {"op": "read", "key": "k", "round": 1})],
            False,
            'trajectory (strict): the order breaks at made[1] c:counter {"key":"k","op":"read",'
            '"round":1}, expected.calls[1] is c:counter {"key":"k","op":"read"}; args: 1 path '
            "differs: $.round: expected (absent), got 1",
        ),
        (
            trajectory("strict", INC_SUBSET, ANY_LOG),
            [read, log],
            False,
            'trajectory (strict): the order breaks at made[0] c:counter {"key":"k","op":"read"}, '
            'expected.calls[0] is c:counter {"op":"inc"} (subset); args: 1 path differs: $.op: '
            'expected "inc", got "read"',
        ),
        (
            trajectory("strict", ANY_LOG),
            [inc],
            False,
            'trajectory (strict): the order breaks at made[0] c:counter {"key":"k","op":"inc"}, '
            "expected.calls[0] is c:log (any args)",
        ),
        (
            trajectory("strict", INC),
            [inc, read],
            False,
            "trajectory (strict): 1 call expected, 2 made; 1 call not expected: made[1] c:counter "
            '{"key":"k","op":"read"}',
        ),
        (
            trajectory("strict", INC, READ),
            [inc],
            False,
            "trajectory (strict): 2 calls expected, 1 made; 1 expected call not made: "
            'expected.calls[1] c:counter {"key":"k","op":"read"}',
        ),
        (
            trajectory("unordered", INC, READ),
            [read, inc],
            True,
            "trajectory (unordered): the calls made match the 2 calls expected, in some order",
        ),
        (
            trajectory("unordered", INC, INC),
            [inc, read],
            False,
            'trajectory (unordered): 1 expected call not made: expected.calls[1] c:counter {"key":'
            '"k","op":"inc"}; 1 call not expected: made[1] c:counter {"key":"k","op":"read"}',
        ),
        (
            trajectory("subset", INC, READ),
            [read],
            True,
            "trajectory (subset): every call made is among the 2 calls expected (1 made)",
        ),
        (
            trajectory("subset", INC),
            [inc, inc],
            False,
            'trajectory (subset): 1 call not expected: made[1] c:counter {"key":"k","op":"inc"}',
        ),
        (
            trajectory("superset", READ),
            [inc, read],
            True,
            "trajectory (superset): the calls made include each of the 1 call expected (2 made)",
        ),
        (
            trajectory("superset", READ, ANY_LOG),
            [inc],
            False,
            "trajectory (superset): 2 expected calls not made: expected.calls[0] c:counter "
            '{"key":"k","op":"read"}, expected.calls[1] c:log (any args)',
        ),
    ],
)
def test_reasons(
    expected: Expected, calls: list[evals.ExecutedCall], passed: bool, reason: str
) -> None:
    grade = evals.grade_trajectory(expected, calls)
    assert (grade.passed, grade.reason) == (passed, reason)


def test_a_strict_break_carries_the_args_diff() -> None:
    grade = evals.grade_trajectory(trajectory("strict", INC), [read])
    assert grade.diff == (evals.PathChange("$.op", "changed", "inc", "read"),)


def test_delegate_calls_are_neither_counted_nor_named() -> None:
    delegated = made("c:counter", {"op": "read", "key": "k"}, delegate=True)
    grade = evals.grade_trajectory(trajectory("unordered", INC), [delegated, inc])
    assert grade.reason == (
        "trajectory (unordered): the calls made match the 1 call expected, in some order"
    )


def test_past_five_calls_the_rest_are_counted() -> None:
    grade = evals.grade_trajectory(trajectory("subset"), [inc] * 7)
    assert grade.reason.endswith('made[4] c:counter {"key":"k","op":"inc"}, and 2 more')


@pytest.mark.parametrize("order", ["unordered", "superset"])
def test_with_no_call_made_every_expected_call_is_missing(order: str) -> None:
    grade = evals.grade_trajectory(trajectory(order, INC, ANY_LOG), [])
    assert not grade.passed
    assert grade.reason.startswith(f"trajectory ({order}): 2 expected calls not made")


def test_calls_not_expected_are_counted_in_the_plural() -> None:
    grade = evals.grade_trajectory(trajectory("subset", INC), [inc, log, log])
    assert grade.reason.startswith("trajectory (subset): 2 calls not expected: made[1] c:log")


def test_five_calls_are_listed_without_a_remainder() -> None:
    grade = evals.grade_trajectory(trajectory("subset"), [log] * 5)
    assert grade.reason.count("made[") == 5
    assert "more" not in grade.reason
