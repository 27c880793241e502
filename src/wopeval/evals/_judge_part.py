"""The `judge` part of a rubric trial's grade (evals/_rubric.py makes it; docs/graders.md).

Apart from `_rubric.py` so `Grade` (`_grade.py`), which the rubric rules build,
can carry it without an import circle.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import JsonValue


@dataclass(frozen=True, slots=True)
class CriterionGrade:
    """One criterion as the judge graded it."""

    criterion: str
    weight: float
    score: float | None
    """0..1; None when the criterion went unjudged."""
    passed: bool
    reason: str
    exchange: int | None
    """The ordinal of the judge's recorded exchange among the trial's model calls."""

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "criterion": self.criterion,
            "weight": self.weight,
            "score": self.score,
            "passed": self.passed,
            "reason": self.reason,
            "exchange": self.exchange,
        }


@dataclass(frozen=True, slots=True)
class JudgePart:
    """The `judge` part of a rubric trial's grade: who judged, and each criterion's grade."""

    judge_id: str
    digest: str
    gate: bool
    criteria: tuple[CriterionGrade, ...]
    unjudged: str | None = None
    """Why the judge gave no judgement (the trial's task is then inconclusive)."""

    def to_json(self) -> dict[str, JsonValue]:
        document: dict[str, JsonValue] = {
            "judgeId": self.judge_id,
            "digest": self.digest,
            "gate": self.gate,
            "criteria": [c.to_json() for c in self.criteria],
        }
        if self.unjudged is not None:
            document["unjudged"] = self.unjudged
        return document
