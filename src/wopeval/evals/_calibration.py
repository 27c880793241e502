"""How well a judge agrees with people: accuracy, Cohen's κ, the confusion table.

Issue 27 item 4: a judge may gate a verdict only while its calibration clears
the project's floor. This module is the arithmetic, nothing else: it takes
pairs the caller has already matched (the judge's pass/fail and a person's
pass/fail on the same output, with a reference to that case) and says how far
they agree (docs/graders.md, "Calibrating a judge").

Cohen's κ (Cohen 1960, "A coefficient of agreement for nominal scales",
Educational and Psychological Measurement 20(1), 37–46):

    κ = (p_o − p_e) / (1 − p_e)

with p_o the observed share of agreeing cases and p_e the agreement expected by
chance from each rater's own pass rate, p_e = p_J·p_H + (1 − p_J)·(1 − p_H).

Degenerate cases (docs/decisions.md, "Calibration statistics"):
- no pairs: accuracy and κ are `None`;
- p_e = 1, i.e. the judge and the people put every case in the same one class:
  κ is 0/0 and is `None`. Such labels cannot show that the judge tells a pass
  from a fail, so a calibration without a κ never clears a floor.
When only one side uses a single class, p_e < 1 and κ is defined (it is 0 when
the other side's calls are what chance gives).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True, slots=True)
class LabelledVerdict:
    """One case both a judge and a person called."""

    ref: str
    """What was judged, e.g. `<runId>/<taskId>/<trial>`; each case counts once."""
    judge_passed: bool
    """The judge's verdict."""
    human_passed: bool
    """The person's label."""

    @property
    def agrees(self) -> bool:
        return self.judge_passed == self.human_passed


@dataclass(frozen=True, slots=True)
class Confusion:
    """The 2x2 table: the judge's call against the person's."""

    both_pass: int
    judge_pass_human_fail: int
    judge_fail_human_pass: int
    both_fail: int

    @property
    def total(self) -> int:
        agreeing = self.both_pass + self.both_fail
        return agreeing + self.judge_pass_human_fail + self.judge_fail_human_pass


@dataclass(frozen=True, slots=True)
class CalibrationFloor:
    """What a judge's agreement must reach before it may gate (the project's setting)."""

    kappa_min: float = 0.6
    """κ at least this (0.6: "substantial" on the Landis and Koch 1977 scale)."""
    min_labels: int = 30
    """Over at least this many labelled cases."""

    def __post_init__(self) -> None:
        # κ lies in [-1, 1]; a floor outside it could never be met or always would be.
        if not -1.0 <= self.kappa_min <= 1.0:
            raise ValueError(f"kappa_min must be within -1..1, got {self.kappa_min}")
        if self.min_labels < 1:
            raise ValueError(f"min_labels must be at least 1, got {self.min_labels}")

    def admits(self, labels: int, kappa: float | None) -> bool:
        """Enough labels and κ at or above the floor (an undefined κ never clears)."""
        return labels >= self.min_labels and kappa is not None and kappa >= self.kappa_min


@dataclass(frozen=True, slots=True)
class Calibration:
    """A judge's agreement with people over a set of labelled cases."""

    confusion: Confusion
    accuracy: float | None
    """p_o, the share of cases where judge and person agree; `None` without cases."""
    kappa: float | None
    """Cohen's κ; `None` without cases or when every call was the same one class."""
    disagreements: tuple[LabelledVerdict, ...]
    """The cases where they differ, in the order given."""

    @property
    def labels(self) -> int:
        return self.confusion.total

    def clears(self, floor: CalibrationFloor) -> bool:
        """Enough labels and κ at or above the floor (an undefined κ never clears)."""
        return floor.admits(self.labels, self.kappa)


def calibrate(pairs: Iterable[LabelledVerdict]) -> Calibration:
    """Agreement of the judge with people over `pairs` (ValueError on a case given twice)."""
    cases = list(pairs)
    seen: set[str] = set()
    for case in cases:
        # A case counted twice would weigh one output double in κ.
        if case.ref in seen:
            raise ValueError(f"case {case.ref!r} is labelled more than once")
        seen.add(case.ref)
    confusion = Confusion(
        both_pass=sum(c.judge_passed and c.human_passed for c in cases),
        judge_pass_human_fail=sum(c.judge_passed and not c.human_passed for c in cases),
        judge_fail_human_pass=sum(not c.judge_passed and c.human_passed for c in cases),
        both_fail=sum(not c.judge_passed and not c.human_passed for c in cases),
    )
    accuracy, kappa = _agreement(confusion)
    return Calibration(
        confusion=confusion,
        accuracy=accuracy,
        kappa=kappa,
        disagreements=tuple(c for c in cases if not c.agrees),
    )


def _agreement(table: Confusion) -> tuple[float | None, float | None]:
    """(p_o, κ) in exact fractions, rounded once at the end."""
    n = table.total
    if n == 0:
        return None, None
    observed = Fraction(table.both_pass + table.both_fail, n)
    judge_pass = Fraction(table.both_pass + table.judge_pass_human_fail, n)
    human_pass = Fraction(table.both_pass + table.judge_fail_human_pass, n)
    chance = judge_pass * human_pass + (1 - judge_pass) * (1 - human_pass)
    if chance == 1:
        return float(observed), None
    return float(observed), float((observed - chance) / (1 - chance))
