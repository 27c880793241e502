"""`EvalSummary`: RFC 0081 fields plus this host's additions (docs/design.md §3).

The RFC 0081 shape is `schemas/v2/eval-summary.schema.json` (wire digest §2.5).
RFC 0251 §D fixes `regression.baselineRunId` and `regression.scoreDelta`. The
rest — `fixtureMissCount` (root and per task), per-task `trials` /
`passedTrials`, and the paired verdict under `regression` (RFC 0244 §F) — is
this host's provisional answer to digest gap G1; the SDK ignores unknown keys.

The summary is content-free (invariant `eval-summary-no-content-leak`): ids,
numbers and verdicts only, never task output, fixture content or rubric prose.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from wopeval.wire.suite import SEMVER_PATTERN, SUITE_ID_PATTERN, TASK_ID_PATTERN
from wopeval.wire.verdict import Verdict as Verdict


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Advisory(_Closed):
    """Why a rubric task's result does not count toward the run's verdict (docs/graders.md,
    "Calibration"): its judge does not gate, or its latest calibration for the judge's
    current digest does not clear the project's floor. Ids and numbers only."""

    judgeId: str = Field(min_length=1)
    gate: bool
    """The judge's `gate` setting; False: advisory whatever its calibration."""
    kappa: float | None = Field(default=None, ge=-1, le=1)
    """Cohen's kappa of its latest calibration for its current digest (absent: none, or
    undefined)."""
    labels: int = Field(default=0, ge=0)
    """Labelled cases that calibration counted (0: never calibrated at this digest)."""

    def text(self) -> str:
        """What the summary, JUnit, Markdown and the dashboard say of it."""
        if not self.gate:
            return f"advisory: judge {self.judgeId} does not gate (gate = false)"
        kappa = "n/a" if self.kappa is None else f"{self.kappa:.2f}"
        return f"advisory: judge {self.judgeId} is not calibrated (kappa {kappa}, n {self.labels})"


class TaskSummary(_Closed):
    """`tasks[]` of the summary (RFC 0081 §C; trial and miss counts per docs/design.md §3)."""

    taskId: str = Field(pattern=TASK_ID_PATTERN)
    """RFC 0081 §C: the suite task."""
    score: float = Field(ge=0, le=1)
    """RFC 0081 §C: 0..1; here passed trials / trials."""
    passed: bool
    """RFC 0081 §C: the task's result under its pass policy."""
    costUsd: float | None = Field(default=None, ge=0)
    """RFC 0081 §C: what the task's model calls cost over all its trials (the project's
    price table); absent when none was priced."""
    latencyMs: int | None = Field(default=None, ge=0)
    """RFC 0081 §C: mean wall time of the task's trials."""
    trials: int | None = Field(default=None, ge=1)
    """docs/design.md §3: trials run."""
    passedTrials: int | None = Field(default=None, ge=0)
    """docs/design.md §3: trials that passed."""
    fixtureMissCount: int | None = Field(default=None, ge=0)
    """docs/design.md §3 (RFC 0252 §E): fixture misses under `onMiss: fail`, over all trials."""
    unjudgedTrials: int | None = Field(default=None, ge=1)
    """docs/graders.md: rubric trials no judge graded (absent when none); the task's
    paired verdict is then `inconclusive`."""
    advisory: Advisory | None = None
    """docs/graders.md, "Calibration": a rubric task whose judge may not gate; its score is
    shown, but it counts toward neither `passed` of the run nor its paired verdict."""


class TaskRegression(_Closed):
    """`regression.tasks[]`: one paired task (RFC 0244 §F as docs/design.md §3 defines it)."""

    taskId: str = Field(pattern=TASK_ID_PATTERN)
    """RFC 0244 §F: tasks pair by `taskId`."""
    baselineScore: float = Field(ge=0, le=1)
    """The baseline run's score for the task."""
    score: float = Field(ge=0, le=1)
    """This run's score for the task."""
    delta: float = Field(ge=-1, le=1)
    """`score - baselineScore`."""
    verdict: Verdict
    """docs/design.md §3: the task's paired verdict."""
    pValue: float | None = Field(default=None, ge=0, le=1)
    """docs/design.md §3: Holm-adjusted two-sided Fisher exact p; only for multi-trial tasks."""
    flaky: bool | None = None
    """docs/design.md §3: a multi-trial side passed some trials and failed others."""


class Regression(_Closed):
    """`regression` (RFC 0081 §C, RFC 0251 §D; verdict members per docs/design.md §3)."""

    baselineRunId: str = Field(min_length=1)
    """RFC 0251 §D: equals `eval.started.baselineRunId`."""
    scoreDelta: float = Field(ge=-1, le=1)
    """RFC 0251 §D: this run's `aggregateScore` minus the baseline's."""
    verdict: Verdict | None = None
    """docs/design.md §3: the run's paired verdict; absent when `regressionVerdict` is off."""
    pairedTaskCount: int | None = Field(default=None, ge=0)
    """docs/design.md §3: tasks present on both sides."""
    baselineOnlyTaskIds: list[str] | None = None
    """docs/design.md §3: tasks only the baseline ran, in its suite order; they never count."""
    candidateOnlyTaskIds: list[str] | None = None
    """docs/design.md §3: tasks only this run ran, in its suite order; they never count."""
    tasks: list[TaskRegression] | None = None
    """docs/design.md §3: the paired tasks, in this run's suite order."""


class EvalSummary(_Closed):
    """The summary of an eval run (RFC 0081 §C; docs/design.md §3)."""

    suiteId: str = Field(pattern=SUITE_ID_PATTERN)
    """RFC 0081 §C: the suite run."""
    suiteVersion: str = Field(pattern=SEMVER_PATTERN)
    """RFC 0081 §C: its version."""
    aggregateScore: float = Field(ge=0, le=1)
    """RFC 0081 §C: host-defined; here the mean task score."""
    passed: bool
    """RFC 0081 §C: the score bar and the declared cost and latency bars; the score bar is
    held against the mean score of the tasks that are not advisory (docs/decisions.md,
    "Advisory rubric tasks")."""
    taskCount: int = Field(ge=0)
    """RFC 0081 §C: tasks scored."""
    passedCount: int = Field(ge=0)
    """RFC 0081 §C: tasks passed."""
    tasks: list[TaskSummary]
    """RFC 0081 §C: per task, in suite order."""
    totalCostUsd: float | None = Field(default=None, ge=0)
    """RFC 0081 §C: cost over every trial, when any trial reported one."""
    fixtureMissCount: int = Field(default=0, ge=0)
    """docs/design.md §3 (RFC 0252 §E): fixture misses over the whole run."""
    regression: Regression | None = None
    """RFC 0251 §D: present when the run had a baseline."""

    def advisory_notes(self) -> list[str]:
        """One line per judge whose tasks are advisory: what the summary, JUnit, Markdown
        and the dashboard say of them, with the tasks it concerns."""
        notes: dict[str, list[str]] = {}
        for task in self.tasks:
            if task.advisory is not None:
                notes.setdefault(task.advisory.text(), []).append(task.taskId)
        return [f"{text} (tasks {', '.join(tasks)})" for text, tasks in notes.items()]

    def task(self, task_id: str) -> TaskSummary | None:
        """The summary entry for this task, if the run scored it."""
        return next((t for t in self.tasks if t.taskId == task_id), None)

    def to_wire(self) -> dict[str, Any]:
        """The JSON body: JSON-mode, absent members omitted."""
        return self.model_dump(mode="json", exclude_none=True)
