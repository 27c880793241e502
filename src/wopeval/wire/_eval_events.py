"""`eval.*` payloads (`$defs.evalStarted|evalScored|evalCompleted`; RFC 0251 §D; RFC 0252 §E).

They are content-free recorded facts: no task output, no fixture content.
Host additions ride the `x-` hatch.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from wopeval.wire._event_base import Payload
from wopeval.wire.eval_options import EvalMode


class EvalStarted(Payload):
    TYPE: ClassVar[str] = "eval.started"
    suiteId: str
    """The suite run."""
    suiteVersion: str
    """Its SemVer version."""
    taskCount: int = Field(ge=0)
    """Tasks the run will score."""
    modes: list[EvalMode]
    """The modes this run exercises."""
    baselineRunId: str | None = None
    """RFC 0251 §D: the accepted baseline."""
    fixtureRuns: dict[str, str] | None = None
    """RFC 0252 §E: the accepted map, verbatim."""


class EvalScored(Payload):
    TYPE: ClassVar[str] = "eval.scored"
    taskId: str
    """The scored task."""
    score: float = Field(ge=0, le=1)
    """0..1."""
    passed: bool
    """Whether the task passed under its pass policy."""
    costUsd: float | None = Field(default=None, ge=0)
    """RFC 0081 §C: what the task's model calls cost, over all its trials."""
    latencyMs: int | None = Field(default=None, ge=0)
    """Mean wall time of the task's trials."""
    x_trials: int | None = Field(default=None, alias="x-trials")
    """Host addition: trials run."""
    x_passed_trials: int | None = Field(default=None, alias="x-passedTrials")
    """Host addition: trials that passed."""
    x_fixture_miss_count: int | None = Field(default=None, alias="x-fixtureMissCount")
    """Host addition: fixture misses across the task's trials."""


class EvalCompleted(Payload):
    TYPE: ClassVar[str] = "eval.completed"
    aggregateScore: float = Field(ge=0, le=1)
    """Mean task score."""
    passed: bool
    """Whether the suite's thresholds hold."""
    taskCount: int = Field(ge=0)
    """Tasks scored."""
    passedCount: int = Field(ge=0)
    """Tasks passed."""
    regressionVsBaseline: float | None = Field(default=None, ge=-1, le=1)
    """This aggregate minus the baseline's (RFC 0251 §D)."""
    x_fixture_miss_count: int | None = Field(default=None, alias="x-fixtureMissCount")
    """Host addition: fixture misses across the run."""
