"""`wire/suite.py`: the closed suite document and its pointer-naming refusal."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from wopeval.wire import errors, suite

from ._builders import golden_task, make_suite, suite_doc

_VECTORS = json.loads((Path(__file__).parent / "data" / "suite_pointer_errors.json").read_text())


def _edited(base: dict[str, Any], vector: dict[str, Any]) -> dict[str, Any]:
    document = copy.deepcopy(base)
    *parents, last = vector["path"]
    target: Any = document
    for part in parents:
        target = target[part]
    if vector.get("delete"):
        del target[last]
    elif isinstance(target, list) and last == len(target):
        target.append(vector["value"])
    else:
        target[last] = vector["value"]
    return document


def test_vector_base_is_valid() -> None:
    parsed = suite.parse_suite(_VECTORS["base"])
    assert parsed.task_ids == ("a", "b", "c")


@pytest.mark.parametrize("vector", _VECTORS["vectors"], ids=lambda v: v["name"])
def test_refusal_names_the_json_pointer(vector: dict[str, Any]) -> None:
    with pytest.raises(errors.ValidationFailed) as caught:
        suite.parse_suite(_edited(_VECTORS["base"], vector))
    message = caught.value.message
    assert message.startswith(vector["pointer"] + ": "), message
    assert vector["says"] in message


def test_refusal_is_a_validation_error_envelope() -> None:
    with pytest.raises(errors.ValidationFailed) as caught:
        suite.parse_suite(5)
    assert caught.value.status == 400
    assert caught.value.envelope()["error"] == "validation_error"
    assert caught.value.message.startswith("(root): ")


def test_several_problems_are_all_named() -> None:
    document = suite_doc(golden_task("x", trials=0), version="v1")
    with pytest.raises(errors.ValidationFailed) as caught:
        suite.parse_suite(document)
    assert "version: " in caught.value.message
    assert "tasks[0].trials: " in caught.value.message


def test_refusal_does_not_quote_the_input() -> None:
    secret = "sk-live-do-not-echo"
    document = suite_doc(golden_task("x", fixtures={"onMiss": secret}))
    with pytest.raises(errors.ValidationFailed) as caught:
        suite.parse_suite(document)
    assert secret not in caught.value.message


@pytest.mark.parametrize(
    ("loc", "pointer"),
    [
        ((), "(root)"),
        (("suiteId",), "suiteId"),
        (
            ("tasks", 2, "fixtures", "toolResponses", 0, "argsMatch"),
            "tasks[2].fixtures.toolResponses[0].argsMatch",
        ),
        (("modes", 0), "modes[0]"),
    ],
)
def test_error_pointer(loc: tuple[int | str, ...], pointer: str) -> None:
    assert errors.error_pointer(loc) == pointer


class TestPresentVersusAbsent:
    def test_empty_tool_responses_is_present(self) -> None:
        task = make_suite(golden_task("t", fixtures={"toolResponses": []})).tasks[0]
        assert task.fixtures is not None
        assert task.fixtures.toolResponses == []
        assert "toolResponses" in task.fixtures.model_fields_set

    def test_absent_tool_responses_is_none(self) -> None:
        task = make_suite(golden_task("t", fixtures={"memorySeed": []})).tasks[0]
        assert task.fixtures is not None
        assert task.fixtures.toolResponses is None
        assert task.fixtures.onMiss is None

    def test_document_round_trip_keeps_empty_and_absent(self) -> None:
        document = suite_doc(
            golden_task("t", fixtures={"toolResponses": [], "onMiss": "live"}),
            golden_task("u"),
        )
        assert suite.parse_suite(document).to_document() == document

    @pytest.mark.parametrize(
        "fixtures", [{"toolResponses": None}, {"onMiss": None}, {"memorySeed": None}]
    )
    def test_null_is_not_absence(self, fixtures: dict[str, Any]) -> None:
        with pytest.raises(errors.ValidationFailed, match="must not be null"):
            make_suite(golden_task("t", fixtures=fixtures))

    def test_null_is_a_value_where_any_json_is(self) -> None:
        entry = {"tool": "acme:ping", "args": None, "response": None}
        task = make_suite(golden_task("t", input=None, fixtures={"toolResponses": [entry]}))
        served = task.tasks[0].fixtures.toolResponses[0]  # type: ignore[union-attr,index]
        assert served.has_args
        assert served.args is None
        assert served.args_match == "exact"


class TestDefaults:
    def test_args_match_defaults_to_exact_with_args(self) -> None:
        entry = suite.ToolResponse.model_validate({"tool": "a:b", "args": {}, "response": 1})
        assert entry.args_match == "exact"
        assert entry.argsMatch is None

    def test_args_match_defaults_to_ignore_without_args(self) -> None:
        entry = suite.ToolResponse.model_validate({"tool": "a:b", "response": 1})
        assert entry.args_match == "ignore"
        assert not entry.has_args

    def test_written_args_match_wins(self) -> None:
        entry = suite.ToolResponse.model_validate(
            {"tool": "a:b", "args": {"k": 1}, "argsMatch": "subset", "response": 1}
        )
        assert entry.args_match == "subset"

    def test_on_miss_defaults_to_fail(self) -> None:
        assert suite.Fixtures.model_validate({}).on_miss == "fail"
        assert suite.Fixtures.model_validate({"onMiss": "live"}).on_miss == "live"

    def test_order_defaults_to_strict(self) -> None:
        expected = suite.Expected.model_validate({"kind": "trajectory", "calls": []})
        assert expected.order == "strict"

    def test_is_error_defaults_to_false(self) -> None:
        assert not suite.ToolResponse.model_validate({"tool": "a:b", "response": 1}).is_error


def test_models_are_frozen() -> None:
    parsed = make_suite()
    with pytest.raises(ValueError, match="frozen"):
        parsed.version = "2.0.0"  # type: ignore[misc]


def test_task_lookup() -> None:
    parsed = make_suite(golden_task("one"), golden_task("two"))
    assert parsed.task("two") is parsed.tasks[1]
    assert parsed.task("three") is None


def test_conformance_recorded_source_parses() -> None:
    document = {
        "suiteId": "conformance.openwop.evals.recorded-source",
        "version": "1.0.0",
        "modes": ["golden", "live-shadow"],
        "tasks": [
            {
                "taskId": "record",
                "input": {
                    "calls": [
                        {
                            "tool": "conformance.eval:counter",
                            "args": {"op": "inc", "key": "conformance-recorded"},
                        },
                        {
                            "tool": "conformance.eval:counter",
                            "args": {"op": "read", "key": "conformance-recorded"},
                        },
                    ],
                    "answer": "done",
                },
                "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "done"}},
                "fixtures": {"toolResponses": [], "onMiss": "live"},
            }
        ],
    }
    parsed = suite.parse_suite(document)
    assert parsed.tasks[0].fixtures == suite.Fixtures(toolResponses=[], onMiss="live")
