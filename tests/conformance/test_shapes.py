"""The server-free legs: each vector in shape_vectors.json is validated or refused as it says."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest

from wopeval.conformance import shapes
from wopeval.conformance.results import LegFailed


def _vectors() -> list[Any]:
    text = resources.files("wopeval.conformance").joinpath("shape_vectors.json").read_text()
    document: dict[str, dict[str, list[dict[str, Any]]]] = json.loads(text)
    return [
        pytest.param(group, vector, id=f"{rfc}-{group}-{vector['why']}")
        for rfc, groups in document.items()
        for group, vectors in groups.items()
        for vector in vectors
    ]


@pytest.mark.parametrize(("group", "vector"), _vectors())
def test_each_vector_is_validated_or_refused(group: str, vector: dict[str, Any]) -> None:
    problems = shapes.CHECKS[group](vector["value"])
    assert (problems == []) is vector["valid"], problems


@pytest.mark.parametrize("rfc", ["0251", "0252"])
def test_the_shape_leg_passes_on_the_shipped_checks(rfc: str) -> None:
    assert "invalid ones are refused" in shapes.check_vectors(rfc)


def test_a_check_that_accepts_everything_fails_the_shape_leg(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(shapes.CHECKS, "fixtureRuns", lambda _value: [])
    with pytest.raises(LegFailed, match=r"fixtureRuns \(no keys \(minProperties 1\)\) validated"):
        shapes.check_vectors("0252")


def test_a_check_that_refuses_everything_fails_the_shape_leg(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(shapes.CHECKS, "evalModes", lambda _value: ["no"])
    with pytest.raises(LegFailed, match=r"evalModes \(one mode\) refused: no"):
        shapes.check_vectors("0251")


def test_eval_started_accepts_hatch_keys_and_refuses_other_extras() -> None:
    started = {"suiteId": "s.evals.x", "suiteVersion": "1.0.0", "taskCount": 1, "modes": ["golden"]}
    assert shapes.eval_started_problems({**started, "x-trials": 2, "vendor.acme": 1}) == []
    assert shapes.eval_started_problems({**started, "trials": 2}) == [
        "eval.started is closed; unknown properties ['trials']"
    ]
