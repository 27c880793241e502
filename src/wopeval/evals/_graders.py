"""Graders: a task's decision and calls against its `expected` (RFC 0081 §A; docs/design.md §3).

`golden` compares the agent's decision with `match` (`_golden.py`);
`trajectory` compares the calls the agent made, as executed and excluding
delegates (RFC 0244 §A), with `calls` (`_trajectory.py`). Each returns a `Grade`
for one trial; the pass policy over trials is `_policy.trials_pass`. A `custom`
match calls the project's code, so the engine grades it (`engine/eval_runs/grading.py`);
this module only checks that a suite names graders the host has.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from pydantic import JsonValue

from wopeval.evals._executed import ExecutedCall
from wopeval.evals._golden import grade_golden
from wopeval.evals._grade import Grade
from wopeval.evals._trajectory import grade_trajectory
from wopeval.wire import errors
from wopeval.wire.suite import Expected, Suite


def grade_task(expected: Expected, decision: JsonValue, calls: Sequence[ExecutedCall]) -> Grade:
    """Grade one trial by its task's `expected.kind` with a built-in strategy.

    Raises ValueError for a `custom` match or a rubric: only the engine can call a
    project's grader or a judge.
    """
    if expected.kind == "golden" and expected.match is not None:
        return grade_golden(expected.match, decision)
    if expected.kind == "trajectory":
        return grade_trajectory(expected, calls)
    # A rubric needs its judge, which the engine asks (engine/eval_runs/judging.py).
    raise ValueError("a rubric task is graded by its judge, not by a built-in rule")


def check_known_graders(suite: Suite, known: Collection[str]) -> None:
    """Refuse a suite whose `custom` matches name a grader the host does not declare.

    Raises `errors.ValidationFailed` naming each offending field
    (`tasks[1].expected.match.grader: ...`), joined by "; " as `parse_suite` does.
    """
    problems = [
        f"tasks[{index}].expected.match.grader: this host declares no grader {grader!r}"
        for index, task in enumerate(suite.tasks)
        if (grader := _grader_of(task.expected)) is not None and grader not in known
    ]
    if problems:
        raise errors.ValidationFailed("; ".join(problems))


def graders_named(suite: Suite) -> frozenset[str]:
    """The custom graders a suite's tasks name."""
    return frozenset(
        grader for task in suite.tasks if (grader := _grader_of(task.expected)) is not None
    )


def _grader_of(expected: Expected) -> str | None:
    match = expected.match
    return match.grader if expected.kind == "golden" and match is not None else None
