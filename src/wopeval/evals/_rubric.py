"""Rubric grading (RFC 0081 §A `expected.kind: "rubric"`, §D mode `rubric`): the pure rules.

RFC 0081 §D leaves the judge to the host ("host-chosen judge"); docs/graders.md
says how this host's works and docs/decisions.md ("Rubric judges") why:

- the judge's prompt is the project's template with `$input` (the task's input),
  `$criteria` (the rubric, numbered) and `$scale` filled in, followed by the
  answer format below; the output under judgement is the one user message;
- the judge answers `{"criteria": [{"criterion": N, "score": S, "reason": "..."}]}`,
  one entry per criterion, S on the judge's scale (points `0..P` or one of its
  choices, worst first), read here into a 0..1 score per criterion;
- a criterion passes at `score >= threshold`; the trial's score is the
  weighted sum of the criteria's scores over the sum of the weights (equal
  weights when every weight is 0); the trial passes at `score >= threshold`;
- a trial the judge could not grade is *unjudged*: it fails, and its task's
  paired verdict is `inconclusive` (never a pass nobody judged).

The engine asks the judge (engine/eval_runs/judging.py); nothing here does I/O.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from string import Template
from typing import Any

from pydantic import JsonValue

from wopeval.evals._canonical import args_hash, compact_json
from wopeval.evals._grade import Grade, shorten
from wopeval.evals._judge_part import CriterionGrade, JudgePart
from wopeval.wire.suite import RubricItem

TEMPLATE_FIELDS = frozenset({"input", "criteria", "scale"})
"""The placeholders a judge's prompt template may use."""

DEFAULT_TEMPLATE = """You grade an AI agent's answer against a rubric.
The task the agent was given (JSON): $input

Score the answer (the user message) on each criterion:
$criteria

Score each criterion $scale."""

ANSWER_FORMAT = (
    "Answer with one JSON object and nothing else: "
    '{"criteria": [{"criterion": <its number>, "score": <its score>, '
    '"reason": "<one short sentence>"}, ...]}, one entry per criterion.'
)
"""Appended to every judge prompt: what `read_judgement` reads."""

REASON_CHARS = 200
"""The most characters of a judge's reason a grade keeps."""


class JudgementUnreadable(ValueError):
    """The judge's answer is not a judgement of these criteria; the message says why."""


@dataclass(frozen=True, slots=True)
class JudgeScale:
    """What a judge scores each criterion on: points `0..points`, or choices worst first."""

    points: int | None = None
    choices: tuple[str, ...] | None = None

    def describe(self) -> str:
        if self.choices is not None:
            return "as one of " + ", ".join(json.dumps(c) for c in self.choices) + " (worst first)"
        return f"as a whole number from 0 (not met) to {self.points} (fully met)"

    def normalise(self, answer: object) -> float | None:
        """The 0..1 score of an answer on this scale; None for one off the scale."""
        if self.choices is not None:
            if not isinstance(answer, str) or answer not in self.choices:
                return None
            return self.choices.index(answer) / (len(self.choices) - 1)
        points = self.points or 1
        if isinstance(answer, bool) or not isinstance(answer, int | float):
            return None
        if not math.isfinite(answer) or not 0 <= answer <= points:
            return None
        return float(answer) / points

    def to_json(self) -> dict[str, JsonValue]:
        if self.choices is not None:
            return {"choices": list(self.choices)}
        return {"points": self.points}


@dataclass(frozen=True, slots=True)
class JudgeRules:
    """A declared judge as the grading rules see it (no endpoint, no key)."""

    judge_id: str
    model: str
    api: str
    template: str
    scale: JudgeScale
    threshold: float
    gate: bool = False

    @property
    def digest(self) -> str:
        """`sha256:` of the canonical JSON of what decides the judge's grades: its model,
        API, prompt template, scale and threshold (changing any makes another judge)."""
        return args_hash(
            {
                "model": self.model,
                "api": self.api,
                "template": self.template,
                "scale": self.scale.to_json(),
                "threshold": self.threshold,
            }
        )


def judge_prompt(template: str, rubric: Sequence[RubricItem], scale: JudgeScale, task: Any) -> str:
    """The judge's instructions: the template filled in, then the answer format."""
    criteria = "\n".join(f"{n}. {item.criterion}" for n, item in enumerate(rubric, 1))
    filled = Template(template).substitute(
        input=compact_json(task), criteria=criteria, scale=scale.describe()
    )
    return f"{filled}\n\n{ANSWER_FORMAT}"


