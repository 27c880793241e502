"""`evals/_summary.py` and `wire/summary.py`: scores, bars, counts and the regression block."""

from __future__ import annotations

from typing import Any

import pytest

from wopeval import evals
from wopeval.evals import TrialOutcome, Verdict
from wopeval.wire.summary import Advisory, EvalSummary

from ._builders import golden_task, make_suite, summary_of


def ok(latency_ms: int = 10, misses: int = 0) -> TrialOutcome:
    return TrialOutcome(passed=True, latency_ms=latency_ms, fixture_miss_count=misses)


def bad(latency_ms: int = 10, misses: int = 0) -> TrialOutcome:
    return TrialOutcome(passed=False, latency_ms=latency_ms, fixture_miss_count=misses)


def test_single_trial_tasks() -> None:
    suite = make_suite(golden_task("b"), golden_task("a"))
    summary = evals.summarise(suite, {"a": [bad(30)], "b": [ok(10)]})
    assert [t.taskId for t in summary.tasks] == ["b", "a"]
    assert summary.aggregateScore == 0.5
    assert summary.taskCount == 2
    assert summary.passedCount == 1
    assert summary.suiteId == suite.suiteId
    assert summary.suiteVersion == suite.version
    # Without thresholds the host bar is 1.0: every task must pass.
    assert summary.passed is False
    assert summary.tasks[1].model_dump(exclude_none=True) == {
        "taskId": "a",
        "score": 0.0,
        "passed": False,
        "latencyMs": 30,
        "trials": 1,
        "passedTrials": 0,
        "fixtureMissCount": 0,
    }


def test_every_task_passing_passes_by_default() -> None:
    suite = make_suite(golden_task("a"), golden_task("b"))
    assert evals.summarise(suite, {"a": [ok()], "b": [ok()]}).passed


def test_pass_score_threshold() -> None:
    suite = make_suite(golden_task("a"), golden_task("b"), thresholds={"passScore": 0.5})
    assert evals.summarise(suite, {"a": [ok()], "b": [bad()]}).passed
    assert not evals.summarise(suite, {"a": [bad()], "b": [bad()]}).passed


@pytest.mark.parametrize(
    ("policy", "results", "score", "passed"),
    [
        ("all", [True, True, False], 2 / 3, False),
        ("any", [False, False, True], 1 / 3, True),
        ("majority", [True, True, False], 2 / 3, True),
        ("majority", [True, False], 0.5, False),
    ],
)
def test_trials_and_pass_policy(
    policy: str, results: list[bool], score: float, passed: bool
) -> None:
    suite = make_suite(golden_task("t", trials=len(results), passPolicy=policy))
    outcomes = [TrialOutcome(passed=r, latency_ms=10, fixture_miss_count=0) for r in results]
    task = evals.summarise(suite, {"t": outcomes}).tasks[0]
    assert task.score == pytest.approx(score)
    assert task.passed is passed
    assert task.trials == len(results)
    assert task.passedTrials == sum(results)


def test_latency_is_the_trial_mean() -> None:
    summary = evals.summarise(make_suite(golden_task("t")), {"t": [ok(10), ok(21)]})
    assert summary.tasks[0].latencyMs == 16


def test_p95_latency_bar() -> None:
    latencies = [10] * 19 + [500]
    suite = make_suite(golden_task("t"), thresholds={"maxP95LatencyMs": 100})
    # Nearest rank: the 19th of 20 values is 10, so one slow trial in 20 is tolerated.
    assert evals.summarise(suite, {"t": [ok(ms) for ms in latencies]}).passed
    two_slow = [10] * 18 + [500, 500]
    assert not evals.summarise(suite, {"t": [ok(ms) for ms in two_slow]}).passed
    # The bar is a maximum: a p95 exactly at it passes.
    assert evals.summarise(suite, {"t": [ok(100)]}).passed
    assert not evals.summarise(suite, {"t": [ok(101)]}).passed


@pytest.mark.parametrize(
    ("values", "p95"), [([], 0), ([7], 7), ([1, 2, 3, 4], 4), (list(range(1, 101)), 95)]
)
def test_p95_nearest_rank(values: list[int], p95: int) -> None:
    assert evals.p95(values) == p95


