"""`evals/_verdict.py`: pairing, per-task and overall verdicts, Fisher + Holm."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wopeval import evals
from wopeval.evals import Verdict
from wopeval.wire.summary import EvalSummary, TaskSummary

from ._builders import summary_of


class TestHolm:
    def test_textbook_values(self) -> None:
        # Sorted 0.01, 0.03, 0.04 → 3·0.01, max(0.03, 2·0.03), max(0.06, 1·0.04).
        assert evals.holm_adjust([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])

    def test_capped_at_one(self) -> None:
        assert evals.holm_adjust([0.6, 0.9]) == [1.0, 1.0]

    def test_empty(self) -> None:
        assert evals.holm_adjust([]) == []

    def test_single_is_unchanged(self) -> None:
        assert evals.holm_adjust([0.02]) == [0.02]

    @given(st.lists(st.floats(min_value=0, max_value=1), max_size=20))
    def test_monotone_bounded_and_never_below_raw(self, raw: list[float]) -> None:
        adjusted = evals.holm_adjust(raw)
        order = sorted(range(len(raw)), key=lambda i: raw[i])
        in_order = [adjusted[i] for i in order]
        assert in_order == sorted(in_order)
        assert all(a >= p for a, p in zip(adjusted, raw, strict=True))
        assert all(a <= 1.0 for a in adjusted)


class TestPairing:
    def test_conformance_regression_fixtures_are_unchanged(self) -> None:
        base = summary_of([("base-only", 0, 1), ("shared-a", 1, 1), ("shared-b", 1, 1)])
        candidate = summary_of(
            [("shared-a", 1, 1), ("shared-b", 1, 1), ("candidate-only", 1, 1)], version="1.1.0"
        )
        paired = evals.paired_verdict(base, candidate)
        assert paired.verdict is Verdict.UNCHANGED
        assert paired.paired_task_count == 2
        assert paired.baseline_only_task_ids == ("base-only",)
        assert paired.candidate_only_task_ids == ("candidate-only",)
        assert [t.task_id for t in paired.tasks] == ["shared-a", "shared-b"]
        assert all(t.verdict is Verdict.UNCHANGED and t.delta == 0 for t in paired.tasks)

    def test_unpaired_ids_keep_suite_order(self) -> None:
        base = summary_of([("z", 1, 1), ("a", 1, 1), ("m", 1, 1)])
        candidate = summary_of([("y", 1, 1), ("b", 1, 1), ("m", 1, 1)])
        paired = evals.paired_verdict(base, candidate)
        assert paired.baseline_only_task_ids == ("z", "a")
        assert paired.candidate_only_task_ids == ("y", "b")

    def test_nothing_paired_is_unchanged(self) -> None:
        paired = evals.paired_verdict(summary_of([("a", 0, 1)]), summary_of([("b", 1, 1)]))
        assert paired.verdict is Verdict.UNCHANGED
        assert paired.paired_task_count == 0
        assert paired.tasks == ()


class TestSingleTrial:
    @pytest.mark.parametrize(
        ("base", "cand", "verdict"),
        [
            (0, 1, Verdict.IMPROVED),
            (1, 0, Verdict.REGRESSED),
            (1, 1, Verdict.UNCHANGED),
            (0, 0, Verdict.UNCHANGED),
        ],
    )
    def test_sign_of_delta_decides(self, base: int, cand: int, verdict: Verdict) -> None:
        paired = evals.paired_verdict(summary_of([("t", base, 1)]), summary_of([("t", cand, 1)]))
        (task,) = paired.tasks
        assert task.verdict is verdict
        assert task.delta == cand - base
        assert task.p_value is None
        assert task.flaky is None

    def test_any_regression_wins(self) -> None:
        base = summary_of([("a", 0, 1), ("b", 1, 1)])
        candidate = summary_of([("a", 1, 1), ("b", 0, 1)])
        assert evals.paired_verdict(base, candidate).verdict is Verdict.REGRESSED

    def test_improved_without_regression(self) -> None:
        base = summary_of([("a", 0, 1), ("b", 1, 1)])
        candidate = summary_of([("a", 1, 1), ("b", 1, 1)])
        assert evals.paired_verdict(base, candidate).verdict is Verdict.IMPROVED


class TestSeveralTrials:
    def test_significant_regression(self) -> None:
        paired = evals.paired_verdict(summary_of([("t", 10, 10)]), summary_of([("t", 0, 10)]))
        (task,) = paired.tasks
        assert task.verdict is Verdict.REGRESSED
        assert task.p_value == pytest.approx(1.0825088e-05)
        assert task.flaky is False
        assert paired.verdict is Verdict.REGRESSED

    def test_small_difference_is_inconclusive_never_unchanged(self) -> None:
        paired = evals.paired_verdict(summary_of([("t", 3, 3)]), summary_of([("t", 2, 3)]))
        (task,) = paired.tasks
        assert task.verdict is Verdict.INCONCLUSIVE
        assert task.p_value == pytest.approx(1.0)
        assert task.flaky is True
        assert paired.verdict is Verdict.INCONCLUSIVE

    def test_equal_rates_are_unchanged(self) -> None:
        paired = evals.paired_verdict(summary_of([("t", 2, 4)]), summary_of([("t", 1, 2)]))
        (task,) = paired.tasks
        assert task.verdict is Verdict.UNCHANGED
        assert task.flaky is True

    def test_one_side_multi_trial_uses_the_test(self) -> None:
        paired = evals.paired_verdict(summary_of([("t", 1, 1)]), summary_of([("t", 4, 5)]))
        (task,) = paired.tasks
        assert task.verdict is Verdict.INCONCLUSIVE
        assert task.p_value is not None

    def test_holm_correction_spans_tasks(self) -> None:
        # 10/10 → 5/10 alone: Fisher p ≈ 0.0325 ≤ 0.05, regressed.
        alone = evals.paired_verdict(summary_of([("a", 10, 10)]), summary_of([("a", 5, 10)]))
        assert alone.tasks[0].verdict is Verdict.REGRESSED
        # Three such tasks: Holm multiplies the smallest by 3 → ≈ 0.0975, inconclusive.
        ids = ["a", "b", "c"]
        base = summary_of([(i, 10, 10) for i in ids])
        cand = summary_of([(i, 5, 10) for i in ids])
        paired = evals.paired_verdict(base, cand)
        assert [t.verdict for t in paired.tasks] == [Verdict.INCONCLUSIVE] * 3
        assert paired.tasks[0].p_value == pytest.approx(3 * 0.0325077399)

    def test_alpha_is_a_parameter(self) -> None:
        base, cand = summary_of([("a", 10, 10)]), summary_of([("a", 5, 10)])
        assert evals.paired_verdict(base, cand, alpha=0.01).verdict is Verdict.INCONCLUSIVE

    def test_a_p_value_equal_to_alpha_is_significant(self) -> None:
        base, cand = summary_of([("a", 10, 10)]), summary_of([("a", 5, 10)])
        p_value = evals.paired_verdict(base, cand).tasks[0].p_value
        assert p_value is not None
        assert evals.paired_verdict(base, cand, alpha=p_value).verdict is Verdict.REGRESSED
        nearly = evals.paired_verdict(base, cand, alpha=p_value * (1 - 1e-9))
        assert nearly.verdict is Verdict.INCONCLUSIVE

    def test_single_trial_tasks_are_outside_the_holm_family(self) -> None:
        base = summary_of([("a", 10, 10), ("b", 1, 1), ("c", 1, 1)])
        cand = summary_of([("a", 5, 10), ("b", 1, 1), ("c", 1, 1)])
        assert evals.paired_verdict(base, cand).tasks[0].verdict is Verdict.REGRESSED


class TestSummariesWithoutCounts:
    """Another host's summary may leave out `trials` and `passedTrials` (host additions)."""

    @staticmethod
    def bare(*tasks: tuple[str, float]) -> EvalSummary:
        entries = [TaskSummary(taskId=i, score=score, passed=score == 1) for i, score in tasks]
        return EvalSummary(
            suiteId="conformance.openwop.evals.regression", suiteVersion="1.0.0",
            aggregateScore=sum(s for _, s in tasks) / len(tasks), passed=False,
            taskCount=len(tasks), passedCount=0, tasks=entries,
        )  # fmt: skip

    def test_no_trials_means_one_trial_judged_by_sign(self) -> None:
        paired = evals.paired_verdict(self.bare(("t", 1.0)), self.bare(("t", 0.0)))
        (task,) = paired.tasks
        assert (task.verdict, task.p_value, task.flaky) == (Verdict.REGRESSED, None, None)

    def test_passed_trials_default_to_score_times_trials(self) -> None:
        # 4 trials at 0.5 passed 2: flaky, and tested against the other side's 4 of 4.
        half = self.bare(("t", 0.5)).model_copy(
            update={"tasks": [TaskSummary(taskId="t", score=0.5, passed=False, trials=4)]}
        )
        (task,) = evals.paired_verdict(summary_of([("t", 4, 4)]), half).tasks
        assert task.flaky is True
        assert task.p_value == pytest.approx(0.4285714285714286)
        assert task.verdict is Verdict.INCONCLUSIVE


