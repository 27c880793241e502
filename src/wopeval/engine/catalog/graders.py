"""A project's custom grader as the catalog holds it: a `[[graders]]` entry of `wopeval.toml`,
its callable imported (called by eval_runs/grading.py, docs/graders.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DEFAULT_GRADER_TIMEOUT_SECONDS = 60.0
"""How long a custom grader may take when its `[[graders]]` entry does not say."""


@dataclass(frozen=True)
class CustomGrader:
    """A `[[graders]]` entry of the project, its callable imported."""

    grader_id: str
    function: Callable[..., Any]
    timeout_seconds: float = DEFAULT_GRADER_TIMEOUT_SECONDS