def judged_output(decision: JsonValue) -> str:
    """The output under judgement as the judge reads it: a string as it is, else its JSON."""
    return decision if isinstance(decision, str) else compact_json(decision)


_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def read_judgement(
    text: str | None, rubric: Sequence[RubricItem], scale: JudgeScale
) -> list[tuple[float, str]]:
    """Each criterion's (0..1 score, reason), in rubric order, from the judge's answer text.

    The answer's JSON object may sit in a code fence or among words (models add them);
    everything else is strict: one entry per criterion number, each score on the scale.
    Raises JudgementUnreadable naming what is wrong.
    """
    if not text:
        raise JudgementUnreadable("the judge's answer has no text")
    found = _OBJECT.search(text)
    try:
        document = json.loads(found.group(0)) if found else None
    except ValueError:
        document = None
    entries = document.get("criteria") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise JudgementUnreadable('the judge\'s answer is not a JSON object with "criteria"')
    by_number: dict[int, tuple[float, str]] = {}
    for entry in entries:
        number = entry.get("criterion") if isinstance(entry, dict) else None
        if not isinstance(number, int) or isinstance(number, bool):
            raise JudgementUnreadable("a judged criterion has no number")
        if not 1 <= number <= len(rubric) or number in by_number:
            raise JudgementUnreadable(f"criterion {number} is unknown or judged twice")
        assert isinstance(entry, dict)
        score = scale.normalise(entry.get("score"))
        if score is None:
            raise JudgementUnreadable(
                f"criterion {number}: score {compact_json(entry.get('score'))} is not "
                f"{scale.describe()}"
            )
        reason = entry.get("reason")
        by_number[number] = (score, reason.strip() if isinstance(reason, str) else "")
    missing = [n for n in range(1, len(rubric) + 1) if n not in by_number]
    if missing:
        raise JudgementUnreadable(f"the judge left criteria {missing} unjudged")
    return [by_number[n] for n in range(1, len(rubric) + 1)]


def weighted_score(weights: Sequence[float], scores: Sequence[float]) -> float:
    """The weighted sum of the criteria's scores over the sum of the weights (0..1);
    with every weight 0, the plain mean."""
    total = math.fsum(weights)
    if total == 0:
        return math.fsum(scores) / len(scores)
    return min(1.0, math.fsum(w * s for w, s in zip(weights, scores, strict=True)) / total)


def rubric_grade(
    rules: JudgeRules,
    rubric: Sequence[RubricItem],
    judged: Sequence[tuple[float, str]],
    exchange: int | None,
) -> Grade:
    """The trial's grade from the judge's per-criterion scores (RFC 0081 §A rubric)."""
    criteria = tuple(
        CriterionGrade(
            item.criterion,
            item.weight,
            score,
            score >= rules.threshold,
            shorten(reason) if len(reason) > REASON_CHARS else reason,
            exchange,
        )
        for item, (score, reason) in zip(rubric, judged, strict=True)
    )
    score = weighted_score([c.weight for c in criteria], [s for s, _ in judged])
    passed = score >= rules.threshold
    label = f"rubric ({rules.judge_id})"
    sign = ">=" if passed else "<"
    reason = f"{label}: score {score:.2f} {sign} threshold {rules.threshold:g}"
    failed = [c for c in criteria if not c.passed]
    if failed:
        reason += "; failed: " + "; ".join(
            f"{c.criterion!r} ({c.score:.2f}" + (f": {c.reason})" if c.reason else ")")
            for c in failed
            if c.score is not None
        )
    part = JudgePart(rules.judge_id, rules.digest, rules.gate, criteria)
    return Grade(passed=passed, score=score, reason=reason, judge=part)


def unjudged_grade(
    rules: JudgeRules, rubric: Sequence[RubricItem], why: str, exchange: int | None
) -> Grade:
    """A trial the judge did not grade: failed, unjudged, saying which criteria and why."""
    named = ", ".join(repr(item.criterion) for item in rubric)
    reason = f"rubric ({rules.judge_id}): unjudged: criteria {named}: {why}"
    criteria = tuple(
        CriterionGrade(item.criterion, item.weight, None, False, why, exchange) for item in rubric
    )
    part = JudgePart(rules.judge_id, rules.digest, rules.gate, criteria, unjudged=why)
    return Grade(passed=False, score=0.0, reason=reason, judge=part)
