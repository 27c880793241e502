"""Trials and pass policy: how a task's trial results make its `passed` (docs/design.md §3).

A task runs `trials` times (task level overrides suite level; 1..100, default
1) and passes under `passPolicy` (`all`, the default, `any` or `majority`).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from wopeval.wire.suite import Suite, Task


class PassPolicy(enum.StrEnum):
    """docs/design.md §3 `passPolicy` over a task's trials."""

    ALL = "all"
    ANY = "any"
    MAJORITY = "majority"


DEFAULT_TRIALS = 1
"""docs/design.md §3: trials when neither the task nor the suite says."""

DEFAULT_POLICY = PassPolicy.ALL
"""docs/design.md §3: pass policy when neither the task nor the suite says."""


def trials_pass(policy: PassPolicy, results: Sequence[bool]) -> bool:
    """Whether a task with these trial results passes under `policy`.

    No trials never pass: a task that did not run has shown nothing.
    `majority` is strict: more than half (2 of 4 is not a majority).
    """
    if not results:
        return False
    if policy is PassPolicy.ALL:
        return all(results)
    if policy is PassPolicy.ANY:
        return any(results)
    return 2 * sum(results) > len(results)


def effective_trials(suite: Suite, task: Task) -> int:
    """docs/design.md §3: the task's `trials`, else the suite's, else 1."""
    if task.trials is not None:
        return task.trials
    return suite.trials if suite.trials is not None else DEFAULT_TRIALS


def effective_policy(suite: Suite, task: Task) -> PassPolicy:
    """docs/design.md §3: the task's `passPolicy`, else the suite's, else `all`."""
    name = task.passPolicy or suite.passPolicy
    return PassPolicy(name) if name is not None else DEFAULT_POLICY
