"""The pure rubric rules (RFC 0081 §A rubric; evals/_rubric.py): the judge's prompt, reading
its answer, the weighted score, the threshold and the reason."""

from __future__ import annotations

import json

import pytest

from wopeval import evals
from wopeval.wire.suite import RubricItem

RUBRIC = [
    RubricItem(criterion="cites the 30-day window", weight=0.5),
    RubricItem(criterion="is polite", weight=0.25),
    RubricItem(criterion="offers a refund", weight=0.25),
]
POINTS = evals.JudgeScale(points=4)
RULES = evals.JudgeRules("j", "gpt-x", "chat", evals.DEFAULT_TEMPLATE, POINTS, 0.7)


def answer(*scores: object, reasons: tuple[str, ...] = ()) -> str:
    entries = [
        {"criterion": n, "score": s, "reason": reasons[n - 1] if reasons else f"r{n}"}
        for n, s in enumerate(scores, 1)
    ]
    return json.dumps({"criteria": entries})


def test_the_prompt_fills_the_template_and_appends_the_answer_format() -> None:
    prompt = evals.judge_prompt("In: $input\n$criteria\nScore $scale.", RUBRIC, POINTS, {"q": 1})
    assert prompt.startswith('In: {"q":1}\n1. cites the 30-day window\n2. is polite\n')
    assert "from 0 (not met) to 4 (fully met)" in prompt
    assert prompt.endswith(evals.ANSWER_FORMAT)


def test_the_output_under_judgement_is_a_string_as_is_else_its_json() -> None:
    assert evals.judged_output("We refund.") == "We refund."
    assert evals.judged_output({"a": [1, 2]}) == '{"a":[1,2]}'


def test_the_score_is_the_weighted_sum_over_the_weights() -> None:
    judged = evals.read_judgement(answer(4, 2, 0), RUBRIC, POINTS)
    grade = evals.rubric_grade(RULES, RUBRIC, judged, exchange=3)
    # 0.5·1 + 0.25·0.5 + 0.25·0 = 0.625 over a weight of 1.
    assert grade.score == pytest.approx(0.625)
    assert not grade.passed
    assert grade.judge is not None
    assert [c.passed for c in grade.judge.criteria] == [True, False, False]
    assert {c.exchange for c in grade.judge.criteria} == {3}
    assert grade.reason == (
        "rubric (j): score 0.62 < threshold 0.7; failed: 'is polite' (0.50: r2); "
        "'offers a refund' (0.00: r3)"
    )


def test_weights_that_do_not_add_up_to_one_are_normalised_and_zero_weights_mean_equal() -> None:
    assert evals.weighted_score([2, 2], [1.0, 0.0]) == 0.5
    assert evals.weighted_score([0, 0, 0], [1.0, 1.0, 0.0]) == pytest.approx(2 / 3)


def test_a_trial_passes_at_the_threshold() -> None:
    judged = evals.read_judgement(answer(4, 4, 0), RUBRIC, POINTS)
    grade = evals.rubric_grade(RULES, RUBRIC, judged, exchange=0)
    assert grade.score == 0.75
    assert grade.passed
    assert (
        grade.reason
        == "rubric (j): score 0.75 >= threshold 0.7; failed: 'offers a refund' (0.00: r3)"
    )


def test_choices_map_worst_first_onto_zero_to_one() -> None:
    scale = evals.JudgeScale(choices=("no", "partly", "yes"))
    judged = evals.read_judgement(answer("yes", "partly", "no"), RUBRIC, scale)
    assert [score for score, _ in judged] == [1.0, 0.5, 0.0]


def test_the_answer_may_sit_in_a_code_fence() -> None:
    text = "Here you go:\n```json\n" + answer(1, 2, 3) + "\n```"
    assert [s for s, _ in evals.read_judgement(text, RUBRIC, POINTS)] == [0.25, 0.5, 0.75]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (None, "has no text"),
        ("I think it is fine.", 'JSON object with "criteria"'),
        (answer(4, 2), "left criteria [3] unjudged"),
        (answer(4, 2, 5), "criterion 3: score 5 is not"),
        (answer(4, 2, True), "criterion 3: score true is not"),
        (json.dumps({"criteria": [{"criterion": 4, "score": 1}]}), "criterion 4 is unknown"),
        (json.dumps({"criteria": [{"score": 1}]}), "has no number"),
    ],
)
def test_an_answer_that_is_no_judgement_is_unreadable(text: str | None, why: str) -> None:
    with pytest.raises(evals.JudgementUnreadable, match=why.replace("[", r"\[")):
        evals.read_judgement(text, RUBRIC, POINTS)


def test_an_unjudged_trial_fails_and_names_every_criterion_and_why() -> None:
    grade = evals.unjudged_grade(RULES, RUBRIC, "no recorded judgement", exchange=1)
    assert not grade.passed
    assert grade.unjudged
    assert grade.reason.startswith("rubric (j): unjudged: criteria 'cites the 30-day window', ")
    assert grade.reason.endswith(": no recorded judgement")
    document = grade.to_json()["judge"]
    assert document["unjudged"] == "no recorded judgement"
    assert all(c["score"] is None and not c["passed"] for c in document["criteria"])


def test_the_digest_changes_with_what_decides_the_grades() -> None:
    base = RULES.digest
    assert base.startswith("sha256:")
    others = [
        evals.JudgeRules("other-id", "gpt-x", "chat", evals.DEFAULT_TEMPLATE, POINTS, 0.7),
        evals.JudgeRules("j", "gpt-y", "chat", evals.DEFAULT_TEMPLATE, POINTS, 0.7),
        evals.JudgeRules("j", "gpt-x", "messages", evals.DEFAULT_TEMPLATE, POINTS, 0.7),
        evals.JudgeRules("j", "gpt-x", "chat", "Grade: $criteria", POINTS, 0.7),
        evals.JudgeRules("j", "gpt-x", "chat", evals.DEFAULT_TEMPLATE, evals.JudgeScale(5), 0.7),
        evals.JudgeRules("j", "gpt-x", "chat", evals.DEFAULT_TEMPLATE, POINTS, 0.8),
    ]
    # The id names the judge; it does not change how it grades.
    assert others[0].digest == base
    assert all(other.digest != base for other in others[1:])
