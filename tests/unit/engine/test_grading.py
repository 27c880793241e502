"""`engine/eval_runs/grading.py`: custom graders are called with the decision, the value and
the trace; whatever they do, the trial gets a Grade and nothing else fails."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import JsonValue

from wopeval import evals
from wopeval.engine.catalog.catalog import Catalog
from wopeval.engine.catalog.graders import CustomGrader
from wopeval.engine.catalog.project import ProjectError, load_project
from wopeval.engine.eval_runs.grading import grade_trial
from wopeval.wire.suite import Expected

CALLS = [
    evals.ExecutedCall(
        "crm:lookup", {"customer": "c-1"}, result={"tier": "gold"}, served="fixture", duration_ms=0
    ),
    evals.ExecutedCall("crm:audit", {"note": "x"}, is_delegate=True),
    evals.ExecutedCall(
        "crm:refund",
        {"amount": 5},
        status="error",
        error={"code": "fixture_miss", "message": "no unconsumed fixture"},
        served="miss",
        duration_ms=0,
    ),
]


def custom(grader: str = "check", value: JsonValue = "gold") -> Expected:
    match = {"strategy": "custom", "grader": grader, "value": value}
    return Expected.model_validate({"kind": "golden", "match": match})


async def grade(function: Any, decision: JsonValue = "gold", seconds: float = 5.0) -> evals.Grade:
    graders = {"check": CustomGrader("check", function, seconds)}
    return await grade_trial(custom(), decision, CALLS, graders)


async def test_a_sync_grader_gets_the_decision_the_value_and_the_trace() -> None:
    seen: list[Any] = []

    def check(decision: JsonValue, expected: JsonValue, calls: list[dict[str, Any]]) -> Any:
        seen.append((decision, expected, calls, threading.current_thread()))
        return {"passed": decision == expected, "score": 0.75, "reason": "tier checked"}

    assert await grade(check) == evals.Grade(True, 0.75, "custom check: tier checked")
    decision, expected, calls, thread = seen[0]
    assert (decision, expected) == ("gold", "gold")
    # The delegate's call is left out; each call is a plain dict.
    assert calls == [
        {
            "tool": "crm:lookup",
            "args": {"customer": "c-1"},
            "status": "ok",
            "result": {"tier": "gold"},
            "error": None,
            "served": "fixture",
            "durationMs": 0,
        },
        {
            "tool": "crm:refund",
            "args": {"amount": 5},
            "status": "error",
            "result": None,
            "error": {"code": "fixture_miss", "message": "no unconsumed fixture"},
            "served": "miss",
            "durationMs": 0,
        },
    ]
    # A sync grader runs off the event loop's thread.
    assert thread is not threading.main_thread()


async def test_an_async_grader_is_awaited() -> None:
    async def check(decision: JsonValue, expected: JsonValue, calls: list[Any]) -> Any:
        await asyncio.sleep(0)
        return {"passed": False, "score": 0, "reason": f"{decision} is not {expected}"}

    assert await grade(check, "silver") == evals.Grade(
        False, 0.0, "custom check: silver is not gold"
    )


async def test_a_grader_that_changes_its_arguments_changes_nothing_of_the_trial() -> None:
    def check(decision: Any, expected: JsonValue, calls: list[dict[str, Any]]) -> Any:
        decision["tier"] = "changed"
        calls[0]["args"]["customer"] = "changed"
        return {"passed": True, "score": 1, "reason": "ok"}

    decision: dict[str, JsonValue] = {"tier": "gold"}
    await grade(check, decision)
    assert decision == {"tier": "gold"}
    assert CALLS[0].args == {"customer": "c-1"}


async def test_a_raising_grader_fails_the_trial_with_its_traceback() -> None:
    def check(decision: JsonValue, expected: JsonValue, calls: list[Any]) -> Any:
        raise KeyError("tier")

    graded = await grade(check)
    assert (graded.passed, graded.score) == (False, 0.0)
    assert graded.reason == "custom check raised KeyError: 'tier'"
    assert graded.traceback is not None
    assert graded.traceback.startswith("Traceback (most recent call last):")
    assert 'raise KeyError("tier")' in graded.traceback
    assert graded.traceback.rstrip().endswith("KeyError: 'tier'")
    assert graded.to_json()["traceback"] == graded.traceback


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (
            True,
            "custom check: answered bool, not an object {passed: bool, score: 0..1, reason: str}",
        ),
        (
            {"passed": 1, "score": 1, "reason": "ok"},
            "custom check: its answer is not {passed: bool, score: 0..1, reason: str}: "
            "passed: Input should be a valid boolean",
        ),
        (
            {"passed": True, "score": 1.5, "reason": "ok"},
            "custom check: its answer is not {passed: bool, score: 0..1, reason: str}: "
            "score: Input should be less than or equal to 1",
        ),
        (
            {"passed": True, "score": float("nan"), "reason": "ok"},
            "custom check: its answer is not {passed: bool, score: 0..1, reason: str}: "
            "score: Input should be a finite number",
        ),
        (
            {"passed": True, "score": 1},
            "custom check: its answer is not {passed: bool, score: 0..1, reason: str}: "
            "reason: Field required",
        ),
        (
            {"passed": True, "score": 1, "reason": "ok", "pass": True},
            "custom check: its answer is not {passed: bool, score: 0..1, reason: str}: "
            "pass: Extra inputs are not permitted",
        ),
    ],
)
async def test_a_malformed_answer_fails_the_trial_saying_what_is_wrong(
    answer: Any, reason: str
) -> None:
    assert await grade(lambda *_: answer) == evals.Grade.failing(reason)


async def test_a_grader_that_does_not_answer_in_time_fails_the_trial() -> None:
    async def check(*_: Any) -> Any:
        await asyncio.sleep(3600)

    assert await grade(check, seconds=0.05) == evals.Grade.failing(
        "custom check: no answer in 0.05 s"
    )


async def test_an_undeclared_grader_fails_the_trial() -> None:
    graded = await grade_trial(custom("gone"), "gold", CALLS, {})
    assert graded == evals.Grade.failing("custom gone: this host declares no such grader")


async def test_built_in_strategies_go_to_the_pure_rules() -> None:
    expected = Expected.model_validate(
        {"kind": "golden", "match": {"strategy": "json-subset", "value": {"tier": "gold"}}}
    )
    graded = await grade_trial(expected, {"tier": "gold", "id": 1}, CALLS, {})
    assert graded.reason == "json-subset: the decision holds the expected value"


# ── [[graders]] in wopeval.toml ──────────────────────────────────────

GRADERS_MODULE = "wopeval_unit_graders"


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / f"{GRADERS_MODULE}.py").write_text(
        "def check(decision, expected, calls):\n"
        "    return {'passed': True, 'score': 1, 'reason': 'ok'}\n"
    )
    try:
        yield tmp_path
    finally:
        sys.path[:] = [p for p in sys.path if p != str(tmp_path.resolve())]
        sys.modules.pop(GRADERS_MODULE, None)


def _load(directory: Path, graders: str) -> Catalog:
    (directory / "wopeval.toml").write_text(graders)
    catalog = Catalog()

    async def load() -> None:
        async with httpx.AsyncClient() as http:
            load_project(directory, catalog, http, tool_timeout=30)

    asyncio.run(load())
    return catalog


def test_a_project_declares_its_graders(project: Path) -> None:
    catalog = _load(
        project,
        f'[[graders]]\nid = "refund-check"\ncallable = "{GRADERS_MODULE}:check"\n'
        "timeout_seconds = 5\n",
    )
    grader = catalog.graders["refund-check"]
    assert grader.timeout_seconds == 5
    assert grader.function(None, None, []) == {"passed": True, "score": 1, "reason": "ok"}


@pytest.mark.parametrize(
    ("toml", "says"),
    [
        (
            f'[[graders]]\nid = "a"\ncallable = "{GRADERS_MODULE}:check"\n' * 2,
            "grader 'a' is defined twice",
        ),
        ('[[graders]]\nid = "Bad Id"\ncallable = "x:y"\n', "String should match pattern"),
        (
            f'[[graders]]\nid = "a"\ncallable = "{GRADERS_MODULE}:absent"\n',
            "does not name a callable",
        ),
        ('[[graders]]\nid = "a"\n', "Field required"),
    ],
)
def test_a_bad_graders_entry_stops_the_project(project: Path, toml: str, says: str) -> None:
    with pytest.raises(ProjectError, match=says):
        _load(project, toml)