def test_cost_bar_and_total() -> None:
    suite = make_suite(golden_task("t"), thresholds={"maxCostUsd": 0.5})
    cheap = [TrialOutcome(passed=True, latency_ms=1, cost_usd=0.2)] * 2
    dear = [TrialOutcome(passed=True, latency_ms=1, cost_usd=0.3)] * 2
    assert evals.summarise(suite, {"t": cheap}).totalCostUsd == pytest.approx(0.4)
    assert evals.summarise(suite, {"t": cheap}).passed
    assert not evals.summarise(suite, {"t": dear}).passed


def test_a_tasks_cost_is_what_its_trials_reported() -> None:
    suite = make_suite(golden_task("priced", trials=3), golden_task("unpriced"))
    priced = [TrialOutcome(passed=True, latency_ms=1, cost_usd=c) for c in (0.25, None, 0.5)]
    summary = evals.summarise(suite, {"priced": priced, "unpriced": [ok()]})
    assert [t.costUsd for t in summary.tasks] == [0.75, None]


def test_no_reported_cost_is_no_total_and_meets_the_cost_bar() -> None:
    suite = make_suite(golden_task("t"), thresholds={"maxCostUsd": 0})
    summary = evals.summarise(suite, {"t": [ok()]})
    assert summary.totalCostUsd is None
    assert summary.passed


def test_fixture_misses_add_up() -> None:
    suite = make_suite(golden_task("a", trials=2), golden_task("b"))
    summary = evals.summarise(suite, {"a": [bad(misses=1), bad(misses=2)], "b": [ok()]})
    assert [t.fixtureMissCount for t in summary.tasks] == [3, 0]
    assert summary.fixtureMissCount == 3


def test_a_task_without_outcomes_is_refused() -> None:
    with pytest.raises(ValueError, match="no trial outcomes"):
        evals.summarise(make_suite(golden_task("a"), golden_task("b")), {"a": [ok()]})


def test_outcomes_for_unknown_tasks_are_refused() -> None:
    with pytest.raises(ValueError, match="does not have"):
        evals.summarise(make_suite(golden_task("a")), {"a": [ok()], "zz": [ok()]})


class TestWithRegression:
    def base_and_candidate(self) -> tuple[EvalSummary, EvalSummary]:
        base = summary_of([("base-only", 0, 1), ("shared-a", 1, 1), ("shared-b", 1, 1)])
        candidate = summary_of(
            [("shared-a", 1, 1), ("shared-b", 1, 1), ("candidate-only", 1, 1)], version="1.1.0"
        )
        return base, candidate

    def test_conformance_regression_scenario(self) -> None:
        base, candidate = self.base_and_candidate()
        result = evals.with_regression(candidate, "acme/" + "0" * 32, base)
        regression = result.regression
        assert regression is not None
        assert regression.baselineRunId == "acme/" + "0" * 32
        assert regression.scoreDelta == pytest.approx(1 / 3)
        assert regression.verdict is Verdict.UNCHANGED
        assert regression.pairedTaskCount == 2
        assert regression.baselineOnlyTaskIds == ["base-only"]
        assert regression.candidateOnlyTaskIds == ["candidate-only"]
        assert [t.taskId for t in regression.tasks or []] == ["shared-a", "shared-b"]
        # The rest of the summary is untouched.
        assert result.model_copy(update={"regression": None}) == candidate

    def test_without_verdict(self) -> None:
        base, candidate = self.base_and_candidate()
        regression = evals.with_regression(
            candidate, "acme/1", base, include_verdict=False
        ).regression
        assert regression is not None
        assert regression.model_dump(exclude_none=True) == {
            "baselineRunId": "acme/1",
            "scoreDelta": pytest.approx(1 / 3),
        }

    def test_score_delta_is_candidate_minus_baseline(self) -> None:
        base = summary_of([("t", 1, 1)])
        candidate = summary_of([("t", 0, 1)])
        regression = evals.with_regression(candidate, "acme/1", base).regression
        assert regression is not None
        assert regression.scoreDelta == -1.0
        assert regression.verdict is Verdict.REGRESSED

    def test_multi_trial_tasks_carry_their_adjusted_p_value_and_alpha_decides(self) -> None:
        base, candidate = summary_of([("t", 10, 10)]), summary_of([("t", 5, 10)])
        regression = evals.with_regression(candidate, "acme/1", base).regression
        assert regression is not None
        (task,) = regression.tasks or []
        assert task.pValue == pytest.approx(0.0325077399)
        assert (task.verdict, regression.verdict) == (Verdict.REGRESSED, Verdict.REGRESSED)
        strict = evals.with_regression(candidate, "acme/1", base, alpha=0.01).regression
        assert strict is not None
        assert strict.verdict is Verdict.INCONCLUSIVE


