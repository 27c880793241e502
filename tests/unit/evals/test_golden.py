"""`evals/_golden.py`: every golden strategy passes and fails on purpose, with its exact reason."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import JsonValue

from wopeval import evals
from wopeval.evals import _golden
from wopeval.wire.suite import Expected, Match


def match(strategy: str, value: JsonValue = None, **members: Any) -> Match:
    document: dict[str, Any] = {"strategy": strategy, **members}
    if strategy != "json-path":
        document["value"] = value
    return Match.model_validate(document)


def graded(strategy: str, value: JsonValue, decision: JsonValue, **members: Any) -> evals.Grade:
    return evals.grade_golden(match(strategy, value, **members), decision)


@pytest.mark.parametrize(
    ("strategy", "value", "decision", "passed", "reason"),
    [
        ("exact", "done", "done", True, 'exact: the decision equals the expected value "done"'),
        (
            "exact",
            "done",
            "done ",
            False,
            'exact: the decision "done " differs from the expected value "done"',
        ),
        ("exact", 42, "42", True, "exact: the decision equals the expected value 42"),
        (
            "exact",
            {"tier": "gold"},
            {"tier": "silver"},
            False,
            'exact: the decision {"tier":"silver"} differs from the expected value {"tier":"gold"}',
        ),
        ("contains", "refund", "a refund of $5", True, 'contains: the decision contains "refund"'),
        (
            "contains",
            "refund",
            "declined",
            False,
            'contains: the decision "declined" does not contain "refund"',
        ),
        (
            "regex",
            r"refund(ed)?\b",
            "we refunded it",
            True,
            r'regex: /refund(ed)?\b/ matches the decision at characters 4-11: "refunded"',
        ),
        (
            "regex",
            r"^refund",
            "we refunded it",
            False,
            'regex: /^refund/ does not match the decision "we refunded it"',
        ),
        ("regex", "x*", "abc", True, "regex: /x*/ matches the decision (empty) at character 1"),
        (
            "regex",
            r'"action":"escalate"',
            {"action": "escalate"},
            True,
            'regex: /"action":"escalate"/ matches the decision at characters 2-20: '
            '"\\"action\\":\\"escalate\\""',
        ),
    ],
)
def test_text_strategies(
    strategy: str, value: JsonValue, decision: JsonValue, passed: bool, reason: str
) -> None:
    grade = graded(strategy, value, decision)
    assert (grade.passed, grade.score, grade.reason, grade.diff) == (
        passed,
        1.0 if passed else 0.0,
        reason,
        (),
    )


def test_a_long_exact_value_is_shown_around_its_first_difference() -> None:
    expected = "a" * 150 + "b" + "a" * 149
    decision = "a" * 150 + "c" + "a" * 149
    grade = graded("exact", expected, decision)
    # The JSON text has a quote first: the difference is its character 152; 25 shown before it.
    window = "…" + "a" * 25 + "c" + "a" * 74 + "… (characters 127-226 of 302)"
    assert grade.reason == (
        f"exact: the decision {window} differs from the expected value "
        f"{window.replace('c', 'b', 1)}; they first differ at character 152"
    )


def test_an_exact_value_of_a_hundred_characters_is_shown_whole() -> None:
    # As JSON text, with their quotes, both sides are exactly SHOWN_CHARS (100) characters.
    grade = graded("exact", "a" * 98, "a" * 97 + "b")
    assert grade.reason == (
        f'exact: the decision "{"a" * 97}b" differs from the expected value "{"a" * 98}"'
    )


def test_a_long_value_is_cut_from_its_start() -> None:
    grade = graded("contains", "needle", "x" * 250)
    assert grade.reason == (
        f'contains: the decision "{"x" * 99}… (characters 1-100 of 252) does not contain "needle"'
    )


class TestJsonMatch:
    def test_equal_as_canonical_json(self) -> None:
        grade = graded("json-match", {"n": 1, "items": [1, 2]}, {"items": [1, 2.0], "n": 1.0})
        assert grade == evals.Grade.passing("json-match: the decision equals the expected value")

    def test_each_differing_path_is_named(self) -> None:
        expected: JsonValue = {"customer": {"tier": "gold"}, "items": [1, 2]}
        decision: JsonValue = {"customer": {"tier": "silver"}, "items": [1], "round": 1}
        grade = graded("json-match", expected, decision)
        assert not grade.passed
        assert grade.reason == (
            'json-match: 3 paths differ: $.customer.tier: expected "gold", got "silver"; '
            "$.items[1]: expected 2, got (absent); $.round: expected (absent), got 1"
        )
        assert grade.diff == (
            evals.PathChange("$.customer.tier", "changed", "gold", "silver"),
            evals.PathChange("$.items[1]", "removed", expected=2),
            evals.PathChange("$.round", "added", actual=1),
        )

    def test_a_type_change_is_one_change(self) -> None:
        grade = graded("json-match", {"n": 1}, {"n": True})
        assert grade.reason == "json-match: 1 path differs: $.n: expected 1, got true"

    def test_five_paths_are_listed_without_a_remainder(self) -> None:
        grade = graded("json-match", {f"k{i}": i for i in range(5)}, {})
        assert grade.reason.endswith("$.k4: expected 4, got (absent)")

    def test_past_five_paths_the_rest_are_counted(self) -> None:
        expected: JsonValue = {f"k{i}": i for i in range(7)}
        grade = graded("json-match", expected, {})
        assert grade.reason.endswith("$.k4: expected 4, got (absent); and 2 more")
        assert len(grade.diff) == 7


class TestJsonSubset:
    def test_extra_keys_are_allowed(self) -> None:
        grade = graded(
            "json-subset",
            {"customer": {"tier": "gold"}},
            {"customer": {"tier": "gold", "id": 7}, "round": 1},
        )
        assert grade == evals.Grade.passing("json-subset: the decision holds the expected value")

    def test_a_missing_or_changed_key_fails(self) -> None:
        grade = graded(
            "json-subset",
            {"action": "escalate", "customer": {"tier": "gold"}},
            {"action": "refund", "customer": {}},
        )
        assert grade.reason == (
            'json-subset: 2 paths differ: $.action: expected "escalate", got "refund"; '
            '$.customer.tier: expected "gold", got (absent)'
        )

    def test_arrays_compare_whole(self) -> None:
        grade = graded(
            "json-subset", {"items": [{"sku": "a"}]}, {"items": [{"sku": "a", "qty": 1}]}
        )
        assert grade.reason == (
            "json-subset: 1 path differs: $.items[0].qty: expected (absent), got 1"
        )


class TestJsonPath:
    def test_every_named_path_holds(self) -> None:
        grade = graded(
            "json-path",
            None,
            {"action": "escalate", "customer": {"tier": "gold"}},
            paths=[
                {"path": "$.action", "value": "escalate"},
                {"path": "$.customer.tier", "value": "gold"},
            ],
        )
        assert grade == evals.Grade.passing("json-path: all 2 paths hold the expected value")

    def test_one_path(self) -> None:
        grade = graded(
            "json-path",
            None,
            {"action": "escalate", "other": 1},
            paths=[{"path": "$.action", "value": "escalate"}],
        )
        assert grade.reason == "json-path: the path holds the expected value"

    def test_a_differing_path_fails_and_others_do_not_matter(self) -> None:
        grade = graded(
            "json-path",
            None,
            {"action": "refund", "note": "anything"},
            paths=[{"path": "$.action", "value": "escalate"}],
        )
        assert (
            grade.reason == 'json-path: 1 path differs: $.action: expected "escalate", got "refund"'
        )
        assert grade.diff == (evals.PathChange("$.action", "changed", "escalate", "refund"),)

    def test_a_path_the_decision_lacks_is_removed(self) -> None:
        grade = graded(
            "json-path", None, "plain text", paths=[{"path": '$["key with space"]', "value": None}]
        )
        assert (
            grade.reason
            == 'json-path: 1 path differs: $["key with space"]: expected null, got (absent)'
        )

    def test_indexes_negative_indexes_and_nested_values(self) -> None:
        decision: JsonValue = {"items": [{"sku": "a"}, {"sku": "b", "qty": 2}]}
        grade = graded(
            "json-path",
            None,
            decision,
            paths=[
                {"path": "$.items[0].sku", "value": "a"},
                {"path": "$.items[-1]", "value": {"sku": "b", "qty": 3}},
            ],
        )
        assert grade.reason == "json-path: 1 path differs: $.items[1].qty: expected 3, got 2"


def test_a_runaway_pattern_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_golden, "REGEX_TIMEOUT_SECONDS", 0.05)
    grade = graded("regex", "(a|aa)+$", "a" * 60 + "!")
    assert (
        grade.reason == "regex: /(a|aa)+$/ took longer than 0.05 s on the decision and was stopped"
    )
    assert not grade.passed


def test_custom_is_not_a_built_in_strategy() -> None:
    with pytest.raises(ValueError, match="the engine grades it"):
        evals.grade_golden(match("custom", 1, grader="refund-check"), "done")


def test_grade_task_routes_by_kind() -> None:
    golden = Expected.model_validate(
        {"kind": "golden", "match": {"strategy": "exact", "value": "done"}}
    )
    assert evals.grade_task(golden, "done", []).reason == (
        'exact: the decision equals the expected value "done"'
    )
    rubric = Expected.model_validate(
        {"kind": "rubric", "rubric": [{"criterion": "polite", "weight": 1}]}
    )
    with pytest.raises(ValueError, match="judge"):
        evals.grade_task(rubric, "x", [])


@pytest.mark.parametrize(
    ("decision", "strategy"),
    [
        ({"priority": "urgent"}, "json-match"),
        ([1, 2], "json-match"),
        ({}, "json-match"),
        ("urgent", "exact"),
        ('{"priority": "urgent"}', "exact"),  # a string that happens to hold JSON is text
        (42, "exact"),
        (True, "exact"),
        (None, "exact"),
    ],
)
def test_the_strategy_for_a_decision_follows_its_json_type(
    decision: JsonValue, strategy: str
) -> None:
    assert evals.strategy_for_decision(decision) == strategy


def test_a_json_decision_expected_by_its_strategy_fails_with_every_path_bounded() -> None:
    recorded: JsonValue = {"priority": "urgent", "queue": "billing", "tags": ["a", "b"]}
    changed: JsonValue = {"tags": ["a", "c"], "queue": "billing", "priority": "normal"}
    grade = graded(evals.strategy_for_decision(recorded), recorded, changed)
    assert not grade.passed
    assert grade.reason == (
        'json-match: 2 paths differ: $.priority: expected "urgent", got "normal"; '
        '$.tags[1]: expected "b", got "c"'
    )
    # Seven differing members: the reason names five in path order and counts the rest;
    # the diff has them all, the same whatever order the keys came in.
    wide: dict[str, JsonValue] = {f"k{i}": i for i in range(7)}
    other: dict[str, JsonValue] = {f"k{i}": -i for i in reversed(range(1, 7))}
    grade = graded(evals.strategy_for_decision(wide), wide, other)
    assert grade.reason.startswith("json-match: 7 paths differ: $.k0: expected 0, got (absent); ")
    assert grade.reason.endswith("$.k4: expected 4, got -4; and 2 more")
    assert grade.diff is not None
    assert len(grade.diff) == 7
    assert graded("json-match", wide, dict(reversed(list(other.items())))) == grade


def test_a_text_decision_keeps_the_exact_reason() -> None:
    grade = graded(evals.strategy_for_decision("urgent"), "urgent", "normal")
    assert grade.reason == 'exact: the decision "normal" differs from the expected value "urgent"'
