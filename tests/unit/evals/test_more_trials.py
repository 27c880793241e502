"""`evals/_more_trials.py` and `evals/_pool.py`: the trials that would decide, and pooling."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wopeval import evals
from wopeval.evals import PassCounts, Undecided
from wopeval.wire.suite import parse_suite
from wopeval.wire.summary import EvalSummary, TaskSummary


class TestMoreTrialsNeeded:
    def test_worked_by_hand(self) -> None:
        # Baseline 10/10, candidate 5/10, Holm over m = 3 tasks: decided when 3·p ≤ .05.
        # k = 1: 6/11 (5.5 rounds up). Fisher on [[10, 0], [6, 5]]: the as-likely-or-less
        # tables put 0 or 5 of the 5 fails in the baseline row:
        # (C(16,10) + C(16,5)) / C(21,10) = (8008 + 4368) / 352716 ≈ .0351 > .0167.
        assert evals.fisher_p(10, 10, 6, 11) == pytest.approx(12376 / 352716)
        # k = 2: 6/12. (C(16,10) + C(16,4)) / C(22,10) = (8008 + 1820) / 646646 ≈ .0152.
        assert evals.fisher_p(10, 10, 6, 12) == pytest.approx(9828 / 646646)
        more = evals.more_trials_needed(PassCounts(10, 10), PassCounts(5, 10), tests=3)
        assert more.trials == 2
        assert more.text == "2 more trials at the observed pass rates would decide it"

    def test_a_single_test_is_already_decided(self) -> None:
        # Fisher p ≈ .0325 ≤ .05 with no correction: nothing more is needed.
        assert evals.more_trials_needed(PassCounts(10, 10), PassCounts(5, 10)).trials == 0

    def test_equal_rates_cannot_be_decided(self) -> None:
        more = evals.more_trials_needed(PassCounts(3, 4), PassCounts(6, 8))
        assert more.trials is None
        assert more.each_side is None
        assert more.undecided is Undecided.EQUAL_RATES
        assert more.text == "cannot be decided: both sides pass at the same rate"

    def test_a_small_baseline_limits_the_candidate_alone(self) -> None:
        more = evals.more_trials_needed(PassCounts(10, 10), PassCounts(9, 10), tests=3)
        assert more.trials is None
        assert more.undecided is Undecided.BEYOND_CAP
        assert more.each_side == 56
        assert "56 more on each side, the baseline too, would" in more.text

    def test_nothing_within_the_cap(self) -> None:
        more = evals.more_trials_needed(PassCounts(10, 10), PassCounts(9, 10), cap=5)
        assert (more.trials, more.each_side) == (None, None)
        assert more.text.endswith("nor up to 5 more on each side")

    def test_the_projection_rounds_half_up(self) -> None:
        assert PassCounts(1, 2).projected(1) == PassCounts(2, 3)
        assert PassCounts(2, 3).projected(3) == PassCounts(4, 6)

    @pytest.mark.parametrize(("passed", "trials"), [(-1, 3), (4, 3), (0, 0)])
    def test_impossible_counts_are_refused(self, passed: int, trials: int) -> None:
        with pytest.raises(ValueError, match="passed <= trials"):
            PassCounts(passed, trials)

    @settings(max_examples=60, deadline=None)
    @given(
        st.integers(1, 12).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
        st.integers(1, 12).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
        st.integers(1, 4),
    )
    def test_the_count_is_the_smallest_that_decides(
        self, base: tuple[int, int], cand: tuple[int, int], tests: int
    ) -> None:
        baseline, candidate = PassCounts(*base), PassCounts(*cand)
        more = evals.more_trials_needed(baseline, candidate, tests=tests, cap=25)

        def decided(k: int) -> bool:
            after = candidate.projected(k)
            p = evals.fisher_p(baseline.passed, baseline.trials, after.passed, after.trials)
            return tests * p <= evals.DEFAULT_ALPHA

        if more.undecided is Undecided.EQUAL_RATES:
            assert base[0] * cand[1] == cand[0] * base[1]
            return
        found = next((k for k in range(26) if decided(k)), None)
        assert more.trials == found


def _summary(*tasks: tuple[str, int, int]) -> EvalSummary:
    entries = [
        TaskSummary(
            taskId=task_id,
            score=passed / trials,
            passed=passed > 0,
            trials=trials,
            passedTrials=passed,
            latencyMs=100,
            fixtureMissCount=0,
        )
        for task_id, passed, trials in tasks
    ]
    return EvalSummary(
        suiteId="t.evals.s",
        suiteVersion="1.0.0",
        aggregateScore=sum(t.score for t in entries) / len(entries),
        passed=True,
        taskCount=len(entries),
        passedCount=sum(t.passed for t in entries),
        tasks=entries,
    )


def test_only_inconclusive_tasks_get_a_count() -> None:
    baseline = _summary(("steady", 10, 10), ("drop", 10, 10), ("wobble", 10, 10))
    candidate = _summary(("steady", 10, 10), ("drop", 5, 10), ("wobble", 9, 10))
    found = evals.inconclusive_more_trials(baseline, candidate)
    assert sorted(found) == ["drop", "wobble"]
    assert found["drop"].trials == 2  # Holm over the 3 multi-trial tasks
    assert found["wobble"].trials is None


def test_a_task_with_unjudged_trials_gets_no_count() -> None:
    # More trials cannot decide a task whose trials no judge graded: it needs a judgement.
    baseline = _summary(("drop", 10, 10), ("judged", 10, 10))
    candidate = _summary(("drop", 5, 10), ("judged", 5, 10))
    unjudged = candidate.tasks[0].model_copy(update={"unjudgedTrials": 2})
    candidate = candidate.model_copy(update={"tasks": [unjudged, candidate.tasks[1]]})
    found = evals.inconclusive_more_trials(baseline, candidate)
    assert sorted(found) == ["judged"]


class TestAllocate:
    def test_smallest_needs_first_each_whole(self) -> None:
        needs = {"a": 30, "b": 5, "c": 12, "d": 0}
        assert evals.allocate_trials(needs, 20) == {"b": 5, "c": 12}
        assert evals.allocate_trials(needs, 4) == {}

    def test_one_run_holds_at_most_a_suites_trials(self) -> None:
        assert evals.allocate_trials({"a": 150}, 500) == {"a": 100}

    @given(st.dictionaries(st.sampled_from("abcdef"), st.integers(0, 150)), st.integers(0, 300))
    def test_never_beyond_the_budget(self, needs: dict[str, int], budget: int) -> None:
        given_out = evals.allocate_trials(needs, budget)
        assert sum(given_out.values()) <= budget
        assert all(0 < n == min(needs[t], 100) for t, n in given_out.items())


EXACT_ONE = {"strategy": "exact", "value": 1}
SUITE = parse_suite(
    {
        "suiteId": "t.evals.s",
        "version": "1.0.0",
        "modes": ["golden"],
        "passPolicy": "majority",
        "thresholds": {"passScore": 0.5},
        "tasks": [
            {"taskId": t, "input": {}, "expected": {"kind": "golden", "match": EXACT_ONE}}
            for t in ("steady", "drop")
        ],
    }
)


class TestPool:
    def test_counts_add_and_the_policy_rejudges(self) -> None:
        first = _summary(("steady", 10, 10), ("drop", 5, 10))
        extra = _summary(("drop", 1, 2)).model_copy(update={"suiteVersion": "1.0.2000000001"})
        pooled = evals.pool_summaries(SUITE, first, extra)
        drop = pooled.task("drop")
        assert drop is not None
        assert (drop.passedTrials, drop.trials, drop.score) == (6, 12, 0.5)
        assert drop.passed is False  # majority: 6 of 12 is not more than half
        assert pooled.task("steady") == first.task("steady")
        assert pooled.aggregateScore == 0.75
        assert pooled.passedCount == 1
        assert pooled.passed is True  # 0.75 ≥ passScore 0.5
        assert pooled.regression is None

    def test_extra_trials_of_a_task_the_first_run_lacks_are_refused(self) -> None:
        with pytest.raises(ValueError, match="did not score"):
            evals.pool_summaries(SUITE, _summary(("steady", 1, 1)), _summary(("drop", 1, 1)))