def test_to_wire_is_json_without_absent_members() -> None:
    base = summary_of([("t", 1, 2)])
    candidate = summary_of([("t", 2, 2)])
    wire: dict[str, Any] = evals.with_regression(candidate, "acme/1", base).to_wire()
    assert "totalCostUsd" not in wire
    assert wire["fixtureMissCount"] == 0
    assert wire["regression"]["verdict"] == "inconclusive"
    assert wire["regression"]["tasks"][0]["flaky"] is True
    assert EvalSummary.model_validate(wire).to_wire() == wire


def test_summary_is_content_free() -> None:
    suite = make_suite(golden_task("t"))
    wire = evals.summarise(suite, {"t": [ok()]}).to_wire()
    forbidden = {"taskOutput", "output", "rubric", "completion", "prompt", "body", "secret"}
    keys = set(wire) | {k for task in wire["tasks"] for k in task}
    assert not keys & forbidden


def rubric_task(task_id: str) -> dict[str, Any]:
    return {
        "taskId": task_id,
        "input": {},
        "expected": {"kind": "rubric", "rubric": [{"criterion": "is polite", "weight": 1}]},
    }


def test_advisory_rubric_tasks_are_shown_but_hold_no_bar() -> None:
    """docs/graders.md, "Calibration": an advisory task's score is in the aggregate, and the
    score bar is held against the other tasks only."""
    suite = make_suite(golden_task("g"), rubric_task("r"))
    advisory = Advisory(judgeId="j", gate=True, kappa=0.4, labels=12)
    summary = evals.summarise(suite, {"g": [ok()], "r": [bad()]}, advisory)
    assert (summary.aggregateScore, summary.passedCount, summary.passed) == (0.5, 1, True)
    assert summary.task("r").advisory == advisory  # type: ignore[union-attr]
    assert summary.task("g").advisory is None  # type: ignore[union-attr]
    assert summary.advisory_notes() == [
        "advisory: judge j is not calibrated (kappa 0.40, n 12) (tasks r)"
    ]
    # The gating task still fails the run; without advisory the rubric task does too.
    assert not evals.summarise(suite, {"g": [bad()], "r": [ok()]}, advisory).passed
    assert not evals.summarise(suite, {"g": [ok()], "r": [bad()]}).passed
    # Only advisory tasks: no score bar to hold.
    only = make_suite(rubric_task("r"))
    assert evals.summarise(only, {"r": [bad()]}, advisory).passed
    off = Advisory(judgeId="j", gate=False)
    assert off.text() == "advisory: judge j does not gate (gate = false)"


def test_pooled_trials_keep_a_task_advisory() -> None:
    suite = make_suite(golden_task("g"), rubric_task("r"))
    advisory = Advisory(judgeId="j", gate=True)
    first = evals.summarise(suite, {"g": [ok()], "r": [bad()]}, advisory)
    extra = evals.summarise(suite, {"g": [ok()], "r": [bad()]}, advisory)
    pooled = evals.pool_summaries(suite, first, extra)
    assert pooled.task("r").advisory == advisory  # type: ignore[union-attr]
    assert pooled.passed


def test_entries_already_made_are_taken_as_they_are_and_the_rest_made() -> None:
    suite = make_suite(golden_task("a"), golden_task("b"))
    outcomes = {"a": [ok(10)], "b": [bad(30)]}
    made = evals.summarise_task(suite, suite.tasks[0], outcomes["a"])
    assert evals.summarise(suite, outcomes, made={"a": made}) == evals.summarise(suite, outcomes)
    # Taken, not made again: an entry the outcomes would not give shows through.
    marked = made.model_copy(update={"latencyMs": 99})
    summary = evals.summarise(suite, outcomes, made={"a": marked})
    assert [t.latencyMs for t in summary.tasks] == [99, 30]
