"""`store.StoredPlan`: the `run_plans.plan` column read and written through one model."""

from __future__ import annotations

from typing import Any

from wopeval import evals
from wopeval.store import StoredPlan
from wopeval.wire import json_text

SUMMARY = {
    "suiteId": "unit.evals.plan",
    "suiteVersion": "1.0.0",
    "aggregateScore": 1.0,
    "passed": True,
    "taskCount": 0,
    "passedCount": 0,
    "tasks": [],
    "fixtureMissCount": 0,
}

CURRENT: dict[str, Any] = {
    "suite": {"suiteId": "unit.evals.plan", "version": "1.0.0", "tasks": []},
    "agentId": "agent",
    "modes": ["golden", "regression"],
    "baselineRunId": "t/base",
    "fixtureRuns": None,
    "baselineSummary": SUMMARY,
    "alpha": 0.1,
    "regressionVerdict": False,
    "modelReplay": True,
    "toolsChangedPolicy": "fail",
    "toolContracts": {"t1": {"served": {"orders": "sha256:x"}, "changed": None}},
    "judgeId": "unit.judge",
    "judgeSourceRunId": "t/base",
    "judgeLive": False,
    "judgeAdvisory": {"judgeId": "unit.judge", "gate": True, "kappa": 0.25, "labels": 12},
}
"""A plan as `EvalPlan.stored()` writes it today."""


def test_a_plan_is_stored_as_it_was_before_the_model() -> None:
    assert StoredPlan.model_validate(CURRENT).to_stored() == CURRENT


def test_the_baseline_summary_is_kept_without_nulls() -> None:
    stored = StoredPlan.model_validate(CURRENT).to_stored()
    assert stored["baselineSummary"] == SUMMARY  # no `totalCostUsd: null`, no `regression: null`


def test_a_plan_stored_before_the_later_members_reads_as_it_ran() -> None:
    first = {
        name: value
        for name, value in CURRENT.items()
        if name
        not in ("alpha", "regressionVerdict", "modelReplay", "toolsChangedPolicy", "toolContracts",
                "judgeId", "judgeSourceRunId", "judgeLive", "judgeAdvisory")
    }  # fmt: skip
    plan = StoredPlan.model_validate(first)
    assert (plan.alpha, plan.regressionVerdict, plan.modelReplay) == (
        evals.DEFAULT_ALPHA,
        True,
        False,
    )
    assert (plan.toolsChangedPolicy, plan.toolContracts) == ("report", {})
    assert plan.served_digests() == set()
    assert (plan.judgeId, plan.judgeSourceRunId, plan.judgeLive) == (None, None, True)
    assert plan.judgeAdvisory is None


def test_the_digests_a_plan_serves_are_every_tasks() -> None:
    assert StoredPlan.model_validate(CURRENT).served_digests() == {"sha256:x"}


def test_a_plan_s_text_is_the_codec_s_text_of_it_with_or_without_its_suite_s_text() -> None:
    """`written` joins the suite's kept text in rather than writing it: the same characters
    as the column's codec writes of the plan (`json_text.compact`), non-ASCII too."""
    suite = {**CURRENT["suite"], "description": "é ✓ \U0001f600", "x": [1.5, None, {"a": 2**40}]}
    plan = StoredPlan.model_validate({**CURRENT, "suite": suite})
    expected = json_text.compact({**CURRENT, "suite": suite})
    assert plan.written() == expected
    kept = json_text.written(suite)
    assert kept is not None
    assert plan.with_suite_text(kept.decode()).written() == expected
    assert json_text.compact(plan.to_stored()) == expected
