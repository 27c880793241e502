"""`evals.check_known_graders`: a suite naming a grader the host lacks is refused by field path."""

from __future__ import annotations

from typing import Any

import pytest

from wopeval import evals
from wopeval.wire import errors

from ._builders import golden_task, make_suite


def custom_task(task_id: str, grader: str) -> dict[str, Any]:
    match = {"strategy": "custom", "grader": grader, "value": {"tier": "gold"}}
    return golden_task(task_id, expected={"kind": "golden", "match": match})


def test_every_unknown_grader_is_named_with_its_field() -> None:
    suite = make_suite(
        golden_task("plain"), custom_task("one", "refund-check"), custom_task("two", "gone")
    )
    with pytest.raises(errors.ValidationFailed) as caught:
        evals.check_known_graders(suite, set())
    assert caught.value.message == (
        "tasks[1].expected.match.grader: this host declares no grader 'refund-check'; "
        "tasks[2].expected.match.grader: this host declares no grader 'gone'"
    )
    with pytest.raises(errors.ValidationFailed, match=r"^tasks\[2\]\.expected\.match\.grader:"):
        evals.check_known_graders(suite, {"refund-check"})


def test_known_graders_and_built_in_strategies_pass() -> None:
    suite = make_suite(golden_task("plain"), custom_task("one", "refund-check"))
    evals.check_known_graders(suite, {"refund-check"})
    assert evals.graders_named(suite) == {"refund-check"}
    assert evals.graders_named(make_suite()) == frozenset()


def test_a_match_on_a_task_graded_otherwise_names_no_grader() -> None:
    """Only a golden task is graded by its `match`; a trajectory task's stray one is unused."""
    match = {"strategy": "custom", "grader": "unused", "value": 1}
    calls = [{"tool": "c:log"}]
    expected = {"kind": "trajectory", "order": "strict", "calls": calls, "match": match}
    suite = make_suite(golden_task("walk", expected=expected))
    evals.check_known_graders(suite, set())
    assert evals.graders_named(suite) == frozenset()