# Property tests: summaries over a small pool of task ids with 1..6 trials each.
_task = st.tuples(st.integers(1, 6), st.integers(0, 6)).map(lambda t: (min(t[1], t[0]), t[0]))
_summary = st.dictionaries(st.sampled_from(list("abcdef")), _task, min_size=1).map(
    lambda tasks: summary_of([(i, p, n) for i, (p, n) in tasks.items()])
)
_SWAP = {
    Verdict.IMPROVED: Verdict.REGRESSED,
    Verdict.REGRESSED: Verdict.IMPROVED,
    Verdict.UNCHANGED: Verdict.UNCHANGED,
    Verdict.INCONCLUSIVE: Verdict.INCONCLUSIVE,
}


@given(_summary)
def test_identical_summaries_are_unchanged(summary: EvalSummary) -> None:
    paired = evals.paired_verdict(summary, summary)
    assert paired.verdict is Verdict.UNCHANGED
    assert all(t.verdict is Verdict.UNCHANGED for t in paired.tasks)


@given(_summary, _summary)
def test_swapping_sides_swaps_improved_and_regressed(left: EvalSummary, right: EvalSummary) -> None:
    forward = evals.paired_verdict(left, right)
    backward = evals.paired_verdict(right, left)
    by_id = {t.task_id: t for t in backward.tasks}
    for task in forward.tasks:
        assert by_id[task.task_id].verdict is _SWAP[task.verdict]
        assert by_id[task.task_id].p_value == task.p_value
    # The overall rule is asymmetric (regressed beats improved), so the run's verdict
    # swaps exactly when its tasks do not mix the two.
    if not {Verdict.IMPROVED, Verdict.REGRESSED} <= {t.verdict for t in forward.tasks}:
        assert backward.verdict is _SWAP[forward.verdict]


@given(_summary, _summary, st.sampled_from(["x", "y", "z"]), _task, st.booleans())
def test_a_task_on_one_side_only_never_changes_the_verdict(
    base: EvalSummary,
    cand: EvalSummary,
    extra_id: str,
    extra: tuple[int, int],
    on_baseline: bool,
) -> None:
    before = evals.paired_verdict(base, cand)
    added = summary_of(
        [
            (t.taskId, t.passedTrials or 0, t.trials or 1)
            for t in (base if on_baseline else cand).tasks
        ]
        + [(extra_id, *extra)]
    )
    after = evals.paired_verdict(added, cand) if on_baseline else evals.paired_verdict(base, added)
    assert after.verdict is before.verdict
    assert after.tasks == before.tasks
