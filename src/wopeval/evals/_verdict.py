"""The paired regression verdict (RFC 0244 §F as docs/design.md §3 defines it).

Tasks pair by `taskId`; a task on one side only never counts. With one trial
on both sides the sign of the score delta decides. With several trials on
either side, a two-sided Fisher exact test on the pass counts, Holm-corrected
across those tasks, decides at α (0.05 by default): a significant delta is
improved or regressed by its sign; a non-significant non-zero delta is
inconclusive, never unchanged. Nothing here compares aggregates: the RFC 0251
conformance fixtures differ by 1/3 in aggregate while every pair is equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from wopeval.wire.summary import EvalSummary, TaskSummary, Verdict

DEFAULT_ALPHA = 0.05
"""docs/design.md §3: the family-wise error rate of the Holm-corrected tests."""


@dataclass(frozen=True, slots=True)
class TaskVerdict:
    """One paired task."""

    task_id: str
    baseline_score: float
    score: float
    delta: float
    verdict: Verdict
    p_value: float | None = None
    """Holm-adjusted p; `None` when both sides ran a single trial."""
    flaky: bool | None = None
    """`None` when both sides ran a single trial."""


@dataclass(frozen=True, slots=True)
class PairedVerdict:
    """The run's verdict against its baseline."""

    verdict: Verdict
    paired_task_count: int
    baseline_only_task_ids: tuple[str, ...]
    candidate_only_task_ids: tuple[str, ...]
    tasks: tuple[TaskVerdict, ...]


def holm_adjust(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values, in the input order.

    Sorted ascending, the i-th (0-based) of m raw p-values becomes
    max over j ≤ i of (m − j)·p(j), capped at 1: monotone in that order and
    never below the raw p.
    """
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[index]))
        adjusted[index] = running
    return adjusted


def paired_verdict(
    baseline: EvalSummary, candidate: EvalSummary, *, alpha: float = DEFAULT_ALPHA
) -> PairedVerdict:
    """RFC 0244 §F: the candidate's verdict against the baseline, task by task."""
    baseline_by_id = {t.taskId: t for t in baseline.tasks}
    candidate_ids = {t.taskId for t in candidate.tasks}
    # "tasks pair by taskId"; suite order is the candidate's.
    pairs = [(baseline_by_id[t.taskId], t) for t in candidate.tasks if t.taskId in baseline_by_id]
    multi = [i for i, (b, c) in enumerate(pairs) if _trials(b) > 1 or _trials(c) > 1]
    adjusted = dict(zip(multi, holm_adjust([_fisher_p(*pairs[i]) for i in multi]), strict=True))
    tasks = tuple(_task_verdict(b, c, adjusted.get(i), alpha) for i, (b, c) in enumerate(pairs))
    return PairedVerdict(
        # docs/graders.md, "Calibration": an advisory task's verdict is shown, never counted.
        verdict=_overall(
            [t.verdict for t, (_, c) in zip(tasks, pairs, strict=True) if c.advisory is None]
        ),
        paired_task_count=len(tasks),
        baseline_only_task_ids=tuple(
            t.taskId for t in baseline.tasks if t.taskId not in candidate_ids
        ),
        candidate_only_task_ids=tuple(
            t.taskId for t in candidate.tasks if t.taskId not in baseline_by_id
        ),
        tasks=tasks,
    )


def _task_verdict(
    base: TaskSummary, cand: TaskSummary, p_value: float | None, alpha: float
) -> TaskVerdict:
    delta = cand.score - base.score  # both scores are in 0..1
    flaky: bool | None = None
    if cand.unjudgedTrials:
        # docs/graders.md: a trial no judge graded decides nothing, never a pass or a drop.
        verdict = Verdict.INCONCLUSIVE
    elif p_value is None:
        # "with one trial on both sides the sign of the delta decides".
        verdict = _by_sign(delta)
    else:
        # "with several trials an exact test ... with Holm correction decides";
        # "a non-significant non-zero delta is `inconclusive`, never `unchanged`".
        significant = p_value <= alpha
        verdict = _by_sign(delta) if significant or delta == 0 else Verdict.INCONCLUSIVE
        flaky = _flaky(base) or _flaky(cand)
    return TaskVerdict(
        task_id=cand.taskId,
        baseline_score=base.score,
        score=cand.score,
        delta=delta,
        verdict=verdict,
        p_value=p_value,
        flaky=flaky,
    )


def _overall(verdicts: Sequence[Verdict]) -> Verdict:
    """docs/design.md §3: regressed if any, else improved if any, else unchanged if all."""
    # "The run's verdict is `regressed` if any task regressed".
    if Verdict.REGRESSED in verdicts:
        return Verdict.REGRESSED
    # "else `improved` if any improved".
    if Verdict.IMPROVED in verdicts:
        return Verdict.IMPROVED
    # "else `unchanged` if all are" (vacuously so when nothing pairs).
    if all(v is Verdict.UNCHANGED for v in verdicts):
        return Verdict.UNCHANGED
    # "else `inconclusive`".
    return Verdict.INCONCLUSIVE


def _by_sign(delta: float) -> Verdict:
    if delta > 0:
        return Verdict.IMPROVED
    if delta < 0:
        return Verdict.REGRESSED
    return Verdict.UNCHANGED


def _trials(task: TaskSummary) -> int:
    """Trials run; a summary without the count ran one."""
    return task.trials if task.trials is not None else 1


def _passed_trials(task: TaskSummary) -> int:
    if task.passedTrials is not None:
        return task.passedTrials
    return round(task.score * _trials(task))


def _flaky(task: TaskSummary) -> bool:
    """A side with several trials that passed some and failed others."""
    return 0 < _passed_trials(task) < _trials(task)


def _fisher_p(base: TaskSummary, cand: TaskSummary) -> float:
    return fisher_p(_passed_trials(base), _trials(base), _passed_trials(cand), _trials(cand))


def fisher_p(base_passed: int, base_trials: int, cand_passed: int, cand_trials: int) -> float:
    """Two-sided Fisher exact p on [[passed, failed] per side].

    The rows are sorted first, so swapping the sides gives the identical float.
    """
    # SciPy costs ~0.4 s to import; only multi-trial pairs need it.
    from scipy.stats import fisher_exact

    rows = sorted(
        [[base_passed, base_trials - base_passed], [cand_passed, cand_trials - cand_passed]]
    )
    result = fisher_exact(rows, alternative="two-sided")
    return min(1.0, float(result.pvalue))
