"""How many more trials would decide an inconclusive task (issue 27 item 5).

A multi-trial task is `inconclusive` when its pass rates differ but the
Holm-corrected two-sided Fisher exact test of `_verdict.py` does not reach α.
This says how many more trials would decide it, under one stated model
(docs/decisions.md, "More trials needed"):

- extra trials pass at their side's observed rate: a side with `passed` of `n`
  trials has, after k more, round((n + k) · passed / n) passed of n + k;
- two counts: `trials`, k more trials of the candidate alone (the baseline is
  a finished run and keeps its recorded counts; this is what
  `wopeval eval --trials auto` can add), and `each_side`, k more on both sides
  (a baseline run again with more trials too);
- decided means the raw Fisher p times m, the multi-trial tasks in the run's
  Holm family, is at most α. Holm's adjusted p never exceeds m · p, so such a
  task is decided whatever the other tasks' p-values do (a bound on the safe
  side: Holm may decide it with fewer);
- each count is the smallest k up to `MORE_TRIALS_CAP`, else `None`.

Trials are not paired one to one (the test compares two pass counts), so there
are no discordant pairs to scale. When the observed rates are equal no number
of trials at those rates separates them: "cannot be decided".
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from wopeval.evals._verdict import DEFAULT_ALPHA, fisher_p, paired_verdict
from wopeval.wire.summary import EvalSummary, TaskSummary, Verdict
from wopeval.wire.task_detail import MoreTrialsView

MORE_TRIALS_CAP = 200
"""The most extra trials of one task the search considers (twice a suite's largest `trials`)."""


class Undecided(enum.StrEnum):
    """Why no number of extra candidate trials up to the cap decides a task."""

    EQUAL_RATES = "equal-rates"
    """Both sides pass at the same rate: more trials at those rates show no difference."""
    BEYOND_CAP = "beyond-cap"
    """Not within `MORE_TRIALS_CAP` more candidate trials at the observed rates."""


@dataclass(frozen=True, slots=True)
class PassCounts:
    """One side of a task: trials that passed, of trials run."""

    passed: int
    trials: int

    def __post_init__(self) -> None:
        if not 0 <= self.passed <= self.trials or self.trials < 1:
            raise ValueError(f"need 0 <= passed <= trials and trials >= 1: {self}")

    @classmethod
    def of(cls, task: TaskSummary) -> PassCounts:
        trials = task.trials if task.trials is not None else 1
        passed = task.passedTrials if task.passedTrials is not None else round(task.score * trials)
        return cls(passed, trials)

    def projected(self, extra: int) -> PassCounts:
        """After `extra` more trials passing at this side's observed rate (rounded half up)."""
        total = self.trials + extra
        return PassCounts(int(Fraction(total * self.passed, self.trials) + Fraction(1, 2)), total)


@dataclass(frozen=True, slots=True)
class MoreTrials:
    """The extra trials that would decide a task at the observed rates."""

    trials: int | None
    """More candidate trials alone; `None` when none up to the cap would (see `undecided`)."""
    each_side: int | None
    """More trials on each side, the baseline run again too; `None` when none up to the cap."""
    undecided: Undecided | None = None
    """Why `trials` is `None`."""
    cap: int = MORE_TRIALS_CAP

    @property
    def text(self) -> str:
        """One line for the task's reason: what a user can do about the verdict."""
        if self.trials is not None:
            return f"{self.trials} more trials at the observed pass rates would decide it"
        if self.undecided is Undecided.EQUAL_RATES:
            return "cannot be decided: both sides pass at the same rate"
        head = f"more trials of this run alone would not decide it (up to {self.cap})"
        if self.each_side is not None:
            return f"{head}; {self.each_side} more on each side, the baseline too, would"
        return f"{head}, nor up to {self.cap} more on each side"

    def view(self) -> MoreTrialsView:
        """As the task routes show it."""
        return MoreTrialsView(trials=self.trials, eachSide=self.each_side, note=self.text)


def more_trials_needed(
    baseline: PassCounts,
    candidate: PassCounts,
    *,
    alpha: float = DEFAULT_ALPHA,
    tests: int = 1,
    cap: int = MORE_TRIALS_CAP,
) -> MoreTrials:
    """The smallest extra trials ≤ `cap` deciding the task (module docstring).

    `tests` is m, the multi-trial tasks the run's Holm correction spans.
    """
    if Fraction(candidate.passed, candidate.trials) == Fraction(baseline.passed, baseline.trials):
        return MoreTrials(None, None, Undecided.EQUAL_RATES, cap)
    threshold = alpha / tests
    alone = _first(lambda k: (baseline, candidate.projected(k)), threshold, cap)
    each = _first(lambda k: (baseline.projected(k), candidate.projected(k)), threshold, cap)
    return MoreTrials(alone, each, None if alone is not None else Undecided.BEYOND_CAP, cap)


def _first(
    sides: Callable[[int], tuple[PassCounts, PassCounts]], threshold: float, cap: int
) -> int | None:
    """The smallest k ≤ cap whose projected sides are significant at `threshold`."""
    for extra in range(cap + 1):
        base, cand = sides(extra)
        # The quick test screens; the verdict's own test (SciPy) confirms, so a count
        # never names a k at which the verdict would still say inconclusive.
        if _fisher_two_sided(base, cand) <= threshold * _SCREEN_SLACK and (
            fisher_p(base.passed, base.trials, cand.passed, cand.trials) <= threshold
        ):
            return extra
    return None


_SCREEN_SLACK = 1 + 1e-6
"""Room for the two implementations' float rounding, so the screen never drops a k the
confirming test would accept."""


def _fisher_two_sided(base: PassCounts, cand: PassCounts) -> float:
    """Two-sided Fisher exact p (tables at most as likely as the observed one), in O(n).

    The same test as `fisher_p` without SciPy's per-call overhead (milliseconds),
    which a search over hundreds of projected tables cannot afford.
    """
    row, col = base.trials, base.passed + cand.passed
    n = base.trials + cand.trials
    low, high = max(0, col - cand.trials), min(row, col)

    def log_pmf(x: int) -> float:
        return _log_comb(row, x) + _log_comb(n - row, col - x) - _log_comb(n, col)

    observed = log_pmf(base.passed)
    # SciPy's relative tolerance for "as likely as the observed table".
    limit = observed + math.log1p(1e-7)
    total = sum(math.exp(log_pmf(x)) for x in range(low, high + 1) if log_pmf(x) <= limit)
    return min(1.0, total)


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def inconclusive_more_trials(
    baseline: EvalSummary,
    candidate: EvalSummary,
    *,
    alpha: float = DEFAULT_ALPHA,
    cap: int = MORE_TRIALS_CAP,
) -> dict[str, MoreTrials]:
    """For each task the paired verdict calls inconclusive: its `more_trials_needed`.

    A task with unjudged trials is left out: it is inconclusive for want of a judgement
    (docs/graders.md), which more trials under the same conditions would not give.
    """
    judged = paired_verdict(baseline, candidate, alpha=alpha)
    tests = sum(task.p_value is not None for task in judged.tasks)
    base = {task.taskId: task for task in baseline.tasks}
    cand = {task.taskId: task for task in candidate.tasks}
    return {
        task.task_id: more_trials_needed(
            PassCounts.of(base[task.task_id]),
            PassCounts.of(cand[task.task_id]),
            alpha=alpha,
            tests=tests,
            cap=cap,
        )
        for task in judged.tasks
        if task.verdict is Verdict.INCONCLUSIVE and not cand[task.task_id].unjudgedTrials
    }
