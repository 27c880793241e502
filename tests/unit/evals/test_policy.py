"""`evals/_policy.py`: how many trials a task runs and how its trials make `passed`."""

from __future__ import annotations

from typing import Any

import pytest

from wopeval import evals
from wopeval.evals import PassPolicy

from ._builders import golden_task, make_suite


@pytest.mark.parametrize("policy", list(PassPolicy))
def test_no_trials_never_pass(policy: PassPolicy) -> None:
    assert evals.trials_pass(policy, []) is False


@pytest.mark.parametrize(
    ("policy", "results", "passes"),
    [
        (PassPolicy.ALL, [True, True], True),
        (PassPolicy.ALL, [True, False], False),
        (PassPolicy.ANY, [False, True], True),
        (PassPolicy.ANY, [False, False], False),
        (PassPolicy.MAJORITY, [True, True, False], True),
        (PassPolicy.MAJORITY, [True, True, False, False], False),
    ],
)
def test_policies(policy: PassPolicy, results: list[bool], passes: bool) -> None:
    assert evals.trials_pass(policy, results) is passes


@pytest.mark.parametrize(
    ("suite_fields", "task_fields", "trials", "policy"),
    [
        ({}, {}, evals.DEFAULT_TRIALS, PassPolicy.ALL),
        ({"trials": 3, "passPolicy": "any"}, {}, 3, PassPolicy.ANY),
        ({"trials": 3, "passPolicy": "any"}, {"trials": 5, "passPolicy": "majority"}, 5,
         PassPolicy.MAJORITY),
        ({}, {"trials": 2}, 2, PassPolicy.ALL),
    ],
)  # fmt: skip
def test_the_task_overrides_the_suite_which_overrides_the_default(
    suite_fields: dict[str, Any], task_fields: dict[str, Any], trials: int, policy: PassPolicy
) -> None:
    suite = make_suite(golden_task("t", **task_fields), **suite_fields)
    (task,) = suite.tasks
    assert evals.effective_trials(suite, task) == trials
    assert evals.effective_policy(suite, task) is policy
    assert evals.DEFAULT_TRIALS == 1
