"""`evals/_calibration.py`: accuracy, Cohen's κ, the confusion table and the floor."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wopeval import evals
from wopeval.evals import CalibrationFloor, Confusion, LabelledVerdict


def _cases(
    both_pass: int, judge_only: int, human_only: int, both_fail: int
) -> list[LabelledVerdict]:
    """Cases making the given confusion table, refs `c0`, `c1`, …"""
    calls = (
        [(True, True)] * both_pass
        + [(True, False)] * judge_only
        + [(False, True)] * human_only
        + [(False, False)] * both_fail
    )
    return [LabelledVerdict(f"c{i}", judge, human) for i, (judge, human) in enumerate(calls)]


class TestWorkedExamples:
    def test_by_hand(self) -> None:
        # 6 both pass, 1 judge-only pass, 1 human-only pass, 2 both fail (n = 10):
        # p_o = 8/10; p_J = p_H = 7/10; p_e = .49 + .09 = .58; κ = .22/.42 = 11/21.
        result = evals.calibrate(_cases(6, 1, 1, 2))
        assert result.confusion == Confusion(6, 1, 1, 2)
        assert result.labels == 10
        assert result.accuracy == pytest.approx(0.8)
        assert result.kappa == pytest.approx(11 / 21)
        assert [case.ref for case in result.disagreements] == ["c6", "c7"]

    @pytest.mark.parametrize(
        ("table", "accuracy", "kappa"),
        [
            # Wikipedia, "Cohen's kappa", the worked example (50 grant proposals): κ = 0.4.
            ((20, 5, 10, 15), 0.7, 0.4),
            # Its pair with the same 60% agreement and different κ.
            ((45, 15, 25, 15), 0.6, 0.06 / 0.46),
            ((25, 35, 5, 35), 0.6, 0.14 / 0.54),
        ],
    )
    def test_textbook_tables(
        self, table: tuple[int, int, int, int], accuracy: float, kappa: float
    ) -> None:
        result = evals.calibrate(_cases(*table))
        assert result.accuracy == pytest.approx(accuracy)
        assert result.kappa == pytest.approx(kappa)

    def test_perfect_agreement_on_both_classes_is_one(self) -> None:
        result = evals.calibrate(_cases(3, 0, 0, 2))
        assert result.kappa == 1.0
        assert result.disagreements == ()

    def test_complete_disagreement_with_balanced_classes_is_minus_one(self) -> None:
        assert evals.calibrate(_cases(0, 2, 2, 0)).kappa == -1.0


class TestDegenerate:
    def test_no_pairs(self) -> None:
        result = evals.calibrate([])
        assert result.accuracy is None
        assert result.kappa is None
        assert result.labels == 0
        assert not result.clears(CalibrationFloor(kappa_min=-1.0, min_labels=1))

    @pytest.mark.parametrize("table", [(40, 0, 0, 0), (0, 0, 0, 40)])
    def test_everyone_calls_one_class_leaves_kappa_undefined(
        self, table: tuple[int, int, int, int]
    ) -> None:
        result = evals.calibrate(_cases(*table))
        assert result.accuracy == 1.0
        assert result.kappa is None
        # Agreeing 40 times on "pass" shows nothing about telling a fail apart.
        assert not result.clears(CalibrationFloor())

    def test_one_side_in_one_class_is_chance(self) -> None:
        # People passed all 4; the judge passed 3: p_o = p_e = 3/4, κ = 0.
        result = evals.calibrate(_cases(3, 0, 1, 0))
        assert result.kappa == 0.0

    def test_a_case_labelled_twice_is_refused(self) -> None:
        with pytest.raises(ValueError, match="more than once"):
            evals.calibrate([LabelledVerdict("a", True, True), LabelledVerdict("a", False, True)])


class TestFloor:
    def test_clears_at_the_floor(self) -> None:
        # 18 both pass, 3 + 3 disagreements, 6 both fail (n = 30): p_o = .8,
        # p_J = p_H = .7, p_e = .58, κ = 11/21 ≈ .524.
        result = evals.calibrate(_cases(18, 3, 3, 6))
        assert result.clears(CalibrationFloor(kappa_min=0.5, min_labels=30))
        assert not result.clears(CalibrationFloor(kappa_min=0.6, min_labels=30))
        assert not result.clears(CalibrationFloor(kappa_min=0.5, min_labels=31))

    def test_kappa_equal_to_the_floor_clears(self) -> None:
        result = evals.calibrate(_cases(3, 0, 0, 2))  # κ = 1
        assert result.clears(CalibrationFloor(kappa_min=1.0, min_labels=5))

    def test_the_default_floor(self) -> None:
        assert CalibrationFloor() == CalibrationFloor(kappa_min=0.6, min_labels=30)

    @pytest.mark.parametrize(
        ("kappa_min", "min_labels"), [(1.5, 30), (-1.1, 30), (0.6, 0), (0.6, -3)]
    )
    def test_an_impossible_floor_is_refused(self, kappa_min: float, min_labels: int) -> None:
        with pytest.raises(ValueError, match="must be"):
            CalibrationFloor(kappa_min=kappa_min, min_labels=min_labels)


_PAIRS = st.lists(st.tuples(st.booleans(), st.booleans()), max_size=60)


def _labelled(pairs: list[tuple[bool, bool]]) -> list[LabelledVerdict]:
    return [LabelledVerdict(str(i), judge, human) for i, (judge, human) in enumerate(pairs)]


class TestProperties:
    @given(_PAIRS)
    def test_bounds_and_counts(self, pairs: list[tuple[bool, bool]]) -> None:
        result = evals.calibrate(_labelled(pairs))
        assert result.labels == len(pairs)
        assert len(result.disagreements) == sum(j != h for j, h in pairs)
        if pairs:
            assert result.accuracy == pytest.approx(1 - len(result.disagreements) / len(pairs))
        if result.kappa is not None:
            assert -1.0 - 1e-12 <= result.kappa <= 1.0 + 1e-12
            # κ is 1 exactly when nobody disagrees.
            assert (result.kappa == pytest.approx(1.0)) == (not result.disagreements)

    @given(_PAIRS)
    def test_symmetric_in_the_raters_and_in_the_classes(
        self, pairs: list[tuple[bool, bool]]
    ) -> None:
        kappa = evals.calibrate(_labelled(pairs)).kappa
        swapped = evals.calibrate(_labelled([(h, j) for j, h in pairs])).kappa
        flipped = evals.calibrate(_labelled([(not j, not h) for j, h in pairs])).kappa
        for other in (swapped, flipped):
            assert (other is None) == (kappa is None)
            if kappa is not None:
                assert other == pytest.approx(kappa)
